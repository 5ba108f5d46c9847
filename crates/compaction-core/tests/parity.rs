//! Behaviours Hermes Agent's own compressor tests pin (issue 21), checked through the batch
//! planner as a whole pass: plan, a summary per job, assemble, apply.

use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::laws::{self, Pass, PassKind};
use compaction_core::marker;
use compaction_core::regions::RegionConfig;
use compaction_core::{Content, Part};
use compaction_core::{Estimator, MarkerKind, Message, Role, ToolCall, Transcript};
use serde_json::json;

// Hermes Agent's own strings, written out so the test does not lean on ours.
const HERMES_HEADER: &str = "[PRIOR CONTEXT — for reference only; not a new message]";
const HERMES_DELIMITER: &str = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]";
const HERMES_END: &str =
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---";

fn turns(msgs: &mut Vec<Message>, from: usize, n: usize) {
    for i in from..from + n {
        let id = format!("t{i}");
        msgs.push(Message::user(format!(
            "request {i}: {}",
            "context ".repeat(40)
        )));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)],
        ));
        msgs.push(Message::tool_result(&id, "o".repeat(300)));
        msgs.push(Message::assistant(format!("finished {i}")));
    }
}

fn tool_rounds(msgs: &mut Vec<Message>, tag: &str, n: usize, chars: usize) {
    for i in 0..n {
        let id = format!("{tag}{i}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "bash",
                r#"{"command":"cargo test"}"#,
            )],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!("line {i}\n").repeat(chars / 8),
        ));
    }
}

fn with_parts(role: Role, parts: Vec<serde_json::Value>) -> Message {
    let mut m = Message::new(role, "");
    m.set_content(Some(Content::Parts(parts.into_iter().map(Part).collect())));
    m
}

fn image_part() -> serde_json::Value {
    json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}})
}

/// User messages with no text: blank, whitespace of every kind, only an image, an empty
/// parts list, only an empty text part, null content.
fn textless_users() -> Vec<(&'static str, Message)> {
    let mut null = Message::user("");
    null.set_content(Some(Content::Null));
    vec![
        ("empty", Message::user("")),
        ("spaces", Message::user("   ")),
        ("newline-tab", Message::user("\n\t")),
        ("nbsp", Message::user("\u{00a0}\u{2003}\n")),
        ("image only", with_parts(Role::User, vec![image_part()])),
        ("empty parts", with_parts(Role::User, vec![])),
        (
            "blank text part and image",
            with_parts(
                Role::User,
                vec![json!({"type": "text", "text": " \n "}), image_part()],
            ),
        ),
        ("null", null),
    ]
}

struct Outcome {
    before: Vec<Message>,
    after: Vec<Message>,
    jobs: Vec<batch::SummaryJob>,
}

/// One forced batch pass with a fixed summary per job; the laws must hold.
/// The spec's original batch numbers these cases were written against (a 0.20 tail, prune-only
/// buying at least 8,000 tokens), not `BatchConfig::default()`: the cases are about where
/// the ask and the reply land, which needs a summary to be planned.
fn spec_batch() -> BatchConfig {
    BatchConfig {
        regions: RegionConfig {
            tail_ratio: 0.2,
            ..RegionConfig::default()
        },
        prune_minimum_tokens: 8_000,
        ..BatchConfig::default()
    }
}

fn pass(msgs: Vec<Message>, threshold: u64, cfg: &BatchConfig, compacted: bool) -> Outcome {
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let req = BatchRequest {
        force: true,
        compacted,
        ..BatchRequest::default()
    };
    let plan = batch::plan_batch(&t, threshold, cfg, &req, &e);
    let jobs = match &plan.step {
        BatchStep::Summarize(jobs) => jobs.clone(),
        _ => Vec::new(),
    };
    let summaries: Vec<String> = (0..jobs.len()).map(|i| format!("summary {i}")).collect();
    let edit = batch::assemble(&t, &plan, &summaries, cfg).expect("assembles");
    let after = edit.apply(t.messages()).expect("applies");
    let law_pass = Pass::of_batch(&plan, cfg, PassKind::Batch);
    let v = laws::check(t.messages(), &after, &law_pass, &e);
    assert!(v.is_empty(), "laws broken: {v:?}");
    Outcome {
        before: t.messages().to_vec(),
        after,
        jobs,
    }
}

fn summaries_in(msgs: &[Message]) -> usize {
    msgs.iter()
        .filter(|m| {
            matches!(
                marker::classify(m),
                Some(MarkerKind::Batch | MarkerKind::Micro)
            )
        })
        .count()
}

fn tokens(msgs: &[Message]) -> u64 {
    Transcript::new(msgs.to_vec(), &Estimator::default()).estimated_total()
}

fn position(msgs: &[Message], m: &Message) -> Option<usize> {
    msgs.iter().position(|x| x == m)
}

/// Spec section 1 ("Tail"): the latest real user request is kept verbatim. A user message
/// without text after it (platforms echo them) is not the request: the real ask stays in
/// place after the summary, the summary request's focus is the real ask, and the job does not
/// summarize it away.
#[test]
fn a_user_message_without_text_never_displaces_the_latest_request() {
    let ask = Message::user("please fix the parser bug in src/parse.rs and rerun the tests");
    for (name, blank) in textless_users() {
        // Short active turn (the ask in the tail) and long active turn (the ask pinned).
        for long in [false, true] {
            let mut msgs = vec![Message::system("You are a coding agent.")];
            turns(&mut msgs, 0, 60);
            msgs.push(ask.clone());
            msgs.push(Message::assistant("Looking into it."));
            msgs.push(blank.clone());
            if long {
                tool_rounds(&mut msgs, "l", 40, 2_000);
            } else {
                msgs.push(Message::assistant("Which test fails?"));
            }
            let o = pass(msgs, 20_000, &spec_batch(), true);
            assert!(!o.jobs.is_empty(), "{name}/{long}: no summary planned");
            let at = position(&o.after, &ask)
                .unwrap_or_else(|| panic!("{name}/{long}: the real ask was summarized away"));
            let summary = o
                .after
                .iter()
                .position(|m| marker::classify(m) == Some(MarkerKind::Batch))
                .unwrap();
            assert!(
                summary < at,
                "{name}/{long}: the ask is not after the summary"
            );
            for job in &o.jobs {
                assert_eq!(
                    job.focus.as_deref(),
                    Some(ask.text().as_ref()),
                    "{name}/{long}: the summary request points elsewhere"
                );
                assert!(
                    !job.material.contains("please fix the parser bug"),
                    "{name}/{long}: the active ask went into the summary"
                );
            }
            // The marker tells the model which message is the active task.
            let body = o.after[summary].text();
            assert!(
                body.contains("most recent user message with text"),
                "{name}"
            );
        }
    }
}

/// Spec section 1 ("Tail"): the last assistant reply the user saw is always kept verbatim,
/// wherever it sits: right before the latest ask with a long turn after it, before several
/// user messages, before earlier tool loops.
#[test]
fn the_last_visible_reply_is_kept_verbatim_wherever_it_sits() {
    let reply = Message::assistant(
        "Here is the plan: split the parser into a lexer and a reader, then add tests.",
    );
    type Shape = fn(&mut Vec<Message>);
    let shapes: Vec<(&str, Shape)> = vec![
        ("ask then three big tool rounds", |m| {
            m.push(Message::user("go ahead"));
            tool_rounds(m, "a", 3, 12_000);
        }),
        ("ask then a long tool loop", |m| {
            m.push(Message::user("go ahead"));
            tool_rounds(m, "a", 60, 2_000);
        }),
        ("several user messages then a long loop", |m| {
            m.push(Message::user("sounds good"));
            m.push(Message::user("one more thing: keep the public API"));
            m.push(Message::user("go ahead"));
            tool_rounds(m, "a", 60, 2_000);
        }),
        ("earlier loops between the reply and the ask", |m| {
            m.push(Message::user("first run the linter"));
            tool_rounds(m, "b", 30, 2_000);
            m.push(Message::user("now go ahead"));
            tool_rounds(m, "a", 30, 2_000);
        }),
        ("a blank echo between", |m| {
            m.push(Message::user(" "));
            m.push(Message::user("go ahead"));
            tool_rounds(m, "a", 40, 2_000);
        }),
    ];
    for (name, shape) in shapes {
        for compacted in [false, true] {
            let mut msgs = vec![Message::system("You are a coding agent.")];
            turns(&mut msgs, 0, 60);
            msgs.push(Message::user("how would you restructure the parser?"));
            msgs.push(reply.clone());
            shape(&mut msgs);
            let o = pass(msgs, 20_000, &spec_batch(), compacted);
            assert!(!o.jobs.is_empty(), "{name}: nothing summarized");
            let at = position(&o.after, &reply)
                .unwrap_or_else(|| panic!("{name}/{compacted}: the reply was summarized"));
            // In place: after the summary of what came before it, before the latest ask.
            let summary = o
                .after
                .iter()
                .position(|m| marker::classify(m) == Some(MarkerKind::Batch));
            assert!(summary.is_none_or(|s| s < at), "{name}: moved");
            let ask = o
                .after
                .iter()
                .rposition(|m| m.text() == "go ahead" || m.text() == "now go ahead")
                .unwrap();
            assert!(at < ask, "{name}: moved after the ask");
            assert!(tokens(&o.after) < tokens(&o.before), "{name}: no progress");
        }
    }
}

/// A summary Hermes Agent merged into a kept message after its `[PRIOR CONTEXT — ...]`
/// wrapper is a summary: a pass folds it into the new one (one summary remains), and the
/// message's own text is carried into the update rather than lost.
#[test]
fn a_merged_hermes_summary_is_folded_not_stacked() {
    let merged = format!(
        "{}\nalso keep the changelog current\n\n{}\n\n[CONTEXT COMPACTION — REFERENCE ONLY] \
         Earlier turns were compacted into the summary below.\n## Goal\nport the parser\n\n{}",
        HERMES_HEADER, HERMES_DELIMITER, HERMES_END
    );
    for role in [Role::User, Role::Assistant] {
        let m = Message::new(role.clone(), merged.clone());
        assert_eq!(marker::classify(&m), Some(MarkerKind::Batch));
        assert_eq!(
            marker::parse_body(&m).as_deref(),
            Some("## Goal\nport the parser")
        );
        // As parts: the wrapper in a part of its own.
        let parts = with_parts(
            role.clone(),
            vec![
                json!({"type": "text", "text": format!("{}\n", HERMES_HEADER)}),
                json!({"type": "text", "text": "also keep the changelog current"}),
                json!({"type": "text", "text": format!("\n{}\n[CONTEXT SUMMARY]: port the parser", HERMES_DELIMITER)}),
            ],
        );
        assert_eq!(marker::classify(&parts), Some(MarkerKind::Batch));
        assert_eq!(marker::parse_body(&parts).as_deref(), Some(""));
    }
    // Text that only mentions the wrapper, or the delimiter mid-line, is no summary.
    for text in [
        format!("what does {} mean?", HERMES_HEADER),
        format!(
            "{} x {} [CONTEXT SUMMARY]: y",
            HERMES_HEADER, HERMES_DELIMITER
        ),
        format!("{}\nno summary follows", HERMES_HEADER),
    ] {
        assert_eq!(marker::classify(&Message::user(text)), None);
    }

    let mut msgs = vec![Message::system("You are a coding agent.")];
    msgs.push(Message::user(merged));
    msgs.push(Message::assistant("noted"));
    turns(&mut msgs, 0, 60);
    let o = pass(msgs, 20_000, &spec_batch(), true);
    assert_eq!(summaries_in(&o.after), 1, "summaries stack");
    let prev = o.jobs[0].previous_summary.as_deref().unwrap_or("");
    assert!(prev.contains("port the parser"), "{prev}");
    assert!(prev.contains("also keep the changelog current"), "{prev}");
}

/// Spec section 4 ("Phase 2"): exactly one summary remains. An older summary at an edge of
/// the span (just before the latest ask, where the span shrinks for role alternation, or at
/// the start of the kept tail) is folded into the new one.
#[test]
fn an_older_summary_at_the_edge_of_the_span_is_folded() {
    let old = |role: Role| marker::render(MarkerKind::Batch, role, "## Goal\nolder work");
    // Just before the latest ask: system, user, assistant, user, [old summary], latest ask.
    let mut msgs = vec![Message::system("You are a coding agent.")];
    turns(&mut msgs, 0, 60);
    msgs.pop();
    msgs.push(old(Role::Assistant));
    msgs.push(Message::user("next: the lexer"));
    msgs.push(Message::assistant("on it"));
    let o = pass(msgs, 20_000, &spec_batch(), true);
    assert_eq!(summaries_in(&o.after), 1, "edge before the ask");
    assert!(
        o.jobs[0]
            .previous_summary
            .as_deref()
            .is_some_and(|p| p.contains("older work"))
    );

    // At the start of the tail: the tail's minimum count reaches over the old summary.
    for role in [Role::User, Role::Assistant] {
        let mut msgs = vec![Message::system("You are a coding agent.")];
        turns(&mut msgs, 0, 60);
        if role == Role::Assistant {
            msgs.pop();
        }
        msgs.push(old(role.clone()));
        msgs.push(Message::assistant("resuming"));
        msgs.push(Message::user("next: the lexer"));
        msgs.push(Message::assistant("on it"));
        let cfg = BatchConfig {
            regions: RegionConfig {
                protect_last_n: 5,
                ..RegionConfig::default()
            },
            ..BatchConfig::default()
        };
        let o = pass(msgs, 20_000, &cfg, true);
        assert_eq!(
            summaries_in(&o.after),
            1,
            "old summary in the tail ({role})"
        );
    }
}

/// A middle holding only an existing summary has nothing new to fold: no summary job (no
/// summarizer call), whatever else the plan does.
#[test]
fn a_middle_of_summaries_alone_asks_for_no_summary() {
    for kinds in [
        vec![MarkerKind::Batch],
        vec![MarkerKind::Micro],
        vec![MarkerKind::Batch, MarkerKind::Micro],
    ] {
        let mut msgs = vec![Message::system("You are a coding agent.")];
        for (i, k) in kinds.iter().enumerate() {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            msgs.push(marker::render(*k, role, &"earlier facts\n".repeat(400)));
        }
        if kinds.len() == 1 {
            msgs.push(Message::assistant("resuming"));
        }
        msgs.push(Message::user("next: the lexer"));
        tool_rounds(&mut msgs, "x", 4, 2_000);
        msgs.push(Message::assistant("done"));
        let e = Estimator::default();
        let t = Transcript::new(msgs, &e);
        let req = BatchRequest {
            force: true,
            compacted: true,
            ..BatchRequest::default()
        };
        let plan = batch::plan_batch(&t, 4_000, &spec_batch(), &req, &e);
        if let BatchStep::Summarize(jobs) = &plan.step {
            for j in jobs {
                assert!(
                    t.messages()[j.range.clone()]
                        .iter()
                        .any(|m| marker::classify(m).is_none()),
                    "{kinds:?}: a job of summaries alone: {:?}",
                    j.range
                );
            }
        }
    }
}

/// When the only user turn has no text (an image, a blank line), the pass keeps it in place:
/// the summary never becomes the first user-role message and never stands in for the user's
/// turn.
#[test]
fn an_image_only_user_turn_survives_and_the_summary_never_leads() {
    for (name, only) in textless_users() {
        for compacted in [false, true] {
            let mut msgs = vec![Message::system("You are a coding agent."), only.clone()];
            tool_rounds(&mut msgs, "s", 60, 2_000);
            msgs.push(Message::assistant(
                "I looked at the screenshot: the button is misaligned.",
            ));
            tool_rounds(&mut msgs, "r", 6, 2_000);
            let o = pass(msgs, 20_000, &spec_batch(), compacted);
            assert!(
                position(&o.after, &only).is_some(),
                "{name}/{compacted}: the user's turn was summarized away"
            );
            let first_user = o.after.iter().position(|m| m.is_user()).unwrap();
            assert!(
                marker::classify(&o.after[first_user]).is_none(),
                "{name}/{compacted}: the summary became the first user message"
            );
            assert!(tokens(&o.after) < tokens(&o.before), "{name}/{compacted}");
        }
    }
}

fn screenshot(n: usize) -> serde_json::Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}{}", n, "iVBORw0K".repeat(2_000))}})
}

fn image_parts(msgs: &[Message]) -> Vec<String> {
    msgs.iter()
        .flat_map(|m| match m.content() {
            Some(Content::Parts(p)) => p
                .iter()
                .filter(|p| matches!(p.kind(), Some("image_url" | "input_image" | "image")))
                .map(|p| p.0.to_string())
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Issue 21, item 13: after a pass only the newest image payloads stay; older images the pass
/// keeps become a short placeholder naming their type and size, in a one-for-one rewrite (so
/// the store archives the original row), and protected messages are never touched (spec
/// section 2, law 1).
#[test]
fn old_image_payloads_become_placeholders_after_a_pass() {
    // A computer-use session: screenshots as user messages and as tool results.
    let mut msgs = vec![Message::system("You are a computer-use agent.")];
    msgs.push(Message::user("book the cheapest flight to Lisbon"));
    for i in 0..30 {
        let id = format!("s{i}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "screenshot", "{}")],
        ));
        msgs.push(with_parts(
            Role::Tool,
            vec![
                json!({"type": "text", "text": format!("screen {i}")}),
                screenshot(i),
            ],
        ));
        let last = msgs.len() - 1;
        let mut m = msgs[last].clone();
        m.set_tool_call_id(Some(id));
        msgs[last] = m;
        if i % 10 == 9 {
            msgs.push(Message::assistant(format!("checked page {i}")));
            msgs.push(with_parts(
                Role::User,
                vec![
                    json!({"type": "text", "text": "like this?"}),
                    screenshot(100 + i),
                ],
            ));
        }
    }
    let newest: Vec<String> = image_parts(&msgs).into_iter().rev().take(3).collect();
    let e = Estimator::default();
    for (prune_only, threshold) in [(true, 20_000u64), (false, 20_000), (false, 60_000)] {
        let t = Transcript::new(msgs.clone(), &e);
        let req = BatchRequest {
            force: true,
            prune_only,
            compacted: true,
            ..BatchRequest::default()
        };
        let cfg = BatchConfig::default();
        let plan = batch::plan_batch(&t, threshold, &cfg, &req, &e);
        let n = match &plan.step {
            BatchStep::Summarize(j) => j.len(),
            _ => 0,
        };
        let summaries = vec!["s".to_owned(); n];
        let edit = batch::assemble(&t, &plan, &summaries, &cfg).unwrap();
        let after = edit.apply(t.messages()).unwrap();
        let v = laws::check(
            t.messages(),
            &after,
            &Pass::of_batch(&plan, &cfg, PassKind::Batch),
            &e,
        );
        assert!(v.is_empty(), "{v:?}");
        // Every image left is one of the newest three, or sits in a protected message.
        let protected: Vec<&Message> = plan
            .regions
            .protected()
            .into_iter()
            .flat_map(|r| &t.messages()[r])
            .collect();
        let protected_images =
            image_parts(&protected.iter().map(|m| (*m).clone()).collect::<Vec<_>>());
        for img in image_parts(&after) {
            assert!(
                newest.contains(&img) || protected_images.contains(&img),
                "an old image payload survived ({prune_only}, {threshold})"
            );
        }
        let placeholders = after
            .iter()
            .filter(|m| {
                m.text()
                    .contains("[image removed after compaction: image/png, 11.7 KB")
            })
            .count();
        assert!(
            placeholders > 0,
            "no placeholder ({prune_only}, {threshold})"
        );
        // One-for-one rewrites: every placeholder message replaced exactly one original.
        for s in &edit.splices {
            if s.replacement
                .iter()
                .any(|m| m.text().contains("[image removed"))
            {
                assert_eq!(s.range.len(), s.replacement.len());
            }
        }
        assert!(tokens(&after) < tokens(t.messages()));
    }
}

/// Every summary a pass leaves: batch, micro and turn-progress markers (Hermes Agent counts
/// one summary row; the continuation is no summary).
fn all_summaries_in(msgs: &[Message]) -> usize {
    msgs.iter()
        .filter(|m| {
            matches!(
                marker::classify(m),
                Some(MarkerKind::Batch | MarkerKind::Micro | MarkerKind::Progress)
            )
        })
        .count()
}

/// Hermes Agent's tail settings in its compressor tests: two messages of head, two of tail, a
/// tail budget of a few tokens (here a ten-thousandth of the threshold).
fn hermes_tight() -> BatchConfig {
    BatchConfig {
        regions: RegionConfig {
            protect_first_n: 2,
            protect_last_n: 2,
            tail_ratio: 0.0001,
            ..RegionConfig::default()
        },
        ..BatchConfig::default()
    }
}

/// Issue 33, item 9 (Hermes Agent's `test_completion_survives_compaction_verbatim_after_blank_
/// echo`): the latest actionable ask, then a blank platform echo, the reply that works from
/// it and a tool run. Two successive compactions leave the ask as exactly one verbatim
/// message and exactly one summary: the blank echo alone is no span to summarize (a
/// turn-progress marker in its place was a second summary, and a summarizer call for
/// nothing).
#[test]
fn the_ask_before_a_blank_echo_stays_once_with_one_summary_over_two_passes() {
    let ask = Message::user(
        "[ASYNC DELEGATION BATCH COMPLETE — deleg_current]\nThe newest result that must remain actionable.",
    );
    for (name, blank) in textless_users() {
        if name.contains("image") {
            continue; // an image is content, not an echo
        }
        for (cfg, threshold) in [
            (hermes_tight(), 400),
            (hermes_tight(), 1_600),
            (spec_batch(), 400),
        ] {
            let mut msgs = vec![
                Message::system("sys"),
                Message::user("initial request"),
                Message::assistant("initial reply"),
            ];
            for i in 0..6 {
                msgs.push(if i % 2 == 0 {
                    Message::user(format!("older question {i}: {}", "details ".repeat(60)))
                } else {
                    Message::assistant(format!("older reply {i}: {}", "done ".repeat(60)))
                });
            }
            msgs.push(ask.clone());
            msgs.push(blank.clone());
            msgs.push(Message::assistant("working from the completion"));
            for i in 0..6 {
                let id = format!("tail-{i}");
                msgs.push(Message::assistant_tool_calls(
                    "",
                    vec![ToolCall::function(&id, "read_file", "{}")],
                ));
                msgs.push(Message::tool_result(&id, "x".repeat(400)));
            }
            let mut current = msgs;
            for (k, compacted) in [false, true].into_iter().enumerate() {
                let o = pass(current, threshold, &cfg, compacted);
                let at = format!("{name}, threshold {threshold}, pass {}", k + 1);
                assert_eq!(
                    o.after.iter().filter(|m| **m == ask).count(),
                    1,
                    "{at}: the ask is not one verbatim message"
                );
                assert_eq!(all_summaries_in(&o.after), 1, "{at}: summaries");
                for job in &o.jobs {
                    assert!(
                        o.before[job.range.clone()]
                            .iter()
                            .any(|m| m.has_visible_text() || m.has_tool_calls() || m.is_tool()),
                        "{at}: a summary job of blank messages alone: {:?}",
                        job.range
                    );
                }
                current = o.after;
            }
        }
    }
}

/// Issue 33, item 9 (Hermes Agent's `test_oversized_tool_output_does_not_strand_reply` and
/// `test_compress_keeps_visible_reply_text`): a visible reply, then a request whose tool run
/// returns an oversized output, then the next ask. After a forced pass the reply and the ask
/// are each one verbatim message, never only inside the summary, whatever tool produced the
/// output (a protected `read_file` or a prunable `bash`) and however large it is; the
/// oversized output may be demoted or pruned.
#[test]
fn a_visible_reply_before_an_oversized_output_and_the_next_ask_stays_verbatim() {
    let reply = Message::assistant("VISIBLE REPLY");
    let ask = Message::user("ok");
    for tool in ["read_file", "bash"] {
        for chars in [500usize, 20_000, 100_000] {
            for older in [0usize, 12] {
                for (cfg, threshold) in [
                    (hermes_tight(), 200),
                    (hermes_tight(), 20_000),
                    (spec_batch(), 20_000),
                ] {
                    for compacted in [false, true] {
                        if older == 0 && !compacted {
                            continue; // the opening (head) would hold the reply itself
                        }
                        let mut msgs = Vec::new();
                        if older > 0 {
                            msgs.push(Message::system("sys"));
                        }
                        for i in 0..older {
                            msgs.push(if i % 2 == 0 {
                                Message::user(format!("middle q{i} {}", "why ".repeat(100)))
                            } else {
                                Message::assistant(format!("middle reply {i}"))
                            });
                        }
                        msgs.push(Message::user(format!(
                            "earlier: {}",
                            "context ".repeat(200)
                        )));
                        msgs.push(reply.clone());
                        msgs.push(Message::user("read big file"));
                        msgs.push(Message::assistant_tool_calls(
                            "",
                            vec![ToolCall::function("c1", tool, r#"{"path":"big.log"}"#)],
                        ));
                        msgs.push(Message::tool_result("c1", "y".repeat(chars)));
                        msgs.push(ask.clone());
                        let o = pass(msgs, threshold, &cfg, compacted);
                        let at = format!(
                            "{tool}, {chars} chars, {older} older, threshold {threshold}, \
                             compacted {compacted}"
                        );
                        assert_eq!(
                            o.after.iter().filter(|m| **m == reply).count(),
                            1,
                            "{at}: the visible reply went into the summary"
                        );
                        assert_eq!(
                            o.after.iter().filter(|m| **m == ask).count(),
                            1,
                            "{at}: the ask is not verbatim"
                        );
                    }
                }
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Issue 33, item 9, for the whole class: in any valid session with blank platform echoes
    /// after some user messages (always one after the latest ask), across any number of
    /// forced passes with more turns in between, the latest real user ask is kept verbatim,
    /// exactly as often as before the pass; no pass summarizes blank messages alone; at most
    /// one batch summary and one turn-progress summary remain; and every law but progress
    /// holds (a forced pass over a tiny session may grow it; the facade's no-gain guard
    /// refuses those).
    #[test]
    fn the_latest_ask_survives_any_number_of_passes_beside_blank_echoes(
        msgs in compaction_core::strategies::transcript(),
        echoes in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..4),
        blank in proptest::sample::select(vec!["", " ", " \n", "\u{00a0}\t"]),
        threshold in 200u64..12_000,
        tight in proptest::prelude::any::<bool>(),
        passes in 1usize..4,
    ) {
        let cfg = if tight { hermes_tight() } else { spec_batch() };
        let e = Estimator::default();
        let mut msgs = msgs;
        // Blank echoes right after user messages: the latest ask always, others at random.
        let users: Vec<usize> = (0..msgs.len()).filter(|&i| msgs[i].is_user()).collect();
        let mut at: Vec<usize> = echoes.iter().map(|x| users[x.index(users.len())]).collect();
        if let Some(&last) = users.last() {
            at.push(last);
        }
        at.sort_unstable();
        at.dedup();
        for &u in at.iter().rev() {
            msgs.insert(u + 1, Message::user(blank));
        }
        for k in 0..passes {
            let t = Transcript::new(msgs, &e);
            let ask = t.last_real_user().map(|u| t.messages()[u].clone());
            let req = BatchRequest { force: true, compacted: k > 0, ..BatchRequest::default() };
            let plan = batch::plan_batch(&t, threshold, &cfg, &req, &e);
            let jobs = match &plan.step {
                BatchStep::Summarize(jobs) => jobs.clone(),
                _ => Vec::new(),
            };
            for job in &jobs {
                proptest::prop_assert!(
                    t.messages()[job.range.clone()].iter().any(|m| {
                        marker::classify(m).is_none()
                            && (m.has_visible_text() || m.has_tool_calls() || m.is_tool()
                                || matches!(m.content(), Some(Content::Parts(p)) if p.iter().any(|p| p.text().is_none())))
                    }),
                    "pass {}: a job of blank messages and summaries alone: {:?}", k, job.range
                );
            }
            let summaries: Vec<String> = (0..jobs.len()).map(|i| format!("summary {k}.{i}")).collect();
            let edit = batch::assemble(&t, &plan, &summaries, &cfg).expect("assembles");
            let after = edit.apply(t.messages()).expect("applies");
            let v: Vec<_> = laws::check(t.messages(), &after, &Pass::of_batch(&plan, &cfg, PassKind::Batch), &e)
                .into_iter()
                .filter(|v| v.law() != laws::Law::Progress)
                // Known false positive of the law-3 checker, not of this pass: it knows
                // same-role neighbours from before by their wire bytes, so a user message
                // whose old image became a placeholder, still followed by the blank echo it
                // was adjacent to before, reads as a new pair.
                .filter(|v| !matches!(v, laws::Violation::AdjacentSameRole { index }
                    if after[index - 1].text().contains("[image removed after compaction")))
                .collect();
            proptest::prop_assert!(v.is_empty(), "pass {}: {:?}", k, v);
            if let Some(ask) = &ask {
                let count = |m: &[Message]| m.iter().filter(|x| *x == ask).count();
                proptest::prop_assert_eq!(count(&after), count(t.messages()), "pass {}: the ask", k);
                let t_after = Transcript::new(after.clone(), &e);
                proptest::prop_assert_eq!(
                    t_after.last_real_user().map(|u| &after[u]),
                    Some(ask),
                    "pass {}: the latest ask is no longer the latest real user message", k
                );
            }
            for kind in [MarkerKind::Batch, MarkerKind::Progress] {
                let n = after.iter().filter(|m| marker::classify(m) == Some(kind)).count();
                proptest::prop_assert!(n <= 1, "pass {}: {} {:?} summaries", k, n, kind);
            }
            // The session goes on: a new ask, its blank echo, a tool run and a reply.
            msgs = after;
            let id = format!("more-{k}");
            msgs.push(Message::user(format!("next ask {k}: {}", "please ".repeat(40))));
            msgs.push(Message::user(blank));
            msgs.push(Message::assistant_tool_calls("", vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)]));
            msgs.push(Message::tool_result(&id, "ok\n".repeat(300)));
            msgs.push(Message::assistant(format!("done {k}")));
        }
    }
}
