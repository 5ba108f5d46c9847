//! Where each hook of the [`Compressor`] goes in an agent loop.
//!
//! A scripted "model" (no network) works through twelve user requests, three tool rounds each,
//! with tool outputs large enough that the conversation outgrows a 24K window several times
//! over. The loop calls every hook where a real agent would, persists the session in SQLite,
//! and checks at the end that no request was ever larger than the window and that the store
//! holds exactly the transcript the agent has.
//!
//! ```text
//! cargo run -p hermes-compaction --example agent_loop
//! ```
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use hermes_compaction::compressor::Persistence;
use hermes_compaction::core::{Estimator, Message, ToolCall, Transcript};
use hermes_compaction::llm::ExtractiveSummarizer;
use hermes_compaction::store::Store;
use hermes_compaction::trim::TrimStatus;
use hermes_compaction::{Compressor, Config};

const CONTEXT: u64 = 24_000;

/// What the scripted model answers.
enum Reply {
    /// Call a tool.
    Tool(Message),
    /// Answer the user; the turn is over.
    Final(Message),
    /// The provider refused the request as too long.
    ContextTooLong,
}

/// A stand-in for the model API: three tool rounds per user request, then an answer. It
/// reports `prompt_tokens` 8% above the library's estimate, as a real tokenizer would differ.
fn model(t: &Transcript, turn: usize, round: usize) -> (Reply, u64) {
    let prompt_tokens = t.current_tokens() * 108 / 100;
    if prompt_tokens > CONTEXT {
        return (Reply::ContextTooLong, prompt_tokens);
    }
    let reply = if round < 3 {
        let id = format!("call_{turn}_{round}");
        let args = format!(r#"{{"command":"cargo test -p crate{round}"}}"#);
        Reply::Tool(Message::assistant_tool_calls(
            format!("Running the tests of crate{round}."),
            vec![ToolCall::function(id, "shell", args)],
        ))
    } else {
        Reply::Final(Message::assistant(format!(
            "Request {turn} is done: all three crates pass."
        )))
    };
    (reply, prompt_tokens)
}

/// A stand-in for running a tool: a long test log.
fn run_tool(call: &Message, turn: usize) -> Message {
    let id = call.tool_calls()[0].call_id().to_owned();
    let log = format!("test module_{turn}::case ... ok\n").repeat(120) + "test result: ok\n";
    Message::tool_result(id, log)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // One store per deployment (SQLite here; a postgres:// URL works the same), one session
    // per conversation.
    let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    store.create_session("demo").await.unwrap();
    let persistence = Persistence {
        store: store.clone(),
        session: "demo".into(),
        generation: store.generation("demo").await.unwrap(),
    };

    let mut config = Config::default();
    config.model.context_length = CONTEXT;
    config.compression.micro_compact = true; // pay in instalments after each turn
    // Keep huge tool outputs out of the window: over 600 tokens, keep 600 characters of each end.
    config.compression.insert_trim_tokens = 600;
    config.compression.insert_trim_head_chars = 600;
    config.compression.insert_trim_tail_chars = 600;
    let mut c = Compressor::new(
        config,
        Arc::new(ExtractiveSummarizer::default()), // an OpenAI-compatible adapter in production
        Arc::new(Estimator::default()),
        "demo",
    )
    .with_store(persistence.clone());

    let mut t = c.transcript(vec![Message::system("You are a careful coding agent.")]);
    let mut largest_request = 0;
    let mut trimmed = 0;
    for turn in 0..12 {
        // A user message: optionally trimmed if it is a giant paste, then appended.
        let user = Message::user(format!("Request {turn}: make the test suite pass."));
        let (user, _) = c.on_user_message(user, Some(&persistence)).await;
        t.push(user, c.counter());

        let mut round = 0;
        loop {
            // Before every request: compacts first when the transcript is over the threshold.
            let (ticket, batch) = c.before_request(&mut t).await;
            if let Some(r) = batch {
                println!(
                    "turn {turn}: batch pass before the request: {:?}",
                    r.outcome
                );
            }
            let (reply, prompt_tokens) = model(&t, turn, round);
            let reply = match reply {
                Reply::ContextTooLong => {
                    // The provider refused: compact harder (bounded attempts), then retry.
                    // It ignores the failure cooldown, and goes on in memory if the store fails
                    // (the report says so; the next flush resynchronises the store).
                    match c.on_context_overflow(&mut t).await {
                        Some(r) => println!("turn {turn}: overflow pass: {:?}", r.outcome),
                        None => panic!("the window cannot hold the protected messages"),
                    }
                    continue;
                }
                other => other,
            };
            largest_request = largest_request.max(prompt_tokens);
            // After every response: the provider's count calibrates the estimate, and a count
            // over the threshold compacts now rather than before the next request.
            c.after_response(&mut t, ticket, prompt_tokens);
            if let Some(r) = c.check_usage(&mut t).await {
                println!("turn {turn}: batch pass on reported usage: {:?}", r.outcome);
            }
            match reply {
                Reply::Tool(call) => {
                    let result = run_tool(&call, turn);
                    t.push(call, c.counter());
                    // A tool result: trimmed on insertion when large (the original goes to
                    // the store first, recallable by handle).
                    let (result, status) = c.on_tool_result(&t, result, Some(&persistence)).await;
                    if matches!(status, TrimStatus::Trimmed { .. }) {
                        trimmed += 1;
                    }
                    t.push(result, c.counter());
                    // After each tool round inside a turn: long turns are compacted as they go.
                    c.after_tool_round(&mut t).await;
                    round += 1;
                }
                Reply::Final(answer) => {
                    t.push(answer, c.counter());
                    break;
                }
                Reply::ContextTooLong => unreachable!("handled above"),
            }
        }
        // After a turn that finished normally: one micro pass folds the oldest exchange into
        // the rolling summary. It never fails the turn.
        if let Some(r) = c.finalize_turn(&mut t).await {
            println!(
                "turn {turn}: micro pass {:?}, {} -> {} messages, {} -> {} tokens",
                r.outcome, r.messages_before, r.messages_after, r.tokens_before, r.tokens_after
            );
        }
        // Make the turn durable: `flush` appends what the agent added since the last flush
        // and stamps the row ids on `t` itself (never append copies to the store yourself:
        // the copies would get the ids and the next commit would write the messages again).
        // Idempotent, and it costs what was appended, so calling it after every append is
        // fine too. A failure is reported here and the session goes on.
        if let Err(e) = c.flush(&mut t).await {
            println!("turn {turn}: the store is unavailable ({e}); the session goes on");
        }
    }

    let wire = |m: &[Message]| m.iter().map(Message::to_wire_json).collect::<Vec<_>>();
    let stored = store.load_active("demo").await.unwrap();
    assert_eq!(wire(&stored), wire(t.messages()));
    assert!(c.store_in_sync());
    assert!(largest_request <= CONTEXT);
    println!(
        "done: {} messages, ~{} tokens in the window; largest request {largest_request} of {CONTEXT}; \
         {trimmed} tool outputs trimmed on insertion; the store holds the same transcript plus \
         {} archived rows",
        t.len(),
        t.current_tokens(),
        store.load_all("demo").await.unwrap().len() - stored.len(),
    );
}
