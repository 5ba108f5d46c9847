//! Insertion-time trimming hooks: call one when the agent is about to append a tool result (or,
//! with `compression.insert_trim_user_pastes`, a user message).
//!
//! A message over `compression.insert_trim_tokens` is replaced by the compact form
//! [`compaction_core::trim`] plans, and the full original is written to the store under the
//! compact form's handle *first*: the compact form is returned only after that write
//! succeeded. Without a store, or when the write fails, the original is returned unchanged, so
//! nothing is ever lost. The agent appends whatever the hook returns.
//!
//! The compressor's insertion hook (`before_append`) also leave one content-free
//! `insert trim telemetry: {json}` line per trim that was due (trimmed, kept for want of a
//! store, kept after a failed store write; none when no trim was needed), with the session's
//! running totals (feature `telemetry`). [`trim_for_insert`] itself emits nothing.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use hermes_compaction::core::trim::TrimConfig;
//! use hermes_compaction::core::{Estimator, Message};
//! use hermes_compaction::store::Store;
//! use hermes_compaction::trim::{TrimStatus, trim_for_insert};
//!
//! let store = Store::connect("sqlite::memory:").await.unwrap();
//! store.create_session("s").await.unwrap();
//! let cfg = TrimConfig { max_tokens: 1_000, ..TrimConfig::default() };
//! let result = Message::tool_result("call_1", "log line\n".repeat(2_000));
//! let (message, status) =
//!     trim_for_insert(Some((&*store, "s")), &cfg, &Estimator::default(), None, result.clone()).await;
//! let TrimStatus::Trimmed { handle, .. } = status else { panic!("trimmed") };
//! assert!(message.text().starts_with("[trimmed]"));
//! let original = store.load_original("s", &handle).await.unwrap().unwrap();
//! assert_eq!(original.to_wire_json(), result.to_wire_json());
//! # }
//! ```

use compaction_core::prune::ToolInfo;
use compaction_core::trim::{self, TrimConfig};
use compaction_core::{Message, TokenCounter, Transcript};
use compaction_store::TranscriptStore;
#[cfg(all(feature = "llm", feature = "telemetry"))]
use compaction_telemetry::{Trim, TrimAccumulator, TrimOutcome, TrimSource};
#[cfg(all(feature = "llm", feature = "telemetry"))]
use std::sync::{Mutex, PoisonError};

/// What a trimming hook did. Counts and handles only, never content.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrimStatus {
    /// The message stays as it is (trimming off, under the limit, protected tool, not a text
    /// tool result or user paste, already trimmed).
    NotNeeded,
    /// The message was replaced by its compact form; the original is stored under `handle`.
    Trimmed {
        /// The handle of the stored original.
        handle: String,
        /// Tokens of the original.
        original_tokens: u64,
        /// Tokens of the compact form.
        trimmed_tokens: u64,
    },
    /// Trimming was due, but no store is configured to keep the original: kept whole.
    KeptNoStore,
    /// Trimming was due, but the store write failed: kept whole.
    KeptStoreFailed,
}

impl TrimStatus {
    /// Tokens the trim took out of the transcript (0 unless trimmed).
    pub fn saved_tokens(&self) -> u64 {
        match self {
            TrimStatus::Trimmed {
                original_tokens,
                trimmed_tokens,
                ..
            } => original_tokens.saturating_sub(*trimmed_tokens),
            _ => 0,
        }
    }
}

/// Plans trimming of `message` and, when due, stores the full original in `store` (the store
/// and the session) before returning the compact form. Returns the message to append and what
/// happened.
pub async fn trim_for_insert(
    store: Option<(&dyn TranscriptStore, &str)>,
    cfg: &TrimConfig,
    counter: &dyn TokenCounter,
    tool: Option<&ToolInfo<'_>>,
    message: Message,
) -> (Message, TrimStatus) {
    let Some(planned) = trim::plan_trim(&message, tool, cfg, counter) else {
        return (message, TrimStatus::NotNeeded);
    };
    let Some((store, session)) = store else {
        return (message, TrimStatus::KeptNoStore);
    };
    match store
        .store_original(session, &planned.handle, &message)
        .await
    {
        Ok(()) => (
            planned.message,
            TrimStatus::Trimmed {
                handle: planned.handle,
                original_tokens: planned.original_tokens,
                trimmed_tokens: planned.trimmed_tokens,
            },
        ),
        Err(e) => {
            tracing::warn!(error = %e, "insertion-time trim skipped: the original could not be stored");
            (message, TrimStatus::KeptStoreFailed)
        }
    }
}

/// The call a tool result answers, searched backwards from the end of the transcript (the call
/// is normally a few messages back, so this is O(distance)).
pub fn find_call<'a>(t: &'a Transcript, result: &Message) -> Option<ToolInfo<'a>> {
    let id = result.tool_call_id()?;
    t.messages().iter().rev().find_map(|m| {
        m.tool_calls()
            .iter()
            .find(|c| c.call_id() == id)
            .map(|c| ToolInfo {
                name: c.function.name.as_str(),
                arguments: c.function.arguments.as_str(),
            })
    })
}

#[cfg(feature = "llm")]
mod hooks {
    use super::*;
    use crate::compressor::Compressor;
    #[cfg(feature = "telemetry")]
    use compaction_telemetry::TrimSource;

    impl Compressor {
        /// The insertion hook: call it with each tool result and user message the agent is
        /// about to append to `t` (for a result, the assistant message with the call already
        /// in `t`); append the message it returns.
        ///
        /// A tool result is trimmed per `compression.insert_trim_*`; a user message only when
        /// `compression.insert_trim_user_pastes` is on (a giant paste); anything else, and
        /// whatever needs no trim, comes back unchanged with [`TrimStatus::NotNeeded`]. The
        /// original is kept in the compressor's store (given to
        /// [`CompressorBuilder::store`](crate::CompressorBuilder::store)); without one nothing
        /// is trimmed. Trims per `compression.insert_trim_*`; see the
        /// [module docs](crate::trim). A trim that
        /// was due (whatever its outcome) leaves one `insert trim telemetry` line (feature
        /// `telemetry`).
        ///
        /// ```
        /// use std::sync::Arc;
        /// use hermes_compaction::compressor::Persistence;
        /// use hermes_compaction::core::{Estimator, Message, ToolCall};
        /// use hermes_compaction::llm::ExtractiveSummarizer;
        /// use hermes_compaction::store::Store;
        /// use hermes_compaction::trim::TrimStatus;
        /// use hermes_compaction::{Compressor, Config};
        ///
        /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
        /// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        /// store.create_session("s1").await.unwrap();
        /// let p = Persistence { store: store.clone(), session: "s1".into(), generation: 0 };
        /// let mut config = Config::default();
        /// config.compression.insert_trim_tokens = 500;
        /// let mut c = Compressor::builder(config)
        ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
        ///     .counter(Arc::new(Estimator::default()))
        ///     .session("s1")
        ///     .store(p)
        ///     .build()
        ///     .unwrap();
        /// let mut t = c.transcript(vec![Message::user("run the tests")]);
        /// let call = ToolCall::function("c1", "shell", r#"{"cmd":"cargo test"}"#);
        /// t.push(Message::assistant_tool_calls("", vec![call]), c.status().counter);
        /// let result = Message::tool_result("c1", "test case ... ok\n".repeat(2_000));
        /// // The original goes to the store first; the compact form is what the agent appends.
        /// let (result, status) = c.before_append(&t, result).await;
        /// assert!(matches!(status, TrimStatus::Trimmed { .. }));
        /// t.push(result, c.status().counter);
        /// # });
        /// ```
        pub async fn before_append(
            &self,
            t: &Transcript,
            message: Message,
        ) -> (Message, TrimStatus) {
            if message.is_user() {
                return self.user_paste(message).await;
            }
            let cfg = self.config().trim();
            let tool = find_call(t, &message);
            let (message, status) = trim_for_insert(
                self.trim_store(),
                &cfg,
                self.counter(),
                tool.as_ref(),
                message,
            )
            .await;
            #[cfg(feature = "telemetry")]
            self.trim_telemetry(TrimSource::ToolResult, &status, &message);
            (message, status)
        }

        /// A user message: trims a giant paste when `compression.insert_trim_user_pastes` is on.
        async fn user_paste(&self, message: Message) -> (Message, TrimStatus) {
            if !self.config().compression.insert_trim_user_pastes || !message.is_user() {
                return (message, TrimStatus::NotNeeded);
            }
            let cfg = self.config().trim();
            let (message, status) =
                trim_for_insert(self.trim_store(), &cfg, self.counter(), None, message).await;
            #[cfg(feature = "telemetry")]
            self.trim_telemetry(TrimSource::UserPaste, &status, &message);
            (message, status)
        }

        /// Emits the trim line for `status` (none when no trim was due) with this session's
        /// running totals; `appended` is the message the hook returns.
        #[cfg(feature = "telemetry")]
        fn trim_telemetry(&self, source: TrimSource, status: &TrimStatus, appended: &Message) {
            emit_trim(
                self.session_id(),
                source,
                status,
                || self.counter().count_message(appended),
                self.rt.trim_totals(),
            );
        }
    }
}

/// The telemetry event for what a trimming hook did, or `None` when no trim was due.
///
/// A kept message has no compact form, so both counts are its own size, which `kept_tokens`
/// gives; it is called only for the kept outcomes. Neither the handle nor the tool's name is
/// carried over (see [`Trim`]).
#[cfg(all(feature = "llm", feature = "telemetry"))]
pub(crate) fn trim_event(
    session_id: &str,
    source: TrimSource,
    status: &TrimStatus,
    kept_tokens: impl FnOnce() -> u64,
) -> Option<Trim> {
    let (outcome, original, appended) = match status {
        TrimStatus::NotNeeded => return None,
        TrimStatus::Trimmed {
            original_tokens,
            trimmed_tokens,
            ..
        } => (TrimOutcome::Trimmed, *original_tokens, *trimmed_tokens),
        TrimStatus::KeptNoStore => {
            let n = kept_tokens();
            (TrimOutcome::KeptNoStore, n, n)
        }
        TrimStatus::KeptStoreFailed => {
            let n = kept_tokens();
            (TrimOutcome::KeptStoreFailed, n, n)
        }
    };
    Some(Trim::new(session_id, outcome, source).tokens(original, appended))
}

/// Counts a trim that was due in the session's running `totals` and emits its line; does
/// nothing when no trim was due.
#[cfg(all(feature = "llm", feature = "telemetry"))]
pub(crate) fn emit_trim(
    session_id: &str,
    source: TrimSource,
    status: &TrimStatus,
    kept_tokens: impl FnOnce() -> u64,
    totals: &Mutex<TrimAccumulator>,
) {
    let Some(mut trim) = trim_event(session_id, source, status, kept_tokens) else {
        return;
    };
    // Recording cannot panic, so a poisoned lock still holds consistent totals.
    totals
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .record(&mut trim);
    compaction_telemetry::emit_trim(&trim);
}
