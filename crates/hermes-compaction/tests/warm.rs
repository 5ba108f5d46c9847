//! The warm-cache summary request: a batch pass whose summarizer is the agent's own model
//! sends the agent's last request as it was sent, then one instruction; another model gets
//! the standalone request.

use hermes_compaction::OneShot;
use std::sync::Arc;

use compaction_core::{Message, Transcript};
use compaction_llm::{ScriptedSummarizer, SummaryRequest, prompts};
use hermes_compaction::config::WarmCache;
use hermes_compaction::{Compressor, Config};

use crate::common::{builder_with, config, rt};

/// A chat without tool outputs to prune (so passes summarize), with one tool round now and
/// then: long asks and long answers.
fn chat(turns: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        msgs.push(Message::user(format!(
            "ask {i}: {}",
            "please review module ".repeat(120)
        )));
        if i % 3 == 0 {
            let id = format!("call-{i}");
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![compaction_core::ToolCall::function(
                    &id,
                    "read",
                    r#"{"path":"a.rs"}"#,
                )],
            ));
            msgs.push(Message::tool_result(&id, "fn main() {}\n"));
        }
        msgs.push(Message::assistant(format!(
            "answer {i}: {}",
            "the module looks fine ".repeat(120)
        )));
    }
    msgs
}

fn wire(m: &[Message]) -> Vec<String> {
    m.iter().map(Message::to_wire_json).collect()
}

/// A summary request and the request the agent had sent last before it.
type Seen = (SummaryRequest, Option<Vec<Message>>);

/// An agent loop over a long tool session: `before_request` before each model call (after
/// the user's message and after each tool result), the request sent kept as the test's own
/// copy. Returns, for each summary request, the request and what the agent had sent last.
fn run_agent(cfg: Config) -> (Vec<Seen>, Transcript) {
    let s = Arc::new(ScriptedSummarizer::new());
    let mut c: Compressor = builder_with(cfg, s.clone()).build().unwrap();
    let session = chat(40);
    let mut t = c.transcript(session[..1].to_vec());
    let mut last_sent: Option<Vec<Message>> = None;
    let mut seen = Vec::new();
    rt().block_on(async {
        for m in &session[1..] {
            let calls_model = m.is_user() || m.is_tool();
            t.push(m.clone(), c.status().counter);
            if calls_model {
                let before = s.calls();
                let (_ticket, _report) = c.before_request(&mut t).await;
                for req in &s.requests()[before..] {
                    seen.push((req.clone(), last_sent.clone()));
                }
                last_sent = Some(t.messages().to_vec());
            }
        }
    });
    (seen, t)
}

fn own_model(cfg: &mut Config) {
    cfg.auxiliary.compression.warm_cache = WarmCache::On;
}

#[test]
fn with_the_agents_model_the_request_is_the_last_request_byte_for_byte_plus_one_instruction() {
    let mut cfg = config(16_000);
    own_model(&mut cfg);
    let (seen, _t) = run_agent(cfg);
    assert!(
        seen.len() >= 2,
        "the session compacts more than once ({})",
        seen.len()
    );
    let mut warm = 0;
    for (req, sent) in &seen {
        let sent = sent
            .as_ref()
            .expect("a pass only runs after a first request");
        let prefix = req
            .warm
            .as_ref()
            .expect("a warm request after the first request");
        // The prefix is the agent's last request, byte for byte.
        assert_eq!(wire(&prefix.messages), wire(sent));
        assert!(prefix.span.end <= prefix.messages.len() && !prefix.span.is_empty());
        // One instruction follows, naming the span by number (1-based).
        let instruction = prompts::build_warm(req).expect("an instruction");
        let span = format!("messages {} to {}", prefix.span.start + 1, prefix.span.end);
        assert!(instruction.contains(&span), "{span}");
        // The standalone material stays for the fallback.
        assert!(!req.material.is_empty());
        warm += 1;
    }
    assert_eq!(warm, seen.len());
}

#[test]
fn with_another_model_the_request_is_standalone() {
    // The default: the extractive provider is not the agent's model ("auto").
    let (seen, _) = run_agent(config(16_000));
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|(req, _)| req.warm.is_none()));
    // "auto" with another summary model at the agent's endpoint: standalone too.
    let mut cfg = config(16_000);
    cfg.auxiliary.compression.provider = "openai".into();
    cfg.model.name = "main".into();
    cfg.model.base_url = cfg.auxiliary.compression.base_url.clone();
    cfg.auxiliary.compression.model = "small".into();
    assert!(!cfg.warm_cache_on());
    cfg.auxiliary.compression.model = String::new();
    assert!(cfg.warm_cache_on(), "the same model at the same endpoint");
    // "off" wins over everything.
    let mut cfg = config(16_000);
    cfg.auxiliary.compression.warm_cache = WarmCache::Off;
    let (seen, _) = run_agent(cfg);
    assert!(seen.iter().all(|(req, _)| req.warm.is_none()));
}

#[test]
fn a_transcript_rewritten_since_the_last_request_gets_the_standalone_request() {
    let mut cfg = config(16_000);
    own_model(&mut cfg);
    let s = Arc::new(ScriptedSummarizer::new());
    let mut c: Compressor = builder_with(cfg, s.clone()).build().unwrap();
    let session = chat(40);
    let mut t = c.transcript(session[..3].to_vec());
    rt().block_on(async {
        let _ = c.before_request(&mut t).await;
        for m in &session[3..] {
            t.push(m.clone(), c.status().counter);
        }
        // The host rewrote a message the agent had sent: that prefix is no longer cached.
        let edited = Message::user("step 0: something else");
        t.replace(1, edited, c.status().counter);
        let report = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(report.outcome, hermes_compaction::Outcome::Summarized);
    });
    assert!(s.calls() > 0);
    assert!(s.requests().iter().all(|r| r.warm.is_none()));
}
