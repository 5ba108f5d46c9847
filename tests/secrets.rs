//! Issue 22: no credential of the corpus (`test_support::secrets`) leaves through a real pass.
//!
//! Every shape is planted three times in the compacted middle of a session: pasted by the
//! user, inside a tool call's arguments (long enough that pruning shortens them), and inside a
//! long tool output (long enough that pruning replaces it by a one-line description), some of
//! them straddling the material builder's cuts. Then the facade compressor runs one-shot
//! batch, micro and prune passes, with the extractive summarizer and with the OpenAI adapter
//! against a local fake endpoint (wiremock on 127.0.0.1). Neither any request the endpoint
//! receives nor any message the pass writes (every output message that is not an input
//! message byte for byte) holds an 8-character run of a secret. The look-alike corpus,
//! planted the same way, survives into the summarizer's material unchanged.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use hermes_compaction::core::{Estimator, Message, ToolCall};
use hermes_compaction::llm::{
    ApiKey, ExtractiveSummarizer, OpenAiConfig, OpenAiSummarizer, Summarizer,
};
use hermes_compaction::{Compressor, Config, OneShot};
use serde_json::json;
use test_support::secrets::{Planted, benign, credentials};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const FILL: &str = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ";

fn filler(n: usize) -> String {
    FILL.chars().cycle().take(n).collect()
}

/// The session: a benign head, the planted rounds, a benign tail. `long` plants around the
/// material's cuts and makes outputs and arguments long enough to prune.
fn session(corpus: &[Planted], long: bool) -> Vec<Message> {
    let filler = |n: usize| if long { filler(n) } else { String::new() };
    let mut m = vec![
        Message::system("You are a coding agent."),
        Message::user("set up the deployment"),
        Message::assistant("Starting."),
    ];
    for (i, p) in corpus.iter().enumerate() {
        let id = format!("call_{i}");
        // Pasted by the user, some of them around the material's cut of a long message.
        let paste = if long && i % 4 == 0 {
            format!("{}\n{}\n{}", filler(3_900 + i % 300), p.text, filler(3_000))
        } else {
            format!("here is what I have:\n{}\nplease use it", p.text)
        };
        m.push(Message::user(paste));
        // In the arguments: a command holding it, and a long note so pruning shortens them.
        let args = json!({
            "command": format!("echo start; {}; echo done", p.text),
            "note": filler(2_500),
        })
        .to_string();
        m.push(Message::assistant_tool_calls(
            "Running it.",
            vec![ToolCall::function(id.clone(), "bash", args)],
        ));
        // In a long output, so pruning describes it in one line.
        m.push(Message::tool_result(
            id,
            format!(
                "{}\n{}\n{}\nexit code: 0",
                filler(1_200),
                p.text,
                filler(600)
            ),
        ));
        m.push(Message::assistant("Done with that step."));
    }
    for i in 0..4 {
        m.push(Message::user(format!("next step {i}")));
        m.push(Message::assistant(format!(
            "done {i}: {}",
            self::filler(2_000)
        )));
    }
    m
}

fn config() -> Config {
    let mut c = Config::default();
    c.model.context_length = 64_000;
    // Micro absorbs every exchange it may (no cache-aware gate).
    c.compression.micro_compact_min_reclaim_tokens = hermes_compaction::ReclaimGate::Tokens(1);
    c
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// The families of `corpus` with a secret run in `text`.
fn leaks(corpus: &[Planted], text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for p in corpus {
        'parts: for part in &p.secrets {
            let chars: Vec<char> = part.chars().collect();
            for w in chars.windows(8.min(chars.len())) {
                let run: String = w.iter().collect();
                if text.contains(&run) {
                    out.push(p.family.clone());
                    break 'parts;
                }
            }
        }
    }
    out
}

/// Every output message that is not an input message, as JSON lines.
fn written(input: &[Message], output: &[Message]) -> String {
    let before: HashSet<String> = input.iter().map(Message::to_json).collect();
    output
        .iter()
        .map(Message::to_json)
        .filter(|j| !before.contains(j))
        .collect::<Vec<_>>()
        .join("\n")
}

fn openai(server: &MockServer) -> Arc<dyn Summarizer> {
    let mut c = OpenAiConfig::new(
        format!("{}/v1", server.uri()),
        "fake-model",
        ApiKey::Value("test-key".into()),
    );
    c.chat.timeout = Duration::from_secs(20);
    Arc::new(OpenAiSummarizer::new(c).expect("valid config"))
}

async fn fake_endpoint() -> MockServer {
    let server = MockServer::start().await;
    let summary = "## Goal\n- deploy the service\n## Progress\n- configured credentials";
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "cmpl-1",
            "object": "chat.completion",
            "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": summary}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        })))
        .mount(&server)
        .await;
    server
}

/// Runs `mode` over the planted session with `summarizer`; returns what was written.
async fn run(mode: OneShot, summarizer: Arc<dyn Summarizer>, input: &[Message]) -> String {
    let mut c = Compressor::builder(config())
        .summarizer(summarizer)
        .counter(Arc::new(Estimator::default()))
        .session("s22")
        .one_shot(mode.clone())
        .build()
        .unwrap();
    let mut t = c.transcript(input.to_vec());
    let report = c.one_shot(&mut t, mode.clone()).await;
    assert!(!report.failed(), "{mode:?}: {report:?}");
    assert!(report.stats.passes > 0, "{mode:?} changed nothing");
    written(input, t.messages())
}

#[test]
fn no_planted_credential_reaches_the_endpoint_or_the_written_transcript() {
    let corpus = credentials();
    let input = session(&corpus, true);
    assert!(
        corpus.len() * 3 >= 150,
        "{} planted shapes",
        corpus.len() * 3
    );
    rt().block_on(async {
        let mut failures = Vec::new();
        for mode in [
            OneShot::batch(),
            OneShot::Micro { max_passes: None },
            OneShot::Prune,
        ] {
            let name = mode.as_str();
            let out = run(
                mode.clone(),
                Arc::new(ExtractiveSummarizer::default()),
                &input,
            )
            .await;
            for f in leaks(&corpus, &out) {
                failures.push(format!("{name}, extractive: written: {f}"));
            }
            if matches!(mode, OneShot::Prune) {
                continue;
            }
            let server = fake_endpoint().await;
            let out = run(mode, openai(&server), &input).await;
            for f in leaks(&corpus, &out) {
                failures.push(format!("{name}, endpoint: written: {f}"));
            }
            let requests = server.received_requests().await.expect("recording on");
            assert!(
                !requests.is_empty(),
                "{name}: the endpoint was never called"
            );
            for r in &requests {
                let body = String::from_utf8_lossy(&r.body);
                for f in leaks(&corpus, &body) {
                    failures.push(format!("{name}, endpoint: sent: {f}"));
                }
            }
        }
        failures.sort();
        failures.dedup();
        assert!(
            failures.is_empty(),
            "{} leaks:\n{}",
            failures.len(),
            failures.join("\n")
        );
    });
}

#[test]
fn look_alikes_reach_the_summarizer_unchanged() {
    let texts = benign();
    let corpus: Vec<Planted> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Planted {
            family: format!("benign {i}"),
            text: t.clone(),
            secrets: Vec::new(),
        })
        .collect();
    let input = session(&corpus, false);
    rt().block_on(async {
        let server = fake_endpoint().await;
        run(OneShot::batch(), openai(&server), &input).await;
        let requests = server.received_requests().await.expect("recording on");
        let sent: String = requests
            .iter()
            .map(|r| {
                let v: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON body");
                v["messages"][1]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let missing: Vec<&String> = texts
            .iter()
            .filter(|t| !t.lines().all(|l| sent.contains(l)))
            .collect();
        assert!(missing.is_empty(), "changed on the way: {missing:#?}");
    });
}

/// Issue 22, item 5, end to end: an endpoint that echoes its whole prompt as the "summary" is
/// refused after one regeneration, the extractive fallback writes the summary (reported), and
/// the pass leaves the transcript under its threshold.
#[test]
fn an_echoing_endpoint_never_becomes_the_summary() {
    struct Echo;
    impl wiremock::Respond for Echo {
        fn respond(&self, r: &wiremock::Request) -> ResponseTemplate {
            let v: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON body");
            let prompt = v["messages"][1]["content"].as_str().unwrap_or_default();
            ResponseTemplate::new(200).set_body_json(json!({
                "id": "cmpl-1",
                "object": "chat.completion",
                "model": "fake-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("## Goal\n{prompt}")}, "finish_reason": "stop"}]
            }))
        }
    }
    let input = session(&credentials()[..40], true);
    rt().block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(Echo)
            .mount(&server)
            .await;
        let mut c = Compressor::builder(config())
            .summarizer(openai(&server))
            .counter(Arc::new(Estimator::default()))
            .session("s22e")
            .build()
            .unwrap();
        let mut t = c.transcript(input.clone());
        let report = c.one_shot(&mut t, OneShot::batch()).await;
        assert!(!report.failed(), "{report:?}");
        assert!(
            report.stats.fallback_used(),
            "the extractive fallback is reported"
        );
        assert!(!report.over_threshold(), "{report:?}");
        let requests = server.received_requests().await.expect("recording on");
        assert!(
            requests.len() >= 2 && requests.len() % 2 == 0,
            "each job asked twice: {}",
            requests.len()
        );
        // The written summary is the extractive one, not the echo.
        let v: serde_json::Value = serde_json::from_slice(&requests[0].body).expect("JSON body");
        let prompt = v["messages"][1]["content"].as_str().expect("user content");
        let opening: String = prompt.chars().take(200).collect();
        // Both as JSON text: the written messages are JSON lines.
        let written = written(&input, t.messages());
        let opening = serde_json::to_string(&opening).unwrap();
        assert!(
            !written.contains(opening.trim_matches('"')),
            "the echo was written"
        );
    });
}
