//! What a summary job sends is bounded and holds no private reasoning and no attachment
//! payloads (issue 21, items 6, 10 and 11): the previous summary shares the material's bound
//! (spec section 9: the compaction request itself must fit the summarizer's window; summaries
//! must not grow without bound), inline reasoning blocks of assistant content never reach a
//! summarizer (the separate reasoning field is already kept out), and `MEDIA:<path>` directive
//! lines are counted like images instead of sent as text.

use compaction_core::Transcript;
use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep, SummaryJob};
use compaction_core::material::{self, MaterialConfig};
use compaction_core::micro::{MicroConfig, MicroHook, MicroPlanner, MicroRequest, MicroStep};
use compaction_core::{Estimator, MarkerKind, Message, Role, marker};

const MAX: usize = 200_000;

fn jobs(msgs: Vec<Message>, threshold: u64) -> Vec<SummaryJob> {
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let req = BatchRequest {
        force: true,
        compacted: true,
        ..BatchRequest::default()
    };
    match batch::plan_batch(&t, threshold, &BatchConfig::default(), &req, &e).step {
        BatchStep::Summarize(jobs) => jobs,
        other => panic!("expected a summary, got {other:?}"),
    }
}

/// Text of `n` characters with recognisable ends.
fn filler(head: &str, n: usize, tail: &str) -> String {
    let mut s = format!("{head}\n");
    while s.len() + tail.len() < n {
        s.push_str("a line of earlier work on the parser\n");
    }
    s.push_str(tail);
    s
}

fn sent(job: &SummaryJob) -> usize {
    job.material.chars().count()
        + job
            .previous_summary
            .as_deref()
            .map_or(0, |p| p.chars().count())
}

/// A session that was compacted before: the system prompt, an earlier summary of
/// `summary_chars` characters, then turns totalling about `turn_chars` characters.
fn compacted(summary_chars: usize, turn_chars: usize) -> Vec<Message> {
    let body = filler(
        "## Active request\nSUMMARY-HEAD",
        summary_chars,
        "SUMMARY-TAIL",
    );
    let mut msgs = vec![
        Message::system("You are a coding agent."),
        marker::render(MarkerKind::Batch, Role::User, &body),
        Message::assistant("ok"),
    ];
    let per_turn = 4_000;
    for i in 0..turn_chars / per_turn {
        msgs.push(Message::user(format!("request {i}")));
        msgs.push(Message::assistant(format!("{i} {}", "x".repeat(per_turn))));
    }
    msgs
}

#[test]
fn a_huge_previous_summary_shares_the_bound_with_the_material() {
    // The issue's shape: a 320K-character summary and 480K characters of turns.
    for (summary, turns) in [
        (320_000, 480_000),
        (900_000, 40_000),
        (30_000, 480_000),
        (150_000, 150_000),
    ] {
        for job in jobs(compacted(summary, turns), 20_000) {
            let n = sent(&job);
            assert!(n <= MAX + 200, "{summary}+{turns}: {n} characters sent");
            let prev = job
                .previous_summary
                .as_deref()
                .expect("the earlier summary is folded");
            // Both ends of the summary survive; a small one survives whole.
            assert!(prev.contains("SUMMARY-HEAD") && prev.contains("SUMMARY-TAIL"));
            if summary < MAX / 2 {
                assert!(
                    !prev.contains("[truncated"),
                    "{summary}: a small summary was cut"
                );
            }
            // The material keeps at least half of the bound when it has that much.
            if turns >= MAX {
                assert!(
                    job.material.chars().count() >= MAX / 2 - 10_000,
                    "{summary}+{turns}"
                );
            }
        }
    }
    // Without an earlier summary the material has the whole bound, as before.
    let mut msgs = vec![Message::system("s")];
    for i in 0..150 {
        msgs.push(Message::user(format!("request {i}")));
        msgs.push(Message::assistant("y".repeat(4_000)));
    }
    for job in jobs(msgs, 20_000) {
        assert!(job.previous_summary.is_none());
        assert!(job.material.chars().count() > MAX - 10_000);
        assert!(sent(&job) <= MAX + 200);
    }
}

#[test]
fn micro_jobs_bound_the_rolling_summary_they_merge_into() {
    let e = Estimator::default();
    // A rolling summary that grew huge (or a framework's own summary read as one), followed by
    // whole exchanges to absorb.
    let body = filler("## Active request\nSUMMARY-HEAD", 400_000, "SUMMARY-TAIL");
    let mut msgs = vec![
        Message::system("You are a coding agent."),
        Message::user("request 0"),
        marker::render(MarkerKind::Micro, Role::Assistant, &body),
    ];
    for i in 1..40 {
        msgs.push(Message::user(format!("request {i}")));
        msgs.push(Message::assistant(format!("{i} {}", "x".repeat(4_000))));
    }
    let t = Transcript::new(msgs, &e);
    // Defrag: the summary alone is what is sent.
    let plan = MicroPlanner::default().plan(&MicroRequest {
        transcript: &t,
        hook: MicroHook::Turn,
        threshold_tokens: 20_000,
        compacted: true,
        config: &MicroConfig::default(),
        counter: &e,
    });
    let MicroStep::Defrag(job) = &plan.step else {
        panic!("expected a defrag, got {:?}", plan.step);
    };
    assert!(
        job.summary_text.chars().count() <= MAX + 200,
        "{}",
        job.summary_text.len()
    );
    assert!(job.summary_text.contains("SUMMARY-HEAD") && job.summary_text.contains("SUMMARY-TAIL"));
    // Absorb (no defrag before it): the rolling summary and the material share the bound.
    let cfg = MicroConfig {
        defrag_threshold_tokens: u64::MAX,
        ..MicroConfig::default()
    };
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
    let prev = job
        .previous_summary
        .as_deref()
        .expect("the rolling summary");
    assert!(
        job.material.chars().count() + prev.chars().count() <= MAX + 200,
        "{} + {}",
        job.material.len(),
        prev.len()
    );
    assert!(prev.contains("SUMMARY-HEAD") && prev.contains("SUMMARY-TAIL"));
    assert!(job.material.contains("request 1"));
}

// ---------------------------------------------------------------------------------------------
// Item 10: inline reasoning.

fn material_of(msgs: &[Message]) -> String {
    material::serialize(msgs, msgs, &MaterialConfig::default())
}

#[test]
fn inline_reasoning_of_assistant_content_never_reaches_the_material() {
    // (assistant content, what must survive, what must not)
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "<think>SECRET-PLAN</think>The fix is in lexer.rs.",
            &["The fix is in lexer.rs."],
            &["SECRET-PLAN", "<think>"],
        ),
        (
            "<reasoning>\nSECRET-PLAN\n</reasoning>\nDone: tests pass.",
            &["Done: tests pass."],
            &["SECRET-PLAN", "reasoning>"],
        ),
        // Case, several kinds, several blocks.
        (
            "A<THINKING>SECRET-1</Thinking>B<thought>SECRET-2</thought>C<REASONING_SCRATCHPAD>SECRET-3</REASONING_SCRATCHPAD>D",
            &["ABCD"],
            &["SECRET-1", "SECRET-2", "SECRET-3"],
        ),
        // Nesting, same and mixed names: the whole outer block goes.
        (
            "<think>SECRET-1<think>SECRET-2</think>SECRET-3</think>visible",
            &["visible"],
            &["SECRET-1", "SECRET-2", "SECRET-3", "think>"],
        ),
        (
            "<think>SECRET-1<reasoning>SECRET-2</reasoning>SECRET-3</think>visible",
            &["visible"],
            &["SECRET-1", "SECRET-2", "SECRET-3"],
        ),
        // Unclosed at the start of a line: the model never finished thinking.
        (
            "Answer first.\n<think>SECRET-TAIL never closed",
            &["Answer first."],
            &["SECRET-TAIL", "<think>"],
        ),
        ("  <reasoning>SECRET-ONLY", &[], &["SECRET-ONLY"]),
        // Unclosed with a closed block inside it: both go.
        (
            "Answer.\n<think>SECRET-1 <think>SECRET-2</think> SECRET-3",
            &["Answer."],
            &["SECRET-1", "SECRET-2", "SECRET-3"],
        ),
        // A closing tag alone on its line: the server dropped the opening one.
        (
            "SECRET-BEFORE\n</think>\nThe answer.",
            &["The answer."],
            &["SECRET-BEFORE", "think>"],
        ),
        ("</think>The answer.", &["The answer."], &["think>"]),
        // Mentions in prose are not blocks.
        (
            "Use the <think> tag to mark reasoning, never close it inline.",
            &["Use the <think> tag to mark reasoning"],
            &[],
        ),
        (
            "A stray </think> in prose stays.",
            &["A stray </think> in prose stays."],
            &[],
        ),
        ("No tags at all.", &["No tags at all."], &[]),
    ];
    for (content, keep, drop) in cases {
        let msgs = vec![Message::user("why?"), Message::assistant(*content)];
        let text = material_of(&msgs);
        for k in *keep {
            assert!(text.contains(k), "{content:?}: lost {k:?} in {text:?}");
        }
        for d in *drop {
            assert!(
                !text.contains(d),
                "{content:?}: {d:?} reached the material: {text:?}"
            );
        }
        assert!(text.contains("[user]\nwhy?"), "{text:?}");
    }
    // Only assistant content: a user's or a tool's text is theirs, verbatim.
    for m in [
        Message::user("<think>my own notes</think> please"),
        Message::tool_result("c1", "<think>file content</think>"),
    ] {
        let text = material_of(std::slice::from_ref(&m));
        assert!(text.contains(&*m.text()), "{text:?}");
    }
    // In parts and in a batch job's material too.
    let parts = Message::from_json(r#"{"role":"assistant","content":[{"type":"text","text":"<think>SECRET-PART</think>shown"}]}"#).unwrap();
    let text = material_of(&[parts]);
    assert!(
        text.contains("shown") && !text.contains("SECRET-PART"),
        "{text:?}"
    );
    let mut msgs = vec![Message::system("s")];
    for i in 0..30 {
        msgs.push(Message::user(format!("request {i}")));
        msgs.push(Message::assistant(format!(
            "<think>SECRET-{i}</think>reply {i} {}",
            "x".repeat(3_000)
        )));
    }
    for job in jobs(msgs, 8_000) {
        assert!(
            !job.material.contains("SECRET-"),
            "reasoning in a batch job"
        );
        assert!(job.material.contains("reply "));
    }
}

// ---------------------------------------------------------------------------------------------
// Item 11: media directives.

#[test]
fn media_directives_are_counted_like_images_not_sent() {
    let reply = "Here is the chart.\nMEDIA:/tmp/hermes/chart-SECRETPATH.png\n  MEDIA: /tmp/voice-SECRETPATH.ogg  \nAnything else?";
    for m in [
        Message::assistant(reply),
        Message::tool_result("c1", reply),
        Message::user(reply),
    ] {
        let text = material_of(&[m]);
        assert!(!text.contains("SECRETPATH"), "{text:?}");
        assert!(!text.contains("MEDIA:"), "{text:?}");
        assert!(
            text.contains("Here is the chart.") && text.contains("Anything else?"),
            "{text:?}"
        );
        assert!(text.contains("[2 media attachment(s) omitted]"), "{text:?}");
    }
    // With images: both counted, each in its own note.
    let m = Message::from_json(r#"{"role":"user","content":[{"type":"text","text":"look\nMEDIA:/a.png"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}"#).unwrap();
    let text = material_of(&[m]);
    assert!(
        text.contains("[1 image(s) omitted]") && text.contains("[1 media attachment(s) omitted]"),
        "{text:?}"
    );
    assert!(!text.contains("/a.png"));
    // Only whole directive lines: a mention in prose, or an empty directive, is text.
    for prose in ["Send files with MEDIA:/path lines.", "MEDIA:", "MEDIA:   "] {
        let text = material_of(&[Message::assistant(prose)]);
        assert!(!text.contains("media attachment"), "{prose:?}: {text:?}");
    }
    // A message of directives only says so and nothing else.
    let text = material_of(&[Message::assistant("MEDIA:/x/a.mp3")]);
    assert_eq!(text, "[assistant]\n[1 media attachment(s) omitted]\n");
}
