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
        }
    }

    /// A stamp that identifies this exact content. It changes on every mutation ([`push`],
    /// [`splice`], [`replace`], [`meta_mut`], applying an [`Edit`](crate::Edit)), is never
    /// reused within the process, and is shared only by clones that neither side has changed
    /// since. Plans record it, and [`batch::assemble`](crate::batch::assemble) refuses a
    /// transcript whose stamp differs, so an edit that keeps the length and the token total (a
    /// same-size rewrite of one message) is caught in O(1), without hashing the messages.
    /// Stamping a row id ([`set_row_id`]) and calibrating change no content and keep the stamp.
    ///
    /// [`push`]: Self::push
    /// [`splice`]: Self::splice
    /// [`replace`]: Self::replace
    /// [`meta_mut`]: Self::meta_mut
    /// [`set_row_id`]: Self::set_row_id
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Identifies a history of appends: unchanged while [`push`](Self::push) is the only
    /// mutation, so two observations with the same lineage see the same first `len` messages
    /// (the shorter one's length). Every other mutation, and every clone, starts a new one.
    /// Planners use it to resume a scan of an append-only transcript instead of redoing it.
    pub(crate) fn lineage(&self) -> u64 {
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

    /// Replaces message `i` in place (e.g. a pruned tool output).
    pub fn replace(&mut self, i: usize, m: Message, counter: &dyn TokenCounter) -> Message {
        self.splice(i..i + 1, vec![m], counter)
            .pop()
            .expect("one message removed")
    }

    /// Stamps message `i` with its store row id. Metadata only, and not the marker kind, so
    /// counts and the latest-user index stay as they are (unlike [`meta_mut`](Self::meta_mut)).
    pub fn set_row_id(&mut self, i: usize, id: i64) {
        self.messages.as_mut_slice()[i].meta_mut().row_id = Some(id);
    }

    /// Mutable library metadata of message `i` (row ids, marker kind). Metadata is never
    /// sent to a model, so token counts are unaffected.
    pub fn meta_mut(&mut self, i: usize) -> &mut crate::message::Meta {
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
            self.messages.as_mut_slice()[i].set_pinned(pinned);
        }
        true
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
    /// visible text and is no library marker ([`marker::is_user_text`](crate::marker::is_user_text):
    /// a blank or image-only user message, which
    /// platforms echo, is never the request; spec section 1, "Tail"). O(1): the index
    /// is kept current by every splice (after [`meta_mut`](Self::meta_mut) of a user message,
    /// the next call scans back from the end once per splice).
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
    /// current by every push and splice (after [`meta_mut`](Self::meta_mut) of an assistant
    /// message, calls scan back from the end until the next splice).
    pub(crate) fn last_visible_reply(&self) -> Option<usize> {
        match self.last_reply {
            Some(known) => known,
            None => self.messages().iter().rposition(is_visible_reply),
        }
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

fn is_visible_reply(m: &Message) -> bool {
    crate::marker::is_visible_reply(m)
}

fn is_real_user(m: &Message) -> bool {
    crate::marker::is_user_text(m)
}

/// Tool-group structure helpers over a slice of messages.
pub(crate) mod groups;

#[cfg(test)]
mod tests;
