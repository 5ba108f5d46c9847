//! Edits: what a pass changes, as splices over the transcript it was planned against.
//!
//! An [`Edit`] is a list of non-overlapping [`Splice`]s in ascending order. It is the one
//! description of a pass that every layer shares: core applies it to a transcript, the store
//! turns it into `archive_and_compact` (archive the rows of each replaced range, insert the
//! replacement at that position), and telemetry reads the earliest changed index from it.

use std::ops::Range;

use crate::error::Error;
use crate::message::Message;
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

/// Up to this many splices are applied one by one; more in a single pass.
const FEW_SPLICES: usize = 8;

/// Replace `range` of the planned-against transcript with `replacement`.
#[derive(Clone, Debug, PartialEq)]
pub struct Splice {
    /// Indices in the transcript the edit was planned against.
    pub range: Range<usize>,
    /// The messages that take their place (possibly none).
    pub replacement: Vec<Message>,
}

/// A list of non-overlapping splices in ascending order.
#[derive(Clone, Debug, Default, PartialEq)]
///
/// ```
/// use compaction_core::{Edit, Estimator, Message, Transcript};
///
/// let counter = Estimator::default();
/// let msgs = vec![
///     Message::system("sys"),
///     Message::user("old question"),
///     Message::assistant("old answer"),
///     Message::user("new question"),
/// ];
/// let edit = Edit::single(1..3, vec![Message::user("[summary] asked and answered")]);
/// assert_eq!(edit.earliest_changed_index(), Some(1)); // where the prompt cache breaks
///
/// // Pure: a new list, the old one untouched...
/// let after = edit.apply(&msgs).unwrap();
/// assert_eq!(after.len(), 3);
/// // ...or in place on a transcript, keeping its token counts current.
/// let mut t = Transcript::new(msgs, &counter);
/// edit.clone().apply_to(&mut t, &counter).unwrap();
/// assert_eq!(t.messages(), &after[..]);
/// assert_eq!(t.estimated_total(), Transcript::new(after, &counter).estimated_total());
///
/// // An edit past the end is refused.
/// assert!(Edit::single(2..9, vec![]).apply(t.messages()).is_err());
/// ```
pub struct Edit {
    /// The splices.
    pub splices: Vec<Splice>,
}

impl Edit {
    /// An edit of one splice.
    pub fn single(range: Range<usize>, replacement: Vec<Message>) -> Edit {
        Edit {
            splices: vec![Splice { range, replacement }],
        }
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        self.splices
            .iter()
            .all(|s| s.range.is_empty() && s.replacement.is_empty())
    }

    /// The first index the edit changes (where the provider's prompt cache breaks).
    pub fn earliest_changed_index(&self) -> Option<usize> {
        self.splices
            .iter()
            .find(|s| !(s.range.is_empty() && s.replacement.is_empty()))
            .map(|s| s.range.start)
    }

    /// Tokens the edit removes from `t` and tokens its replacements hold (by `counter`): the
    /// pass shrinks the transcript when the first is larger.
    ///
    /// ```
    /// use compaction_core::{Edit, Estimator, Message, TokenCounter, Transcript};
    ///
    /// let e = Estimator::default();
    /// let t = Transcript::new(vec![Message::user("a long request ".repeat(50))], &e);
    /// let short = Message::user("short");
    /// let edit = Edit::single(0..1, vec![short.clone()]);
    /// assert_eq!(edit.token_change(&t, &e), (t.tokens_of(0), e.count_message(&short)));
    /// ```
    pub fn token_change(&self, t: &Transcript, counter: &dyn TokenCounter) -> (u64, u64) {
        self.splices.iter().fold((0, 0), |(removed, added), s| {
            (
                removed + t.tokens_in(s.range.clone()),
                added
                    + s.replacement
                        .iter()
                        .map(|m| counter.count_message(m))
                        .sum::<u64>(),
            )
        })
    }

    /// Checks order and bounds against a transcript length.
    pub fn validate(&self, len: usize) -> Result<(), Error> {
        let mut prev_end = 0;
        for (index, s) in self.splices.iter().enumerate() {
            if s.range.start < prev_end || s.range.end < s.range.start {
                return Err(Error::Overlap { index });
            }
            if s.range.end > len {
                return Err(Error::OutOfRange {
                    index,
                    end: s.range.end,
                    len,
                });
            }
            prev_end = s.range.end;
        }
        Ok(())
    }

    /// The transcript after the edit, leaving `before` untouched.
    pub fn apply(&self, before: &[Message]) -> Result<Vec<Message>, Error> {
        self.validate(before.len())?;
        let mut out = Vec::with_capacity(before.len());
        let mut at = 0;
        for s in &self.splices {
            out.extend_from_slice(&before[at..s.range.start]);
            out.extend(s.replacement.iter().cloned());
            at = s.range.end;
        }
        out.extend_from_slice(&before[at..]);
        Ok(out)
    }

    /// Applies the edit in place, keeping the token cache current: a few splices each move
    /// only the shorter side of the transcript (see [`Transcript::splice`]); many are applied
    /// in a single pass over the transcript. Returns the removed messages, in order.
    pub fn apply_to(
        self,
        t: &mut Transcript,
        counter: &dyn TokenCounter,
    ) -> Result<Vec<Message>, Error> {
        self.validate(t.len())?;
        let mut splices: Vec<(Range<usize>, Vec<Message>)> = self
            .splices
            .into_iter()
            .filter(|s| !(s.range.is_empty() && s.replacement.is_empty()))
            .map(|s| (s.range, s.replacement))
            .collect();
        Ok(if splices.len() <= FEW_SPLICES {
            // A few splices (a micro pass, a batch summary): each moves only its shorter side,
            // from the back so earlier indices stay valid.
            let mut chunks: Vec<Vec<Message>> = Vec::with_capacity(splices.len());
            while let Some((range, replacement)) = splices.pop() {
                chunks.push(t.splice(range, replacement, counter));
            }
            chunks.into_iter().rev().flatten().collect()
        } else {
            // Many (a prune pass rewriting hundreds of outputs): one pass over the transcript.
            t.splice_many(splices, counter)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Estimator;

    #[test]
    fn apply_and_apply_to_agree() {
        let msgs: Vec<Message> = (0..6).map(|i| Message::user(format!("m{i}"))).collect();
        let edit = Edit {
            splices: vec![
                Splice {
                    range: 1..3,
                    replacement: vec![Message::assistant("s")],
                },
                Splice {
                    range: 4..4,
                    replacement: vec![Message::assistant("ins")],
                },
                Splice {
                    range: 5..6,
                    replacement: vec![],
                },
            ],
        };
        let after = edit.apply(&msgs).unwrap();
        let texts: Vec<String> = after.iter().map(|m| m.text().into_owned()).collect();
        assert_eq!(texts, ["m0", "s", "m3", "ins", "m4"]);
        let e = Estimator::default();
        let mut t = Transcript::new(msgs, &e);
        let removed = edit.clone().apply_to(&mut t, &e).unwrap();
        assert_eq!(t.messages(), &after[..]);
        let removed: Vec<String> = removed.iter().map(|m| m.text().into_owned()).collect();
        assert_eq!(removed, ["m1", "m2", "m5"]);
        assert_eq!(edit.earliest_changed_index(), Some(1));
    }

    #[test]
    fn rejects_bad_edits() {
        let msgs: Vec<Message> = (0..3).map(|i| Message::user(format!("m{i}"))).collect();
        let overlap = Edit {
            splices: vec![
                Splice {
                    range: 0..2,
                    replacement: vec![],
                },
                Splice {
                    range: 1..3,
                    replacement: vec![],
                },
            ],
        };
        assert_eq!(overlap.apply(&msgs), Err(Error::Overlap { index: 1 }));
        let oob = Edit::single(2..5, vec![]);
        assert!(matches!(oob.apply(&msgs), Err(Error::OutOfRange { .. })));
    }

    proptest::proptest! {
        #[test]
        fn apply_to_matches_apply_on_every_path(
            len in 0usize..600,
            cuts in proptest::collection::vec((0usize..400, 0usize..4, 0usize..3), 0..12),
        ) {
            let e = Estimator::default();
            let msgs: Vec<Message> = (0..len)
                .map(|i| {
                    if i % 3 == 0 {
                        Message::user(format!("u{i}"))
                    } else {
                        Message::assistant(format!("a{i} {}", "x".repeat(i % 17)))
                    }
                })
                .collect();
            let mut splices = Vec::new();
            let mut at = 0;
            for (gap, del, ins) in cuts {
                let start = (at + gap).min(len);
                let end = (start + del).min(len);
                let replacement = (0..ins).map(|k| Message::assistant(format!("r{start}-{k}"))).collect();
                splices.push(Splice { range: start..end, replacement });
                at = end;
            }
            let edit = Edit { splices };
            let expected = edit.apply(&msgs).unwrap();
            let expected_removed: Vec<String> = edit
                .splices
                .iter()
                .flat_map(|s| msgs[s.range.clone()].iter().map(Message::to_json))
                .collect();
            let mut t = Transcript::new(msgs.clone(), &e);
            let removed = edit.apply_to(&mut t, &e).unwrap();
            proptest::prop_assert_eq!(t.messages(), &expected[..]);
            let removed: Vec<String> = removed.iter().map(Message::to_json).collect();
            proptest::prop_assert_eq!(removed, expected_removed);
            let fresh = Transcript::new(expected, &e);
            proptest::prop_assert_eq!(t.estimated_total(), fresh.estimated_total());
            proptest::prop_assert_eq!(t.last_real_user(), fresh.last_real_user());
        }
    }
}
