//! [`Compressor::undo_last`]: revert the last pass applied to the transcript, in memory and
//! (with a store) as a new generation, with the compressor's state following.

use compaction_core::{Edit, Message, Splice, Transcript};

use crate::compressor::{Compressor, LastPass};
use crate::report::FailureKind;

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

/// The edit that turns `edit.apply(before)` back into `before`, in the coordinates of the
/// edited transcript, with what each of its splices must find there.
fn inverse(before: &[Message], edit: &Edit) -> (Edit, Vec<Vec<String>>) {
    let mut offset = 0isize;
    let mut splices = Vec::with_capacity(edit.splices.len());
    let mut written = Vec::with_capacity(edit.splices.len());
    for s in &edit.splices {
        let start = (s.range.start as isize + offset) as usize;
        splices.push(Splice {
            range: start..start + s.replacement.len(),
            replacement: before[s.range.clone()].to_vec(),
        });
        written.push(s.replacement.iter().map(Message::to_wire_json).collect());
        offset += s.replacement.len() as isize - s.range.len() as isize;
    }
    (Edit { splices }, written)
}

impl Compressor {
    /// Remembers how to revert `edit`, about to be applied to `t` (costs what the edit
    /// replaces, not the transcript).
    pub(crate) fn remember_pass(&mut self, t: &Transcript, edit: &Edit) {
        let (inverse, written) = inverse(t.messages(), edit);
        self.rt.keep_last_pass(LastPass {
            inverse,
            written,
            thrash: self.state().clone(),
            micro: self.micro_state().clone(),
        });
    }

    /// Reverts the last pass this compressor applied to `t` (batch, prune, micro, defrag or
    /// progress): the messages it replaced come back where they were, and what the agent
    /// appended since stays. With a store the reversal is committed first, as a new
    /// generation labelled `restore` (so it can itself be undone from the store's history);
    /// a stale generation or any other store failure changes nothing. The compressor's state
    /// follows: the micro cursor, rolling summary and failure counts, and the anti-thrash and
    /// cooldown state are those from before the pass, and automatic passes then wait
    /// `compression.failure_cooldown_secs` so the next request does not compact again at once
    /// (a manual [`compress`](Self::compress) still runs). One level: a second call reports
    /// [`UndoError::NothingToUndo`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hermes_compaction::core::{Estimator, Message};
    /// use hermes_compaction::llm::ExtractiveSummarizer;
    /// use hermes_compaction::{Compressor, Config};
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
    /// c.compress(&mut t, None).await;
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
                        .eq(w.iter().cloned())
            });
        if !still_there {
            self.rt.keep_last_pass(last);
            return Err(UndoError::Changed);
        }
        #[cfg_attr(not(feature = "store"), allow(unused_mut))]
        let mut edit = last.inverse.clone();
        #[cfg(feature = "store")]
        {
            let label = compaction_store::PassLabel::new(compaction_store::GenerationKind::Restore);
            if let Err(e) = self.persist_edit_as(t, &mut edit, Some(label)).await {
                self.rt.keep_last_pass(last);
                return Err(UndoError::Store {
                    failure: e.failure,
                    cause: e.cause,
                });
            }
        }
        let (tokens_before, messages_before) = (t.current_tokens(), t.len());
        if edit.apply_to(t, self.counter()).is_err() {
            // Unreachable: the ranges were checked against `t` above.
            return Err(UndoError::Changed);
        }
        let pause = self.config().compression.failure_cooldown_secs * 1_000;
        let now = self.now_ms();
        let mut thrash = last.thrash;
        thrash.paused_until_ms = Some(thrash.paused_until_ms.unwrap_or(0).max(now + pause));
        self.rt.restore(thrash, last.micro);
        Ok(UndoReport {
            tokens_before,
            tokens_after: t.current_tokens(),
            messages_before,
            messages_after: t.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inverse_of_an_edit_restores_the_original() {
        let before: Vec<Message> = (0..8).map(|i| Message::user(format!("m{i}"))).collect();
        let edit = Edit {
            splices: vec![
                Splice {
                    range: 0..0,
                    replacement: vec![Message::assistant("new first")],
                },
                Splice {
                    range: 1..4,
                    replacement: vec![Message::assistant("summary")],
                },
                Splice {
                    range: 5..6,
                    replacement: vec![Message::user("a"), Message::user("b")],
                },
                Splice {
                    range: 7..8,
                    replacement: vec![],
                },
            ],
        };
        let after = edit.apply(&before).unwrap();
        let (inv, written) = inverse(&before, &edit);
        assert_eq!(inv.apply(&after).unwrap(), before);
        assert_eq!(written[2].len(), 2);
    }
}
