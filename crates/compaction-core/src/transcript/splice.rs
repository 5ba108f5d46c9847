//! Splicing a transcript: the one operation every rewrite goes through. A splice moves the
//! shorter side of the storage, keeps the prefix sums, the latest user index and the last
//! visible reply current, draws a new stamp, and drops a calibration it invalidates.

use std::ops::Range;

use super::{Transcript, is_real_user, is_visible_reply, key, next_stamp};
use crate::devec::DeVec;
use crate::message::Message;
use crate::tokens::TokenCounter;

impl Transcript {
    /// Replaces `range` with `replacement`, returning the removed messages. Counts only the
    /// new messages. Moves the shorter side: the messages (and prefix sums) before the splice
    /// point or those after it. Drops the calibration if the splice touches a message the
    /// calibrated request contained.
    pub fn splice(
        &mut self,
        range: Range<usize>,
        replacement: Vec<Message>,
        counter: &dyn TokenCounter,
    ) -> Vec<Message> {
        let n = self.len();
        let old_tokens = key(self.tokens_in(range.clone()));
        let new_counts: Vec<i64> = replacement
            .iter()
            .map(|m| key(counter.count_message(m)))
            .collect();
        let new_tokens: i64 = new_counts.iter().sum();
        let added_len = replacement.len();
        if let Some(c) = self.calibration
            && range.start < c.messages
        {
            self.calibration = None;
        }
        let user_in_replacement = replacement.iter().rposition(is_real_user);
        let reply_in_replacement = replacement.iter().rposition(is_visible_reply);
        let removed = self.messages.splice(range.clone(), replacement);
        self.last_reply = Some(follow_splice(
            self.last_reply,
            reply_in_replacement,
            &range,
            added_len,
            removed.len(),
            self.messages(),
            is_visible_reply,
        ));
        let last_user = follow_splice(
            self.last_user,
            user_in_replacement,
            &range,
            added_len,
            removed.len(),
            self.messages(),
            is_real_user,
        );
        self.last_user = Some(last_user);
        // Shift the token total on the shorter side (`keys` has one more entry than messages:
        // `keys[range.start]` stays, `keys[range.start + 1..=range.end]` are replaced).
        let delta = new_tokens - old_tokens;
        if delta != 0 {
            let keys = self.keys.as_mut_slice();
            if range.start < n - range.end {
                for k in &mut keys[..=range.start] {
                    *k -= delta;
                }
                self.base += delta;
            } else {
                for k in &mut keys[range.end + 1..] {
                    *k += delta;
                }
            }
        }
        let mut acc = self.keys.as_slice()[range.start];
        let new_keys: Vec<i64> = new_counts
            .iter()
            .map(|t| {
                acc += t;
                acc
            })
            .collect();
        self.keys.splice(range.start + 1..range.end + 1, new_keys);
        self.stamp = next_stamp();
        self.lineage = next_stamp();
        // A surviving calibration covers only messages before `range.start`, which did not
        // change: messages inserted at or after its boundary were not in the measured request.
        removed
    }

    /// Applies several ascending, non-overlapping splices in one pass over the transcript:
    /// O(n + inserted) instead of one shift of everything after each splice. Returns the
    /// removed messages in order. The caller guarantees order and bounds (see
    /// [`Edit::apply_to`](crate::edit::Edit::apply_to), which validates them).
    pub(crate) fn splice_many(
        &mut self,
        splices: Vec<(Range<usize>, Vec<Message>)>,
        counter: &dyn TokenCounter,
    ) -> Vec<Message> {
        if let (Some(c), Some((first, _))) = (self.calibration, splices.first())
            && first.start < c.messages
        {
            self.calibration = None;
        }
        let n = self.len();
        let old_keys = std::mem::replace(&mut self.keys, DeVec::from_vec(Vec::new()));
        let old_keys = old_keys.as_slice();
        let old = std::mem::replace(&mut self.messages, DeVec::from_vec(Vec::new())).into_vec();
        let mut messages = Vec::with_capacity(n);
        let mut keys = Vec::with_capacity(n + 1);
        keys.push(0i64);
        let mut removed = Vec::new();
        let mut acc = 0i64;
        let mut splices = splices.into_iter().peekable();
        let mut removing: Option<usize> = None;
        for (i, m) in old.into_iter().enumerate() {
            // Insert replacements of the splices that start here.
            while let Some((range, _)) = splices.peek() {
                if range.start != i {
                    break;
                }
                let (range, replacement) = splices.next().expect("peeked");
                for r in replacement {
                    acc += key(counter.count_message(&r));
                    messages.push(r);
                    keys.push(acc);
                }
                if !range.is_empty() {
                    // Put the range back so the removal below sees it.
                    removing = Some(range.end);
                }
            }
            if removing.is_some_and(|end| i < end) {
                removed.push(m);
                continue;
            }
            removing = None;
            acc += old_keys[i + 1] - old_keys[i];
            messages.push(m);
            keys.push(acc);
        }
        // Splices at the very end (pure appends).
        for (_, replacement) in splices {
            for r in replacement {
                acc += key(counter.count_message(&r));
                messages.push(r);
                keys.push(acc);
            }
        }
        self.messages = DeVec::from_vec(messages);
        self.keys = DeVec::from_vec(keys);
        self.base = 0;
        // One pass over everything was paid already: find both indices again now, so later
        // partitions do not scan.
        self.last_user = Some(self.messages().iter().rposition(is_real_user));
        self.last_reply = Some(self.messages().iter().rposition(is_visible_reply));
        self.stamp = next_stamp();
        self.lineage = next_stamp();
        removed
    }
}

/// Where the last message satisfying `is` lies after `range` was replaced by `added` messages
/// (`found`: the last one among them), given where it lay before (`known`; `None`: unknown).
fn follow_splice(
    known: Option<Option<usize>>,
    found: Option<usize>,
    range: &Range<usize>,
    added: usize,
    removed: usize,
    messages: &[Message],
    is: fn(&Message) -> bool,
) -> Option<usize> {
    match known {
        // Unknown: find it again.
        None => messages.iter().rposition(is),
        // It lies after the splice: it only moves.
        Some(Some(u)) if u >= range.end => Some(u + added - removed),
        // Otherwise the replacement's own last one wins, if it has one.
        _ if found.is_some() => found.map(|p| range.start + p),
        Some(Some(u)) if u < range.start => Some(u),
        // It was removed: look again before the splice.
        Some(Some(_)) => messages[..range.start].iter().rposition(is),
        Some(None) => None,
    }
}
