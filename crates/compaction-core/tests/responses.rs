//! Responses-style tool calls (issue 21, item 3): a call whose `id` differs from its `call_id`
//! (`{"id": "fc_1", "call_id": "call_1", ...}`) is answered by a result whose `tool_call_id` is
//! the `call_id`. Every pairing in core (validation, the law checker of spec section 2 law 2,
//! tool groups, prune, micro, material, the batch planner) pairs on the `call_id`, and the
//! bytes of both fields survive.

use compaction_core::Transcript;
use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::laws::{self, Law, Pass, PassKind, Protected};
use compaction_core::material::{self, MaterialConfig};
use compaction_core::micro::{self, MicroConfig, MicroHook, MicroPlanner, MicroRequest, MicroStep};
use compaction_core::prune::CallIndex;
use compaction_core::validate::{Issue, validate};
use compaction_core::{Estimator, Message};

/// An assistant with Responses-style calls `(item id, call id, tool, arguments)`.
fn calls(items: &[(&str, &str, &str, &str)]) -> Message {
    let calls: Vec<String> = items
        .iter()
        .map(|(id, call_id, name, args)| {
            format!(
                r#"{{"id":"{id}","call_id":"{call_id}","type":"function","function":{{"name":"{name}","arguments":{}}}}}"#,
                serde_json::to_string(args).unwrap()
            )
        })
        .collect();
    Message::from_json(&format!(
        r#"{{"role":"assistant","content":null,"tool_calls":[{}]}}"#,
        calls.join(",")
    ))
    .unwrap()
}

fn result(call_id: &str, text: &str) -> Message {
    Message::from_json(&format!(
        r#"{{"role":"tool","tool_call_id":"{call_id}","content":{}}}"#,
        serde_json::to_string(text).unwrap()
    ))
    .unwrap()
}

/// A session of `turns` turns, each with two Responses-style calls and a reply. Each turn
/// reads another file (a protected read of a file read again later would be superseded and
/// pruned).
fn session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        msgs.push(Message::user(format!("request {i}: fix the parser")));
        msgs.push(calls(&[
            (
                &format!("fc_{i}a"),
                &format!("call_{i}a"),
                "read_file",
                &format!(r#"{{"path":"src/part_{i}.rs"}}"#),
            ),
            (
                &format!("fc_{i}b"),
                &format!("call_{i}b"),
                "terminal",
                r#"{"command":"cargo test"}"#,
            ),
        ]));
        msgs.push(result(&format!("call_{i}a"), &"x".repeat(output_chars)));
        msgs.push(result(&format!("call_{i}b"), &"y".repeat(output_chars)));
        msgs.push(Message::assistant(format!("done {i}")));
    }
    msgs
}

#[test]
fn the_accessor_prefers_the_call_id_and_the_bytes_of_both_survive() {
    let m = calls(&[("fc_123", "call_123", "ls", "{}")]);
    let c = &m.tool_calls()[0];
    assert_eq!(c.id, "fc_123");
    assert_eq!(c.call_id(), "call_123");
    // A chat-style call, and an empty or non-string call_id, pair on the id.
    let plain = Message::from_json(r#"{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#).unwrap();
    assert_eq!(plain.tool_calls()[0].call_id(), "c1");
    for odd in [r#""""#, "null", "7"] {
        let m = Message::from_json(&format!(r#"{{"role":"assistant","content":"","tool_calls":[{{"id":"c2","call_id":{odd},"type":"function","function":{{"name":"ls","arguments":"{{}}"}}}}]}}"#)).unwrap();
        assert_eq!(m.tool_calls()[0].call_id(), "c2", "call_id {odd}");
    }
    // Read back with library metadata (a compacted transcript, a store export), or with
    // another field rewritten, the calls keep their bytes and key order.
    let wire = m.to_wire_json();
    let with_meta = format!(r#"{},"_hermes":{{"row_id":4}}}}"#, &wire[..wire.len() - 1]);
    let read = Message::from_json(&with_meta).unwrap();
    assert!(!read.is_pristine());
    assert_eq!(read.to_wire_json(), wire);
    let mut texted = m.clone();
    texted.set_text("listing");
    let calls_of = |json: &str| {
        let at = json.find(r#""tool_calls":"#).unwrap();
        json[at..].to_owned()
    };
    assert_eq!(calls_of(&texted.to_wire_json()), calls_of(&wire));
    // Rewriting the calls themselves keeps both fields and their values.
    let mut edited = m.clone();
    let mut calls = edited.tool_calls().to_vec();
    calls[0].function.arguments = r#"{"path":"/"}"#.into();
    edited.set_tool_calls(Some(calls));
    let v = edited.to_wire_value();
    assert_eq!(v["tool_calls"][0]["id"], "fc_123");
    assert_eq!(v["tool_calls"][0]["call_id"], "call_123");
}

/// A call that carries only a `call_id` (no item id) is read, pairs on it, and is written
/// back without an invented `id`.
#[test]
fn a_call_with_only_a_call_id_pairs_on_it() {
    let line = r#"{"role":"assistant","content":null,"tool_calls":[{"call_id":"call_9","type":"function","function":{"name":"ls","arguments":"{}"}}]}"#;
    let call = Message::from_json(line).expect("a call without an id is read");
    assert_eq!(call.tool_calls()[0].call_id(), "call_9");
    let msgs = vec![
        Message::user("list"),
        call.clone(),
        result("call_9", "a b"),
        Message::assistant("two files"),
    ];
    assert!(validate(&msgs).is_clean(), "{:?}", validate(&msgs).issues);
    let mut edited = call;
    let mut calls = edited.tool_calls().to_vec();
    calls[0].function.arguments = r#"{"path":"/"}"#.into();
    edited.set_tool_calls(Some(calls));
    let v = edited.to_wire_value();
    assert!(v["tool_calls"][0].get("id").is_none(), "{v}");
    assert_eq!(v["tool_calls"][0]["call_id"], "call_9");
}

#[test]
fn a_responses_transcript_validates_clean() {
    let msgs = session(3, 40);
    let report = validate(&msgs);
    assert!(report.is_clean(), "{:?}", report.issues);
    // A result answering the item id instead is an orphan, and the call stays unanswered.
    let mut wrong = msgs.clone();
    wrong[3] = result("fc_0a", "x");
    let issues = validate(&wrong).issues;
    assert!(
        issues.contains(&Issue::OrphanToolResult { index: 3 }),
        "{issues:?}"
    );
    assert!(
        issues.contains(&Issue::UnansweredToolCall { index: 2, call: 0 }),
        "{issues:?}"
    );
}

#[test]
fn the_law_checker_pairs_on_the_call_id() {
    let before = session(2, 40);
    let e = Estimator::default();
    let pass = Pass::new(
        PassKind::Prune,
        Protected {
            head: 1,
            tail: 1,
            pinned: None,
        },
    );
    assert!(laws::check(&before, &before, &pass, &e).is_empty());
    // Dropping the call but keeping its results: the results became orphans (law 2).
    let mut after = before.clone();
    after.remove(2);
    let v = laws::check(&before, &after, &pass, &e);
    assert!(
        v.iter()
            .any(|x| matches!(x, laws::Violation::OrphanToolResult { .. })),
        "{v:?}"
    );
    // Dropping one result but keeping its call: the call lost its result (law 2).
    let mut after = before.clone();
    after.remove(4);
    let v = laws::check(&before, &after, &pass, &e);
    assert!(
        v.iter()
            .any(|x| matches!(x, laws::Violation::MissingToolResult { index: 2, call: 1 })),
        "{v:?}"
    );
    assert!(v.iter().all(|x| x.law() == Law::ToolIntegrity), "{v:?}");
}

#[test]
fn prune_and_material_name_the_tool_a_result_answers() {
    let msgs = session(1, 40);
    let index = CallIndex::build(&msgs);
    assert_eq!(
        index.for_result(&msgs[3]).map(|i| i.name),
        Some("read_file")
    );
    assert_eq!(index.for_result(&msgs[4]).map(|i| i.name), Some("terminal"));
    let text = material::serialize(&msgs[1..], &msgs, &MaterialConfig::default());
    assert!(text.contains("[tool result: read_file]"), "{text}");
    assert!(text.contains("[tool result: terminal]"), "{text}");
}

#[test]
fn a_batch_pass_summarizes_responses_calls_and_keeps_the_laws() {
    let e = Estimator::default();
    let t = Transcript::new(session(12, 3_000), &e);
    // Both tools protected, so pruning alone cannot reach the low-water mark and the pass
    // summarizes (at the defaults every output here is prunable and pruning suffices).
    let mut cfg = BatchConfig::default();
    cfg.prune.protected_tools = vec!["read_file".into(), "terminal".into()];
    let req = BatchRequest {
        force: true,
        ..BatchRequest::default()
    };
    let plan = batch::plan_batch(&t, 8_000, &cfg, &req, &e);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("expected a summary, got {:?}", plan.step);
    };
    let bodies: Vec<String> = jobs.iter().map(|_| "the parser was fixed".into()).collect();
    let edit = batch::assemble(&t, &plan, &bodies, &cfg).expect("the plan assembles");
    let after = edit.apply(t.messages()).expect("the edit applies");
    let pass = Pass::of_batch(&plan, &cfg, PassKind::Batch);
    let v = laws::check(t.messages(), &after, &pass, &e);
    assert!(v.is_empty(), "{v:?}");
    assert!(validate(&after).is_clean());
    assert!(after.len() < t.len());
}

#[test]
fn a_micro_pass_absorbs_an_exchange_of_responses_calls() {
    let e = Estimator::default();
    let t = Transcript::new(session(20, 2_000), &e);
    let cfg = MicroConfig::default();
    let plan = MicroPlanner::default().plan(&MicroRequest {
        transcript: &t,
        hook: MicroHook::Turn,
        threshold_tokens: 20_000,
        compacted: true,
        config: &cfg,
        counter: &e,
    });
    let MicroStep::Absorb(job) = &plan.step else {
        panic!("expected an absorb, got {:?}", plan.step);
    };
    assert!(
        job.material.contains("[tool result: terminal]"),
        "{}",
        job.material
    );
    let out = micro::assemble_micro(&t, &plan, "fixed the parser", &cfg, &e).unwrap();
    let after = out.edit().expect("absorbed").apply(t.messages()).unwrap();
    let pass = Pass::of_micro(&plan, &cfg, Some(&out));
    let v = laws::check(t.messages(), &after, &pass, &e);
    assert!(v.is_empty(), "{v:?}");
    assert!(validate(&after).is_clean());
}
