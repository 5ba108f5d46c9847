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
//! the description from the plan (tail demotion included), and the facade's reports have a
//! `law_pass()` that does the same from a report.
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
//!   message with text of the user's own ([`marker::is_user_text`]) or, when none remains, the
//!   library's [continuation](marker::continuation) ([`Violation::NoUserText`], for a summary
//!   the pass wrote: one `before` already had is inherited); no pass leaves
//!   more continuations than one (or than `before` had, [`Violation::ExtraContinuation`]), nor
//!   adds one while user text survives ([`Violation::NeedlessContinuation`]). A continuation
//!   is never one of the user's messages: law 4 does not look for it in `before`.
//! - **Law 4** walks the real user messages of `before` (summary markers excluded) in order and
//!   finds each in `after`, at or after the previous match, as a user message with identical
//!   wire JSON. With strict alternation, a user message may instead be found as a verbatim
//!   substring of a later user message's text (several users joined with a separator),
//!   continuing after the previous substring match.
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

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::batch::{BatchConfig, BatchPlan, BatchStep};
use crate::marker;
use crate::message::{MarkerKind, Message, Role};
use crate::micro::{MicroConfig, MicroOutcome, MicroPlan, MicroStep};
use crate::regions::Regions;
use crate::tokens::TokenCounter;

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

    /// The same pass with other options.
    pub fn with_options(self, options: LawOptions) -> Pass {
        Pass { options, ..self }
    }

    /// The pass `plan` describes: its protected regions, the tail demotion it reports, the
    /// strict-alternation option of `cfg`, and law 8 for a pass that changes the transcript.
    /// `applied` says whether the plan was assembled and applied; a plan that was not (a
    /// failed summarizer or store) is a [`PassKind::Failed`] pass.
    ///
    /// ```
    /// use compaction_core::batch::{self, BatchConfig, BatchRequest};
    /// use compaction_core::laws::{self, Pass};
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
    /// let pass = Pass::of_batch(&plan, &cfg, true);
    /// assert!(laws::check(&msgs, t.messages(), &pass, &counter).is_empty());
    /// ```
    pub fn of_batch(plan: &BatchPlan, cfg: &BatchConfig, applied: bool) -> Pass {
        let kind = match (&plan.step, applied) {
            (_, false) => PassKind::Failed,
            (BatchStep::Nothing(_), true) => PassKind::Unchanged,
            (BatchStep::PruneOnly { .. }, true) => PassKind::Prune,
            (BatchStep::Summarize(_), true) => PassKind::Batch,
        };
        Pass::new(kind, Protected::from_regions(&plan.regions)).with_options(LawOptions {
            strict_alternation: cfg.strict_alternation,
            expect_progress: matches!(kind, PassKind::Prune | PassKind::Batch),
            tail_demotion_reported: plan.demoted_tail_outputs > 0,
        })
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
        Pass::new(kind, Protected::from_regions(&plan.regions)).with_options(LawOptions {
            strict_alternation: cfg.strict_alternation,
            ..LawOptions::default()
        })
    }
}

/// The laws of spec section 2 that [`check`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Law {
    /// Law 1: head and tail are untouched.
    HeadAndTail,
    /// Law 2: tool integrity.
    ToolIntegrity,
    /// Law 3: roles.
    Roles,
    /// Law 4: micro never summarizes user text.
    UserText,
    /// Law 5: one rolling marker.
    OneRollingMarker,
    /// Law 6: failure changes nothing.
    FailureChangesNothing,
    /// Law 8: progress.
    Progress,
}

impl Law {
    /// The law's number in spec section 2.
    pub fn number(self) -> u8 {
        match self {
            Law::HeadAndTail => 1,
            Law::ToolIntegrity => 2,
            Law::Roles => 3,
            Law::UserText => 4,
            Law::OneRollingMarker => 5,
            Law::FailureChangesNothing => 6,
            Law::Progress => 8,
        }
    }
}

impl fmt::Display for Law {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Law::HeadAndTail => "head and tail are untouched",
            Law::ToolIntegrity => "tool integrity",
            Law::Roles => "roles",
            Law::UserText => "micro never summarizes user text",
            Law::OneRollingMarker => "one rolling marker",
            Law::FailureChangesNothing => "failure changes nothing",
            Law::Progress => "progress",
        };
        write!(f, "law {} ({name})", self.number())
    }
}

/// One broken law, with the indices involved. Indices into `after` unless the variant says
/// `before`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// Law 1: `after` is too short to hold the protected head and tail.
    ProtectedLost {
        /// Head plus tail length promised.
        protected: usize,
        /// Length of `after`.
        after_len: usize,
    },
    /// Law 1: head message `index` (same index in both) differs.
    HeadChanged {
        /// Index in both transcripts.
        index: usize,
    },
    /// Law 1: a tail message differs.
    TailChanged {
        /// Index in `before`.
        before_index: usize,
        /// Index in `after`.
        after_index: usize,
    },
    /// Law 1: the pinned message is not in `after` between head and tail.
    PinnedMissing {
        /// Index in `before`.
        before_index: usize,
    },
    /// Law 2: a tool result answers no tool call that precedes it.
    OrphanToolResult {
        /// Index of the result.
        index: usize,
    },
    /// Law 2: a tool call that had results in `before` has none.
    MissingToolResult {
        /// Index of the assistant message.
        index: usize,
        /// Position of the call in its `tool_calls`.
        call: usize,
    },
    /// Law 2: a tool call has more results than one (and more than it had before).
    DuplicateToolResult {
        /// Index of the extra result.
        index: usize,
    },
    /// Law 2: a tool result is not inside its call's group (something other than tool
    /// results sits between the assistant message with the call and it), which providers
    /// reject.
    NonAdjacentToolResult {
        /// Index of the result.
        index: usize,
        /// Index of the assistant message with the call.
        call_index: usize,
    },
    /// Law 3: `after[index - 1]` and `after[index]` have the same visible role and were not
    /// adjacent in `before` (nor covered by an allowed exception).
    AdjacentSameRole {
        /// Index of the second message of the pair.
        index: usize,
    },
    /// Law 3 (issue 21, item 14): a batch pass wrote a summary and left no user message with
    /// text: neither one of the user's own nor the continuation.
    NoUserText {
        /// Index of the first summary marker in `after`.
        summary_index: usize,
    },
    /// Law 3 (issue 21, item 14): a second continuation (more than `before` had).
    ExtraContinuation {
        /// Index of the continuation past the first.
        index: usize,
    },
    /// Law 3 (issue 21, item 14): the pass added a continuation although user text of the
    /// user's own survives.
    NeedlessContinuation {
        /// Index of the continuation.
        index: usize,
    },
    /// Law 3: the first message after the leading system block is no longer `user`.
    FirstNotUser {
        /// Index of that message.
        index: usize,
    },
    /// Law 4: a user message of `before` is not found verbatim, in order, in `after`.
    UserMessageLost {
        /// Index in `before`.
        before_index: usize,
    },
    /// Law 5: more than one rolling micro marker.
    ExtraMicroMarker {
        /// Index of the second (or later) micro marker.
        index: usize,
    },
    /// Law 5: more than one turn-progress marker.
    ExtraProgressMarker {
        /// Index of the second (or later) progress marker.
        index: usize,
    },
    /// Law 5: a batch marker of `before` was deleted.
    BatchMarkerDeleted {
        /// Index in `before`.
        before_index: usize,
    },
    /// Law 1: a message pinned in `before` ([`Message::is_pinned`]) is not in `after`,
    /// identical and still pinned, in the order of the pins.
    UserPinLost {
        /// Index in `before`.
        before_index: usize,
    },
    /// Law 6: a failed or unchanged pass changed the transcript.
    ChangedOnFailure {
        /// First index where the two differ (or the shorter length).
        first_difference: usize,
    },
    /// Law 8: the pass did not shrink the transcript.
    NoProgress {
        /// Tokens before.
        before_tokens: u64,
        /// Tokens after.
        after_tokens: u64,
    },
}

impl Violation {
    /// The law this violation breaks.
    pub fn law(&self) -> Law {
        match self {
            Violation::ProtectedLost { .. }
            | Violation::HeadChanged { .. }
            | Violation::TailChanged { .. }
            | Violation::PinnedMissing { .. }
            | Violation::UserPinLost { .. } => Law::HeadAndTail,
            Violation::OrphanToolResult { .. }
            | Violation::MissingToolResult { .. }
            | Violation::DuplicateToolResult { .. }
            | Violation::NonAdjacentToolResult { .. } => Law::ToolIntegrity,
            Violation::AdjacentSameRole { .. }
            | Violation::FirstNotUser { .. }
            | Violation::NoUserText { .. }
            | Violation::ExtraContinuation { .. }
            | Violation::NeedlessContinuation { .. } => Law::Roles,
            Violation::UserMessageLost { .. } => Law::UserText,
            Violation::ExtraMicroMarker { .. }
            | Violation::ExtraProgressMarker { .. }
            | Violation::BatchMarkerDeleted { .. } => Law::OneRollingMarker,
            Violation::ChangedOnFailure { .. } => Law::FailureChangesNothing,
            Violation::NoProgress { .. } => Law::Progress,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.law())?;
        match self {
            Violation::ProtectedLost {
                protected,
                after_len,
            } => write!(
                f,
                "{protected} protected messages cannot fit in {after_len} messages"
            ),
            Violation::HeadChanged { index } => write!(f, "head message {index} changed"),
            Violation::TailChanged {
                before_index,
                after_index,
            } => write!(
                f,
                "tail message {before_index} (now at {after_index}) changed"
            ),
            Violation::PinnedMissing { before_index } => write!(
                f,
                "pinned message {before_index} is missing between head and tail"
            ),
            Violation::UserPinLost { before_index } => write!(
                f,
                "message {before_index}, pinned, is not kept identical and in order"
            ),
            Violation::OrphanToolResult { index } => {
                write!(f, "tool result at {index} answers no tool call before it")
            }
            Violation::MissingToolResult { index, call } => {
                write!(f, "tool call {call} of message {index} lost its result")
            }
            Violation::DuplicateToolResult { index } => {
                write!(f, "tool result at {index} answers an already answered call")
            }
            Violation::NonAdjacentToolResult { index, call_index } => write!(
                f,
                "tool result at {index} is not adjacent to its call at {call_index}"
            ),
            Violation::AdjacentSameRole { index } => write!(
                f,
                "messages {} and {index} have the same role and were not adjacent before",
                index - 1
            ),
            Violation::NoUserText { summary_index } => write!(
                f,
                "the summary at {summary_index} is left without any user message with text \
                 (no continuation was added)"
            ),
            Violation::ExtraContinuation { index } => {
                write!(f, "a second continuation message at {index}")
            }
            Violation::NeedlessContinuation { index } => write!(
                f,
                "continuation at {index} added although user text of the user's own survives"
            ),
            Violation::FirstNotUser { index } => write!(
                f,
                "message {index} after the system block is no longer a user message"
            ),
            Violation::UserMessageLost { before_index } => write!(
                f,
                "user message {before_index} of before is not kept verbatim and in order"
            ),
            Violation::ExtraMicroMarker { index } => {
                write!(f, "a second rolling micro marker at {index}")
            }
            Violation::ExtraProgressMarker { index } => {
                write!(f, "a second turn-progress marker at {index}")
            }
            Violation::BatchMarkerDeleted { before_index } => {
                write!(f, "batch marker {before_index} of before was deleted")
            }
            Violation::ChangedOnFailure { first_difference } => write!(
                f,
                "the transcript changed, first at message {first_difference}"
            ),
            Violation::NoProgress {
                before_tokens,
                after_tokens,
            } => write!(
                f,
                "tokens did not shrink ({before_tokens} before, {after_tokens} after)"
            ),
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

/// Law 6 alone: every message of `after` has the content of the same message of `before`
/// (library metadata such as row ids aside).
pub(crate) fn check_unchanged(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let common = before.len().min(after.len());
    let first = (0..common).find(|&i| !same_content(&before[i], &after[i]));
    match first {
        Some(i) => out.push(Violation::ChangedOnFailure {
            first_difference: i,
        }),
        None if before.len() != after.len() => out.push(Violation::ChangedOnFailure {
            first_difference: common,
        }),
        None => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers, one per law.

/// Whether two messages have the same content: what a model sees, library metadata aside.
fn same_content(a: &Message, b: &Message) -> bool {
    a.to_wire_json() == b.to_wire_json()
}

/// Law 1 for pinned messages: each survives with its content, still pinned, after the
/// previous one (a greedy match in order decides whether they form a subsequence).
fn check_pins(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let mut from = 0;
    for (i, m) in before.iter().enumerate().filter(|(_, m)| m.is_pinned()) {
        let found = after[from.min(after.len())..]
            .iter()
            .position(|a| a.is_pinned() && same_content(m, a));
        match found {
            Some(k) => from += k + 1,
            None => out.push(Violation::UserPinLost { before_index: i }),
        }
    }
}

/// Law 1. Head, tail and pinned messages compare by content (metadata aside).
fn check_protected(before: &[Message], after: &[Message], pass: &Pass, out: &mut Vec<Violation>) {
    let Protected { head, tail, pinned } = pass.protected;
    let head = head.min(before.len());
    let tail = tail.min(before.len() - head);
    if after.len() < head + tail {
        out.push(Violation::ProtectedLost {
            protected: head + tail,
            after_len: after.len(),
        });
        return;
    }
    let demoted =
        |b: &Message, a: &Message| pass.options.tail_demotion_reported && demoted_in_place(b, a);
    for i in 0..head {
        if !same_content(&before[i], &after[i]) && !demoted(&before[i], &after[i]) {
            out.push(Violation::HeadChanged { index: i });
        }
    }
    let (b0, a0) = (before.len() - tail, after.len() - tail);
    for k in 0..tail {
        let (b, a) = (&before[b0 + k], &after[a0 + k]);
        if same_content(b, a) {
            continue;
        }
        if !demoted(b, a) {
            out.push(Violation::TailChanged {
                before_index: b0 + k,
                after_index: a0 + k,
            });
        }
    }
    if let Some(p) = pinned.filter(|&p| p < before.len()) {
        let want = before[p].to_wire_json();
        if !after[head..a0].iter().any(|m| m.to_wire_json() == want) {
            out.push(Violation::PinnedMissing { before_index: p });
        }
    }
}

/// The last-resort demotion of section 4a rewrites a protected message in place: a tool result
/// keeps its call id (its text becomes a one-liner), an assistant's tool calls keep their ids,
/// names and order and its text (long arguments shortened). Nothing else qualifies.
fn demoted_in_place(b: &Message, a: &Message) -> bool {
    if b.is_tool() && a.is_tool() {
        return b.tool_call_id() == a.tool_call_id();
    }
    b.is_assistant()
        && a.is_assistant()
        && !b.tool_calls().is_empty()
        && b.text() == a.text()
        && b.tool_calls().len() == a.tool_calls().len()
        && b.tool_calls()
            .iter()
            .zip(a.tool_calls())
            .all(|(x, y)| x.call_id() == y.call_id() && x.function.name == y.function.name)
}

/// Results each call id has, in order of the calls, for law 2.
struct Pairing<'a> {
    /// Tool results whose call id no earlier call in the transcript has.
    orphans: Vec<(usize, Option<&'a str>)>,
    /// Calls in order: (message index, position, id, number of later results).
    calls: Vec<(usize, usize, &'a str, usize)>,
    /// Results that answer an already answered call: (index, id).
    repeats: Vec<(usize, &'a str)>,
    /// First results outside their call's group: (index, id, index of the call's message).
    non_adjacent: Vec<(usize, &'a str, usize)>,
}

fn pairing(messages: &[Message]) -> Pairing<'_> {
    let mut p = Pairing {
        orphans: Vec::new(),
        calls: Vec::new(),
        repeats: Vec::new(),
        non_adjacent: Vec::new(),
    };
    // call id -> position in p.calls (the latest call with that id).
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    // The assistant message whose result group we are in (only tool results since it).
    let mut group: Option<usize> = None;
    for (i, m) in messages.iter().enumerate() {
        if m.is_tool() {
            match m
                .tool_call_id()
                .and_then(|id| by_id.get(id).map(|&c| (id, c)))
            {
                Some((id, c)) => {
                    p.calls[c].3 += 1;
                    if p.calls[c].3 > 1 {
                        p.repeats.push((i, id));
                    } else if group != Some(p.calls[c].0) {
                        p.non_adjacent.push((i, id, p.calls[c].0));
                    }
                }
                None => p.orphans.push((i, m.tool_call_id())),
            }
            continue;
        }
        group = m.has_tool_calls().then_some(i);
        for (pos, call) in m.tool_calls().iter().enumerate() {
            by_id.insert(call.call_id(), p.calls.len());
            p.calls.push((i, pos, call.call_id(), 0));
        }
    }
    p
}

/// Law 2, judged relative to `before`: only what the pass made worse is a violation.
fn check_tools(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let b = pairing(before);
    let a = pairing(after);
    let orphan_before: HashSet<Option<&str>> = b.orphans.iter().map(|(_, id)| *id).collect();
    // Results per call id in before (summed over calls sharing an id).
    let mut results_before: HashMap<&str, usize> = HashMap::new();
    for (_, _, id, n) in &b.calls {
        *results_before.entry(id).or_default() += n;
    }
    let mut found = Vec::new();
    for (index, id) in &a.orphans {
        if !orphan_before.contains(id) {
            found.push(Violation::OrphanToolResult { index: *index });
        }
    }
    for (index, pos, id, n) in &a.calls {
        let had = results_before.get(id).copied().unwrap_or(0);
        if *n == 0 && had > 0 {
            found.push(Violation::MissingToolResult {
                index: *index,
                call: *pos,
            });
        }
    }
    let non_adjacent_before: HashSet<&str> = b.non_adjacent.iter().map(|(_, id, _)| *id).collect();
    for (index, id, call_index) in &a.non_adjacent {
        if !non_adjacent_before.contains(id) {
            found.push(Violation::NonAdjacentToolResult {
                index: *index,
                call_index: *call_index,
            });
        }
    }
    let mut repeats_by_id: HashMap<&str, usize> = HashMap::new();
    for (index, id) in &a.repeats {
        let seen = repeats_by_id.entry(id).or_default();
        *seen += 1;
        // The n-th extra result is allowed only if before had at least n + 1 results.
        if results_before.get(id).copied().unwrap_or(0) < *seen + 1 {
            found.push(Violation::DuplicateToolResult { index: *index });
        }
    }
    found.sort_by_key(violation_index);
    out.extend(found);
}

fn violation_index(v: &Violation) -> usize {
    match v {
        Violation::OrphanToolResult { index }
        | Violation::MissingToolResult { index, .. }
        | Violation::DuplicateToolResult { index }
        | Violation::NonAdjacentToolResult { index, .. } => *index,
        _ => 0,
    }
}

/// The roles law 3 compares: user and assistant. System blocks and tool results legitimately
/// repeat.
fn visible(role: &Role) -> bool {
    matches!(role, Role::User | Role::Assistant)
}

/// Law 3.
fn check_roles(before: &[Message], after: &[Message], pass: &Pass, out: &mut Vec<Violation>) {
    let strict = pass.options.strict_alternation;
    let wire_before: Vec<String> = before.iter().map(Message::to_wire_json).collect();
    let adjacent_before: HashSet<(&str, &str)> = (1..before.len())
        .filter(|&i| visible(before[i].role()) && before[i - 1].role() == before[i].role())
        .map(|i| (wire_before[i - 1].as_str(), wire_before[i].as_str()))
        .collect();
    for i in 1..after.len() {
        let (x, y) = (&after[i - 1], &after[i]);
        if !visible(y.role()) || x.role() != y.role() {
            continue;
        }
        let (wx, wy) = (x.to_wire_json(), y.to_wire_json());
        if adjacent_before.contains(&(wx.as_str(), wy.as_str())) {
            continue;
        }
        let (kx, ky) = (marker::classify(x), marker::classify(y));
        let micro_users =
            pass.kind == PassKind::Micro && y.is_user() && kx.is_none() && ky.is_none();
        let progress_then_reply =
            kx == Some(MarkerKind::Progress) && y.is_assistant() && ky.is_none();
        if !strict && (micro_users || progress_then_reply) {
            continue;
        }
        out.push(Violation::AdjacentSameRole { index: i });
    }
    let first_after_system = |ms: &[Message]| ms.iter().position(|m| !m.role().is_system_like());
    if let (Some(b), Some(a)) = (first_after_system(before), first_after_system(after))
        && b > 0
        && before[b].is_user()
        && !after[a].is_user()
    {
        out.push(Violation::FirstNotUser { index: a });
    }
}

/// Law 3, the continuation (issue 21, item 14).
fn check_continuation(
    before: &[Message],
    after: &[Message],
    pass: &Pass,
    out: &mut Vec<Violation>,
) {
    let count = |ms: &[Message]| ms.iter().filter(|m| marker::is_continuation(m)).count();
    let (had, has) = (count(before), count(after));
    let conts = || (0..after.len()).filter(|&i| marker::is_continuation(&after[i]));
    if has > had.max(1) {
        out.extend(
            conts()
                .skip(had.max(1))
                .map(|index| Violation::ExtraContinuation { index }),
        );
    }
    let user_text = after.iter().any(marker::is_user_text);
    if user_text && has > had {
        out.extend(
            conts()
                .take(1)
                .map(|index| Violation::NeedlessContinuation { index }),
        );
    }
    if pass.kind == PassKind::Batch && !user_text && has == 0 {
        // Only a summary the pass wrote is held against it.
        let old: HashSet<String> = before
            .iter()
            .filter(|m| marker::is_summary(m))
            .map(Message::to_wire_json)
            .collect();
        if let Some(summary_index) = after
            .iter()
            .position(|m| marker::is_summary(m) && !old.contains(&m.to_wire_json()))
        {
            out.push(Violation::NoUserText { summary_index });
        }
    }
}

/// Law 4: every real user message of `before`, in order, is in `after`: as a user message
/// with identical wire JSON, or (strict alternation only) as a verbatim substring of a user
/// message's text at or after the previous match, for user messages joined with a separator.
fn check_user_text(before: &[Message], after: &[Message], strict: bool, out: &mut Vec<Violation>) {
    let users_after: Vec<&Message> = after
        .iter()
        .filter(|m| m.is_user() && marker::classify(m).is_none())
        .collect();
    let wire_after: Vec<String> = users_after.iter().map(|m| m.to_wire_json()).collect();
    // Position in users_after: message k, byte offset `off` into its text (joins only).
    let (mut k, mut off) = (0usize, 0usize);
    for (bi, u) in before.iter().enumerate() {
        if !u.is_user() || marker::classify(u).is_some() {
            continue;
        }
        let wire = u.to_wire_json();
        let from = if off == 0 { k } else { k + 1 };
        if let Some(p) = (from..users_after.len()).find(|&p| wire_after[p] == wire) {
            (k, off) = (p + 1, 0);
            continue;
        }
        if strict {
            let needle = u.text();
            let hit = (k..users_after.len()).find_map(|p| {
                let text = users_after[p].text();
                let start = if p == k { off } else { 0 };
                text.get(start..)
                    .and_then(|t| t.find(needle.as_ref()))
                    .map(|pos| (p, start + pos + needle.len()))
            });
            if let Some((p, end)) = hit {
                (k, off) = (p, end);
                continue;
            }
        }
        out.push(Violation::UserMessageLost { before_index: bi });
    }
}

/// Law 5.
fn check_markers(before: &[Message], after: &[Message], out: &mut Vec<Violation>) {
    let (mut micro, mut progress) = (0, 0);
    for (i, m) in after.iter().enumerate() {
        match marker::classify(m) {
            Some(MarkerKind::Micro) => {
                micro += 1;
                if micro > 1 {
                    out.push(Violation::ExtraMicroMarker { index: i });
                }
            }
            Some(MarkerKind::Progress) => {
                progress += 1;
                if progress > 1 {
                    out.push(Violation::ExtraProgressMarker { index: i });
                }
            }
            _ => {}
        }
    }
    let batch_after: Vec<String> = after
        .iter()
        .filter(|m| marker::classify(m) == Some(MarkerKind::Batch))
        .map(Message::to_wire_json)
        .collect();
    let mut next = 0;
    for (bi, m) in before.iter().enumerate() {
        if marker::classify(m) != Some(MarkerKind::Batch) {
            continue;
        }
        let wire = m.to_wire_json();
        match (next..batch_after.len()).find(|&p| batch_after[p] == wire) {
            Some(p) => next = p + 1,
            None => out.push(Violation::BatchMarkerDeleted { before_index: bi }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::tokens::Estimator;

    fn convo() -> Vec<Message> {
        vec![
            Message::system("sys"),
            Message::user("u1"),
            Message::assistant_tool_calls("", vec![ToolCall::function("a", "ls", "{}")]),
            Message::tool_result("a", "x".repeat(2_000)),
            Message::assistant("done 1"),
            Message::user("u2"),
            Message::assistant("done 2"),
            Message::user("u3"),
        ]
    }

    fn laws_of(before: &[Message], after: &[Message], pass: Pass) -> Vec<u8> {
        check(before, after, &pass, &Estimator::default())
            .iter()
            .map(|v| v.law().number())
            .collect()
    }

    fn micro(head: usize, tail: usize) -> Pass {
        Pass::new(
            PassKind::Micro,
            Protected {
                head,
                tail,
                pinned: None,
            },
        )
    }

    #[test]
    fn a_good_micro_pass_keeps_every_law() {
        let before = convo();
        let mut after = before.clone();
        after.splice(
            2..5,
            [marker::render(MarkerKind::Micro, Role::Assistant, "did ls")],
        );
        let pass = micro(2, 1).with_options(LawOptions {
            expect_progress: true,
            ..LawOptions::default()
        });
        assert_eq!(laws_of(&before, &after, pass), Vec::<u8>::new());
    }

    #[test]
    fn micro_users_may_become_adjacent_unless_strict() {
        let before = convo();
        let mut after = before.clone();
        after.splice(2..5, []);
        assert_eq!(laws_of(&before, &after, micro(2, 1)), Vec::<u8>::new());
        let strict = micro(2, 1).with_options(LawOptions {
            strict_alternation: true,
            ..LawOptions::default()
        });
        assert_eq!(laws_of(&before, &after, strict), vec![3]);
        // Joined with a separator under strict alternation: law 4 finds both users inside.
        let mut joined = before.clone();
        joined.splice(1..6, [Message::user("u1\n\n---\n\nu2")]);
        let strict = Pass {
            protected: Protected {
                head: 1,
                tail: 1,
                pinned: None,
            },
            ..strict
        };
        assert_eq!(laws_of(&before, &joined, strict), Vec::<u8>::new());
        // Without strict alternation a join is a lost user message.
        assert_eq!(laws_of(&before, &joined, micro(1, 1)), vec![4, 4]);
    }

    #[test]
    fn inherited_imperfections_are_not_held_against_the_pass() {
        let before = vec![
            Message::tool_result("ghost", "orphan"),
            Message::user("a"),
            Message::user("b"),
            Message::assistant_tool_calls("", vec![ToolCall::function("x", "f", "{}")]),
        ];
        let pass = Pass::new(PassKind::Batch, Protected::default());
        assert_eq!(laws_of(&before, &before, pass), Vec::<u8>::new());
    }

    #[test]
    fn metadata_is_not_content() {
        // A store stamping row ids (a flush) between the snapshot and the check.
        let before = convo();
        let mut after = before.clone();
        for (i, m) in after.iter_mut().enumerate() {
            m.meta_mut().row_id = Some(100 + i as i64);
        }
        for kind in [PassKind::Batch, PassKind::Micro, PassKind::Failed] {
            let pass = Pass::new(
                kind,
                Protected {
                    head: 2,
                    tail: 2,
                    pinned: Some(5),
                },
            );
            assert_eq!(laws_of(&before, &after, pass), Vec::<u8>::new(), "{kind:?}");
        }
        // Content changes are still changes.
        after[0].set_text("other");
        let pass = Pass::new(
            PassKind::Batch,
            Protected {
                head: 1,
                tail: 0,
                pinned: None,
            },
        );
        assert_eq!(
            check(&before, &after, &pass, &Estimator::default()),
            vec![Violation::HeadChanged { index: 0 }]
        );
    }

    #[test]
    fn a_tool_result_moved_past_the_next_assistant_breaks_law_2() {
        let before = convo();
        let mut after = before.clone();
        let result = after.remove(3);
        after.insert(4, result); // after "done 1"
        let v = check(&before, &after, &micro(1, 1), &Estimator::default());
        // (The two assistant messages made adjacent also break law 3.)
        assert_eq!(
            v[0],
            Violation::NonAdjacentToolResult {
                index: 4,
                call_index: 2
            }
        );
        assert_eq!(v[0].law(), Law::ToolIntegrity);
        // Inherited from before: not the pass's doing.
        assert_eq!(laws_of(&after, &after, micro(1, 1)), Vec::<u8>::new());
        // Several results of one call group stay adjacent to it.
        let group = vec![
            Message::user("u"),
            Message::assistant_tool_calls(
                "",
                vec![
                    ToolCall::function("a", "f", "{}"),
                    ToolCall::function("b", "g", "{}"),
                ],
            ),
            Message::tool_result("a", "1"),
            Message::tool_result("b", "2"),
            Message::assistant("ok"),
        ];
        let pass = Pass::new(PassKind::Batch, Protected::default());
        assert_eq!(laws_of(&group, &group, pass), Vec::<u8>::new());
        let mut moved = group.clone();
        moved.swap(3, 4);
        assert_eq!(laws_of(&group, &moved, pass), vec![2]);
    }

    /// Issue 21, item 14: the law checker's view of the continuation.
    #[test]
    fn continuation_laws() {
        let image = || {
            let mut m = Message::user("");
            m.set_content(Some(crate::Content::Parts(vec![crate::Part(
                serde_json::json!({"type": "image_url", "image_url": {"url": "https://x/s.png"}}),
            )])));
            m
        };
        let before = vec![
            Message::system("sys"),
            image(),
            Message::assistant_tool_calls("", vec![ToolCall::function("a", "ls", "{}")]),
            Message::tool_result("a", "x".repeat(2_000)),
            Message::assistant_tool_calls("", vec![ToolCall::function("b", "ls", "{}")]),
            Message::tool_result("b", "y".repeat(2_000)),
            Message::assistant("looked"),
        ];
        let batch = Pass::new(
            PassKind::Batch,
            Protected {
                head: 4,
                tail: 1,
                pinned: None,
            },
        );
        let summary = |role| marker::render(MarkerKind::Batch, role, "s");
        // A user-role summary with no user text anywhere: the summary is the first user text.
        let mut bare = before.clone();
        bare.splice(4..6, [summary(Role::User)]);
        assert_eq!(
            check(&before, &bare, &batch, &Estimator::default()),
            vec![Violation::NoUserText { summary_index: 4 }]
        );
        // Summary then continuation: every law holds.
        let mut good = before.clone();
        good.splice(4..6, [summary(Role::Assistant), marker::continuation()]);
        assert_eq!(laws_of(&before, &good, batch), Vec::<u8>::new());
        // The continuation is not one of the user's: law 4 does not ask for it back.
        let mut lost = Vec::new();
        check_user_text(&good, &bare, false, &mut lost);
        assert_eq!(lost, Vec::new());
        // Two stacked.
        let mut two = good.clone();
        two.splice(6..6, [summary(Role::Assistant), marker::continuation()]);
        assert!(
            check(&good, &two, &batch, &Estimator::default())
                .contains(&Violation::ExtraContinuation { index: 7 })
        );
        // Added beside user text of the user's own.
        let mut with_text = before.clone();
        with_text.push(Message::user("fix it"));
        let mut needless = with_text.clone();
        needless.splice(4..6, [summary(Role::Assistant), marker::continuation()]);
        let batch = Pass {
            protected: Protected {
                head: 4,
                tail: 2,
                pinned: None,
            },
            ..batch
        };
        assert_eq!(
            check(&with_text, &needless, &batch, &Estimator::default()),
            vec![Violation::NeedlessContinuation { index: 5 }]
        );
        // Inherited from before: not the pass's doing.
        assert_eq!(laws_of(&needless, &needless, batch), Vec::<u8>::new());
    }

    #[test]
    fn marker_and_failure_laws() {
        let mut before = convo();
        before.insert(1, marker::render(MarkerKind::Batch, Role::User, "old"));
        before.insert(2, Message::assistant("ok"));
        let mut after = before.clone();
        after[1] = Message::user("rewritten");
        let v = check(&before, &after, &micro(1, 1), &Estimator::default());
        assert!(
            v.contains(&Violation::BatchMarkerDeleted { before_index: 1 }),
            "{v:?}"
        );
        let failed = Pass::new(PassKind::Failed, Protected::default());
        assert_eq!(
            check(&before, &after, &failed, &Estimator::default()),
            vec![Violation::ChangedOnFailure {
                first_difference: 1
            }]
        );
        assert_eq!(laws_of(&before, &before, failed), Vec::<u8>::new());
    }
}
