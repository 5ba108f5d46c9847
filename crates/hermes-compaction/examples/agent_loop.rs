//! Where each hook of the [`Compressor`] goes in an agent loop.
//!
//! A scripted "model" (no network) works through twelve user requests, three tool rounds each,
//! with tool outputs large enough that the conversation outgrows a 24K window several times
//! over. The loop calls every hook where a real agent would, persists the session in SQLite,
//! and checks at the end that no request was ever larger than the window and that the store
//! holds exactly the transcript the agent has.
//!
//! Midway a second writer (another process: a `session compact` from the command line)
//! compacts the same session. The agent's next flush is refused as stale, and the loop does
//! what a framework must: [`Compressor::reload`] adopts the store's rows and generation and
//! writes what the agent appended, then the session goes on. At the end every message the
//! agent ever appended is in the store, active or archived. The anti-thrash state is saved
//! with each flush ([`Compressor::flush`]) and read back on resume
//! ([`Compressor::reload`]).
//!
//! ```text
//! cargo run -p hermes-compaction --example agent_loop
//! ```
#![allow(clippy::print_stdout)]

use hermes_compaction::{OneShot, Usage};
use std::sync::Arc;

use hermes_compaction::compressor::Persistence;
use hermes_compaction::core::{Estimator, Message, ToolCall, Transcript};
use hermes_compaction::llm::ExtractiveSummarizer;
use hermes_compaction::store::{Store, StoreError, TranscriptStore};
use hermes_compaction::trim::TrimStatus;
use hermes_compaction::{Compressor, Config, FailureKind};

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
    // One snapshot: the messages and the generation they belong to.
    let (persistence, resumed) = Persistence::load(store.clone(), "demo").await.unwrap();

    let mut config = Config::default();
    config.model.context_length = CONTEXT;
    config.compression.micro_compact = true; // pay in instalments after each turn
    // Keep huge tool outputs out of the window: over 600 tokens, keep 600 characters of each end.
    config.compression.insert_trim_tokens = 600;
    config.compression.insert_trim_head_chars = 600;
    config.compression.insert_trim_tail_chars = 600;
    let mut c = Compressor::builder(config.clone())
        // An OpenAI-compatible adapter in production.
        .summarizer(Arc::new(ExtractiveSummarizer::default()))
        .counter(Arc::new(Estimator::default()))
        .session("demo")
        .store(persistence.clone())
        .build()
        .unwrap();
    let mut t = c.transcript(resumed);
    // On resume: the cooldowns and the anti-thrash pause the last process flushed.
    c.reload(&mut t).await.unwrap();
    if t.is_empty() {
        t.push(
            Message::system("You are a careful coding agent."),
            c.status().counter,
        );
    }
    // Every message the agent appends, to check at the end that the store has them all.
    let mut appended: Vec<String> = t.messages().iter().map(Message::to_wire_json).collect();
    let mut largest_request = 0;
    let mut trimmed = 0;
    let mut reloads = 0;
    for turn in 0..12 {
        if turn == 6 {
            second_writer_compacts(&store, config.clone()).await;
        }
        // A user message: optionally trimmed if it is a giant paste, then appended.
        let user = Message::user(format!("Request {turn}: make the test suite pass."));
        let (user, _) = c.before_append(&t, user).await;
        appended.push(user.to_wire_json());
        t.push(user, c.status().counter);

        let mut round = 0;
        loop {
            // Before every request: compacts first when the transcript is over the threshold.
            let (ticket, batch) = c.before_request(&mut t).await;
            if let Some(r) = batch {
                println!(
                    "turn {turn}: batch pass before the request: {:?}",
                    r.outcome
                );
                if r.failure_kind() == Some(FailureKind::StaleGeneration) {
                    // Another writer compacted the session: adopt its rows, then go on.
                    reloads += reload(&mut c, &mut t, turn).await;
                }
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
            if let Some(r) = c
                .after_response(&mut t, ticket, Usage::prompt(prompt_tokens))
                .await
            {
                println!("turn {turn}: batch pass on reported usage: {:?}", r.outcome);
            }
            match reply {
                Reply::Tool(call) => {
                    let result = run_tool(&call, turn);
                    appended.push(call.to_wire_json());
                    t.push(call, c.status().counter);
                    // A tool result: trimmed on insertion when large (the original goes to
                    // the store first, recallable by handle).
                    let (result, status) = c.before_append(&t, result).await;
                    if matches!(status, TrimStatus::Trimmed { .. }) {
                        trimmed += 1;
                    }
                    appended.push(result.to_wire_json());
                    t.push(result, c.status().counter);
                    // After each tool round inside a turn: long turns are compacted as they go.
                    c.after_tool_round(&mut t).await;
                    round += 1;
                }
                Reply::Final(answer) => {
                    appended.push(answer.to_wire_json());
                    t.push(answer, c.status().counter);
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
                r.outcome,
                r.stats.messages_before,
                r.stats.messages_after,
                r.stats.tokens_before,
                r.stats.tokens_after
            );
        }
        // Make the turn durable: `flush` appends what the agent added since the last flush
        // and stamps the row ids on `t` itself (never append copies to the store yourself:
        // the copies would get the ids and the next commit would write the messages again).
        // Idempotent, and it costs what was appended, so calling it after every append is
        // fine too.
        match c.flush(&mut t).await {
            Ok(_) => {}
            // Another writer compacted the session (or this process resumed from an old
            // snapshot): every later flush would be refused too. Reload, then go on.
            Err(StoreError::StaleGeneration { .. }) => {
                reloads += reload(&mut c, &mut t, turn).await
            }
            // The store is unavailable: the next flush writes what this one could not.
            Err(e) => println!("turn {turn}: the store is unavailable ({e}); the session goes on"),
        }
    }

    let wire = |m: &[Message]| m.iter().map(Message::to_wire_json).collect::<Vec<_>>();
    let stored = store.load_active("demo").await.unwrap();
    assert_eq!(wire(&stored), wire(t.messages()));
    assert!(c.status().in_sync(&t));
    assert!(largest_request <= CONTEXT);
    // The second writer's pass was noticed and recovered from, and nothing the agent appended
    // was lost: each message is in the store, active or archived.
    assert!(reloads >= 1);
    let mut rows: Vec<String> = store
        .load_all("demo")
        .await
        .unwrap()
        .iter()
        .map(|r| r.message.to_wire_json())
        .collect();
    for (i, m) in appended.iter().enumerate() {
        let k = rows.iter().position(|r| r == m);
        assert!(
            k.is_some(),
            "message {i} the agent appended is not in the store"
        );
        rows.swap_remove(k.unwrap_or_default());
    }
    let saved = store.compaction_state("demo").await.unwrap();
    assert_eq!(
        &hermes_compaction::ThrashState::read_from(&saved),
        c.status().state
    );
    println!(
        "done: {} messages, ~{} tokens in the window; largest request {largest_request} of {CONTEXT}; \
         {trimmed} tool outputs trimmed on insertion; {reloads} reload(s) after another writer \
         compacted; the store holds the same transcript plus {} archived rows, and all {} \
         messages the agent appended",
        t.len(),
        t.current_tokens(),
        store.load_all("demo").await.unwrap().len() - stored.len(),
        appended.len(),
    );
}

/// Another process compacts the session while the agent runs: it loads the session, makes
/// one forced pass and commits it.
async fn second_writer_compacts(store: &Arc<dyn TranscriptStore>, config: Config) {
    let (persistence, messages) = Persistence::load(store.clone(), "demo").await.unwrap();
    let mut other = Compressor::builder(config)
        .summarizer(Arc::new(ExtractiveSummarizer::default()))
        .counter(Arc::new(Estimator::default()))
        .session("demo")
        .store(persistence)
        .build()
        .unwrap();
    let mut t = other.transcript(messages);
    let r = other
        .one_shot(&mut t, OneShot::batch())
        .await
        .into_batch()
        .unwrap();
    assert_eq!(r.failure, None, "the second writer's pass: {r:?}");
    println!(
        "another writer compacted the session: {:?}, generation {:?}",
        r.outcome,
        other.status().store_generation
    );
}

/// The recovery from a stale generation: reload the transcript and generation from the store
/// (writing what the agent appended since its last flush), then go on. Returns 1 when it
/// reloaded.
async fn reload(c: &mut Compressor, t: &mut Transcript, turn: usize) -> usize {
    match c.reload(t).await {
        Ok(written) => {
            println!(
                "turn {turn}: another writer moved the session on: reloaded {} messages at \
                 generation {:?}, {written} of ours written after them",
                t.len(),
                c.status().store_generation
            );
            1
        }
        Err(e) => {
            println!("turn {turn}: reload failed ({e}); the next flush tries again");
            0
        }
    }
}
