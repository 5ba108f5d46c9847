//! The layer: a tool loop through rig's handler machinery, with a fake model that records
//! every request it is sent, stays inside the window; no request splits a call from its
//! result; one pass serves the following rounds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hermes_compaction::core::{Estimator, TokenCounter};
use hermes_compaction::llm::{Error as LlmError, Summarizer, SummaryFuture, SummaryRequest};
use hermes_compaction::{Config, Outcome as PassOutcome};
use hermes_compaction_rig::{CompactingLayer, from_rig};
use rig_core::completion::message::Origin;
use rig_core::completion::{
    AssistantContent, CompletionRequest, CompletionResponse, Message, ModelRef,
    ProviderCapabilities, Usage,
};
use rig_core::effect::{
    EffectId, EffectKind, FamilyDescriptor, HandlerDescriptor, HandlerKey, Outcome, family,
};
use rig_core::message::{ToolName, ToolResultContent};
use rig_core::serve::{Dispatch, ErasedHandler, Reply, Serve};
use serde_json::json;

const WINDOW: u64 = 24_000;

/// A model that records each request's history and asks for one more tool call each time.
#[derive(Clone, Default)]
struct FakeModel {
    seen: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl Serve for FakeModel {
    type Family = family::Dynamic;

    fn descriptor(&self) -> HandlerDescriptor {
        HandlerDescriptor {
            key: HandlerKey::new("fake"),
            family: FamilyDescriptor::Completion {
                model: ModelRef::new("fake"),
                capabilities: ProviderCapabilities::default(),
            },
            layers: Vec::new(),
        }
    }

    async fn serve(&self, kind: EffectKind, _dispatch: Dispatch) -> Reply {
        let EffectKind::Completion { request, .. } = kind else {
            panic!("the fake model serves completions only");
        };
        let round = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(request.chat_history.clone());
            seen.len()
        };
        let call = AssistantContent::tool_call(
            format!("call_{round}"),
            ToolName::new("shell").unwrap(),
            json!({"cmd": format!("make step{round}")}),
        );
        Reply::Outcome(Ok(Outcome::Completion(CompletionResponse::new(
            vec![AssistantContent::text("running the next step"), call],
            Usage::default(),
            Origin::new("fake", "fake", "fake"),
            serde_json::Value::Null,
        ))))
    }
}

fn config() -> Config {
    let mut c = Config::default();
    c.model.context_length = WINDOW;
    c
}

fn tokens(history: &[Message]) -> u64 {
    let ours = from_rig(history).unwrap();
    let e = Estimator::default();
    ours.iter().map(|m| e.count_message(m)).sum()
}

/// What rig's runtime does in a tool loop: dispatch the history to the model's handler, add
/// the reply and each call's result, dispatch again; the history it keeps is never
/// compacted. Returns the runtime's final history.
async fn tool_loop(handler: &ErasedHandler, rounds: usize) -> Vec<Message> {
    let mut history = vec![Message::user("fix the build, step by step")];
    for round in 0..rounds {
        let mut request = CompletionRequest::new(history.last().unwrap().clone());
        request.chat_history = history.clone();
        let reply = handler
            .handle(
                EffectKind::Completion {
                    request,
                    stream: false,
                },
                Dispatch::new(EffectId::from_raw(round as u64 + 1), false),
            )
            .await;
        let Ok(Outcome::Completion(response)) = reply.into_outcome().await else {
            panic!("the fake model answers every round");
        };
        let calls: Vec<_> = response
            .choice
            .iter()
            .filter_map(|c| match c {
                AssistantContent::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .collect();
        history.push(Message::from(response.choice.clone()));
        history.push(Message::tool_results(
            calls
                .iter()
                .map(|c| {
                    c.result(vec![ToolResultContent::text(
                        format!("step {round}: compiled ok\n").repeat(300),
                    )])
                })
                .collect(),
        ));
    }
    history
}

#[tokio::test]
async fn a_long_tool_loop_stays_inside_the_window() {
    // Without the layer the fake model is sent the whole history: it outgrows the window.
    let bare = FakeModel::default();
    let runtime_history = tool_loop(&ErasedHandler::new(bare.clone()), 30).await;
    assert!(
        tokens(&runtime_history) > WINDOW,
        "the loop must overflow bare"
    );
    let largest = bare.seen.lock().unwrap().iter().map(|h| tokens(h)).max();
    assert!(largest.unwrap() > WINDOW);

    let model = FakeModel::default();
    let layer = CompactingLayer::new(config());
    let handler = ErasedHandler::new(model.clone()).layered(layer.clone());
    tool_loop(&handler, 30).await;
    let seen = model.seen.lock().unwrap();
    assert_eq!(seen.len(), 30);
    assert!(layer.passes() >= 1, "no pass ran");
    // Fewer passes than rounds: a compacted history serves the rounds after it.
    assert!(
        layer.passes() < 10,
        "{} passes for 30 rounds",
        layer.passes()
    );
    let threshold = (WINDOW as f64 * config().compression.threshold) as u64;
    for (round, history) in seen.iter().enumerate() {
        let t = tokens(history);
        // Each request is checked before it is sent: it is at most one round over the
        // threshold when it arrives and never over the window.
        assert!(
            t < WINDOW,
            "round {round}: {t} tokens sent to a {WINDOW} window"
        );
        // No call is sent without its result.
        let ours = from_rig(history).unwrap();
        let mut open: Vec<String> = Vec::new();
        for m in &ours {
            if let Some(id) = m.tool_call_id() {
                open.retain(|o| o != id);
            }
            open.extend(m.tool_calls().iter().map(|c| c.call_id().to_owned()));
        }
        assert!(
            open.is_empty(),
            "round {round}: calls without results {open:?}"
        );
        // The prompt itself (the first user message) is kept.
        assert!(
            ours.iter()
                .any(|m| m.text().contains("fix the build, step by step")),
            "round {round}: the ask is gone"
        );
    }
    assert!(tokens(seen.last().unwrap()) < threshold + 2_000);
}

#[tokio::test]
async fn a_request_with_an_open_call_is_not_compacted() {
    let layer = CompactingLayer::new(config());
    let call =
        AssistantContent::tool_call("c1", ToolName::new("shell").unwrap(), json!({"cmd": "ls"}));
    let mut history = vec![Message::user("go")];
    for i in 0..40 {
        history.push(Message::user(format!("note {i}: {}", "words ".repeat(400))));
        history.push(Message::assistant(format!("ack {i}")));
    }
    history.push(Message::from(vec![call]));
    assert!(tokens(&history) > WINDOW);
    assert_eq!(layer.check(&history).await.unwrap(), None);
    assert_eq!(layer.passes(), 0);
}

/// A summarizer whose provider is down, counting its calls.
#[derive(Default)]
struct Down {
    calls: AtomicUsize,
}

impl Summarizer for Down {
    fn name(&self) -> &str {
        "down"
    }

    fn summarize<'a>(&'a self, _req: &'a SummaryRequest) -> SummaryFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(LlmError::Transient { status: Some(503) }) })
    }
}

#[tokio::test]
async fn a_conversation_keeps_its_compressor_across_rounds() {
    // The rounds write long assistant text and small tool results, so pruning cannot help
    // and every pass needs the summarizer, whose provider is down (no extractive fallback).
    // A failed pass starts the failure cooldown; the cooldown only holds at the next round
    // if that round is checked by the same compressor. A compressor built afresh each round
    // has no cooldown and would call the summarizer at every round past the threshold.
    let mut config = config();
    config.compression.fallback_to_extractive = false;
    let down = Arc::new(Down::default());
    let layer = CompactingLayer::new(config.clone()).with_summarizer(down.clone());
    let threshold = (WINDOW as f64 * config.compression.threshold) as u64;
    let mut history = vec![Message::user("refactor the parser")];
    let (mut over, mut skipped) = (0, 0);
    for round in 0..12 {
        let call = AssistantContent::tool_call(
            format!("c{round}"),
            ToolName::new("read").unwrap(),
            json!({"path": format!("src/part{round}.rs")}),
        );
        history.push(Message::from(vec![
            AssistantContent::text(format!("step {round}: the plan so far ").repeat(300)),
            call.clone(),
        ]));
        let AssistantContent::ToolCall(call) = call else {
            unreachable!()
        };
        history.push(Message::tool_results(vec![
            call.result(vec![ToolResultContent::text("ok")]),
        ]));
        if tokens(&history) < threshold {
            continue;
        }
        let (calls, last) = (down.calls.load(Ordering::SeqCst), layer.last_report());
        assert_eq!(layer.check(&history).await.unwrap(), None, "round {round}");
        let report = layer.last_report();
        // A round the compressor checked leaves a report of its own (its token counts differ
        // from the last round's).
        if format!("{report:?}") == format!("{last:?}") {
            continue;
        }
        over += 1;
        let called = down.calls.load(Ordering::SeqCst) > calls;
        match report.map(|r| r.outcome) {
            Some(PassOutcome::Skipped) if !called => skipped += 1,
            Some(PassOutcome::Failed) if called => {}
            other => panic!("round {round}: {other:?}, summarizer called: {called}"),
        }
    }
    assert!(over >= 3, "only {over} rounds checked past the threshold");
    assert!(
        down.calls.load(Ordering::SeqCst) >= 1,
        "no pass asked for a summary"
    );
    assert!(
        skipped >= 1,
        "every round past the threshold called the summarizer again ({over} rounds)"
    );
    assert_eq!(layer.passes(), 0, "no pass changed a request");
}
