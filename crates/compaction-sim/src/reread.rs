//! The re-read model: what forgetting costs when the agent needs the content again.
//!
//! A replay's agent is fixed: it writes the recorded answers whatever the prompt holds, so a
//! dropped file that the agent needs again costs nothing unless it is priced. This model
//! prices it, in the issue units of [`unit_cost`](crate::row::unit_cost):
//!
//! - An identifier ([`recall::identifiers`](crate::recall::identifiers)) of the recorded
//!   answer `A_r` (its content and tool-call arguments) that occurs in an earlier recorded
//!   message is *needed* by request `r` (near or far alike: a pruned output of three messages
//!   ago is as gone as one of thirty).
//! - It is *held* only where an **unchanged original message** of the prompt holds it (its
//!   wire JSON identical to a recorded message's), or in content re-read since the last
//!   rewrite. A summary, a ledger, a names index or a pruned one-liner that names it does not
//!   hold it: it says the thing existed, not what it said.
//! - When some needed identifier is not held, the agent spends **one more round** on the
//!   request: the prompt as sent is sent again with the fetched content after it. The
//!   fetched content is, per missing identifier, the latest recorded message holding it
//!   (each such message once): what a tool call would bring back. That round costs
//!   [`UNIT_HIT_PRICE`] per token of the prompt re-sent (it was just sent, so it is cached)
//!   and 1.0 per fetched token (a miss).
//! - The fetched content stays in the prompts that follow, as cache hits, until the next
//!   rewrite of the prompt (a pass that changes a message already sent); it is then gone
//!   with the messages around it. While it is carried, what it holds is held.
//!
//! Re-read cost = [`UNIT_HIT_PRICE`] x (re-sent + carried) + fetched; **effective cost** =
//! the prompt cost in the issue units + the re-read cost.
//!
//! What it leaves out, on purpose: the model's output of the extra round (one short tool
//! call, the same for every policy); the effect of the carried content on when the
//! compressor triggers next (the replay's prompts are the policy's own); identifiers the
//! answer takes from the tool result of its own round (they are not before `A_r`). A
//! needed identifier that is only a coincidence of the identifier shape (a date, a size
//! that occurs again) is priced like any other, for every policy alike.

use crate::row::{Row, UNIT_HIT_PRICE};

/// The re-read cost of `row`'s counts: [`UNIT_HIT_PRICE`] x (re-sent + carried) + fetched.
pub fn reread_cost(row: &Row) -> f64 {
    UNIT_HIT_PRICE * (row.reread_resent_tokens + row.reread_carried_tokens) as f64
        + row.reread_tokens as f64
}
