//! [`Compressor::undo_last`]: revert the last pass applied to the transcript, in memory and
//! (with a store) as a new generation, with the compressor's state following.

use compaction_core::{Message, Transcript};

use crate::compressor::Compressor;
use crate::compressor::pass::Job;
use crate::report::FailureKind;
use crate::report::SummaryUse;

/// What [`Compressor::undo_last`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UndoReport {
    /// Tokens before the undo (the compacted transcript).
    pub tokens_before: u64,
    /// Tokens after (the transcript as it was before the pass, plus what came after it).
    pub tokens_after: u64,
    /// Messages before the undo.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
}

/// Why [`Compressor::undo_last`] changed nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UndoError {
    /// No pass was applied by this compressor since it was built (or since the last undo).
    #[error("no pass to undo")]
    NothingToUndo,
    /// The messages the last pass wrote are no longer where it wrote them (another rewrite
    /// came after it): undoing would lose that rewrite.
    #[error("the transcript changed after the last pass where that pass wrote")]
    Changed,
    /// The store refused or failed to commit the undo (content-free cause).
    #[error("the store did not commit the undo ({failure:?}): {cause}")]
    Store {
        /// The failure class (a stale generation when another writer moved the session).
        failure: FailureKind,
        /// The store error's message.
        cause: String,
    },
}

impl Compressor {
    /// Reverts the last pass this compressor applied to `t` (batch, prune, micro, defrag or
    /// progress): the messages it replaced come back where they were, and what the agent
    /// appended since stays. With a store the reversal is committed first, as a new
    /// generation labelled `restore` (so it can itself be undone from the store's history);
    /// a stale generation or any other store failure changes nothing. The compressor's state
    /// follows: the micro cursor, rolling summary and failure counts, and the anti-thrash and
    /// cooldown state are those from before the pass, and automatic passes then wait
    /// `compression.failure_cooldown_secs` so the next request does not compact again at once
    /// (a manual [`one_shot`](Self::one_shot) still runs). One level: a second call reports
    /// [`UndoError::NothingToUndo`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hermes_compaction::core::{Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::{Compressor, Config, OneShot};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let mut config = Config::default();
    /// config.model.context_length = 16_000;
    /// let mut c = Compressor::builder(config)
    ///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
    ///     .counter(Arc::new(Estimator::default()))
    ///     .session("s1")
    ///     .build()
    ///     .unwrap();
    /// let mut msgs = vec![Message::system("You are a coding agent.")];
    /// for i in 0..60 {
    ///     msgs.push(Message::user(format!("request {i}: {}", "details ".repeat(80))));
    ///     msgs.push(Message::assistant(format!("answer {i}: {}", "done ".repeat(80))));
    /// }
    /// let mut t = c.transcript(msgs.clone());
    /// c.one_shot(&mut t, OneShot::batch()).await.into_batch().unwrap();
    /// assert!(t.len() < msgs.len());
    /// c.undo_last(&mut t).await.unwrap();
    /// assert_eq!(t.messages(), &msgs[..]);
    /// # });
    /// ```
    pub async fn undo_last(&mut self, t: &mut Transcript) -> Result<UndoReport, UndoError> {
        let last = self.rt.take_last_pass().ok_or(UndoError::NothingToUndo)?;
        let still_there = last
            .inverse
            .splices
            .iter()
            .zip(&last.written)
            .all(|(s, w)| {
                s.range.end <= t.len()
                    && t.messages()[s.range.clone()]
                        .iter()
                        .map(Message::to_wire_json)
                        .eq(w.iter().map(Message::to_wire_json))
            });
        if !still_there {
            self.rt.keep_last_pass(last);
            return Err(UndoError::Changed);
        }
        // Through the one pass runner: committed (labelled `restore`), applied, and the
        // state from before the reverted pass put back.
        let (tokens_before, messages_before) = (t.current_tokens(), t.len());
        let mut job = Job::Undo { last: Some(last) };
        let mut used = SummaryUse::default();
        let result = self.run_pass(t, &mut job, &mut used).await;
        if let Err(f) = result {
            if let Job::Undo { last: Some(last) } = job {
                self.rt.keep_last_pass(last);
            }
            return Err(match (f.kind, f.cause) {
                // Unreachable: the ranges were checked against `t` above.
                (FailureKind::Plan, _) => UndoError::Changed,
                (failure, cause) => UndoError::Store {
                    failure,
                    cause: cause.unwrap_or_default(),
                },
            });
        }
        Ok(UndoReport {
            tokens_before,
            tokens_after: t.current_tokens(),
            messages_before,
            messages_after: t.len(),
        })
    }
}
