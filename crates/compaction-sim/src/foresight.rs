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
//!
//! [`Needs`] is the table both rest on, one row per recorded message: which answers need it.
//! `simulate --needs FILE` writes it, without text, for predictors to be trained and scored
//! offline (`tools/predictors/`; docs/ECONOMICS.md, "What predicts the next answers' needs").

use std::collections::HashMap;

use hermes_compaction::core::{Message, Role, Transcript};

use crate::recall;
use crate::retention::Wire;

/// Which answers of a recorded session need each of its messages, by the
/// [re-read model](crate::reread)'s rule: for each identifier an answer uses that an earlier
/// message holds, the latest such message.
///
/// ```
/// use compaction_sim::foresight::Needs;
/// use hermes_compaction::core::{Message, ToolCall};
///
/// let msgs = vec![
///     Message::user("fix the parser"),
///     Message::assistant_tool_calls("", vec![ToolCall::function("c1", "read", r#"{"p":"a.rs"}"#)]),
///     Message::tool_result("c1", "fn parse_header() {}"),
///     Message::assistant("parse_header is the bug"),
/// ];
/// let needs = Needs::of(&msgs);
/// // The tool output is needed by answer 1 (the second assistant message), nothing else is.
/// assert_eq!(needs.used_by(2), &[1]);
/// assert!(needs.used_by(0).is_empty());
/// // Message 3 is answer 1; before it came one answer.
/// assert_eq!(needs.answers_before(3), 1);
/// // One JSON line without text: roles, tools, sizes, uses and identifier digests.
/// let line = needs.json_line("demo.jsonl", &msgs);
/// let v: serde_json::Value = serde_json::from_str(&line).unwrap();
/// assert_eq!(v["messages"][2]["tool"], "read");
/// assert_eq!(v["messages"][2]["used_by"], serde_json::json!([1]));
/// assert!(!line.contains("parse_header"));
/// ```
#[derive(Clone, Debug)]
pub struct Needs {
    /// Per message: the answers (counted from 0 over the assistant messages) that need it,
    /// ascending.
    uses: Vec<Vec<usize>>,
    /// Per message (and one past the end): the answers before it.
    answers_before: Vec<usize>,
    /// Per message: the digests of the identifiers it holds, and its wire form's size and
    /// digest.
    ids: Vec<Box<[u64]>>,
    wires: Vec<(u64, u64)>,
}

impl Needs {
    /// The needs of `msgs`, a recorded session in order.
    pub fn of(msgs: &[Message]) -> Needs {
        let mut last_seen: HashMap<u64, usize> = HashMap::new();
        let mut uses = vec![Vec::new(); msgs.len()];
        let mut answers_before = Vec::with_capacity(msgs.len() + 1);
        let mut ids = Vec::with_capacity(msgs.len());
        let mut wires = Vec::with_capacity(msgs.len());
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
            ids.push(all);
            wires.push((w.chars, w.hash));
        }
        answers_before.push(answer);
        Needs {
            uses,
            answers_before,
            ids,
            wires,
        }
    }

    /// The messages.
    pub fn len(&self) -> usize {
        self.uses.len()
    }

    /// Whether the session has no message.
    pub fn is_empty(&self) -> bool {
        self.uses.is_empty()
    }

    /// The answers that need message `i`, ascending (empty past the end).
    pub fn used_by(&self, i: usize) -> &[usize] {
        self.uses.get(i).map_or(&[], Vec::as_slice)
    }

    /// The assistant messages before message `i` (for `i` at or past the end: all of them).
    pub fn answers_before(&self, i: usize) -> usize {
        self.answers_before[i.min(self.answers_before.len() - 1)]
    }

    /// One JSON line for `name` (the transcript's file name) and `msgs` (the messages
    /// [`of`](Self::of) was given), without text: `{"transcript", "messages": [{"role",
    /// "tool", "chars", "answer", "used_by", "ids"}]}`. `role` is `system`, `developer`,
    /// `user`, `assistant`, `tool` or `other`; `tool` the name of the call a tool message
    /// answers (else null); `chars` the Unicode scalar values of its compact wire JSON (the
    /// issue units' measure); `answer` the assistant messages before it (for an assistant
    /// message, its own answer number); `used_by` [`used_by`](Self::used_by); `ids` the
    /// 16-hex-digit digests of the identifiers it holds (far recall's notion of identifier).
    pub fn json_line(&self, name: &str, msgs: &[Message]) -> String {
        let mut tool_of: HashMap<&str, &str> = HashMap::new();
        let rows: Vec<serde_json::Value> = msgs
            .iter()
            .enumerate()
            .take(self.len())
            .map(|(i, m)| {
                for c in m.tool_calls() {
                    tool_of.insert(c.id.as_str(), c.function.name.as_str());
                }
                let role = match m.role() {
                    Role::Other(_) => "other",
                    r => r.as_str(),
                };
                let tool = m
                    .is_tool()
                    .then(|| m.tool_call_id().and_then(|id| tool_of.get(id).copied()))
                    .flatten();
                serde_json::json!({
                    "role": role,
                    "tool": tool,
                    "chars": self.wires[i].0,
                    "answer": self.answers_before[i],
                    "used_by": self.uses[i],
                    "ids": self.ids[i].iter().map(|d| format!("{d:016x}")).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::json!({ "transcript": name, "messages": rows }).to_string()
    }
}

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
    needs: Needs,
    /// Wire digest of a recorded message -> its index (the latest, for repeats).
    index_of: HashMap<u64, usize>,
}

impl Foresight {
    /// The pins of `msgs` (the recorded session) with `horizon` answers of foresight.
    pub fn new(msgs: &[Message], horizon: usize) -> Foresight {
        let needs = Needs::of(msgs);
        let index_of = needs
            .wires
            .iter()
            .enumerate()
            .map(|(i, &(_, hash))| (hash, i))
            .collect();
        Foresight {
            horizon,
            needs,
            index_of,
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
        let from = self.needs.answers_before(next);
        let to = from.saturating_add(self.horizon);
        for (i, w) in wires.iter().enumerate() {
            let needed = self.index_of.get(&w.hash).is_some_and(|&j| {
                let u = self.needs.used_by(j);
                let first = u.partition_point(|&r| r < from);
                u.get(first).is_some_and(|&r| r < to)
            });
            t.pin(i, needed);
        }
    }
}
