//! The summarizer `auxiliary.compression.*` builds (`summarizer_from_config`) against a local
//! fake endpoint (wiremock on 127.0.0.1), driven through a batch pass: which models it tries,
//! and which failures abort the pass or fall back (issue 21, items 7 and 12; spec section 9: a
//! failed summary call never drops the middle).

use compaction_core::marker;
use hermes_compaction::OneShot;
use hermes_compaction::{Compressor, Config, FailureKind, Outcome, summarizer_from_config};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::config;

const MAIN_SUMMARY: &str =
    "## Active request\n> step 39: keep going\n## Goal\n- written by the main model";

fn completion(content: &str) -> Value {
    json!({
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
}

/// The openai summarizer at `server` with `aux` as `auxiliary.compression.model` and `main` as
/// `model.name`, no retries, and the extractive fallback as `fallback` says.
fn configured(server: &MockServer, aux: &str, main: &str, fallback: bool) -> Config {
    let mut c = config(16_000);
    c.model.name = main.into();
    c.compression.fallback_to_extractive = fallback;
    let a = &mut c.auxiliary.compression;
    a.provider = "openai".into();
    a.model = aux.into();
    a.base_url = format!("{}/v1", server.uri());
    a.api_key_env = String::new();
    a.max_retries = 0;
    a.timeout = 5;
    c
}

async fn answer(server: &MockServer, model: &str, template: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({ "model": model })))
        .respond_with(template)
        .mount(server)
        .await;
}

async fn models_asked(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .expect("recording on")
        .iter()
        .map(|r| {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            v["model"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// One forced batch pass over a long conversation with the configured summarizer.
async fn pass(
    c: Config,
) -> (
    hermes_compaction::BatchReport,
    Vec<compaction_core::Message>,
    Vec<compaction_core::Message>,
) {
    let s = summarizer_from_config(&c).expect("a valid configuration");
    let mut comp = Compressor::builder(c)
        .summarizer(s)
        .counter(std::sync::Arc::new(compaction_core::Estimator::default()))
        .session("configured")
        .build()
        .unwrap();
    // Long replies: pruning cannot reach the low-water mark, the middle must be summarized.
    let mut msgs = vec![compaction_core::Message::system("You are a coding agent.")];
    for i in 0..40 {
        msgs.push(compaction_core::Message::user(format!(
            "step {i}: keep going"
        )));
        msgs.push(compaction_core::Message::assistant(format!(
            "{i} {}",
            "notes on the design ".repeat(100)
        )));
    }
    let mut t = comp.transcript(msgs);
    let before = t.messages().to_vec();
    let r = comp
        .one_shot(&mut t, OneShot::batch())
        .await
        .into_batch()
        .unwrap();
    (r, before, t.messages().to_vec())
}

fn batch_body(after: &[compaction_core::Message]) -> String {
    after
        .iter()
        .find(|m| marker::classify(m).is_some())
        .and_then(marker::parse_body)
        .expect("a batch marker")
}

/// Item 7: with `auxiliary.compression.model` different from `model.name`, a 404 (model not
/// found) from the auxiliary model is retried on the main model, whose summary is used; the
/// extractive fallback is off, so nothing else could have produced it.
#[tokio::test]
async fn a_missing_auxiliary_model_falls_back_to_the_main_model() {
    let server = MockServer::start().await;
    answer(
        &server,
        "aux-model",
        ResponseTemplate::new(404).set_body_json(
            json!({"error": {"code": "model_not_found", "message": "The model `aux-model` does not exist"}}),
        ),
    )
    .await;
    answer(
        &server,
        "main-model",
        ResponseTemplate::new(200).set_body_json(completion(MAIN_SUMMARY)),
    )
    .await;
    let c = configured(&server, "aux-model", "main-model", false);
    assert_eq!(summarizer_from_config(&c).unwrap().name(), "aux-model");
    let (r, _, after) = pass(c).await;
    assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
    assert!(!r.stats.fallback_used());
    assert!(batch_body(&after).contains("written by the main model"));
    assert_eq!(models_asked(&server).await, ["aux-model", "main-model"]);

    // The same model twice, or no main model, is one model: asked once, then the pass fails
    // (no fallback configured) and the transcript is unchanged.
    for (aux, main) in [("aux-model", "aux-model"), ("aux-model", "")] {
        let server = MockServer::start().await;
        answer(&server, "aux-model", ResponseTemplate::new(404)).await;
        let (r, before, after) = pass(configured(&server, aux, main, false)).await;
        assert_eq!(r.outcome, Outcome::Failed, "{aux}/{main}");
        assert_eq!(after, before);
        assert_eq!(models_asked(&server).await, ["aux-model"], "{aux}/{main}");
    }
    // An empty auxiliary model means the main model alone.
    let server = MockServer::start().await;
    answer(
        &server,
        "main-model",
        ResponseTemplate::new(200).set_body_json(completion(MAIN_SUMMARY)),
    )
    .await;
    let (r, _, _) = pass(configured(&server, "", "main-model", false)).await;
    assert_eq!(r.outcome, Outcome::Summarized);
    assert_eq!(models_asked(&server).await, ["main-model"]);
}

/// Item 12: a 402 whose limit resets is transient: the main model is tried, then the
/// extractive fallback summarizes (the pass is not aborted). A plain 402 (credits exhausted)
/// aborts as quota with the transcript unchanged and no fallback.
#[tokio::test]
async fn a_402_that_resets_falls_back_and_a_plain_402_aborts() {
    let resets = json!({"error": {"message": "You have hit the usage limit of this 5-hour window; it resets at 18:00 UTC"}});
    let server = MockServer::start().await;
    for model in ["aux-model", "main-model"] {
        answer(
            &server,
            model,
            ResponseTemplate::new(402).set_body_json(&resets),
        )
        .await;
    }
    let (r, before, after) = pass(configured(&server, "aux-model", "main-model", true)).await;
    assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
    assert!(r.stats.fallback_used());
    assert!(after.len() < before.len());
    assert_eq!(models_asked(&server).await, ["aux-model", "main-model"]);

    let credits =
        json!({"error": {"message": "Insufficient credits: add more and try again", "code": 402}});
    let server = MockServer::start().await;
    for model in ["aux-model", "main-model"] {
        answer(
            &server,
            model,
            ResponseTemplate::new(402).set_body_json(&credits),
        )
        .await;
    }
    let (r, before, after) = pass(configured(&server, "aux-model", "main-model", true)).await;
    assert_eq!(r.outcome, Outcome::Failed);
    assert_eq!(
        r.failure_kind(),
        Some(FailureKind::Summarizer(compaction_llm::ErrorClass::Quota))
    );
    assert!(!r.stats.fallback_used());
    assert_eq!(after, before);
    assert_eq!(models_asked(&server).await, ["aux-model"]);
}

/// Issue 33, item 9: a 400 "out of extra usage" (Anthropic's terminal quota) leaves the
/// transcript unchanged for a later retry, with no extractive fallback.
#[tokio::test]
async fn a_400_out_of_extra_usage_leaves_the_transcript_unchanged() {
    let body = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "You're out of extra usage. Add more at claude.ai/settings/usage and keep going."}});
    let server = MockServer::start().await;
    answer(
        &server,
        "main-model",
        ResponseTemplate::new(400).set_body_json(&body),
    )
    .await;
    let (r, before, after) = pass(configured(&server, "", "main-model", true)).await;
    assert_eq!(r.outcome, Outcome::Failed, "{r:?}");
    assert_eq!(
        r.failure_kind(),
        Some(FailureKind::Summarizer(compaction_llm::ErrorClass::Quota))
    );
    assert!(!r.stats.fallback_used());
    assert_eq!(after, before);
}

/// Item 6, end to end: a session whose earlier summary holds 320K characters, plus 480K
/// characters of turns since. The request the configured summarizer sends stays within the
/// material bound (200K characters, previous summary included, plus the prompt), and when the
/// provider says it is still too large, the retry halves the whole of it.
#[tokio::test]
async fn the_request_is_bounded_with_its_previous_summary() {
    let server = MockServer::start().await;
    let too_big = json!({"error": {"code": "context_length_exceeded", "message": "maximum context length is 65536 tokens"}});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(too_big))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    answer(
        &server,
        "main-model",
        ResponseTemplate::new(200).set_body_json(completion(MAIN_SUMMARY)),
    )
    .await;
    let c = configured(&server, "", "main-model", false);
    let mut body = String::from("## Active request\n> step 0\n");
    while body.len() < 320_000 {
        body.push_str("- an earlier decision about the parser, kept for reference\n");
    }
    let mut msgs = vec![
        compaction_core::Message::system("You are a coding agent."),
        marker::render(
            compaction_core::MarkerKind::Batch,
            compaction_core::Role::User,
            &body,
        ),
        compaction_core::Message::assistant("ok"),
    ];
    for i in 0..120 {
        msgs.push(compaction_core::Message::user(format!(
            "step {i}: keep going"
        )));
        msgs.push(compaction_core::Message::assistant(format!(
            "{i} {}",
            "z".repeat(4_000)
        )));
    }
    let s = summarizer_from_config(&c).unwrap();
    let mut comp = Compressor::builder(c)
        .summarizer(s)
        .counter(std::sync::Arc::new(compaction_core::Estimator::default()))
        .session("bounded")
        .build()
        .unwrap();
    let mut t = comp.transcript(msgs);
    let r = comp
        .one_shot(&mut t, OneShot::batch())
        .await
        .into_batch()
        .unwrap();
    assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
    let sizes: Vec<usize> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            v["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap().chars().count())
                .sum()
        })
        .collect();
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    assert!(sizes[0] <= 215_000, "{sizes:?}");
    assert!(sizes[1] <= 115_000, "{sizes:?}");
}

/// The agent's own model at the agent's endpoint (`warm_cache = "auto"`): the summary request
/// on the wire is the agent's last request up to the span's end, byte for byte, then one
/// instruction; with another
/// summary model it is the standalone system + user pair.
#[tokio::test]
async fn the_agents_own_model_gets_the_warm_request_on_the_wire() {
    for (aux, warm) in [("", true), ("small", false)] {
        let server = MockServer::start().await;
        let body = ResponseTemplate::new(200).set_body_json(completion(MAIN_SUMMARY));
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(body)
            .mount(&server)
            .await;
        let mut cfg = configured(&server, aux, "main", false);
        cfg.model.base_url = format!("{}/v1/", server.uri());
        assert_eq!(cfg.warm_cache_on(), warm);
        let s = summarizer_from_config(&cfg).unwrap();
        let mut c = Compressor::builder(cfg)
            .summarizer(s)
            .session("warm")
            .build()
            .unwrap();
        let msgs = crate::common::tool_session(40, 50);
        let split = msgs.len() - 8;
        let mut t = c.transcript(msgs[..split].to_vec());
        // The agent's last request: all but the last two turns (under the threshold: no pass).
        let (_, none) = c.before_request(&mut t).await;
        assert!(none.is_none());
        let sent: Vec<String> = t.messages().iter().map(|m| m.to_wire_json()).collect();
        for m in &msgs[split..] {
            t.push(m.clone(), c.status().counter);
        }
        let report = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(report.outcome, Outcome::Summarized, "{aux:?}");
        let requests = server.received_requests().await.unwrap();
        let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
        let wire = body["messages"].as_array().unwrap();
        if warm {
            // The last request up to the span's end (the tail after it is not sent), byte for
            // byte, then the instruction, which names the span as ending there.
            let prefix = wire.len() - 1;
            assert!(
                prefix > 1 && prefix < sent.len(),
                "{prefix} of {}",
                sent.len()
            );
            for (i, m) in sent[..prefix].iter().enumerate() {
                assert_eq!(&serde_json::to_string(&wire[i]).unwrap(), m, "message {i}");
            }
            assert_eq!(wire[prefix]["role"], "user");
            let instruction = wire[prefix]["content"].as_str().unwrap();
            assert!(
                instruction.contains(&format!(" to {prefix} of this conversation")),
                "{instruction}"
            );
        } else {
            assert_eq!(wire.len(), 2);
            assert_eq!(wire[0]["role"], "system");
        }
    }
}
