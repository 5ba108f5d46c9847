//! A rig agent whose conversation memory is hermes-compaction's.
//!
//! rig-core 0.44 keeps agent runtimes out of the core crate (they live in `rig-agent`); what
//! a runtime does with a [`ConversationMemory`] is fixed by the trait: `load` before a prompt,
//! `append` with the turn's messages after it. This example runs that loop with a scripted
//! model (no network) that answers each prompt after six tool rounds, each call preceded by
//! a signed thinking block and answered by a log (one long, five short), under a 24K window: a few prompts
//! fill it, so the memory compacts before many of them.
//!
//! It checks what it shows: no request is over the window; every pass keeps the laws
//! (`compaction_core::laws`); a signed thinking block rig gets back is byte for byte the one
//! the model sent; what rig loads is what the store holds. Then the conversation is resumed
//! in a new process from the store file (the example runs itself with `--resume`), and goes
//! on the same way.
//!
//! ```text
//! cargo run -p hermes-compaction-rig --example rig_agent            # SQLite in a temp dir
//! cargo run -p hermes-compaction-rig --example rig_agent -- sqlite:///tmp/rig.db
//! cargo run -p hermes-compaction-rig --features postgres --example rig_agent -- postgres://…
//! ```
#![allow(clippy::print_stdout)]

use std::collections::HashMap;

use hermes_compaction::Config;
use hermes_compaction::Outcome;
use hermes_compaction::core::{Estimator, TokenCounter, laws};
use hermes_compaction_rig::{CompactingMemory, from_rig, to_rig};
use rig_core::completion::{AssistantContent, AssistantMessage, Message};
use rig_core::memory::ConversationMemory;
use rig_core::message::{Reasoning, ToolCall, ToolName, ToolResultContent};
use serde_json::json;

/// The model's window, in tokens ([`run`]; [`run_at`] takes another, the test runs 16K too).
pub const CONTEXT: u64 = 24_000;
/// The tool definitions the host sends with every request (rig sends each tool's name,
/// description and JSON schema), counted in every request's size.
const TOOLS: &str = r#"[{"name":"run_tests","description":"Run the test suite of one crate of the workspace and return its log: every test's name and result, then a summary line. Use verbose for the full output of failing tests.","input_schema":{"type":"object","properties":{"crate":{"type":"string","description":"The crate whose tests to run, by its directory name."},"verbose":{"type":"boolean","description":"Print the output of every test, not only the failing ones."}},"required":["crate"]}}]"#;
/// Prompts per process.
pub const PROMPTS: usize = 10;
/// Tool rounds per prompt.
const ROUNDS: usize = 6;
const CONVERSATION: &str = "rig-demo";

/// What one run of the loop saw.
#[derive(Debug, Default)]
pub struct Summary {
    /// Model requests made.
    pub requests: usize,
    /// The largest request, in tokens.
    pub largest_request: u64,
    /// Loads that ran a compaction pass (prune or summaries).
    pub passes: usize,
    /// Of those, the passes that wrote a summary.
    pub summarized: usize,
    /// Signed thinking blocks rig got back from the memory, each checked byte for byte.
    pub signed_checked: usize,
    /// Messages in the conversation at the end, as rig loads it.
    pub loaded: usize,
}

/// The compaction settings: a small window, so the conversation outgrows it quickly.
pub fn config() -> Config {
    config_at(CONTEXT)
}

/// The defaults at a window of `context` tokens.
pub fn config_at(context: u64) -> Config {
    let mut config = Config::default();
    config.model.context_length = context;
    config
}

/// A stand-in for a completion model: six tool rounds per prompt, then an answer. Each
/// call comes with a signed thinking block, as Anthropic's extended thinking sends it.
fn model(request: &[Message], prompt: usize) -> AssistantMessage {
    let round = request
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User { content } if content.iter().any(|c| matches!(c, rig_core::message::UserContent::Text(_)))))
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count();
    if round < ROUNDS {
        let thinking = format!("Prompt {prompt}, round {round}: run the tests of crate{round}.");
        let item = json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": signature(prompt, round),
        });
        let call = AssistantContent::tool_call(
            format!("toolu_{prompt}_{round}"),
            ToolName::new("run_tests").expect("not empty"),
            json!({"crate": format!("crate{round}"), "verbose": true}),
        );
        AssistantMessage::new(vec![
            AssistantContent::Reasoning(Reasoning::new(thinking)).with_native(item),
            AssistantContent::text(format!("Running the tests of crate{round}.")),
            call,
        ])
    } else {
        AssistantMessage::new(vec![AssistantContent::text(format!(
            "Prompt {prompt} is done: all three crates pass."
        ))])
    }
}

/// A signature-like opaque string (base64 alphabet, long), unique per block.
fn signature(prompt: usize, round: usize) -> String {
    format!("EqQBCgIYAhIM{prompt:04}x{round}") + &"Zm9vYmFyYmF6".repeat(8) + "=="
}

/// A stand-in for running a tool: a long build log first, then short test summaries.
fn run_tool(call: &ToolCall, prompt: usize) -> Message {
    let lines = if call.id.wire().ends_with("_0") {
        110
    } else {
        14
    };
    let log = format!("test module_{prompt}::case ... ok\n").repeat(lines) + "test result: ok\n";
    Message::tool_results(vec![call.result(vec![ToolResultContent::text(log)])])
}

/// The host's system preamble, the size of a real coding agent's (about 900 tokens): who it
/// is and its working rules.
fn preamble() -> String {
    let mut text = String::from("You are a careful coding agent working in a Rust workspace.\n");
    for (i, rule) in [
        "read a file before you change it, and keep each change small",
        "run the tests of the crate you changed before you say it works",
        "never commit a secret, a key or a token; redact what a log shows",
        "explain a failing test by its first error, then fix that error",
        "prefer the standard library to a new dependency",
        "keep public items documented and examples compiling",
    ]
    .iter()
    .cycle()
    .take(36)
    .enumerate()
    {
        text.push_str(&format!(
            "Rule {}: {rule}; say so when you cannot.\n",
            i + 1
        ));
    }
    text
}

/// The size of a request in the library's estimate (what the compressor plans with): its
/// messages and the tool definitions sent beside them.
fn tokens(request: &[Message], counter: &dyn TokenCounter) -> u64 {
    from_rig(request)
        .expect("a request converts")
        .iter()
        .map(|m| counter.count_message(m))
        .sum::<u64>()
        + counter.count_text(TOOLS)
}

/// Runs prompts `first..first + PROMPTS` of the conversation with the store at `url`, through
/// a memory of its own (a new store handle: what a new process has).
pub async fn run(url: &str, first: usize) -> Summary {
    run_with(url, first, config()).await
}

/// [`run`] under `config` (its window is the one no request may exceed).
pub async fn run_with(url: &str, first: usize, config: Config) -> Summary {
    let context = config.model.context_length;
    let memory = CompactingMemory::connect(url, config)
        .await
        .expect("the store connects");
    let id = CONVERSATION.into();
    let counter = Estimator::default();
    let preamble = Message::system(preamble());
    let mut summary = Summary::default();
    // The signed blocks the model sent, to check what comes back.
    let mut sent: HashMap<String, String> = HashMap::new();
    for prompt in first..first + PROMPTS {
        // Before the prompt: the memory compacts (and commits) when it must, then loads.
        let loaded = memory.load_session(CONVERSATION).await.expect("load");
        if let Some(report) = loaded
            .report
            .as_ref()
            .filter(|r| matches!(r.outcome, Outcome::Pruned | Outcome::Summarized))
        {
            summary.passes += 1;
            summary.summarized += usize::from(report.outcome == Outcome::Summarized);
            let violations = laws::check(&loaded.before, &loaded.kept, &report.law, &counter);
            assert!(violations.is_empty(), "prompt {prompt}: {violations:?}");
            println!(
                "prompt {prompt}: compacted before the prompt: {} -> {} messages ({:?})",
                loaded.before.len(),
                loaded.kept.len(),
                report.outcome
            );
        }
        summary.signed_checked += check_signed(&loaded.messages, &sent);
        let history = loaded.messages;

        let mut turn = vec![Message::user(format!(
            "Prompt {prompt}: make the test suite pass."
        ))];
        loop {
            let request: Vec<Message> = std::iter::once(preamble.clone())
                .chain(history.iter().cloned())
                .chain(turn.iter().cloned())
                .collect();
            let size = tokens(&request, &counter);
            assert!(
                size <= context,
                "prompt {prompt}: a request of {size} tokens in a window of {context}"
            );
            summary.largest_request = summary.largest_request.max(size);
            summary.requests += 1;
            let reply = model(&request, prompt);
            for block in &reply.content {
                if let Some(item) = block.native_item()
                    && let Some(sig) = item.get("signature").and_then(|s| s.as_str())
                {
                    sent.insert(sig.to_owned(), serde_json::to_string(item).expect("JSON"));
                }
            }
            let calls: Vec<ToolCall> = reply.tool_calls().cloned().collect();
            turn.push(Message::Assistant(reply));
            if calls.is_empty() {
                break;
            }
            for call in &calls {
                turn.push(run_tool(call, prompt));
            }
        }
        // After the turn: its messages, stored in one transaction.
        memory.append(&id, turn).await.expect("append");
    }
    // What rig loads is what the store holds.
    let loaded = memory.load(&id).await.expect("load");
    let stored = memory
        .store()
        .load_active(CONVERSATION)
        .await
        .expect("the store reads");
    assert_eq!(to_rig(&stored).expect("converts"), loaded);
    summary.loaded = loaded.len();
    summary
}

/// Checks every signed thinking block in `history` against what the model sent (all of them,
/// when this process sent them); returns how many it checked.
fn check_signed(history: &[Message], sent: &HashMap<String, String>) -> usize {
    let mut checked = 0;
    for m in history {
        let Message::Assistant(a) = m else { continue };
        for block in &a.content {
            let Some(item) = block.native_item() else {
                continue;
            };
            let Some(sig) = item.get("signature").and_then(|s| s.as_str()) else {
                continue;
            };
            let bytes = serde_json::to_string(item).expect("JSON");
            if let Some(original) = sent.get(sig) {
                assert_eq!(&bytes, original, "a signed thinking block changed");
            }
            checked += 1;
        }
    }
    checked
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, url] = args.as_slice()
        && flag == "--resume"
    {
        // The second process: the same conversation, from the store alone.
        let s = run(url, PROMPTS).await;
        println!("resumed process: {s:?}");
        assert!(s.signed_checked > 0, "rig got signed thinking back");
        return;
    }
    let dir = tempfile_dir();
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| format!("sqlite://{}", dir.join("rig.db").display()));
    let first = run(&url, 0).await;
    println!("first process: {first:?}");
    assert!(first.passes >= 1, "the memory compacted the conversation");
    let status = std::process::Command::new(std::env::current_exe().expect("this binary"))
        .args(["--resume", &url])
        .status()
        .expect("the second process runs");
    assert!(status.success(), "the resumed process: {status}");
    println!(
        "done: largest request {} of {CONTEXT} tokens; the conversation resumed in a new process from the store",
        first.largest_request
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A fresh directory for the SQLite file.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hermes-rig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}
