//! A turn interrupted by a compaction pass in the middle of its tool loop, and resumed.
//!
//! The user asks for one long task; the scripted "model" (no network) answers with tool calls,
//! round after round, with outputs large enough that the transcript crosses the threshold
//! several times inside that one turn. The loop calls [`Compressor::before_request`] before
//! every model call and [`Compressor::after_tool_round`] after every tool round, so the
//! passes land between a tool result and the next model call. Each such pass says so in its
//! report ([`PassReport::in_turn`](hermes_compaction::PassReport::in_turn)): the ask being
//! worked on and the pending tool state. The host resumes from it: it re-reads the ask from
//! the compacted transcript, and since every tool result is in, the next step is the model
//! call (no tool runs twice).
//!
//! Once, the model asks for two tools at once and the host calls
//! [`Compressor::one_shot`] (a batch) after only the first result: the pass is skipped (no pass lands
//! between a tool call and its result) and runs after the second result.
//!
//! Every pass is checked against the laws (`compaction_core::laws`), and at the end the turn
//! has finished with the model's answer, the ask is still in the transcript, every tool call
//! has its result, and no request was over the window.
//!
//! ```text
//! cargo run -p hermes-compaction --example resume_turn
//! ```
#![allow(clippy::print_stdout)]

use hermes_compaction::{OneShot, Usage};
use std::sync::Arc;

use hermes_compaction::core::{Estimator, Message, ToolCall, Transcript, laws};
use hermes_compaction::llm::ExtractiveSummarizer;
use hermes_compaction::{BatchReport, Compressor, Config, Outcome};

const CONTEXT: u64 = 24_000;
const ROUNDS: usize = 40;
const ASK: &str = "port every module of the parser to the new grammar, one module at a time";

/// What the scripted model does next, from the host's own count of finished tool rounds.
fn model(rounds_done: usize) -> Message {
    match rounds_done {
        n if n == ROUNDS => Message::assistant("All 40 modules are ported; the tests pass."),
        // Once, two tools at once.
        20 => Message::assistant_tool_calls(
            "",
            vec![
                ToolCall::function("call-20a", "shell", r#"{"cmd":"cargo test -p parser"}"#),
                ToolCall::function("call-20b", "shell", r#"{"cmd":"git diff --stat"}"#),
            ],
        ),
        n => Message::assistant_tool_calls(
            format!(
                "Porting module {n}. {}",
                "The old rule set maps onto the new grammar with renamed productions. ".repeat(40)
            ),
            vec![ToolCall::function(
                format!("call-{n}"),
                "shell",
                format!(r#"{{"cmd":"port module_{n}.rs"}}"#),
            )],
        ),
    }
}

/// Runs a tool: a long output.
fn run_tool(call: &ToolCall) -> Message {
    let out = format!("{} ok: rewrote 120 rules\n", call.function.name).repeat(30);
    Message::tool_result(call.call_id(), out)
}

/// Checks a pass that landed inside the turn: the laws hold, and the report says where the
/// turn stands.
fn check_pass(before: &Transcript, t: &Transcript, report: &BatchReport, c: &Compressor) {
    let violations = laws::check(
        before.messages(),
        t.messages(),
        &report.law,
        c.status().counter,
    );
    assert!(violations.is_empty(), "laws: {violations:?}");
    let resume = report
        .in_turn
        .as_ref()
        .expect("a pass inside the turn says so");
    assert_eq!(
        resume.ask(t).map(|m| m.text().into_owned()).as_deref(),
        Some(ASK)
    );
    assert!(resume.results_complete);
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut config = Config::default();
    config.model.context_length = CONTEXT;
    let mut c = Compressor::builder(config)
        .summarizer(Arc::new(ExtractiveSummarizer::default()))
        .counter(Arc::new(Estimator::default()))
        .session("resume-turn")
        .build()
        .expect("valid config");
    let mut t = c.transcript(vec![Message::system("You are a coding agent.")]);
    t.push(Message::user(ASK), c.status().counter);

    let (mut rounds_done, mut passes, mut largest) = (0usize, 0usize, 0u64);
    loop {
        // Before the model call: a pass may land here, inside the turn.
        let before = t.clone();
        let (ticket, report) = c.before_request(&mut t).await;
        if let Some(r) =
            report.filter(|r| matches!(r.outcome, Outcome::Summarized | Outcome::Pruned))
        {
            check_pass(&before, &t, &r, &c);
            let resume = r.in_turn.as_ref().expect("inside the turn");
            passes += 1;
            println!(
                "pass {passes} ({:?}) after round {rounds_done}: {} -> {} tokens; resuming ask #{} with calls {:?} answered",
                r.outcome,
                r.stats.tokens_before,
                r.stats.tokens_after,
                resume.ask_index.unwrap_or(0),
                resume.pending_calls,
            );
        }
        largest = largest.max(t.current_tokens());
        assert!(t.current_tokens() < CONTEXT, "a request over the window");
        // The model call: the provider reports what it counted.
        let reply = model(rounds_done);
        let prompt_tokens = t.current_tokens();
        c.after_response(&mut t, ticket, Usage::prompt(prompt_tokens).record_only())
            .await;
        let calls = reply.tool_calls().to_vec();
        t.push(reply, c.status().counter);
        if calls.is_empty() {
            break; // The model answered: the turn is over.
        }
        // The tools run; results come in one at a time.
        for (i, call) in calls.iter().enumerate() {
            t.push(run_tool(call), c.status().counter);
            if i + 1 < calls.len() {
                // A pass asked for while a result is still owed is skipped.
                let r = c
                    .one_shot(&mut t, OneShot::batch())
                    .await
                    .into_batch()
                    .unwrap();
                assert_eq!(r.outcome, Outcome::Skipped);
                let resume = r.in_turn.expect("inside the turn");
                assert!(!resume.results_complete);
                println!(
                    "compress between {} and its result: skipped",
                    calls[i + 1].id
                );
            }
        }
        rounds_done += 1;
        // After the tool round: micro passes (when enabled) may land here too.
        let before = t.clone();
        if let Some(r) = c.after_tool_round(&mut t).await {
            let violations =
                laws::check(before.messages(), t.messages(), &r.law, c.status().counter);
            assert!(violations.is_empty(), "laws: {violations:?}");
        }
    }

    // The turn finished with the model's answer, the ask is still there, every call answered.
    let last = t.messages().last().expect("messages");
    assert!(last.is_assistant() && !last.has_tool_calls());
    assert_eq!(
        hermes_compaction::Resume::at(&t),
        None,
        "between turns again"
    );
    let ask = t.last_real_user().expect("the ask is kept");
    assert_eq!(t.messages()[ask].text(), ASK);
    for (i, m) in t.messages().iter().enumerate() {
        for call in m.tool_calls() {
            assert!(
                t.messages()[i + 1..]
                    .iter()
                    .any(|r| r.tool_call_id() == Some(call.call_id())),
                "call {} lost its result",
                call.call_id()
            );
        }
    }
    assert!(
        passes >= 2,
        "the turn was interrupted more than once ({passes})"
    );
    println!(
        "turn resumed after {passes} passes and finished: {ROUNDS} rounds, {} messages, {} tokens now, largest request {largest} tokens (window {CONTEXT})",
        t.len(),
        t.current_tokens()
    );
}
