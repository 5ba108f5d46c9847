//! Issue 21, item 14: a user message with text always survives a pass. When no user message
//! has text of its own (the only user turns are images, or blank), a summarizing pass adds
//! exactly one continuation ([`marker::continuation`], a user-role library message) beside its
//! summary, so the summary never becomes the first user-role text (spec section 1, "Summary
//! marker": the latest user message after it is the active task), with roles alternating and
//! tool groups whole (spec section 2, laws 2 and 3). A continuation is no summary, never one of
//! the user's messages, and never stacks.

use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::laws::{self, Pass, PassKind};
use compaction_core::regions::RegionConfig;
use compaction_core::{Content, Part};
use compaction_core::{Estimator, MarkerKind, Message, Role, ToolCall, Transcript, marker};
use serde_json::json;

fn with_parts(role: Role, parts: Vec<serde_json::Value>) -> Message {
    let mut m = Message::new(role, "");
    m.set_content(Some(Content::Parts(parts.into_iter().map(Part).collect())));
    m
}

fn image_only() -> Message {
    with_parts(
        Role::User,
        vec![
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}),
        ],
    )
}

/// User turns without text of their own.
fn textless_users() -> Vec<(&'static str, Message)> {
    vec![
        ("image only", image_only()),
        ("blank", Message::user("  \n ")),
        ("empty", Message::user("")),
        (
            "blank text part and image",
            with_parts(
                Role::User,
                vec![
                    json!({"type": "text", "text": " "}),
                    json!({"type": "image_url", "image_url": {"url": "https://example.com/s.png"}}),
                ],
            ),
        ),
    ]
}

fn tool_rounds(msgs: &mut Vec<Message>, tag: &str, n: usize, chars: usize) {
    for i in 0..n {
        let id = format!("{tag}{i}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!("line {i}\n").repeat(chars / 8),
        ));
    }
}

/// Responses-style rounds: the call's `id` differs from its `call_id`, the result answers the
/// `call_id`.
fn responses_rounds(msgs: &mut Vec<Message>, tag: &str, n: usize, chars: usize) {
    for i in 0..n {
        msgs.push(
            Message::from_json(&format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"fc_{tag}{i}","call_id":"call_{tag}{i}","type":"function","function":{{"name":"bash","arguments":"{{}}"}}}}]}}"#
            ))
            .unwrap(),
        );
        msgs.push(
            Message::from_json(&format!(
                r#"{{"role":"tool","tool_call_id":"call_{tag}{i}","content":{}}}"#,
                serde_json::to_string(&"r".repeat(chars)).unwrap()
            ))
            .unwrap(),
        );
    }
}

fn cfg() -> BatchConfig {
    BatchConfig {
        regions: RegionConfig {
            tail_ratio: 0.2,
            ..RegionConfig::default()
        },
        // Prune-only is never enough: every pass writes a summary.
        prune_minimum_tokens: 1_000_000,
        ..BatchConfig::default()
    }
}

/// One forced batch pass with a fixed summary per job; every law must hold.
fn pass(msgs: Vec<Message>, compacted: bool) -> Vec<Message> {
    pass_with(msgs, compacted, &cfg())
}

fn pass_with(msgs: Vec<Message>, compacted: bool, cfg: &BatchConfig) -> Vec<Message> {
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let req = BatchRequest {
        force: true,
        compacted,
        ..BatchRequest::default()
    };
    let plan = batch::plan_batch(&t, 20_000, cfg, &req, &e);
    let n = match &plan.step {
        BatchStep::Summarize(jobs) => jobs.len(),
        other => panic!("expected a summary, got {other:?}"),
    };
    let summaries: Vec<String> = (0..n).map(|i| format!("summary {i}")).collect();
    let edit = batch::assemble(&t, &plan, &summaries, cfg).expect("assembles");
    let after = edit.apply(t.messages()).expect("applies");
    let v = laws::check(
        t.messages(),
        &after,
        &Pass::of_batch(&plan, cfg, PassKind::Batch),
        &e,
    );
    assert!(v.is_empty(), "laws broken: {v:?}");
    after
}

fn continuations(msgs: &[Message]) -> Vec<usize> {
    (0..msgs.len())
        .filter(|&i| marker::is_continuation(&msgs[i]))
        .collect()
}

fn summaries(msgs: &[Message]) -> Vec<usize> {
    (0..msgs.len())
        .filter(|&i| marker::is_summary(&msgs[i]))
        .collect()
}

/// The first user-role message with visible text is the continuation, beside the summary.
fn assert_continued(after: &[Message], what: &str) {
    let first_text = after
        .iter()
        .position(|m| m.is_user() && m.has_visible_text())
        .unwrap_or_else(|| panic!("{what}: no user message with text survives"));
    assert!(
        !marker::is_summary(&after[first_text]),
        "{what}: the summary became the first user-role text"
    );
    let c = continuations(after);
    assert_eq!(c.len(), 1, "{what}: exactly one continuation");
    assert!(
        after[c[0]].is_user(),
        "{what}: the continuation is user-role"
    );
    let s = summaries(after);
    assert!(
        s.iter().any(|&i| c[0].abs_diff(i) == 1),
        "{what}: the continuation sits beside a summary"
    );
    let batch_or_micro = s
        .iter()
        .filter(|&&i| marker::classify(&after[i]) != Some(MarkerKind::Progress))
        .count();
    assert!(
        batch_or_micro <= 1,
        "{what}: summaries of the session stacked"
    );
}

/// Issue 21, item 14 (through the core's batch pass): the only user turn is image-only, or
/// blank; the pass still leaves a user message with text, the continuation, and the summary is
/// not the first user-role text (spec section 1, "Summary marker"; section 2, law 3).
#[test]
fn a_user_message_with_text_survives_when_the_only_user_turn_has_none() {
    for (name, only) in textless_users() {
        for compacted in [false, true] {
            let mut msgs = vec![Message::system("You are a coding agent."), only.clone()];
            tool_rounds(&mut msgs, "s", 60, 2_000);
            msgs.push(Message::assistant("The button is misaligned."));
            tool_rounds(&mut msgs, "r", 6, 2_000);
            let after = pass(msgs, compacted);
            assert_continued(&after, &format!("{name}/{compacted}"));
            assert!(
                after.contains(&only),
                "{name}/{compacted}: the user's turn survives"
            );
        }
    }
}

/// The same under strict alternation (no same-role neighbours at all, a progress summary
/// merged into the message after it).
#[test]
fn strict_alternation_still_continues() {
    let strict = BatchConfig {
        strict_alternation: true,
        ..cfg()
    };
    for (name, only) in textless_users() {
        for compacted in [false, true] {
            let mut msgs = vec![Message::system("You are a coding agent."), only.clone()];
            tool_rounds(&mut msgs, "s", 60, 2_000);
            msgs.push(Message::assistant("The button is misaligned."));
            tool_rounds(&mut msgs, "r", 6, 2_000);
            let after = pass_with(msgs, compacted, &strict);
            assert_continued(&after, &format!("strict {name}/{compacted}"));
        }
    }
}

/// Found on the way (strict alternation, one long turn whose request lies in the protected
/// head): the turn's older part starts after a tool result and ends at a tool call of the
/// tail, so merging the progress summary into that call broke its tool group
/// (`WouldBreakToolPairs`); the summary takes the role that alternates instead (spec section
/// 2, laws 2 and 3).
#[test]
fn strict_alternation_places_a_progress_summary_after_the_head() {
    let strict = BatchConfig {
        strict_alternation: true,
        ..cfg()
    };
    let mut msgs = vec![Message::system("sys"), Message::user("port the parser")];
    tool_rounds(&mut msgs, "s", 60, 2_000);
    msgs.push(Message::assistant("half done"));
    tool_rounds(&mut msgs, "r", 6, 2_000);
    let after = pass_with(msgs, false, &strict);
    assert!(summaries(&after).len() == 1 && continuations(&after).is_empty());
}

/// Several image-only user turns, Responses-style tool calls around them: still one
/// continuation, roles alternating, every call with its result.
#[test]
fn several_textless_turns_and_responses_calls_get_one_continuation() {
    let mut msgs = vec![Message::system("You are a computer-use agent.")];
    for turn in 0..4 {
        msgs.push(image_only());
        responses_rounds(&mut msgs, &format!("t{turn}_"), 15, 2_000);
        msgs.push(Message::assistant(format!("screen {turn} read")));
    }
    let after = pass(msgs, false);
    assert_continued(&after, "four image-only turns");
}

/// A session already compacted with a continuation is compacted again: the old continuation
/// is dropped or kept, never stacked, and exactly one summary remains.
#[test]
fn resuming_a_continued_session_never_stacks_two() {
    for (name, only) in textless_users() {
        let mut msgs = vec![Message::system("You are a coding agent."), only.clone()];
        tool_rounds(&mut msgs, "s", 60, 2_000);
        msgs.push(Message::assistant("first look done"));
        let mut after = pass(msgs, false);
        for round in 0..3 {
            tool_rounds(&mut after, &format!("x{round}_"), 50, 2_000);
            after.push(Message::assistant(format!("round {round} done")));
            // A fresh compressor: the continuation comes back without its metadata too.
            if round == 1 {
                for m in after.iter_mut() {
                    m.meta_mut().marker = None;
                }
            }
            after = pass(after, true);
            assert_continued(&after, &format!("{name}/round {round}"));
        }
    }
}

/// With a user message of the user's own anywhere, no continuation is added; neither a
/// summary nor a continuation counts as one.
#[test]
fn real_user_text_needs_no_continuation() {
    let mut msgs = vec![Message::system("sys"), image_only()];
    tool_rounds(&mut msgs, "s", 40, 2_000);
    msgs.push(Message::assistant("looked"));
    msgs.push(Message::user("now fix the button"));
    tool_rounds(&mut msgs, "r", 30, 2_000);
    let after = pass(msgs, false);
    assert!(continuations(&after).is_empty(), "{after:?}");
    let e = Estimator::default();
    assert!(Transcript::new(after, &e).last_real_user().is_some());
    let only_continuation = Transcript::new(vec![marker::continuation()], &e);
    assert_eq!(only_continuation.last_real_user(), None);
}

/// Micro passes over a continued session whose later user turns are images: every law holds
/// (the continuation is no real user message to join, no rolling marker, no batch marker), the
/// continuation is never stacked nor dropped, and no summary becomes the first user-role text.
/// A micro marker sits between user turns, so it is assistant-role there: micro adds no
/// continuation of its own.
#[test]
fn micro_passes_keep_the_continuation_single() {
    use compaction_core::micro::{
        self, MicroConfig, MicroEvent, MicroHook, MicroPlanner, MicroRequest, MicroStep,
    };
    let mut msgs = vec![Message::system("You are a computer-use agent.")];
    for turn in 0..3 {
        msgs.push(image_only());
        tool_rounds(&mut msgs, &format!("s{turn}_"), 20, 2_000);
        msgs.push(Message::assistant(format!("look {turn} done")));
    }
    let mut msgs = pass(msgs, false);
    assert!(
        msgs.iter()
            .any(|m| marker::classify(m) == Some(MarkerKind::Batch))
    );
    for turn in 0..8 {
        msgs.push(image_only());
        responses_rounds(&mut msgs, &format!("m{turn}_"), 4, 1_500);
        msgs.push(Message::assistant(format!("screen {turn} read")));
    }
    let e = Estimator::default();
    let mut t = Transcript::new(msgs, &e);
    let cfg = MicroConfig::default();
    let mut planner = MicroPlanner::default();
    let mut absorbed = 0;
    for _ in 0..12 {
        let before = t.messages().to_vec();
        let plan = planner.plan(&MicroRequest {
            transcript: &t,
            hook: MicroHook::Turn,
            threshold_tokens: 12_000,
            compacted: true,
            config: &cfg,
            counter: &e,
        });
        planner.record(MicroEvent::Planned(&plan));
        if !matches!(plan.step, MicroStep::Absorb(_) | MicroStep::Defrag(_)) {
            continue;
        }
        let out = micro::assemble_micro(&t, &plan, "rolling summary", &cfg, &e).expect("assembles");
        planner.record(MicroEvent::Assembled(&out));
        if let Some(edit) = out.edit() {
            edit.clone().apply_to(&mut t, &e).expect("applies");
            absorbed += 1;
        }
        let v = laws::check(
            &before,
            t.messages(),
            &Pass::of_micro(&plan, &cfg, Some(&out)),
            &e,
        );
        assert!(v.is_empty(), "micro broke laws: {v:?}");
        let after = t.messages();
        assert_eq!(continuations(after).len(), 1, "micro stacked or dropped it");
        let first_text = after
            .iter()
            .position(|m| m.is_user() && m.has_visible_text());
        assert!(first_text.is_some_and(|i| marker::is_continuation(&after[i])));
    }
    assert!(absorbed > 0, "no micro pass ran");
}
