//! Foresight: what a policy could reach if it knew which messages the next answers need; a
//! measure, not a mechanism.
//!
//! A replay knows the recorded session's future. A [`Variant::foresight`](crate::Variant)
//! of `k` uses it: before every hook, the messages of the transcript that the recorded
//! answers of the next `k` requests need are [pinned](hermes_compaction::core::Transcript::pin)
//! and every other message unpinned (a pin the recorded session carried included), so the
//! policy's passes keep exactly those verbatim and rewrite the rest as they would. *Needed*
//! is the [re-read model](crate::reread)'s rule: for each identifier an answer uses that an
//! earlier recorded message holds, the latest such message (what a re-read would fetch).
//! Only unchanged original messages are pinned (a message trimmed on insertion, a summary or
//! a one-liner is not one).
//!
//! What it answers: with knowledge of the next `k` answers, how cheap can a policy's pass
//! structure (its trigger, head, summary and tail) be at a given content recall? A real
//! mechanism's distance from it is what a better predictor of future use could still win.
//! It is a strong choice, not a proven optimum (it keeps the latest holder of each need for
//! a fixed number of answers, whatever the message's size). It is slightly pessimistic on
//! cost: a pin changes the transcript's [lineage](hermes_compaction::core::Transcript::lineage),
//! so a pass right after a pin change sends its summary request without the agent's warm
//! prefix.

use std::collections::HashMap;

use hermes_compaction::core::{Message, Transcript};

use crate::recall;
use crate::retention::Wire;

/// The foresight pins of one recorded session (see the [module docs](self)).
///
/// ```
/// use compaction_sim::foresight::Foresight;
/// use compaction_sim::retention::Wire;
/// use hermes_compaction::core::{Estimator, Message, ToolCall, Transcript};
///
/// let msgs = vec![
///     Message::user("fix the parser"),
///     Message::assistant_tool_calls("", vec![ToolCall::function("c1", "read", r#"{"p":"a.rs"}"#)]),
///     Message::tool_result("c1", "fn parse_header() {}"),
///     Message::assistant("parse_header is the bug"),
/// ];
/// let f = Foresight::new(&msgs, 1);
/// let wires: Vec<Wire> = msgs.iter().map(Wire::of).collect();
/// let mut t = Transcript::new(msgs.clone(), &Estimator::default());
/// // Before the answer (message 3): the tool output it quotes is pinned, nothing else.
/// f.pin(&mut t, &wires, 3);
/// assert_eq!(t.pinned(), vec![2]);
/// // After it, nothing is needed any more.
/// f.pin(&mut t, &wires, 4);
/// assert!(t.pinned().is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct Foresight {
    horizon: usize,
    /// Per recorded message: the answers (by request number) that need it, ascending.
    uses: Vec<Vec<usize>>,
    /// Wire digest of a recorded message -> its index (the latest, for repeats).
    index_of: HashMap<u64, usize>,
    /// Per recorded message index (and one past the end): the answers before it.
    answers_before: Vec<usize>,
}

impl Foresight {
    /// The pins of `msgs` (the recorded session) with `horizon` answers of foresight.
    pub fn new(msgs: &[Message], horizon: usize) -> Foresight {
        let mut last_seen: HashMap<u64, usize> = HashMap::new();
        let mut uses = vec![Vec::new(); msgs.len()];
        let mut index_of = HashMap::with_capacity(msgs.len());
        let mut answers_before = Vec::with_capacity(msgs.len() + 1);
        let mut answer = 0usize;
        for (i, m) in msgs.iter().enumerate() {
            answers_before.push(answer);
            let w = Wire::of(m);
            let (all, used) = recall::identifier_digests(&w);
            if m.is_assistant() {
                for id in used.iter() {
                    if let Some(&j) = last_seen.get(id)
                        && uses[j].last() != Some(&answer)
                    {
                        uses[j].push(answer);
                    }
                }
                answer += 1;
            }
            for id in all.iter() {
                last_seen.insert(*id, i);
            }
            index_of.insert(w.hash, i);
        }
        answers_before.push(answer);
        Foresight {
            horizon,
            uses,
            index_of,
            answers_before,
        }
    }

    /// The answers of foresight.
    pub fn horizon(&self) -> usize {
        self.horizon
    }

    /// Before recorded message `next` is handled (its hooks not yet called): pins the
    /// messages of `t` that an answer among the next [`horizon`](Self::horizon) needs and
    /// unpins the rest. `wires` are `t`'s messages in wire form (their digests identify the
    /// recorded messages); nothing happens when they are not in step with `t`.
    pub fn pin(&self, t: &mut Transcript, wires: &[Wire], next: usize) {
        if wires.len() != t.len() {
            return;
        }
        let from = self.answers_before[next.min(self.answers_before.len() - 1)];
        let to = from.saturating_add(self.horizon);
        for (i, w) in wires.iter().enumerate() {
            let needed = self.index_of.get(&w.hash).is_some_and(|&j| {
                let u = &self.uses[j];
                let first = u.partition_point(|&r| r < from);
                u.get(first).is_some_and(|&r| r < to)
            });
            t.pin(i, needed);
        }
    }
}
