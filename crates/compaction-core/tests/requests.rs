//! What a summary job sends is bounded (issue 21, item 6): the previous summary shares the
//! material's bound (spec section 9: the compaction request itself must fit the summarizer's
//! window; summaries must not grow without bound).

use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep, SummaryJob};
use compaction_core::material::{self, MaterialConfig};
use compaction_core::micro::{self, MicroConfig, MicroState, MicroStep};
use compaction_core::transcript::Transcript;
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
    // The shape: a 320K-character summary and 480K characters of turns.
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
    let plan = micro::plan_micro(
        &t,
        20_000,
        &MicroConfig::default(),
        &MicroState::default(),
        true,
        &e,
    );
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
    let plan = micro::plan_micro(&t, 20_000, &cfg, &MicroState::default(), true, &e);
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

#[test]
fn the_share_and_the_bound_hold_at_every_size() {
    let cfg = MaterialConfig {
        max_total_chars: 10_000,
        ..MaterialConfig::default()
    };
    for previous in [0, 1, 4_999, 5_000, 5_001, 9_999, 10_000, 50_000] {
        let room = material::share(previous, &cfg).max_total_chars;
        assert!((5_000..=10_000).contains(&room), "{previous}: {room}");
        assert_eq!(room, 10_000 - previous.min(5_000));
        for material_len in [0, 100, room] {
            let p =
                material::bound_previous(&"p".repeat(previous), &"m".repeat(material_len), &cfg);
            let total = p.chars().count() + material_len;
            assert!(
                total <= 10_000 || p.len() == previous,
                "{previous}/{material_len}: {total}"
            );
            assert!(p.chars().count() <= previous.max(1), "{previous}: grew");
        }
    }
}
