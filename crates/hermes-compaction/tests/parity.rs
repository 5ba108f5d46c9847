//! Behaviours Hermes Agent's own compressor tests pin (issue 21), through the compressor with
//! the extractive summarizer, as `hermes-compaction compact` runs it.

use hermes_compaction::OneShot;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use compaction_core::{MarkerKind, Message, ToolCall, marker};
use compaction_llm::{ExtractiveSummarizer, Summarizer, SummaryFuture, SummaryRequest};
use hermes_compaction::Outcome;

use crate::common::{builder, config, extractive, rt, with_summarizer};

/// The extractive summarizer, counting its calls.
struct Counting {
    calls: Arc<AtomicUsize>,
    inner: ExtractiveSummarizer,
}

impl Summarizer for Counting {
    fn name(&self) -> &str {
        "counting"
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.summarize(req)
    }
}

fn chat(turns: usize, words: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a helpful assistant.")];
    for i in 0..turns {
        msgs.push(Message::user(format!(
            "question {i}: {}",
            "why ".repeat(words)
        )));
        msgs.push(Message::assistant(format!(
            "answer {i}: {}",
            "because ".repeat(words)
        )));
    }
    msgs
}

fn tools(turns: usize, chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("c{i}");
        msgs.push(Message::user(format!("step {i}: fix module {i}")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "edit",
                format!(r#"{{"path":"src/module_{i}.rs"}}"#),
            )],
        ));
        msgs.push(Message::tool_result(&id, "x".repeat(chars)));
        msgs.push(Message::assistant(format!("module {i} fixed")));
    }
    msgs
}

fn summaries(msgs: &[Message]) -> usize {
    msgs.iter()
        .filter(|m| {
            matches!(
                marker::classify(m),
                Some(MarkerKind::Batch | MarkerKind::Micro)
            )
        })
        .count()
}

/// Issue 21, item 9 (spec section 4, "Anti-thrash": a compaction that does not shrink enough
/// re-triggers): the summary budget scales with the window, so a forced pass lands under the
/// threshold whenever the protected messages leave room for a summary.
#[test]
fn a_pass_lands_under_the_threshold_in_tiny_windows() {
    let rt = rt();
    let mut checked = 0;
    for window in [3_000u64, 4_000, 6_000, 10_000, 20_000] {
        for (name, msgs) in [
            ("chat", chat(200, 30)),
            ("tools", tools(120, 600)),
            ("short chat", chat(12, 60)),
        ] {
            let mut c = extractive(config(window));
            let mut t = c.transcript(msgs);
            let r = rt
                .block_on(c.one_shot(&mut t, OneShot::batch()))
                .into_batch()
                .unwrap();
            let regions = r.regions.clone().expect("planned");
            let protected = t.tokens_in(0..regions.head.len())
                + t.tokens_in(t.len() - regions.tail.len()..t.len());
            if protected + 400 >= r.threshold_tokens {
                // Head and tail alone leave no room for a summary: not possible.
                continue;
            }
            assert!(
                matches!(r.outcome, Outcome::Summarized | Outcome::Pruned),
                "{name} at {window}: {:?}",
                r.outcome
            );
            assert!(
                r.stats.tokens_after < r.threshold_tokens,
                "{name} at {window}: {} tokens after, threshold {}",
                r.stats.tokens_after,
                r.threshold_tokens
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} cases had room");
}

/// Issue 21, item 4: a summary Hermes Agent merged into a kept message is recognised: the
/// session counts as compacted (head protection decays, spec section 1 "Head") and a pass
/// leaves exactly one summary.
#[test]
fn a_merged_hermes_summary_counts_as_compacted_and_does_not_stack() {
    let merged = "[PRIOR CONTEXT — for reference only; not a new message]\nplease keep the docs \
                  in sync\n\n[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]\n\n[CONTEXT \
                  COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary \
                  below.\n## Goal\nport the parser\n\n--- END OF CONTEXT SUMMARY — respond to the \
                  message below, not the summary above ---";
    let mut msgs = tools(80, 600);
    msgs.insert(4, Message::user(merged));
    msgs.insert(5, Message::assistant("understood"));
    let mut c = extractive(config(20_000));
    let mut t = c.transcript(msgs);
    assert!(
        c.status().state.compacted,
        "a merged summary was not recognised"
    );
    let r = rt()
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
    // Head protection decayed to the system prompt.
    assert_eq!(r.regions.unwrap().head, 0..1);
    assert_eq!(summaries(t.messages()), 1);
    let body = marker::parse_body(
        t.messages()
            .iter()
            .find(|m| marker::classify(m).is_some())
            .unwrap(),
    )
    .unwrap();
    assert!(body.contains("port the parser"), "{body}");
}

/// Issue 21, item 8: a middle holding only an existing summary has nothing new to fold, so
/// the pass makes no summarizer call (and leaves the summary alone).
#[test]
fn a_middle_of_one_summary_costs_no_call() {
    let calls = Arc::new(AtomicUsize::new(0));
    let s = Arc::new(Counting {
        calls: calls.clone(),
        inner: ExtractiveSummarizer::default(),
    });
    let mut msgs = vec![Message::system("You are a coding agent.")];
    msgs.push(marker::render(
        MarkerKind::Batch,
        compaction_core::Role::User,
        &"- earlier fact\n".repeat(600),
    ));
    msgs.extend(tools(3, 200).into_iter().skip(1));
    let mut c = with_summarizer(config(8_000), s);
    let mut t = c.transcript(msgs);
    let before = t.messages().to_vec();
    let r = rt()
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "{r:?}");
    assert_ne!(r.outcome, Outcome::Summarized);
    assert_eq!(summaries(t.messages()), 1);
    assert!(t.messages().contains(&before[1]));
}

/// Issue 21, item 15: `compression.threshold_tokens` caps the trigger whatever the window.
#[test]
fn the_threshold_cap_triggers_a_pass_below_the_window_threshold() {
    let mut cfg = config(1_000_000);
    cfg.compression.threshold_tokens = 20_000;
    let mut c = extractive(cfg);
    assert_eq!(c.status().threshold_tokens, 20_000);
    let mut t = c.transcript(tools(120, 600));
    assert!(t.current_tokens() > 20_000);
    let (_, report) = rt().block_on(c.before_request(&mut t));
    let report = report.expect("the capped threshold triggered a pass");
    assert!(report.stats.tokens_after < 20_000, "{report:?}");
}

/// Issue 21, item 16: `compression.min_tail_user_messages` keeps the last N user requests
/// verbatim, even when the tail budget alone would keep fewer.
#[test]
fn the_last_user_requests_are_kept_verbatim_when_asked() {
    let msgs = tools(120, 600);
    let asks: Vec<Message> = msgs.iter().filter(|m| m.is_user()).cloned().collect();
    for n in [0usize, 1, 2, 3, 8] {
        let mut cfg = config(20_000);
        cfg.compression.min_tail_user_messages = n;
        let mut c = extractive(cfg);
        let mut t = c.transcript(msgs.clone());
        let r = rt()
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized, "{n}: {r:?}");
        let kept = asks.iter().filter(|a| t.messages().contains(a)).count();
        assert!(kept >= n.max(1), "{n}: only {kept} asks kept verbatim");
        if n == 0 {
            // Today's behaviour: the tail budget (and the head) decide beyond the latest ask.
            assert!(kept < 8, "{kept}");
        }
    }
}

/// Issue 21, item 1, as a user of `compact` sees it: a blank message after the real ask
/// leaves the ask verbatim after the summary, and the extractive summary does not name the
/// blank one (or the ask, which is kept) as its active request.
#[test]
fn the_extractive_summary_never_takes_a_blank_message_for_the_request() {
    for blank in ["", "   ", "\n\t"] {
        let mut msgs = tools(80, 600);
        let ask = Message::user("now add a regression test for module 3");
        msgs.push(ask.clone());
        msgs.push(Message::user(blank));
        let mut c = extractive(config(20_000));
        let mut t = c.transcript(msgs);
        let r = rt()
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized, "{r:?}");
        let at = t.messages().iter().position(|m| *m == ask).expect("kept");
        let s = t
            .messages()
            .iter()
            .position(|m| marker::classify(m).is_some())
            .unwrap();
        assert!(s < at);
        let body = marker::parse_body(&t.messages()[s]).unwrap();
        assert!(!body.contains("regression test for module 3"), "{body}");
        // The summary points at the kept request rather than naming another one active.
        assert!(
            body.contains(compaction_llm::extractive::ACTIVE_POINTER),
            "{body}"
        );
    }
}

/// Issue 21, item 13, with a store: an image payload a pass replaces by a placeholder stays
/// recoverable, archived byte-identical with the row it was in (spec section 2, law 9).
#[test]
fn stripped_image_payloads_are_archived() {
    use compaction_core::{Content, Part};
    use compaction_store::Store;
    use hermes_compaction::compressor::Persistence;

    let shot = |i: usize| {
        let mut m = Message::user("");
        m.set_content(Some(Content::Parts(vec![
            Part::text_part(format!("screen {i}: is this right?")),
            Part(serde_json::json!({"type": "image_url", "image_url": {"url": format!("data:image/jpeg;base64,{i}{}", "QUJD".repeat(3_000))}})),
        ])));
        m
    };
    let mut msgs = vec![Message::system("You are a computer-use agent.")];
    for i in 0..12 {
        msgs.push(shot(i));
        msgs.push(Message::assistant(format!("looked at screen {i}")));
    }
    let originals: Vec<String> = msgs.iter().map(Message::to_wire_json).collect();
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.create_session("img").await.unwrap();
        let mut cfg = config(20_000);
        // Prune only: the pass keeps the messages and rewrites their images.
        cfg.compression.protect_last_n = 2;
        let mut c = builder(cfg)
            .store(Persistence {
                store: store.clone().into_dyn(),
                session: "img".into(),
                generation: 0,
            })
            .build()
            .unwrap();
        let mut t = c.transcript(msgs);
        let r = c
            .one_shot(&mut t, OneShot::Prune)
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Pruned, "{r:?}");
        let placeholders = t
            .messages()
            .iter()
            .filter(|m| {
                m.text()
                    .contains("[image removed after compaction: image/jpeg")
            })
            .count();
        // Twelve screenshots: only the newest user message's keeps its payload (as Hermes
        // Agent does; issue 33, item 9), and so do the two in the head, which stays verbatim
        // until the first compaction (spec section 1, "Head").
        assert_eq!(placeholders, 9);
        let images = t
            .messages()
            .iter()
            .map(|m| match m.content() {
                Some(Content::Parts(parts)) => parts
                    .iter()
                    .filter(|p| matches!(p.kind(), Some("image_url" | "input_image" | "image")))
                    .count(),
                _ => 0,
            })
            .sum::<usize>();
        assert_eq!(images, 3);
        let all: Vec<String> = store
            .load_all("img")
            .await
            .unwrap()
            .iter()
            .map(|row| row.message.to_wire_json())
            .collect();
        for o in &originals {
            assert!(all.contains(o), "an original was lost");
        }
    });
}

fn run_micro(msgs: Vec<Message>, window: u64) -> (hermes_compaction::OneShotReport, Vec<Message>) {
    use hermes_compaction::OneShot;
    let mut c = builder(config(window))
        .one_shot(OneShot::Micro { max_passes: None })
        .build()
        .unwrap();
    let mut t = c.transcript(msgs);
    let r = rt().block_on(c.one_shot(&mut t, OneShot::Micro { max_passes: None }));
    (r, t.messages().to_vec())
}

/// Issue 21, "also noticed": `compact --mode micro` on an over-threshold transcript makes
/// progress, or says plainly that it could not and why. A long Codex-style session (one ask,
/// hundreds of tool rounds with commentary between them) is compacted; a multimodal chat whose
/// size is in the users' screenshots (which micro never rewrites, spec section 2, law 4) is
/// reported as such.
#[test]
fn micro_makes_progress_or_says_why_not() {
    // Codex-style: a developer prompt, an environment message, the ask, then a long turn.
    let mut codex = vec![
        Message::new(compaction_core::Role::Developer, "You are Codex."),
        Message::user("<environment_context><cwd>/repo</cwd></environment_context>"),
        Message::user("migrate the storage layer to the new API"),
    ];
    for i in 0..120 {
        if i % 5 == 0 {
            codex.push(Message::assistant(format!("Working on file {i} next.")));
        }
        let id = format!("call_{i}");
        codex.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "shell",
                format!(r#"{{"command":["rg","storage","src/m{i}.rs"]}}"#),
            )],
        ));
        codex.push(Message::tool_result(
            &id,
            format!("src/m{i}.rs: storage\n").repeat(60),
        ));
    }
    let (r, after) = run_micro(codex.clone(), 32_000);
    assert!(!r.failed(), "{r:?}");
    assert!(
        r.stats.passes > 0 && r.stats.tokens_after < r.stats.tokens_before,
        "codex: {r:?}"
    );
    assert!(after.iter().any(|m| marker::classify(m).is_some()));
    assert!(
        !r.over_threshold() || r.detail.note.is_some(),
        "codex: {r:?}"
    );

    // Several Codex-style turns.
    let mut turns = codex.clone();
    for k in 0..2 {
        turns.push(Message::assistant(format!("Done with part {k}.")));
        turns.push(Message::user(format!("now part {}", k + 1)));
        turns.extend(codex[3..120].iter().cloned().map(|mut m| {
            if let Some(id) = m.tool_call_id().map(|s| format!("{s}_{k}")) {
                m.set_tool_call_id(Some(id));
            }
            if m.has_tool_calls() {
                let calls = m
                    .tool_calls()
                    .iter()
                    .map(|c| {
                        let mut c = c.clone();
                        c.id = format!("{}_{k}", c.id);
                        c
                    })
                    .collect();
                m.set_tool_calls(Some(calls));
            }
            m
        }));
    }
    let (r, _) = run_micro(turns, 32_000);
    assert!(
        r.stats.passes > 0 && r.stats.tokens_after < r.stats.tokens_before,
        "turns: {r:?}"
    );

    // Multimodal: every user turn carries a screenshot; the replies are short.
    let mut shots = vec![Message::system("You are a design reviewer.")];
    for i in 0..40 {
        let mut m = Message::user("");
        m.set_content(Some(compaction_core::Content::Parts(vec![
            compaction_core::Part::text_part(format!("is screen {i} aligned?")),
            compaction_core::Part(serde_json::json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{i}{}", "iVBORw0K".repeat(500))}})),
        ])));
        shots.push(m);
        shots.push(Message::assistant(format!(
            "screen {i}: the header is 2px off"
        )));
    }
    let (r, _) = run_micro(shots, 32_000);
    assert!(!r.failed(), "{r:?}");
    assert!(r.over_threshold(), "{r:?}");
    let note = r
        .detail
        .note
        .as_deref()
        .expect("an over-threshold micro run says why");
    assert!(note.contains("user messages"), "{note}");
    assert!(
        note.contains("--mode batch") || note.contains("batch"),
        "{note}"
    );
}

/// Issue 33, item 9 (Hermes' compressor tests): the latest actionable ask, followed by a blank
/// platform echo and a tool run, stays exactly one verbatim message, with exactly one summary,
/// across two compactions.
#[test]
fn the_ask_before_a_blank_echo_and_a_tool_run_survives_two_compactions_once() {
    let mut msgs = tools(80, 600);
    let ask = Message::user("now add a regression test for module 3");
    msgs.push(ask.clone());
    msgs.push(Message::user("  "));
    msgs.push(Message::assistant_tool_calls(
        "",
        vec![ToolCall::function(
            "run",
            "bash",
            r#"{"command":"cargo test -p module_3"}"#,
        )],
    ));
    msgs.push(Message::tool_result("run", "test result: ok\n".repeat(40)));
    let mut c = extractive(config(20_000));
    let mut t = c.transcript(msgs);
    for pass in 0..2 {
        let r = rt()
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert!(
            matches!(r.outcome, Outcome::Summarized | Outcome::Pruned),
            "pass {pass}: {r:?}"
        );
        let copies = t.messages().iter().filter(|m| **m == ask).count();
        assert_eq!(copies, 1, "pass {pass}");
        let named = t
            .messages()
            .iter()
            .filter(|m| m.text().contains("regression test for module 3"))
            .count();
        assert_eq!(named, 1, "pass {pass}: the ask is also quoted elsewhere");
        assert_eq!(summaries(t.messages()), 1, "pass {pass}");
        // More work after the run, then the second pass.
        if pass == 0 {
            for m in tools(40, 600).into_iter().skip(1) {
                if *m.role() != compaction_core::Role::User {
                    t.push(m, c.status().counter);
                }
            }
        }
    }
}

/// Issue 33, item 9 (Hermes' compressor tests): a visible assistant reply, then an oversized
/// tool output, then the user's next ask: after a pass the ask is a verbatim message (never
/// only inside the summary), and so is the reply the user saw.
#[test]
fn the_next_ask_after_an_oversized_output_stays_verbatim() {
    for shape in 0..2 {
        let mut msgs = tools(60, 600);
        let reply = Message::assistant("Found it: the lexer drops tabs. Shall I fix it?");
        let ask = Message::user("yes, fix the lexer and add a test");
        if shape == 0 {
            // The reply, a tool run with a huge output, then the ask.
            msgs.push(Message::user("look at the lexer"));
            msgs.push(reply.clone());
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(
                    "big",
                    "bash",
                    r#"{"command":"cat lexer.log"}"#,
                )],
            ));
        } else {
            // The reply carries the call itself.
            msgs.push(Message::user("look at the lexer"));
            msgs.push(Message::assistant_tool_calls(
                reply.text(),
                vec![ToolCall::function(
                    "big",
                    "bash",
                    r#"{"command":"cat lexer.log"}"#,
                )],
            ));
        }
        msgs.push(Message::tool_result(
            "big",
            "token tab dropped at col 4\n".repeat(3_000),
        ));
        msgs.push(ask.clone());
        let mut c = extractive(config(20_000));
        let mut t = c.transcript(msgs);
        let r = rt()
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert!(
            matches!(r.outcome, Outcome::Summarized | Outcome::Pruned),
            "shape {shape}: {r:?}"
        );
        assert_eq!(
            t.messages().iter().filter(|m| **m == ask).count(),
            1,
            "shape {shape}: the ask is not verbatim"
        );
        assert!(
            t.messages()
                .iter()
                .any(|m| marker::classify(m).is_none() && m.text().contains("the lexer drops tabs")),
            "shape {shape}: the visible reply is only in the summary"
        );
        assert!(
            r.stats.tokens_after <= c.status().threshold_tokens,
            "shape {shape}: {r:?}"
        );
    }
}
