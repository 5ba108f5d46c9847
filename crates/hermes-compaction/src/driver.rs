//! The hook order of an agent loop, for replaying a recorded transcript through a
//! [`Compressor`](crate::Compressor) as an agent would have lived it: which hook moments fall
//! before each message. One driver for every replay: the one-shot micro run
//! ([`Compressor::one_shot`](crate::Compressor::one_shot)) and the simulator's replay both
//! step through it, so they cannot disagree on the order.

use compaction_core::{Message, Transcript};

/// A moment of the agent loop at which a hook is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// The previous turn ended (a user message starts the next one):
    /// [`finalize_turn`](crate::Compressor::finalize_turn).
    TurnEnd,
    /// A tool round ended (the transcript ends with a tool result and the model answers
    /// next): [`after_tool_round`](crate::Compressor::after_tool_round).
    ToolRound,
    /// The model is called (an assistant message follows):
    /// [`before_request`](crate::Compressor::before_request), then after the response
    /// [`after_response`](crate::Compressor::after_response).
    Request,
}

/// Where a replay stands: whether a turn is open.
///
/// ```
/// use hermes_compaction::core::{Estimator, Message, ToolCall, Transcript};
/// use hermes_compaction::driver::{HookOrder, Moment};
///
/// let e = Estimator::default();
/// let recorded = vec![
///     Message::user("fix the build"),
///     Message::assistant_tool_calls("", vec![ToolCall::function("c1", "shell", "{}")]),
///     Message::tool_result("c1", "ok"),
///     Message::assistant("fixed"),
///     Message::user("thanks"),
/// ];
/// let mut t = Transcript::new(Vec::new(), &e);
/// let mut order = HookOrder::default();
/// let mut seen = Vec::new();
/// for m in recorded {
///     seen.extend(order.before(&t, &m));
///     t.push(m, &e);
/// }
/// seen.extend(order.finish());
/// use Moment::*;
/// assert_eq!(seen, [Request, ToolRound, Request, TurnEnd, TurnEnd]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HookOrder {
    in_turn: bool,
}

impl HookOrder {
    /// The moments due before `next` is appended to `t`, in the order they fall: before a
    /// user message, the end of the open turn (none before the first); before an assistant
    /// message, the end of a tool round when `t` ends with a tool result, then the request.
    pub fn before(
        &mut self,
        t: &Transcript,
        next: &Message,
    ) -> impl Iterator<Item = Moment> + use<> {
        let moments = if next.is_user() {
            [
                std::mem::replace(&mut self.in_turn, true).then_some(Moment::TurnEnd),
                None,
            ]
        } else if next.is_assistant() {
            [
                t.messages()
                    .last()
                    .is_some_and(Message::is_tool)
                    .then_some(Moment::ToolRound),
                Some(Moment::Request),
            ]
        } else {
            [None, None]
        };
        moments.into_iter().flatten()
    }

    /// The moment due after the last message: the end of the open turn, if one is open.
    pub fn finish(&mut self) -> Option<Moment> {
        std::mem::take(&mut self.in_turn).then_some(Moment::TurnEnd)
    }
}
