use super::*;
use crate::message::{Role, ToolCall};
use crate::tokens::Estimator;

pub(super) fn session(turns: usize, tool_chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are an agent.")];
    for i in 0..turns {
        let id = format!("c{i}");
        msgs.push(Message::user(format!("request {i}")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)],
        ));
        msgs.push(Message::tool_result(&id, "o".repeat(tool_chars)));
        msgs.push(Message::assistant(format!("finished {i}")));
    }
    msgs
}

/// `t` after `plan`, each summary job answered with a one-line stub summary.
pub(super) fn applied(t: &Transcript, plan: &BatchPlan, cfg: &BatchConfig) -> Transcript {
    let summaries: Vec<String> = match &plan.step {
        BatchStep::Summarize(jobs) => jobs.iter().map(|_| "- earlier work".to_owned()).collect(),
        BatchStep::PruneOnly { .. } => Vec::new(),
        other => panic!("{other:?}"),
    };
    let mut after = t.clone();
    assemble(t, plan, &summaries, cfg)
        .unwrap()
        .apply_to(&mut after, &Estimator::default())
        .unwrap();
    after
}

pub(super) fn run(
    msgs: Vec<Message>,
    threshold: u64,
    cfg: &BatchConfig,
) -> (Transcript, BatchPlan) {
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let plan = plan_batch(&t, threshold, cfg, &BatchRequest::default(), &e);
    (t, plan)
}

/// Forty turns; the outputs of turns 3 and 5 hold an identifier the reply of turn 30
/// cites (`fn parse_args_v2`), the rest hold none.
fn cited_session() -> Vec<Message> {
    let mut msgs = session(40, 2_000);
    for turn in [3usize, 5] {
        let i = 1 + turn * 4 + 2;
        let id = format!("c{turn}");
        msgs[i] = Message::tool_result(&id, format!("fn parse_args_v2 {}", "o".repeat(2_000)));
    }
    msgs[1 + 30 * 4 + 3] = Message::assistant("parse_args_v2 is the culprit");
    msgs
}

fn pruned_indices(plan: &BatchPlan) -> Vec<usize> {
    plan.prune
        .edit
        .splices
        .iter()
        .map(|s| s.range.start)
        .collect()
}

#[test]
fn reference_aware_prune_only_keeps_the_outputs_later_messages_cite() {
    let e = Estimator::default();
    let t = Transcript::new(cited_session(), &e);
    let cited = [1 + 3 * 4 + 2, 1 + 5 * 4 + 2];
    let r = regions::partition(&t, 20_000, &BatchConfig::default().regions, false);
    assert_eq!(
        prune::cited_outputs(
            t.messages(),
            std::slice::from_ref(&r.middle),
            &prune::CallIndex::build(t.messages()),
        ),
        cited
    );
    // The split plan's halves give back the whole plan (names indexes on: off by default).
    let pcfg = &PruneConfig {
        names_max_chars: 400,
        ..PruneConfig::default()
    };
    let middle = std::slice::from_ref(&r.middle);
    let (uncited, held) = prune::plan_prune_split(
        &t,
        middle,
        pcfg,
        &e,
        &prune::CallIndex::build(t.messages()),
        &cited,
    );
    assert!(held.edit.splices.len() == 2 && held.reclaimed_tokens > 0);
    let mut whole = uncited.merged(held);
    assert!(!whole.names_pending.is_empty());
    whole.add_names(&t, pcfg, &e, |_| true);
    assert!(whole.names_pending.is_empty());
    assert_eq!(whole, prune::plan_prune(&t, middle, pcfg, &e));
    let req = BatchRequest {
        prune_only: true,
        force: true,
        ..BatchRequest::default()
    };
    let plan = plan_batch(&t, 20_000, &BatchConfig::default(), &req, &e);
    let pruned = pruned_indices(&plan);
    assert!(pruned.len() > 10, "{pruned:?}");
    assert!(cited.iter().all(|c| !pruned.contains(c)), "{pruned:?}");
    // Off: every old output goes, the cited ones too.
    let mut cfg = BatchConfig::default();
    cfg.prune.keep_cited = false;
    let plan = plan_batch(&t, 20_000, &cfg, &req, &e);
    assert!(cited.iter().all(|c| pruned_indices(&plan).contains(c)));
}

/// The names index is written only where the rewrite stays: a prune-only plan's lines
/// carry it, the lines of a span the pass summarizes do not (they are replaced by the
/// summary), and nothing is left pending.
#[test]
fn names_indexes_are_written_only_for_rewrites_that_stay() {
    let e = Estimator::default();
    let has_index = |m: &Message| m.text().contains(crate::ledger::PRUNED_NAMES);
    let mut msgs = session(40, 0);
    for (i, m) in msgs.iter_mut().filter(|m| m.is_tool()).enumerate() {
        m.set_text(format!("src/lib_{i}.rs: fn parse_args_v2()\n").repeat(60));
    }
    let t = Transcript::new(msgs.clone(), &e);
    let prune_only = BatchRequest {
        prune_only: true,
        force: true,
        ..BatchRequest::default()
    };
    // The index is off by default; this is about where it goes when it is on.
    let mut cfg = BatchConfig::default();
    cfg.prune.names_max_chars = 400;
    let plan = plan_batch(&t, 20_000, &cfg, &prune_only, &e);
    assert!(plan.prune.names_pending.is_empty());
    let lines: Vec<&Message> = plan
        .prune
        .edit
        .splices
        .iter()
        .map(|s| &s.replacement[0])
        .collect();
    assert!(
        !lines.is_empty() && lines.iter().all(|m| has_index(m)),
        "{lines:?}"
    );

    let (_, summary) = run(msgs, 3_000, &cfg);
    let BatchStep::Summarize(jobs) = &summary.step else {
        panic!("{:?}", summary.step)
    };
    assert!(summary.prune.names_pending.is_empty());
    for s in &summary.prune.edit.splices {
        let inside = jobs.iter().any(|j| j.range.contains(&s.range.start));
        if s.replacement[0].is_tool() && s.replacement[0].text().starts_with(prune::PRUNED_PREFIX) {
            assert_eq!(has_index(&s.replacement[0]), !inside, "{:?}", s.range);
        }
    }
}

#[test]
fn a_threshold_pass_prunes_cited_outputs_only_when_the_uncited_fall_short() {
    let e = Estimator::default();
    let t = Transcript::new(cited_session(), &e);
    let total = t.estimated_total();
    let cited = [1 + 3 * 4 + 2, 1 + 5 * 4 + 2];
    // A threshold just under the total: pruning the uncited outputs reaches the low-water
    // mark, so the cited ones stay.
    let (_, plan) = run(cited_session(), total - 100, &BatchConfig::default());
    assert!(matches!(
        plan.step,
        BatchStep::PruneOnly {
            reached_low_water: true
        }
    ));
    assert!(cited.iter().all(|c| !pruned_indices(&plan).contains(c)));
    // A threshold the uncited alone cannot reach: everything old is pruned (and summarized).
    let (_, plan) = run(cited_session(), total / 8, &BatchConfig::default());
    assert!(cited.iter().all(|c| pruned_indices(&plan).contains(c)));
}

#[test]
fn a_job_that_folds_an_older_summary_may_keep_what_it_held() {
    let e = Estimator::default();
    let mut msgs = session(200, 400);
    let old = marker::render(
        MarkerKind::Batch,
        Role::User,
        &"earlier facts ".repeat(1_500),
    );
    msgs.insert(1, old);
    let cfg = BatchConfig::default();
    let t = Transcript::new(msgs, &e);
    let req = BatchRequest {
        compacted: true,
        ..BatchRequest::default()
    };
    let plan = plan_batch(&t, 10_000, &cfg, &req, &e);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("{:?}", plan.step);
    };
    assert!(jobs[0].previous_summary.is_some());
    assert!(
        jobs[0].budget_tokens > cfg.summary_max_tokens,
        "{}",
        jobs[0].budget_tokens
    );
    assert!(jobs[0].budget_tokens <= cfg.summary_max_tokens * FOLD_BUDGET_FACTOR);
    // A first summary gets the configured size.
    let (_, plan) = run(session(200, 400), 10_000, &cfg);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("{:?}", plan.step);
    };
    assert!(jobs[0].previous_summary.is_none());
    assert_eq!(jobs[0].budget_tokens, cfg.summary_max_tokens);
}

#[test]
fn the_ledger_carries_older_summaries_entries_and_can_be_turned_off() {
    let mut msgs = session(400, 300);
    // A summary of an earlier pass inside the middle, with a ledger of its own.
    let mut older = Ledger::default();
    older.observe(&Message::assistant_tool_calls(
        "",
        vec![ToolCall::function("x", "edit", r#"{"path":"src/old.rs"}"#)],
    ));
    let body = older.attach("earlier work", 500);
    msgs.insert(9, marker::render(MarkerKind::Batch, Role::Assistant, &body));
    let cfg = BatchConfig::default();
    let (t, plan) = run(msgs.clone(), 20_000, &cfg);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("expected a summary, got {:?}", plan.step);
    };
    assert_eq!(jobs[0].previous_summary.as_deref(), Some("earlier work"));
    assert_eq!(jobs[0].ledger.files(), ["src/old.rs"]);
    assert_eq!(jobs[0].ledger.commands(), ["make"]);
    let edit = assemble(&t, &plan, &["new".to_owned()], &cfg).unwrap();
    let after = edit.apply(t.messages()).unwrap();
    let m = after
        .iter()
        .find(|m| marker::classify(m).is_some())
        .unwrap();
    let (_, carried) = Ledger::split(&marker::parse_body(m).unwrap());
    assert_eq!(carried.files(), ["src/old.rs"]);

    let off = BatchConfig {
        ledger_max_tokens: 0,
        ..BatchConfig::default()
    };
    let (t, plan) = run(msgs, 20_000, &off);
    let edit = assemble(&t, &plan, &["new".to_owned()], &off).unwrap();
    let after = edit.apply(t.messages()).unwrap();
    let m = after
        .iter()
        .find(|m| marker::classify(m).is_some())
        .unwrap();
    assert_eq!(marker::parse_body(m).as_deref(), Some("new"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, .. Default::default() })]

    /// A plan never asks for a summary without a span to summarize, and never reports a
    /// prune-only pass without a prune: the caller would otherwise commit (and label) a
    /// pass that did something else.
    #[test]
    fn every_step_has_the_work_it_names(
        msgs in crate::strategies::transcript(),
        threshold in 2_000u64..40_000,
    ) {
        let e = Estimator::default();
        let t = Transcript::new(msgs, &e);
        let req = BatchRequest { force: true, ..BatchRequest::default() };
        let plan = plan_batch(&t, threshold, &BatchConfig::default(), &req, &e);
        match &plan.step {
            BatchStep::Summarize(jobs) => proptest::prop_assert!(!jobs.is_empty()),
            BatchStep::PruneOnly { .. } => proptest::prop_assert!(!plan.prune.edit.is_empty()),
            BatchStep::Nothing(_) => {}
        }
    }
}

#[test]
fn below_threshold_does_nothing() {
    let (_, plan) = run(session(3, 100), 1_000_000, &BatchConfig::default());
    assert_eq!(plan.step, BatchStep::Nothing(NothingReason::BelowThreshold));
}

#[test]
fn prune_only_accepted_at_low_water() {
    // Big tool outputs dominate: pruning alone buys plenty of runway.
    let cfg = BatchConfig {
        prune_minimum_tokens: 100,
        ..BatchConfig::default()
    };
    let (t, plan) = run(session(30, 8_000), 20_000, &cfg);
    assert!(plan.tokens_before >= 20_000);
    assert_eq!(
        plan.step,
        BatchStep::PruneOnly {
            reached_low_water: true
        }
    );
    assert!(plan.tokens_after_prune <= plan.low_water_tokens);
    let edit = assemble(&t, &plan, &[], &cfg).unwrap();
    let after = edit.apply(t.messages()).unwrap();
    assert_eq!(after.len(), t.len());
}

#[test]
fn falls_through_to_summary_when_pruning_is_not_enough() {
    // Small tool outputs: pruning reclaims little, so the plan summarizes.
    let cfg = BatchConfig::default();
    let (t, plan) = run(session(400, 300), 20_000, &cfg);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("expected a summary, got {:?}", plan.step);
    };
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].kind, MarkerKind::Batch);
    assert!(jobs[0].material.contains("[user]\nrequest 1"));
    let edit = assemble(&t, &plan, &["the summary".to_owned()], &cfg).unwrap();
    let after = edit.apply(t.messages()).unwrap();
    let markers: Vec<&Message> = after
        .iter()
        .filter(|m| marker::classify(m).is_some())
        .collect();
    assert_eq!(markers.len(), 1);
    // The summarizer's text, then the ledger of the span's tool calls.
    let body = marker::parse_body(markers[0]).unwrap();
    let (text, ledger) = Ledger::split(&body);
    assert_eq!(text, "the summary");
    assert_eq!(ledger.commands(), ["make"]);
    assert_eq!(jobs[0].ledger, ledger);
    assert!(after.len() < t.len());
    // No new same-role neighbours around the marker.
    let k = after
        .iter()
        .position(|m| marker::classify(m).is_some())
        .unwrap();
    assert_ne!(after[k - 1].role(), after[k].role());
    assert_ne!(after[k + 1].role(), after[k].role());
    // A second pass feeds the first summary into the update and still leaves one marker.
    let e = Estimator::default();
    let t2 = Transcript::new(after, &e);
    let req = BatchRequest {
        force: true,
        compacted: true,
        ..Default::default()
    };
    let plan2 = plan_batch(&t2, 20_000, &cfg, &req, &e);
    if let BatchStep::Summarize(jobs) = &plan2.step {
        assert_eq!(jobs[0].previous_summary.as_deref(), Some("the summary"));
        let edit2 = assemble(&t2, &plan2, &vec!["v2".to_owned(); jobs.len()], &cfg).unwrap();
        let after2 = edit2.apply(t2.messages()).unwrap();
        assert_eq!(
            after2
                .iter()
                .filter(|m| marker::classify(m).is_some())
                .count(),
            1
        );
    }
}

#[test]
fn stale_transcripts_are_refused() {
    let cfg = BatchConfig::default();
    let (t, plan) = run(session(400, 300), 20_000, &cfg);
    let mut other = t.clone();
    other.push(Message::user("new"), &Estimator::default());
    assert_eq!(
        assemble(&other, &plan, &["s".into()], &cfg),
        Err(Error::StaleTranscript)
    );
    assert!(matches!(
        assemble(&t, &plan, &[], &cfg),
        Err(Error::SummaryCount { .. })
    ));
}

#[test]
fn a_same_size_rewrite_is_refused() {
    let cfg = BatchConfig::default();
    let e = Estimator::default();
    let (t, plan) = run(session(400, 300), 20_000, &cfg);
    let jobs = match &plan.step {
        BatchStep::Summarize(jobs) => jobs.len(),
        other => panic!("expected a summary step, got {other:?}"),
    };
    let summaries = vec!["s".to_owned(); jobs];
    // One message rewritten to text of the same length: same count, same token total.
    let mut edited = t.clone();
    let i = 3 + 4 * 10;
    assert_eq!(edited.messages()[i].text(), "o".repeat(300));
    edited.replace(i, Message::tool_result("c10", "x".repeat(300)), &e);
    assert_eq!(
        (edited.len(), edited.estimated_total()),
        (t.len(), t.estimated_total())
    );
    assert_ne!(edited.messages()[i], t.messages()[i]);
    assert_eq!(
        assemble(&edited, &plan, &summaries, &cfg),
        Err(Error::StaleTranscript)
    );
    // A metadata edit through meta_mut (it may change a marker kind) is a change too.
    let mut marked = t.clone();
    marked.meta_mut(1).marker = None;
    assert_eq!(
        assemble(&marked, &plan, &summaries, &cfg),
        Err(Error::StaleTranscript)
    );
    // An unchanged clone, and a row id stamp, are the same transcript.
    let mut stamped = t.clone();
    stamped.set_row_id(1, 42);
    assert!(assemble(&stamped, &plan, &summaries, &cfg).is_ok());
    assert!(assemble(&t, &plan, &summaries, &cfg).is_ok());
}

#[test]
fn marker_roles() {
    let sys = Message::system("s");
    let u = Message::user("u");
    let a = Message::assistant("a");
    assert_eq!(marker_role(Some(&sys), Some(&a)), Some(Role::User));
    assert_eq!(marker_role(Some(&sys), Some(&u)), None);
    assert_eq!(marker_role(Some(&u), Some(&u)), Some(Role::Assistant));
    assert_eq!(marker_role(Some(&a), Some(&u)), None);
    assert_eq!(marker_role(Some(&a), Some(&a)), Some(Role::User));
}

/// A head near the threshold, one reply, then a whole exchange in the tail: keeping the
/// reply leaves nothing to summarize. A forced pass (an overflow, a `/compress`) takes the
/// reply and lands smaller, keeping the laws; a pass the threshold triggered keeps the reply
/// the user last read, as it misses the marks either way.
#[test]
fn a_forced_pass_with_only_the_last_reply_to_summarize_takes_it() {
    let e = Estimator::default();
    let reply = format!("Here is the plan. {}", "step and detail ".repeat(600));
    let mut msgs = vec![
        Message::system(format!("You are an agent. {}", "rule ".repeat(9_000))),
        Message::user("start the work"),
        Message::assistant("reading the repository"),
        Message::user("now the plan"),
        Message::assistant(reply.clone()),
        Message::user("go on"),
    ];
    // The turn after it: three tool rounds, longer than the tail's budget, no longer than
    // the tail's six messages.
    for i in 0..3 {
        let id = format!("c{i}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)],
        ));
        msgs.push(Message::tool_result(&id, "o".repeat(2_000)));
    }
    let t = Transcript::new(msgs.clone(), &e);
    let before = t.current_tokens();
    // Summarizing the reply cannot bring the prompt under it.
    let threshold = before - 3_000;
    let cfg = BatchConfig::default();
    let forced = BatchRequest {
        force: true,
        ..BatchRequest::default()
    };
    let plan = plan_batch(&t, threshold, &cfg, &forced, &e);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("{:?} {:?}", plan.step, plan.regions)
    };
    assert_eq!(jobs.len(), 1);
    let after = applied(&t, &plan, &cfg);
    assert!(
        after.current_tokens() < before,
        "{} >= {before}",
        after.current_tokens()
    );
    assert!(after.messages().iter().all(|m| m.text() != reply));
    assert!(after.messages().iter().any(|m| m.text() == "go on"));
    let pass = crate::laws::Pass::of_batch(&plan, &cfg, crate::laws::PassKind::Batch);
    let violations = crate::laws::check(&msgs, after.messages(), &pass, &e);
    assert!(violations.is_empty(), "{violations:?}");
    // Not forced: the pass keeps the reply, as it misses the threshold either way.
    let plan = plan_batch(&t, threshold, &cfg, &BatchRequest::default(), &e);
    if let BatchStep::Summarize(jobs) = &plan.step {
        assert!(jobs.iter().all(|j| !j.range.contains(&4)), "{jobs:?}");
    }
}

/// A head and a tail of system messages over the threshold (a long system prompt, a
/// mid-session system notice in the tail), a small exchange between them: no pass can bring
/// the prompt under, and the plan says so (the floor), not that nothing needed doing.
#[test]
fn a_floor_of_system_messages_over_the_threshold_is_reported_as_irreducible() {
    let e = Estimator::default();
    let msgs = vec![
        Message::system(format!("Sandbox rules. {}", "rule ".repeat(9_000))),
        Message::system("You are the primary agent."),
        marker::render(
            MarkerKind::Batch,
            Role::User,
            "Goal: tidy the repository. Done: the build runs.",
        ),
        Message::user("update the ignore rules"),
        Message::assistant_tool_calls(
            "Checking the ignore rules.",
            vec![ToolCall::function(
                "c0",
                "exec",
                r#"{"cmd":"cat .gitignore"}"#,
            )],
        ),
        Message::tool_result("c0", "/target\n/web/node_modules\n"),
        Message::assistant("Updated .gitignore for the build outputs."),
        Message::system(format!("The model changed. {}", "note ".repeat(5_000))),
        Message::user("now help me with the grant application"),
    ];
    let t = Transcript::new(msgs, &e);
    let threshold = 11_200;
    assert!(t.current_tokens() > threshold);
    let forced = BatchRequest {
        force: true,
        ..BatchRequest::default()
    };
    for req in [forced.clone(), BatchRequest::default()] {
        let plan = plan_batch(&t, threshold, &BatchConfig::default(), &req, &e);
        assert_eq!(
            plan.step,
            BatchStep::Nothing(NothingReason::IrreducibleFloor),
            "{:?} {:?}",
            plan.regions,
            plan.region_tokens
        );
    }
    // The same exchange under a floor that fits: nothing to fold is all it is.
    let mut small = t.messages().to_vec();
    small[0] = Message::system("Sandbox rules.");
    let t = Transcript::new(small, &e);
    let plan = plan_batch(
        &t,
        t.current_tokens() - 1,
        &BatchConfig::default(),
        &forced,
        &e,
    );
    assert_eq!(
        plan.step,
        BatchStep::Nothing(NothingReason::NothingToCompact)
    );
}
