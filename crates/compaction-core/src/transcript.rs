//! [`Transcript`]: the ordered messages of one session with cached per-message token counts.
//!
//! Counts are computed once per message and kept as prefix sums, so the token size of any
//! contiguous range is O(1) and the tail search is O(log n). The provider's reported
//! `prompt_tokens` can calibrate the total: after [`Transcript::calibrate`], the current size is
//! the reported figure plus an estimate of only what was appended since. Any rewrite of a
//! message the calibrated request contained drops the calibration, so usage measured before a
//! compaction can never re-trigger one.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::devec::DeVec;
use crate::message::Message;
use crate::tokens::TokenCounter;

/// The messages of one session, with cached token counts.
///
/// Storage keeps free slots at both ends, so a splice moves whichever side of it is shorter:
/// a micro pass that replaces an exchange just after the head costs the size of the head and
/// the exchange, not the length of the transcript, and appends stay O(1).
#[derive(Debug)]
///
/// ```
/// use compaction_core::{Estimator, Message, Transcript};
///
/// let counter = Estimator::default();
/// let mut t = Transcript::new(
///     vec![Message::system("You are terse."), Message::user("hi")],
///     &counter,
/// );
/// let before = t.current_tokens();
/// t.push(Message::assistant("hello"), &counter);
/// assert_eq!(t.len(), 3);
/// assert!(t.current_tokens() > before);
/// assert_eq!(t.tokens_in(0..3), t.estimated_total());
///
/// // The provider reported 900 prompt tokens for the first 3 messages: the current size is that
/// // figure plus an estimate of what was appended since.
/// t.calibrate(900, 3);
/// t.push(Message::user("thanks"), &counter);
/// assert_eq!(t.current_tokens(), 900 + t.tokens_of(3));
/// ```
pub struct Transcript {
    messages: DeVec<Message>,
    /// Prefix sums with an offset: tokens of `messages[..i]` = `keys[i] + base`, and
    /// `keys.len() == messages.len() + 1`. A splice that changes the token total adds the
    /// difference either to the keys after it or (subtracting it from the keys before it) to
    /// `base`, whichever side is shorter.
    keys: DeVec<i64>,
    base: i64,
    calibration: Option<Calibration>,
    /// Index of the last user message that is not a summary marker, kept current by every
    /// splice so [`Transcript::last_real_user`] is O(1). `None` when unknown: metadata of a
    /// user message was handed out mutably, and its marker kind may have changed.
    last_user: Option<Option<usize>>,
    /// Index of the last assistant reply the user saw (visible text, no tool calls, not a
    /// summary marker), kept current like `last_user` so [`Transcript::last_visible_reply`]
    /// is O(1) (a long tool-only turn would otherwise be scanned back on every partition).
    /// `None` when unknown: metadata of an assistant message was handed out mutably.
    last_reply: Option<Option<usize>>,
    /// Identifies the current content: drawn afresh on construction and on every mutation (see
    /// [`Transcript::stamp`]).
    stamp: u64,
    /// Identifies a history of appends (see [`Transcript::lineage`]): drawn afresh on
    /// construction, on clone and on every mutation except [`Transcript::push`].
    lineage: u64,
    /// Pins set or cleared with [`Transcript::pin`] on stored messages (those with a row id)
    /// that no store write has recorded yet, by row id, the latest change of a row only: a
    /// store mirrors them with its next write (see [`Transcript::pending_pin_writes`]) and
    /// records each with [`Transcript::set_row_id`]. A change to a message no longer held
    /// is not pending (and is dropped at the next pin).
    pin_writes: Vec<(i64, bool)>,
}

impl Clone for Transcript {
    /// An unchanged clone keeps the [stamp](Transcript::stamp) but starts a lineage of its own:
    /// the two may be appended to differently.
    fn clone(&self) -> Transcript {
        Transcript {
            messages: self.messages.clone(),
            keys: self.keys.clone(),
            base: self.base,
            calibration: self.calibration,
            last_user: self.last_user,
            last_reply: self.last_reply,
            stamp: self.stamp,
            lineage: next_stamp(),
            pin_writes: self.pin_writes.clone(),
        }
    }
}

/// Source of [`Transcript::stamp`]s. A counter, not a hash: a stamp costs one atomic
/// increment per mutation whatever the transcript's length, and is never reused within a
/// process, so two transcripts only share a stamp when one is an unchanged clone of the other.
static STAMPS: AtomicU64 = AtomicU64::new(1);

fn next_stamp() -> u64 {
    STAMPS.fetch_add(1, Ordering::Relaxed)
}

/// A provider-reported prompt size for the first `messages` messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// The provider's `prompt_tokens` for the request.
    pub prompt_tokens: u64,
    /// How many leading messages that request contained.
    pub messages: usize,
}

/// Token counts are far below `i64::MAX`; the conversion saturates rather than wraps.
fn key(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

impl Transcript {
    /// Counts every message once with `counter`.
    pub fn new(messages: Vec<Message>, counter: &dyn TokenCounter) -> Transcript {
        let mut keys = Vec::with_capacity(messages.len() + 1);
        let mut acc = 0i64;
        keys.push(0);
        for m in &messages {
            acc += key(counter.count_message(m));
            keys.push(acc);
        }
        let last_user = Some(messages.iter().rposition(is_real_user));
        let last_reply = Some(messages.iter().rposition(is_visible_reply));
        Transcript {
            messages: DeVec::from_vec(messages),
            keys: DeVec::from_vec(keys),
            base: 0,
            calibration: None,
            last_user,
            last_reply,
            stamp: next_stamp(),
            lineage: next_stamp(),
            pin_writes: Vec::new(),
        }
    }

    /// A stamp that identifies this exact content. It changes on every mutation ([`push`],
    /// [`splice`], [`replace`], [`pin`], applying an [`Edit`](crate::Edit)), is never
    /// reused within the process, and is shared only by clones that neither side has changed
    /// since. Plans record it, and [`batch::assemble`](crate::batch::assemble) refuses a
    /// transcript whose stamp differs, so an edit that keeps the length and the token total (a
    /// same-size rewrite of one message) is caught in O(1), without hashing the messages.
    /// Stamping a row id ([`set_row_id`]) and calibrating change no content and keep the stamp.
    ///
    /// [`push`]: Self::push
    /// [`splice`]: Self::splice
    /// [`replace`]: Self::replace
    /// [`pin`]: Self::pin
    /// [`set_row_id`]: Self::set_row_id
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Identifies a history of appends: unchanged while [`push`](Self::push) is the only
    /// mutation, so two observations with the same lineage see the same first `len` messages
    /// (the shorter one's length). Every other mutation, and every clone, starts a new one.
    /// Planners use it to resume a scan of an append-only transcript instead of redoing it;
    /// a host (the facade's warm-cache summary request) uses it to know that the first `len`
    /// messages it saw earlier are still the transcript's first `len` messages.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        self.messages.as_slice()
    }

    /// Gives the messages back.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages.into_vec()
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tokens of `messages[..i]`.
    fn prefix(&self, i: usize) -> u64 {
        (self.keys.as_slice()[i] + self.base) as u64
    }

    /// Estimated tokens of message `i`.
    pub fn tokens_of(&self, i: usize) -> u64 {
        self.tokens_in(i..i + 1)
    }

    /// Estimated tokens of a range of messages. O(1).
    pub fn tokens_in(&self, range: Range<usize>) -> u64 {
        let keys = self.keys.as_slice();
        (keys[range.end] - keys[range.start]) as u64
    }

    /// Estimated tokens of the whole transcript (ignores calibration).
    pub fn estimated_total(&self) -> u64 {
        self.prefix(self.len())
    }

    /// The best current size: the calibrated figure plus the estimated delta since, or the
    /// estimate when no valid calibration exists.
    pub fn current_tokens(&self) -> u64 {
        match self.calibration {
            Some(c) if c.messages <= self.len() => {
                c.prompt_tokens + self.tokens_in(c.messages..self.len())
            }
            _ => self.estimated_total(),
        }
    }

    /// Provider tokens per estimated token: the calibrated size over the estimate, or 1 without
    /// a calibration. Planners scale estimated sizes by it (or divide the threshold by it) so
    /// that one measurement drives both the trigger and the plan.
    pub(crate) fn calibration_scale(&self) -> f64 {
        let estimated = self.estimated_total();
        let current = self.current_tokens();
        if self.calibration.is_some() && estimated > 0 && current > 0 {
            current as f64 / estimated as f64
        } else {
            1.0
        }
    }

    /// Records the provider's reported `prompt_tokens` for a request that contained the first
    /// `messages` messages.
    pub fn calibrate(&mut self, prompt_tokens: u64, messages: usize) {
        self.calibration = (messages <= self.len()).then_some(Calibration {
            prompt_tokens,
            messages,
        });
    }

    /// The current calibration, if any.
    pub fn calibration(&self) -> Option<Calibration> {
        self.calibration
    }

    /// The smallest `start` such that `tokens_in(start..end) <= budget`. O(log n).
    pub(crate) fn suffix_start_within(&self, end: usize, budget: u64) -> usize {
        let keys = self.keys.as_slice();
        let target = keys[end].saturating_sub(key(budget));
        // First index i in 0..=end with keys[i] >= target.
        keys[..=end].partition_point(|&k| k < target)
    }

    /// Appends one message.
    pub fn push(&mut self, m: Message, counter: &dyn TokenCounter) {
        let t = key(counter.count_message(&m));
        let last = self.keys.as_slice()[self.len()];
        if is_real_user(&m) {
            self.last_user = Some(Some(self.len()));
        }
        if is_visible_reply(&m) {
            self.last_reply = Some(Some(self.len()));
        }
        self.messages.push(m);
        self.keys.push(last + t);
        self.stamp = next_stamp();
    }

    /// Replaces message `i` in place (e.g. a pruned tool output).
    pub fn replace(&mut self, i: usize, m: Message, counter: &dyn TokenCounter) -> Message {
        self.splice(i..i + 1, vec![m], counter)
            .pop()
            .expect("one message removed")
    }

    /// Records that a store holds message `i`, as it is now, as row `id`: stamps the row id
    /// ([`Message::row_id`](crate::Message::row_id)) and forgets a pin change of the message
    /// that was [pending](Self::pending_pin_writes), as the row holds its pin. Metadata only,
    /// and not the marker kind, so counts, the latest-user index and the
    /// [stamp](Self::stamp) stay as they are: a plan made before still applies.
    ///
    /// This is how a store layer writes back what it wrote: the row ids of appended messages,
    /// and the row of a pin change (the store's copy with the new flag, or the same id).
    ///
    /// ```
    /// use compaction_core::{Estimator, Message, Transcript};
    /// let mut stored = Message::user("keep this");
    /// stored.meta_mut().row_id = Some(41);
    /// let mut t = Transcript::new(vec![Message::system("s"), stored], &Estimator::default());
    /// t.pin(0, true); // not stored yet: its first write carries the pin
    /// t.pin(1, true);
    /// assert_eq!(t.pending_pin_writes(), [(41, true)]);
    /// // The store archived row 41 and wrote a pinned copy as row 42, then appended
    /// // message 0 as row 43.
    /// let stamp = t.stamp();
    /// t.set_row_id(1, 42);
    /// t.set_row_id(0, 43);
    /// assert!(t.pending_pin_writes().is_empty());
    /// assert_eq!(t.messages()[1].row_id(), Some(42));
    /// assert_eq!(t.stamp(), stamp); // a plan made before still applies
    /// ```
    pub fn set_row_id(&mut self, i: usize, id: i64) {
        let m = &mut self.messages.as_mut_slice()[i];
        if !self.pin_writes.is_empty() {
            let old = m.row_id();
            self.pin_writes.retain(|&(r, _)| r != id && Some(r) != old);
        }
        m.meta_mut().row_id = Some(id);
    }

    /// Pins or unpins message `i` ([`Meta::pinned`](crate::Meta::pinned)): no pass prunes,
    /// trims, summarizes or reorders a pinned message, and its tool group stays whole with it.
    /// Metadata only (token counts are unchanged), but plans made before are refused by
    /// `assemble` like after any change. Returns `false` (and changes nothing) when `i` is out
    /// of range.
    ///
    /// ```
    /// use compaction_core::{Estimator, Message, Transcript};
    /// let mut t = Transcript::new(
    ///     vec![Message::system("s"), Message::user("keep this"), Message::assistant("ok")],
    ///     &Estimator::default(),
    /// );
    /// assert!(t.pin(1, true));
    /// assert!(!t.pin(7, true));
    /// assert_eq!(t.pinned(), vec![1]);
    /// ```
    pub fn pin(&mut self, i: usize, pinned: bool) -> bool {
        if i >= self.len() {
            return false;
        }
        if self.messages()[i].is_pinned() != pinned {
            self.stamp = next_stamp();
            self.lineage = next_stamp();
            self.messages.as_mut_slice()[i].meta_mut().pinned = pinned;
            if let Some(row) = self.messages()[i].row_id() {
                if !self.pin_writes.is_empty() {
                    // Changes to messages a pass has removed since are dropped here.
                    let held = self.held_rows();
                    self.pin_writes
                        .retain(|&(r, _)| r != row && held.contains(&r));
                }
                self.pin_writes.push((row, pinned));
            }
        }
        true
    }

    /// Pin changes a store has not recorded yet: `(row id, pinned)` for each message the
    /// transcript holds with a [row id](crate::Message::row_id) whose pin [`pin`](Self::pin)
    /// changed since the store last wrote it, in the order they were made. A message without
    /// a row id carries its pin into the store with the rest of its metadata, so it is not
    /// listed. A store layer writes these and records each with
    /// [`set_row_id`](Self::set_row_id) (see its example); nothing else needs them.
    pub fn pending_pin_writes(&self) -> Vec<(i64, bool)> {
        if self.pin_writes.is_empty() {
            return Vec::new();
        }
        let held = self.held_rows();
        self.pin_writes
            .iter()
            .copied()
            .filter(|(r, _)| held.contains(r))
            .collect()
    }

    /// The row ids of the messages the transcript holds.
    fn held_rows(&self) -> std::collections::HashSet<i64> {
        self.messages().iter().filter_map(Message::row_id).collect()
    }

    /// Indices of the pinned messages, in order.
    pub fn pinned(&self) -> Vec<usize> {
        self.messages()
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.is_pinned().then_some(i))
            .collect()
    }

    /// Index of the latest real user request, if any: the last user message that carries
    /// visible text of the user's own and is no library marker (a blank or image-only user
    /// message, which platforms echo, is never the request, nor an image whose payload became
    /// a placeholder text after compaction; spec section 1, "Tail"). O(1): the index
    /// is kept current by every splice (after a metadata change of a user message, the next
    /// call scans back from the end once per splice).
    pub fn last_real_user(&self) -> Option<usize> {
        match self.last_user {
            Some(known) => known,
            None => self.messages().iter().rposition(is_real_user),
        }
    }
}

impl Transcript {
    /// Index of the last assistant reply the user saw: visible text, no tool calls, not a
    /// summary marker (`regions::last_visible_reply`
    /// over the whole transcript). O(1) like [`last_real_user`](Self::last_real_user): kept
    /// current by every push and splice (after a metadata change of an assistant
    /// message, calls scan back from the end until the next splice).
    pub(crate) fn last_visible_reply(&self) -> Option<usize> {
        match self.last_reply {
            Some(known) => known,
            None => self.messages().iter().rposition(is_visible_reply),
        }
    }
}

fn is_visible_reply(m: &Message) -> bool {
    crate::marker::is_visible_reply(m)
}

fn is_real_user(m: &Message) -> bool {
    crate::marker::is_user_text(m)
}

/// Tool-group structure helpers over a slice of messages.
pub(crate) mod groups;
mod splice;

#[cfg(test)]
impl Transcript {
    /// Mutable library metadata of message `i` (row ids, marker kind). Metadata is never
    /// sent to a model, so token counts are unaffected. For tests of the caches it resets:
    /// elsewhere row ids are stamped with [`set_row_id`](Self::set_row_id), pins set with
    /// [`pin`](Self::pin), and a marker kind is set on a message before it is spliced in.
    pub(crate) fn meta_mut(&mut self, i: usize) -> &mut crate::message::Meta {
        let m = &mut self.messages.as_mut_slice()[i];
        if m.is_user() {
            // Its marker kind may change, and with it which user message is the latest real one.
            self.last_user = None;
        }
        if m.is_assistant() {
            // Likewise for the last visible reply.
            self.last_reply = None;
        }
        // The marker kind may change, and with it what a planner sees.
        self.stamp = next_stamp();
        self.lineage = next_stamp();
        m.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::tokens::Estimator;

    fn sample() -> Vec<Message> {
        vec![
            Message::system("sys"),
            Message::user("hello there"),
            Message::assistant_tool_calls("", vec![ToolCall::function("c1", "ls", "{}")]),
            Message::tool_result("c1", "a".repeat(400)),
            Message::assistant("done"),
        ]
    }

    #[test]
    fn prefix_sums_follow_splices() {
        let e = Estimator::default();
        let mut t = Transcript::new(sample(), &e);
        let total = t.estimated_total();
        assert_eq!(t.tokens_in(0..t.len()), total);
        let big = t.tokens_of(3);
        t.replace(3, Message::tool_result("c1", "short"), &e);
        assert_eq!(
            t.estimated_total(),
            total - big + e.count_message(&t.messages()[3])
        );
        let fresh = Transcript::new(t.messages().to_vec(), &e);
        assert_eq!(fresh.estimated_total(), t.estimated_total());
        for i in 0..t.len() {
            assert_eq!(fresh.tokens_of(i), t.tokens_of(i));
        }
    }

    #[test]
    fn calibration_counts_only_the_delta_and_dies_on_rewrite() {
        let e = Estimator::default();
        let mut t = Transcript::new(sample(), &e);
        t.calibrate(1000, 4);
        assert_eq!(t.current_tokens(), 1000 + t.tokens_of(4));
        t.push(Message::user("more"), &e);
        assert_eq!(t.current_tokens(), 1000 + t.tokens_in(4..6));
        t.splice(5..6, vec![], &e);
        assert_eq!(t.calibration().map(|c| c.messages), Some(4));
        t.replace(2, Message::assistant("x"), &e);
        assert_eq!(t.calibration(), None);
        assert_eq!(t.current_tokens(), t.estimated_total());
    }

    #[test]
    fn insertion_at_the_calibration_boundary_is_counted_as_new() {
        let e = Estimator::default();
        let mut t = Transcript::new(sample(), &e);
        t.calibrate(1000, 4);
        let added = Message::user("appended after the measured request");
        let added_tokens = e.count_message(&added);
        t.splice(4..4, vec![added], &e);
        assert_eq!(t.calibration().map(|c| c.messages), Some(4));
        assert_eq!(t.current_tokens(), 1000 + added_tokens + t.tokens_of(5));
    }

    #[test]
    fn the_stamp_changes_with_content_and_only_with_content() {
        let e = Estimator::default();
        let mut t = Transcript::new(sample(), &e);
        let same = Transcript::new(sample(), &e);
        assert_ne!(
            t.stamp(),
            same.stamp(),
            "separately built transcripts differ"
        );
        let clone = t.clone();
        assert_eq!(clone.stamp(), t.stamp(), "an unchanged clone is the same");
        let mut seen = vec![t.stamp()];
        let mut changed = |t: &Transcript, what: &str| {
            assert!(!seen.contains(&t.stamp()), "{what} kept or reused a stamp");
            seen.push(t.stamp());
        };
        t.push(Message::user("more"), &e);
        changed(&t, "push");
        t.splice(1..2, vec![Message::user("other")], &e);
        changed(&t, "splice");
        t.replace(1, Message::user("again"), &e);
        changed(&t, "replace");
        t.splice_many(vec![(0..0, vec![]), (2..3, vec![])], &e);
        changed(&t, "splice_many");
        t.meta_mut(0);
        changed(&t, "meta_mut");
        let before = t.stamp();
        t.set_row_id(0, 9);
        t.calibrate(100, 1);
        assert_eq!(
            t.stamp(),
            before,
            "a row id or a calibration is not a content change"
        );
    }

    #[test]
    fn latest_user_index_follows_every_mutation() {
        let e = Estimator::default();
        let fresh = |t: &Transcript| Transcript::new(t.messages().to_vec(), &e).last_real_user();
        let mut t = Transcript::new(sample(), &e);
        assert_eq!(t.last_real_user(), Some(1));
        t.push(Message::user("next"), &e);
        assert_eq!(t.last_real_user(), Some(5));
        // Removed: found again before the splice.
        t.splice(4..6, vec![], &e);
        assert_eq!(t.last_real_user(), fresh(&t));
        assert_eq!(t.last_real_user(), Some(1));
        // Shifted by a splice before it.
        t.splice(
            0..0,
            vec![Message::assistant("a"), Message::assistant("b")],
            &e,
        );
        assert_eq!(t.last_real_user(), Some(3));
        // A marker is not a real user message; a replacement's user is.
        let m = crate::marker::render(crate::MarkerKind::Micro, crate::Role::User, "s");
        t.push(m, &e);
        assert_eq!(t.last_real_user(), Some(3));
        t.splice(3..4, vec![Message::user("x"), Message::assistant("y")], &e);
        assert_eq!(t.last_real_user(), Some(3));
        t.replace(3, Message::assistant("no user"), &e);
        assert_eq!(t.last_real_user(), None);
        assert_eq!(fresh(&t), None);
        // Stamping a user message as a marker through its metadata is seen at once.
        t.push(Message::user("real"), &e);
        let last = t.len() - 1;
        assert_eq!(t.last_real_user(), Some(last));
        t.meta_mut(last).marker = Some(crate::MarkerKind::Batch);
        assert_eq!(t.last_real_user(), None);
        t.push(Message::assistant("after"), &e);
        assert_eq!(t.last_real_user(), None);
        t.meta_mut(last).marker = None;
        t.splice(0..0, vec![], &e);
        assert_eq!(t.last_real_user(), Some(last));
        // A row id stamp keeps the index known.
        t.set_row_id(last, 42);
        assert_eq!(t.last_user, Some(Some(last)));
        assert_eq!(t.messages()[last].row_id(), Some(42));
    }

    #[test]
    fn suffix_search() {
        let e = Estimator::default();
        let t = Transcript::new(sample(), &e);
        let n = t.len();
        for budget in [0, 1, 5, 50, 200, 10_000] {
            let s = t.suffix_start_within(n, budget);
            assert!(t.tokens_in(s..n) <= budget);
            if s > 0 {
                assert!(t.tokens_in(s - 1..n) > budget);
            }
        }
    }

    #[test]
    fn group_alignment() {
        let m = sample();
        assert!(groups::splits_group(&m, 3));
        assert_eq!(groups::group_start(&m, 3), 2);
        assert_eq!(groups::align_forward(&m, 3), 4);
        assert_eq!(groups::units(&m, 0..5), vec![0..1, 1..2, 2..4, 4..5]);
    }

    #[test]
    fn a_tool_loop_after_the_last_visible_reply_does_not_move_it() {
        let e = Estimator::default();
        let mut t = Transcript::new(
            vec![Message::user("fix it"), Message::assistant("Fixed.")],
            &e,
        );
        assert_eq!(t.last_visible_reply(), Some(1));
        t.push(
            Message::assistant_tool_calls("", vec![ToolCall::function("c1", "sh", "{}")]),
            &e,
        );
        t.push(Message::tool_result("c1", "ok"), &e);
        assert_eq!(t.last_visible_reply(), Some(1));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

        #[test]
        fn suffix_search_is_the_tightest_fit(
            msgs in crate::strategies::transcript(),
            budget in 0u64..20_000,
        ) {
            let t = Transcript::new(msgs, &Estimator::default());
            let n = t.len();
            let s = t.suffix_start_within(n, budget);
            proptest::prop_assert!(t.tokens_in(s..n) <= budget);
            if s > 0 {
                proptest::prop_assert!(t.tokens_in(s - 1..n) > budget);
            }
        }
    }

    proptest::proptest! {
        /// Whichever side a splice moves, every prefix sum, the suffix search, the latest
        /// user index and the last visible reply agree with a transcript counted from scratch
        /// (replies among tool calls, tool results, blank replies and summary markers; pushes,
        /// splices, one-splice `splice_many` and marker kinds set through `meta_mut`).
        #[test]
        fn token_cache_survives_any_sequence_of_splices_and_pushes(
            len in 0usize..200,
            ops in proptest::collection::vec((0usize..260, 0usize..6, 0usize..4, 0u8..6), 1..40),
        ) {
            let e = Estimator::default();
            let text = |i: usize| format!("m{i} {}", "x".repeat(i % 23 * 9));
            let msg = |i: usize| match i % 7 {
                0 | 4 => Message::user(text(i)),
                2 => Message::assistant_tool_calls(
                    "",
                    vec![ToolCall::function(format!("c{i}"), "sh", "{}")],
                ),
                3 => Message::tool_result(format!("c{i}"), text(i)),
                5 => Message::assistant("  "),
                6 => crate::marker::render(crate::MarkerKind::Batch, crate::Role::Assistant, "s"),
                _ => Message::assistant(text(i)),
            };
            let mut t = Transcript::new((0..len).map(msg).collect(), &e);
            let mut next = len;
            for (at, del, ins, kind) in ops {
                let start = at.min(t.len());
                let end = (start + del).min(t.len());
                let replacement: Vec<Message> = (0..ins).map(|k| msg(next + k)).collect();
                match kind {
                    0 => {
                        t.push(msg(next), &e);
                        next += 1;
                    }
                    1 => {
                        next += ins;
                        t.splice_many(vec![(start..end, replacement)], &e);
                    }
                    2 if start < t.len() => {
                        let m = t.meta_mut(start);
                        m.marker = match m.marker {
                            Some(_) => None,
                            None => Some(crate::MarkerKind::Micro),
                        };
                    }
                    _ => {
                        next += ins;
                        t.splice(start..end, replacement, &e);
                    }
                }
                let fresh = Transcript::new(t.messages().to_vec(), &e);
                for i in 0..=t.len() {
                    proptest::prop_assert_eq!(t.tokens_in(0..i), fresh.tokens_in(0..i));
                    proptest::prop_assert_eq!(t.tokens_in(i..t.len()), fresh.tokens_in(i..t.len()));
                }
                proptest::prop_assert_eq!(t.estimated_total(), fresh.estimated_total());
                for budget in [0u64, 7, 40, 300, 5_000] {
                    proptest::prop_assert_eq!(
                        t.suffix_start_within(t.len(), budget),
                        fresh.suffix_start_within(t.len(), budget)
                    );
                }
                proptest::prop_assert_eq!(t.last_real_user(), fresh.last_real_user());
                proptest::prop_assert_eq!(t.last_visible_reply(), fresh.last_visible_reply());
                proptest::prop_assert_eq!(
                    t.last_visible_reply(),
                    crate::regions::last_visible_reply(t.messages(), 0)
                );
            }
            let fresh = Transcript::new(t.messages().to_vec(), &e);
            proptest::prop_assert_eq!(t.into_messages(), fresh.into_messages());
        }
    }

    proptest::proptest! {
        #[test]
        fn splice_many_matches_applying_one_by_one(
            len in 0usize..30,
            cuts in proptest::collection::vec((0usize..30, 0usize..4, 0usize..3), 0..8),
        ) {
            let e = Estimator::default();
            let msgs: Vec<Message> = (0..len)
                .map(|i| Message::user(format!("m{i} {}", "x".repeat(i * 7))))
                .collect();
            // Ascending, non-overlapping splices from the random cuts.
            let mut splices = Vec::new();
            let mut at = 0;
            for (gap, del, ins) in cuts {
                let start = (at + gap % 5).min(len);
                let end = (start + del).min(len);
                let replacement: Vec<Message> =
                    (0..ins).map(|k| Message::assistant(format!("r{start}-{k}"))).collect();
                splices.push((start..end, replacement));
                at = end;
            }
            let expected = crate::edit::Edit {
                splices: splices
                    .iter()
                    .map(|(r, m)| crate::edit::Splice { range: r.clone(), replacement: m.clone() })
                    .collect(),
            }
            .apply(&msgs)
            .unwrap();
            let mut t = Transcript::new(msgs.clone(), &e);
            let removed = t.splice_many(splices.clone(), &e);
            proptest::prop_assert_eq!(t.messages(), &expected[..]);
            let fresh = Transcript::new(expected.clone(), &e);
            for i in 0..=t.len() {
                proptest::prop_assert_eq!(t.tokens_in(0..i), fresh.tokens_in(0..i));
            }
            let removed_expected: usize = splices.iter().map(|(r, _)| r.len()).sum();
            proptest::prop_assert_eq!(removed.len(), removed_expected);
            proptest::prop_assert_eq!(t.last_real_user(), fresh.last_real_user());
            proptest::prop_assert_eq!(t.last_visible_reply(), fresh.last_visible_reply());
        }
    }
}
