//! `session history | undo | diff | pin`: see, undo and pin over the store. Thin over
//! [`TranscriptStore::history`](hermes_compaction::store::TranscriptStore::history) and the
//! store's `Session` controls (`undo`, `pin_at`, `diff`); the text comes from the store's
//! [`HistoryTable`] and `GenerationDiff` (redacted).

use hermes_compaction::store::{Access, HistoryTable};

use crate::cli::StoreArgs;
use crate::{Result, with_store};

/// `session history`: one line per generation.
pub async fn history(s: &StoreArgs) -> Result<String> {
    with_store(&s.db, Access::Existing, async |store| {
        Ok(HistoryTable(&store.history(&s.session).await?).to_string())
    })
    .await
}

/// `session undo [--to N]`: the store's [`Session::undo`](hermes_compaction::store::Session::undo)
/// (default: the generation before the current).
pub async fn undo(s: &StoreArgs, to: Option<u64>) -> Result<String> {
    with_store(&s.db, Access::Existing, async |store| {
        let done = store.session(&s.session).undo(to).await?;
        Ok(format!(
            "session={} restored generation {}: generation={}->{} archived={} reactivated={}",
            s.session,
            done.target,
            done.from,
            done.restored.generation,
            done.restored.archived,
            done.restored.reactivated
        ))
    })
    .await
}

/// `session pin --index I [--unpin]`: the store's
/// [`Session::pin_at`](hermes_compaction::store::Session::pin_at).
pub async fn pin(s: &StoreArgs, index: usize, pinned: bool) -> Result<String> {
    with_store(&s.db, Access::Existing, async |store| {
        let done = store.session(&s.session).pin_at(index, pinned).await?;
        Ok(format!(
            "session={} message {index} {}: row={}->{} generation={}->{}",
            s.session,
            if pinned { "pinned" } else { "unpinned" },
            done.row,
            done.new_row,
            done.generation_before,
            done.generation
        ))
    })
    .await
}

/// `session diff --generation N`: the store's
/// [`Session::diff`](hermes_compaction::store::Session::diff), printed.
pub async fn diff(s: &StoreArgs, generation: u64) -> Result<String> {
    with_store(&s.db, Access::Existing, async |store| {
        Ok(store
            .session(&s.session)
            .diff(generation)
            .await?
            .to_string())
    })
    .await
}
