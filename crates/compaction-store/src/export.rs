//! A session as JSONL, in the form [`ExportForm`] names ([`export_jsonl`]): what the command
//! line's `session export` prints.

use compaction_core::parse;

use crate::{Result, TranscriptStore};

/// The form of an [`export_jsonl`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportForm {
    /// The active messages as stored: each with its `_hermes` metadata (row id, marker kind,
    /// trim handle), which an import and a compaction read back.
    Stored,
    /// The active messages as a model is sent them: no `_hermes` metadata.
    Wire,
    /// The active messages as Anthropic Messages (tool results grouped into user turns as
    /// `tool_result` blocks, calls as `tool_use` blocks).
    Anthropic,
    /// Every row, archived ones included, each with `active`, `compacted`, `generation` and
    /// `position` added to its `_hermes` metadata.
    All,
}

/// Session `session` of `store` as JSONL, one message a line, in the form `form` names.
///
/// ```
/// # #[cfg(feature = "sqlite")]
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use compaction_core::Message;
/// use compaction_store::{ExportForm, Store, TranscriptStore, export_jsonl};
///
/// let store = Store::connect("sqlite::memory:").await.unwrap();
/// let mut messages = vec![Message::user("hello")];
/// store.import_session("s1", &mut messages).await.unwrap();
/// let wire = export_jsonl(&*store, "s1", ExportForm::Wire).await.unwrap();
/// assert_eq!(wire, "{\"role\":\"user\",\"content\":\"hello\"}\n");
/// let all = export_jsonl(&*store, "s1", ExportForm::All).await.unwrap();
/// assert!(all.contains("\"active\":true") && all.contains("\"generation\":0"));
/// # });
/// ```
pub async fn export_jsonl(
    store: &dyn TranscriptStore,
    session: &str,
    form: ExportForm,
) -> Result<String> {
    match form {
        ExportForm::Stored => return Ok(parse::to_jsonl(&store.load_active(session).await?)),
        ExportForm::Wire => {
            let mut out = String::new();
            for m in store.load_active(session).await? {
                out.push_str(&m.to_wire_json());
                out.push('\n');
            }
            return Ok(out);
        }
        ExportForm::Anthropic => {
            let messages = store.load_active(session).await?;
            return Ok(compaction_anthropic::to_jsonl(&messages));
        }
        ExportForm::All => {}
    }
    let rows = store.load_all(session).await?;
    let mut messages = Vec::with_capacity(rows.len());
    for row in rows {
        let mut m = row.message;
        let extra = &mut m.meta_mut().extra;
        extra.insert("active".into(), row.active.into());
        extra.insert("compacted".into(), row.compacted.into());
        extra.insert("generation".into(), row.generation.into());
        extra.insert("position".into(), row.position.into());
        messages.push(m);
    }
    Ok(parse::to_jsonl(&messages))
}
