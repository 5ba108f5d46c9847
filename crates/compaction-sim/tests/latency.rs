//! The added wait at the trigger and the summary prepared ahead (issue 34, items 5 and 2).

use compaction_sim::latency::{LatencyModel, LatencyOptions, WaitSummary};
use compaction_sim::{Options, Policy, Row, Variant};
use hermes_compaction::Config;
use hermes_compaction::core::{Message, parse};

use crate::common::{example, run};

const FIVE_SECONDS: LatencyModel = LatencyModel {
    fixed_ms: 5_000,
    per_output_token_ms: 0.0,
};

fn variants(context: u64, policies: &[Policy]) -> Vec<Variant> {
    let mut config = Config::default();
    config.model.context_length = context;
    policies.iter().map(|p| p.variant(&config, 8_000)).collect()
}

fn options(model: LatencyModel, prepare_at: Option<f64>) -> Options {
    Options {
        latency: LatencyOptions { model, prepare_at },
        ..Options::default()
    }
}

/// A conversation of `turns` turns of plain text (nothing to prune: every pass summarizes).
fn chat(turns: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        msgs.push(Message::user(format!(
            "request {i}: {}",
            format!("detail {i} ").repeat(120)
        )));
        msgs.push(Message::assistant(format!(
            "answer {i}: {}",
            format!("done {i} ").repeat(120)
        )));
    }
    msgs
}

fn totals(inputs: &[(String, Vec<Message>)], v: &[Variant], o: &Options) -> Vec<Row> {
    run(inputs, v, o).totals
}

#[test]
fn a_policy_without_passes_waits_nothing() {
    let inputs = [example()];
    for prepare_at in [None, Some(0.5)] {
        let t = totals(
            &inputs,
            &variants(16_000, &[Policy::None]),
            &options(FIVE_SECONDS, prepare_at),
        );
        let w = &t[0].latency;
        assert_eq!(t[0].summary_calls, 0);
        assert_eq!(w.trigger(), WaitSummary::default());
        assert_eq!(w.micro(), WaitSummary::default());
        assert_eq!((w.prepared, w.wasted_cost_usd), (0, 0.0));
    }
}

/// Without preparation every batch pass that calls the summarizer waits its whole latency:
/// the fixed part per call plus the part per output token, summed over the session.
#[test]
fn without_preparation_each_trigger_waits_the_latency_of_its_pass() {
    let inputs = [("chat".to_owned(), chat(120))];
    let model = LatencyModel {
        fixed_ms: 5_000,
        per_output_token_ms: 2.0,
    };
    let t = totals(
        &inputs,
        &variants(16_000, &[Policy::Batch]),
        &options(model, None),
    );
    let (r, w) = (&t[0], &t[0].latency);
    assert!(r.summary_calls > 0, "the session compacts");
    assert_eq!(w.trigger().passes, r.summary_events);
    assert_eq!(
        w.trigger().total_ms,
        model.calls_ms(r.summary_calls, r.summary_output_tokens)
    );
    assert!(w.trigger_ms.iter().all(|&ms| ms >= 5_000));
    assert_eq!(w.micro(), WaitSummary::default());
    let fixed = totals(
        &inputs,
        &variants(16_000, &[Policy::Batch]),
        &options(FIVE_SECONDS, None),
    );
    assert!(
        fixed[0]
            .latency
            .trigger_ms
            .iter()
            .all(|&ms| ms == 5_000 * (r.summary_calls / r.summary_events)),
        "{:?}",
        fixed[0].latency.trigger_ms
    );
}

/// A candidate prepared early, while the session keeps growing, would summarize other
/// messages than the trigger's pass: it is wasted, its tokens are counted and priced, and
/// the trigger waits the whole latency.
#[test]
fn a_candidate_whose_span_changed_is_wasted() {
    let inputs = [("chat".to_owned(), chat(120))];
    let v = variants(16_000, &[Policy::Batch]);
    let off = &totals(&inputs, &v, &options(FIVE_SECONDS, None))[0];
    let on = &totals(&inputs, &v, &options(FIVE_SECONDS, Some(0.3)))[0];
    let w = &on.latency;
    assert!(w.wasted_span_changed > 0, "{w:?}");
    assert_eq!(w.prepared, w.prepared_used + w.prepared_wasted);
    assert_eq!(
        w.prepared_wasted,
        w.wasted_pass_between + w.wasted_span_changed + w.wasted_unused
    );
    assert!(w.wasted_prompt_tokens > 0 && w.wasted_output_tokens > 0);
    assert!(w.wasted_cost_usd > 0.0 && w.wasted_unit_cost > 0.0);
    // Preparation changes no pass: the same summaries, the cost plus the wasted candidates.
    assert_eq!(on.summary_calls, off.summary_calls);
    assert!((on.cost_usd - off.cost_usd - w.wasted_cost_usd).abs() < 1e-9);
    assert!((on.unit_cost - off.unit_cost - w.wasted_unit_cost).abs() < 1e-6);
    // A wasted candidate saves nothing: with every candidate wasted, every wait is whole.
    if w.prepared_used == 0 {
        assert_eq!(w.trigger_ms, off.latency.trigger_ms);
    }
    // Each wait is at most the one without preparation.
    for (with, without) in w.trigger_ms.iter().zip(&off.latency.trigger_ms) {
        assert!(with <= without);
    }
}

/// On the fixtures, preparation never lengthens a wait, every candidate is either used or
/// wasted, and a used one shortens its wait by the time it had.
#[test]
fn on_the_fixtures_a_prepared_summary_only_shortens_waits() {
    let Some(files) = test_support::fixture_files() else {
        return;
    };
    let inputs: Vec<(String, Vec<Message>)> = files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            (
                test_support::file_name(p),
                parse::parse_jsonl(&text).unwrap(),
            )
        })
        .collect();
    let v = variants(64_000, &[Policy::Batch]);
    let off = run(&inputs, &v, &options(FIVE_SECONDS, None));
    let on = run(&inputs, &v, &options(FIVE_SECONDS, Some(0.8)));
    for (a, b) in off.rows.iter().zip(&on.rows) {
        let (wa, wb) = (&a.latency, &b.latency);
        assert_eq!(wa.trigger_ms.len(), wb.trigger_ms.len(), "{}", a.transcript);
        for (x, y) in wa.trigger_ms.iter().zip(&wb.trigger_ms) {
            assert!(y <= x, "{}: {y} > {x}", a.transcript);
        }
        assert_eq!(wb.prepared, wb.prepared_used + wb.prepared_wasted);
        assert!((b.cost_usd - a.cost_usd - wb.wasted_cost_usd).abs() < 1e-9);
    }
    let (off, on) = (&off.totals[0].latency, &on.totals[0].latency);
    assert!(on.prepared > 0);
    if on.prepared_used > 0 {
        assert!(on.trigger().total_ms < off.trigger().total_ms);
    }
}
