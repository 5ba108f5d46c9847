//! The laws [`check`](super::check) decides and the violations it reports, with the text
//! they print (law number, name, message indices; never message text).

use std::fmt;

/// The laws of spec section 2 that [`check`](super::check) decides.
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
    /// Law 5: more than one turn-progress marker inside the active turn (after the last user
    /// message of the user's own; a finished turn's marker before it is not counted).
    ExtraProgressMarker {
        /// Index of the second (or later) progress marker of the active turn.
        index: usize,
    },
    /// Law 5: a batch marker of `before` was deleted.
    BatchMarkerDeleted {
        /// Index in `before`.
        before_index: usize,
    },
    /// Law 1: a message pinned in `before` ([`Message::is_pinned`](crate::Message::is_pinned)) is not in `after`,
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
                write!(
                    f,
                    "a second turn-progress marker in the active turn at {index}"
                )
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
