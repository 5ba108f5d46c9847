//! Validation: a report of what is imperfect in a transcript. It informs; callers decide.

use std::collections::HashMap;

use crate::message::{Message, Role};

/// One finding. Indices are 0-based message indices.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Issue {
    /// The transcript has no messages.
    Empty,
    /// A role the library does not know. The role text is not kept: findings never quote
    /// transcript text (read it from the message at `index` if you must).
    UnknownRole {
        /// Message index.
        index: usize,
    },
    /// A tool result whose `tool_call_id` answers no earlier tool call.
    OrphanToolResult {
        /// Message index.
        index: usize,
    },
    /// A tool message without `tool_call_id`.
    ToolResultWithoutId {
        /// Message index.
        index: usize,
    },
    /// A tool call that no tool result answers.
    UnansweredToolCall {
        /// Index of the assistant message.
        index: usize,
        /// Position of the call in its `tool_calls`.
        call: usize,
    },
    /// A tool-call id used more than once.
    DuplicateToolCallId {
        /// Index of the assistant message with the repeat.
        index: usize,
    },
    /// A tool result that does not directly follow its call group.
    NonAdjacentToolResult {
        /// Message index of the result.
        index: usize,
        /// Index of the assistant message with the call.
        call_index: usize,
    },
    /// More than one result answers the same call.
    DuplicateToolResult {
        /// Message index of the repeat.
        index: usize,
    },
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Issue::Empty => f.write_str("transcript is empty"),
            Issue::UnknownRole { index } => write!(
                f,
                "message index {index}: unknown role (known: system, developer, user, assistant, tool)"
            ),
            Issue::OrphanToolResult { index } => write!(
                f,
                "message index {index}: tool result answers no earlier tool call"
            ),
            Issue::ToolResultWithoutId { index } => {
                write!(f, "message index {index}: tool result has no tool_call_id")
            }
            Issue::UnansweredToolCall { index, call } => {
                write!(f, "message index {index}: tool call {call} has no result")
            }
            Issue::DuplicateToolCallId { index } => {
                write!(f, "message index {index}: tool call id used before")
            }
            Issue::NonAdjacentToolResult { index, call_index } => write!(
                f,
                "message index {index}: tool result is not adjacent to its call at index {call_index}"
            ),
            Issue::DuplicateToolResult { index } => {
                write!(
                    f,
                    "message index {index}: a second result for the same tool call"
                )
            }
        }
    }
}

/// The findings, in message order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Every finding.
    pub issues: Vec<Issue>,
}

impl Report {
    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.issues.is_empty()
    }

    /// Whether the tool-call pairing is intact (no orphan, unanswered, duplicate or
    /// non-adjacent results).
    pub fn tool_pairing_ok(&self) -> bool {
        !self.issues.iter().any(|i| {
            matches!(
                i,
                Issue::OrphanToolResult { .. }
                    | Issue::ToolResultWithoutId { .. }
                    | Issue::UnansweredToolCall { .. }
                    | Issue::DuplicateToolCallId { .. }
                    | Issue::NonAdjacentToolResult { .. }
                    | Issue::DuplicateToolResult { .. }
            )
        })
    }
}

/// Validates a transcript.
pub fn validate(messages: &[Message]) -> Report {
    let mut issues = Vec::new();
    if messages.is_empty() {
        issues.push(Issue::Empty);
    }
    // Every call as (assistant index, call position, answered), and the latest call of each
    // id. A repeated id does not hide the earlier call: if nothing answered it, it is still
    // reported as unanswered.
    let mut calls: Vec<(usize, usize, bool)> = Vec::new();
    let mut latest: HashMap<&str, usize> = HashMap::new();
    // Index of the assistant whose results may follow now, if we are in its group.
    let mut open_group: Option<usize> = None;
    for (index, m) in messages.iter().enumerate() {
        if let Role::Other(_) = m.role() {
            issues.push(Issue::UnknownRole { index });
        }
        if m.is_tool() {
            match m.tool_call_id() {
                None => issues.push(Issue::ToolResultWithoutId { index }),
                Some(id) => match latest.get(id).map(|&k| &mut calls[k]) {
                    None => issues.push(Issue::OrphanToolResult { index }),
                    Some((call_index, _, answered)) => {
                        if *answered {
                            issues.push(Issue::DuplicateToolResult { index });
                        } else if open_group != Some(*call_index) {
                            issues.push(Issue::NonAdjacentToolResult {
                                index,
                                call_index: *call_index,
                            });
                        }
                        *answered = true;
                    }
                },
            }
            continue;
        }
        open_group = None;
        if m.has_tool_calls() {
            let mut dup = false;
            for (pos, call) in m.tool_calls().iter().enumerate() {
                if latest.insert(call.call_id(), calls.len()).is_some() {
                    dup = true;
                }
                calls.push((index, pos, false));
            }
            if dup {
                issues.push(Issue::DuplicateToolCallId { index });
            }
            open_group = Some(index);
        }
    }
    let mut unanswered: Vec<(usize, usize)> = calls
        .iter()
        .filter(|(_, _, answered)| !answered)
        .map(|(i, p, _)| (*i, *p))
        .collect();
    unanswered.sort_unstable();
    issues.extend(
        unanswered
            .into_iter()
            .map(|(index, call)| Issue::UnansweredToolCall { index, call }),
    );
    issues.sort_by_key(issue_index);
    Report { issues }
}

fn issue_index(i: &Issue) -> usize {
    match i {
        Issue::Empty => 0,
        Issue::UnknownRole { index }
        | Issue::OrphanToolResult { index }
        | Issue::ToolResultWithoutId { index }
        | Issue::UnansweredToolCall { index, .. }
        | Issue::DuplicateToolCallId { index }
        | Issue::NonAdjacentToolResult { index, .. }
        | Issue::DuplicateToolResult { index } => *index,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(id: &str) -> Message {
        Message::assistant_tool_calls("", vec![ToolCall::function(id, "f", "{}")])
    }

    #[test]
    fn clean_and_broken_transcripts() {
        assert_eq!(validate(&[]).issues, vec![Issue::Empty]);
        let ok = [
            Message::user("u"),
            call("a"),
            Message::tool_result("a", "r"),
        ];
        assert!(validate(&ok).is_clean());
        let broken = [
            Message::tool_result("zz", "orphan"),
            call("a"),
            Message::user("interrupt"),
            Message::tool_result("a", "late"),
            call("b"),
            Message::new(Role::Other("critic".into()), "x"),
        ];
        let r = validate(&broken);
        assert_eq!(
            r.issues,
            vec![
                Issue::OrphanToolResult { index: 0 },
                Issue::NonAdjacentToolResult {
                    index: 3,
                    call_index: 1
                },
                Issue::UnansweredToolCall { index: 4, call: 0 },
                Issue::UnknownRole { index: 5 },
            ]
        );
        assert!(!r.tool_pairing_ok());
    }

    #[test]
    fn a_repeated_call_id_does_not_hide_an_unanswered_call() {
        // Call `a` at 1 never gets a result; a later call reuses the id and is answered.
        let msgs = [
            Message::user("u"),
            call("a"),
            Message::user("interrupt"),
            call("a"),
            Message::tool_result("a", "r"),
        ];
        assert_eq!(
            validate(&msgs).issues,
            vec![
                Issue::UnansweredToolCall { index: 1, call: 0 },
                Issue::DuplicateToolCallId { index: 3 },
            ]
        );
        // Ids reused turn after turn, each answered in place: only the reuse is reported.
        let reused = [
            call("a"),
            Message::tool_result("a", "1"),
            call("a"),
            Message::tool_result("a", "2"),
        ];
        assert_eq!(
            validate(&reused).issues,
            vec![Issue::DuplicateToolCallId { index: 2 }]
        );
        // Two results for the latest call of an id: the second is a duplicate.
        let twice = [
            call("a"),
            Message::tool_result("a", "1"),
            Message::tool_result("a", "2"),
        ];
        assert_eq!(
            validate(&twice).issues,
            vec![Issue::DuplicateToolResult { index: 2 }]
        );
    }
}
