//! The laws of spec section 2 as a public checker.
//!
//! [`check`] takes the transcript before a pass, the transcript after it, and a [`Pass`]
//! describing what kind of pass ran and what it promised not to touch, and returns every
//! [`Violation`] it can decide from those two transcripts. An empty list means the pass kept
//! every law this module checks. Violations name laws and message indices, never message
//! text, so they can be logged or shown in a test failure as they are.
//!
//! The laws judge what the *pass* did, not what the transcript was: real transcripts are
//! imperfect, and an orphan tool result or a pair of adjacent user messages that `before`
//! already had is not held against the pass.
//!
//! | law | checked here | for pass kinds |
//! |---|---|---|
//! | 1 head and tail untouched, pins kept | yes ([`Violation::HeadChanged`], [`Violation::TailChanged`], [`Violation::PinnedMissing`], [`Violation::UserPinLost`]) | batch, prune, micro, defrag |
//! | 2 tool integrity | yes | batch, prune, micro, defrag |
//! | 3 roles, a user message with text survives | yes ([`Violation::NoUserText`], [`Violation::ExtraContinuation`], [`Violation::NeedlessContinuation`] for the continuation) | batch, prune, micro, defrag |
//! | 4 micro never summarizes user text | yes | micro, defrag |
//! | 5 one rolling marker | yes | micro, defrag |
//! | 6 failure changes nothing | yes | failed, unchanged |
//! | 7 cursor recovery | no: it needs a compressor to recover the cursor from `after`; the micro-compaction crate checks it | — |
//! | 8 progress | yes, when [`LawOptions::expect_progress`] is set | batch, prune, micro, defrag |
//! | 9 nothing lost in storage | no: it is a property of the store, checked by its tests | — |
//!
//! For a failed or unchanged pass only law 6 is checked: `after` must equal `before` (content
//! of every message, in order), which implies every other law.
//!
//! A real pass need not be described by hand: [`Pass::of_batch`] and [`Pass::of_micro`] build
//! the description from the plan (tail demotion included), and the facade's pass runner sets
//! it on every report it returns (its `law` field).
//!
//! How the less obvious laws are decided:
//!
//! - **Identity.** Every law compares messages by content: what a model sees
//!   ([`Message::to_wire_json`]). Library metadata (row ids a store stamps, marker kinds,
//!   trimmed handles, anything else under `_hermes`) is not content, so a check taken before a
//!   flush stamped row ids still holds after it.
//! - **Law 2** counts, for each tool call in `after`, the results that follow it. A call that
//!   had results in `before` must have exactly one; a result must follow a call with its id,
//!   inside that call's group (only tool results between the assistant message and it, as
//!   providers demand: a result moved past the next assistant or user message is
//!   [`Violation::NonAdjacentToolResult`]). An orphan, a repeat or a non-adjacent result that
//!   `before` already had is inherited, not a violation.
//! - **Law 3** looks at the visible roles `user` and `assistant` (system blocks and tool
//!   results legitimately repeat). A same-role pair is allowed when the identical pair was
//!   adjacent in `before`; when a micro pass made two real user messages adjacent; and when a
//!   turn-progress marker is followed by an assistant message. With
//!   [`LawOptions::strict_alternation`] the last two are violations.
//! - **The continuation** (issue 21, item 14): a batch pass that wrote a summary leaves a user
//!   message with text of the user's own (not blank, not only an image, no library marker:
//!   what [`Transcript::last_real_user`](crate::Transcript::last_real_user) finds) or, when
//!   none remains, the
//!   library's [continuation](crate::marker::continuation) ([`Violation::NoUserText`], for a
//!   summary the pass wrote: one `before` already had is inherited); no pass leaves more
//!   continuations than one (or than `before` had, [`Violation::ExtraContinuation`]), nor adds
//!   one while user text survives ([`Violation::NeedlessContinuation`]). A continuation is
//!   never one of the user's messages: law 4 does not look for it in `before`.
//! - **Law 3, inherited pairs.** A same-role pair the pass kept is inherited even when it
//!   rewrote one of the two in place (a pruned call, an image placeholder): the checker lines
//!   `after` up with `before` (the messages that kept their content, in order, and between two
//!   of them a stretch with as many messages on both sides, rewritten one for one) and
//!   accepts a pair that stands where an adjacent same-role pair of `before` stood. Under
//!   strict alternation a join the pass made may stand next to a user that was already next
//!   to the join's last part (or first part): the pair is inherited when the first ends with,
//!   and the second starts with, the texts of two neighbours of `before`.
//! - **Law 5** counts micro markers over the whole transcript and turn-progress markers inside
//!   the active turn (after the last user message of the user's own), as spec section 2 says:
//!   a finished turn's progress marker may still stand in the middle.
//! - **Law 4** walks the real user messages of `before` (summary markers excluded) in order and
//!   finds each in `after`, at or after the previous match, as a user message with identical
//!   wire JSON. With strict alternation, a user message may instead be found as a verbatim
//!   substring of a later user message's text (several users joined with a separator),
//!   continuing after the previous substring match; inside a join, the next user message is
//!   looked for in the rest of that join before a verbatim copy further on (the same text
//!   may stand twice).
//!
//! ```
//! use compaction_core::laws::{self, Law, Pass, PassKind, Protected};
//! use compaction_core::{Estimator, Message, ToolCall};
//!
//! let before = vec![
//!     Message::system("sys"),
//!     Message::user("list the files"),
//!     Message::assistant_tool_calls("", vec![ToolCall::function("c1", "ls", "{}")]),
//!     Message::tool_result("c1", "a.txt b.txt"),
//!     Message::assistant("two files"),
//!     Message::user("thanks"),
//! ];
//! let pass = Pass::new(PassKind::Prune, Protected { head: 2, tail: 1, pinned: None });
//! let counter = Estimator::default();
//!
//! // Doing nothing keeps every law.
//! assert!(laws::check(&before, &before, &pass, &counter).is_empty());
//!
//! // Dropping a tool result breaks tool integrity.
//! let mut after = before.clone();
//! after.remove(3);
//! let violations = laws::check(&before, &after, &pass, &counter);
//! assert_eq!(violations[0].law(), Law::ToolIntegrity);
//! ```

use crate::batch::{BatchConfig, BatchPlan, BatchStep};
use crate::message::Message;
use crate::micro::{MicroConfig, MicroOutcome, MicroPlan, MicroStep};
use crate::regions::Regions;
use crate::tokens::TokenCounter;

mod checks;
mod violation;

use checks::{
    check_continuation, check_markers, check_pins, check_protected, check_roles, check_tools,
    check_unchanged, check_user_text,
};
pub use violation::{Law, Violation};

/// What kind of pass produced `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PassKind {
    /// A batch compaction (prune, then summarize the middle).
    Batch,
    /// A prune-only pass (no summarizer).
    Prune,
    /// A micro pass that absorbed an exchange into the rolling marker.
    Micro,
    /// A defrag: the rolling marker rewritten shorter in place.
    Defrag,
    /// A pass whose summarizer or store failed.
    Failed,
    /// A pass that decided to change nothing (gated, nothing to absorb).
    Unchanged,
}

impl PassKind {
    /// Micro-family passes (micro, defrag), for which laws 4 and 5 hold.
    pub(crate) fn is_micro_family(self) -> bool {
        matches!(self, PassKind::Micro | PassKind::Defrag)
    }

    /// Passes that must leave the transcript byte-identical (law 6).
    pub(crate) fn must_change_nothing(self) -> bool {
        matches!(self, PassKind::Failed | PassKind::Unchanged)
    }
}

/// What of `before` the pass promised not to touch (law 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Protected {
    /// Length of the head: `before[..head]` must equal `after[..head]`.
    pub head: usize,
    /// Length of the tail: the last `tail` messages of both must be equal.
    pub tail: usize,
    /// Index in `before` of a pinned message (the user request of a split long turn), which
    /// must appear unchanged in `after` between the head and the tail.
    pub pinned: Option<usize>,
}

impl Protected {
    /// The protected regions of a [`partition`](crate::regions::partition) of `before`.
    pub fn from_regions(r: &Regions) -> Protected {
        Protected {
            head: r.head.len(),
            tail: r.tail.len(),
            pinned: r.turn_user,
        }
    }
}

/// Options that change what the laws demand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LawOptions {
    /// The strict-alternation option was on: the two role exceptions of law 3 (user messages
    /// made adjacent by a micro pass, a progress marker followed by an assistant) become
    /// violations, and law 4 accepts a user message found verbatim *inside* a joined user
    /// message.
    pub strict_alternation: bool,
    /// Law 8 applies: the pass must have shrunk the transcript. Leave it off for a first micro
    /// pass (marker scaffolding) or when the outcome says why it could not.
    pub expect_progress: bool,
    /// The pass reported the last-resort demotion of section 4a: tool results in the tail or
    /// the protected opening may have been rewritten in place (same position, same
    /// `tool_call_id`), and assistants' tool calls there may have had their long arguments
    /// shortened (same text, same calls by id and name).
    pub tail_demotion_reported: bool,
}

/// A description of one pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// The kind of pass.
    pub kind: PassKind,
    /// What of `before` it promised not to touch.
    pub protected: Protected,
    /// Options.
    pub options: LawOptions,
}

impl Pass {
    /// A pass with default options.
    pub fn new(kind: PassKind, protected: Protected) -> Pass {
        Pass {
            kind,
            protected,
            options: LawOptions::default(),
        }
    }

    /// The pass `plan` describes: its protected regions, the tail demotion it reports, the
    /// strict-alternation option of `cfg`, and law 8 for a pass that changes the transcript.
    /// `ended` says how the pass ended. A pass that left the transcript as it was is
    /// [`PassKind::Failed`] (its summarizer or store failed) or [`PassKind::Unchanged`] (it
    /// chose to change nothing, e.g. its edit would not have gained), as given. Any other kind
    /// (say [`PassKind::Batch`]) says the plan's edit was applied, and the plan names the kind:
    /// [`PassKind::Batch`] when it summarized, [`PassKind::Prune`] when it only pruned,
    /// [`PassKind::Unchanged`] when it planned nothing.
    ///
    /// ```
    /// use compaction_core::batch::{self, BatchConfig, BatchRequest};
    /// use compaction_core::laws::{self, Pass, PassKind};
    /// use compaction_core::{Estimator, Message, ToolCall, Transcript};
    ///
    /// let counter = Estimator::default();
    /// let mut msgs = vec![Message::system("sys")];
    /// for i in 0..30 {
    ///     let id = format!("c{i}");
    ///     msgs.push(Message::user(format!("step {i}")));
    ///     msgs.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "ls", "{}")]));
    ///     msgs.push(Message::tool_result(&id, "file\n".repeat(400)));
    ///     msgs.push(Message::assistant("ok"));
    /// }
    /// let mut t = Transcript::new(msgs.clone(), &counter);
    /// let cfg = BatchConfig::default();
    /// let req = BatchRequest { force: true, prune_only: true, ..BatchRequest::default() };
    /// let plan = batch::plan_batch(&t, 8_000, &cfg, &req, &counter);
    /// let edit = batch::assemble(&t, &plan, &[], &cfg).unwrap();
    /// edit.apply_to(&mut t, &counter).unwrap();
    /// let pass = Pass::of_batch(&plan, &cfg, PassKind::Batch);
    /// assert_eq!(pass.kind, PassKind::Prune); // a prune-only plan, applied
    /// assert!(laws::check(&msgs, t.messages(), &pass, &counter).is_empty());
    /// // Had it failed, or chosen to keep the transcript as it was:
    /// assert_eq!(Pass::of_batch(&plan, &cfg, PassKind::Unchanged).kind, PassKind::Unchanged);
    /// ```
    pub fn of_batch(plan: &BatchPlan, cfg: &BatchConfig, ended: PassKind) -> Pass {
        let kind = match (ended, &plan.step) {
            (PassKind::Failed | PassKind::Unchanged, _) => ended,
            (_, BatchStep::Nothing(_)) => PassKind::Unchanged,
            (_, BatchStep::PruneOnly { .. }) => PassKind::Prune,
            (_, BatchStep::Summarize(_)) => PassKind::Batch,
        };
        Pass {
            kind,
            protected: Protected::from_regions(&plan.regions),
            options: LawOptions {
                strict_alternation: cfg.strict_alternation,
                expect_progress: matches!(kind, PassKind::Prune | PassKind::Batch),
                tail_demotion_reported: plan.demoted_tail_outputs > 0,
            },
        }
    }

    /// The pass a micro plan describes, given what [`assemble_micro`](crate::micro::assemble_micro)
    /// returned (`None` when the pass failed or never assembled). Law 8 is left off: a first
    /// micro pass may grow the transcript (the marker's scaffolding); set
    /// [`LawOptions::expect_progress`] yourself from the second pass on.
    pub fn of_micro(plan: &MicroPlan, cfg: &MicroConfig, outcome: Option<&MicroOutcome>) -> Pass {
        let kind = match (&plan.step, outcome) {
            (MicroStep::Absorb(_), Some(MicroOutcome::Absorbed { .. }))
            | (MicroStep::Absorb(_), Some(MicroOutcome::Progressed { .. })) => PassKind::Micro,
            (MicroStep::Defrag(_), Some(MicroOutcome::Defrag { .. })) => PassKind::Defrag,
            (MicroStep::Absorb(_) | MicroStep::Defrag(_), None) => PassKind::Failed,
            _ => PassKind::Unchanged,
        };
        Pass {
            kind,
            protected: Protected::from_regions(&plan.regions),
            options: LawOptions {
                strict_alternation: cfg.strict_alternation,
                ..LawOptions::default()
            },
        }
    }
}

/// Checks a pass against the laws this module decides (see the [module docs](self)).
///
/// `counter` is used only for law 8, when [`LawOptions::expect_progress`] is set.
///
/// ```
/// use compaction_core::laws::{self, Pass, PassKind, Protected};
/// use compaction_core::{Edit, Estimator, Message};
///
/// let before = vec![
///     Message::system("sys"),
///     Message::user("first request"),
///     Message::assistant("first answer"),
///     Message::user("second request"),
///     Message::assistant("second answer"),
///     Message::user("third request"),
///     Message::assistant("third answer"),
/// ];
/// // A correct batch pass: the middle (2..5) replaced by one summary, head and tail untouched.
/// let after = Edit::single(2..5, vec![Message::assistant("[summary] two requests answered")])
///     .apply(&before)
///     .unwrap();
/// let pass = Pass::new(PassKind::Batch, Protected { head: 2, tail: 2, pinned: None });
/// let violations = laws::check(&before, &after, &pass, &Estimator::default());
/// assert!(violations.is_empty(), "{violations:?}");
/// ```
pub fn check(
    before: &[Message],
    after: &[Message],
    pass: &Pass,
    counter: &dyn TokenCounter,
) -> Vec<Violation> {
    let mut out = Vec::new();
    if pass.kind.must_change_nothing() {
        check_unchanged(before, after, &mut out);
        return out;
    }
    check_protected(before, after, pass, &mut out);
    check_pins(before, after, &mut out);
    check_tools(before, after, &mut out);
    check_roles(before, after, pass, &mut out);
    check_continuation(before, after, pass, &mut out);
    if pass.kind.is_micro_family() {
        check_user_text(before, after, pass.options.strict_alternation, &mut out);
        check_markers(before, after, &mut out);
    }
    if pass.options.expect_progress {
        let before_tokens: u64 = before.iter().map(|m| counter.count_message(m)).sum();
        let after_tokens: u64 = after.iter().map(|m| counter.count_message(m)).sum();
        if after_tokens >= before_tokens {
            out.push(Violation::NoProgress {
                before_tokens,
                after_tokens,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
