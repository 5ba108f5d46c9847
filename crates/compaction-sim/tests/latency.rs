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

/// With `prepare_at` the facade prepares the summary ahead: every candidate is used or
/// wasted, a used one makes its trigger wait at most its own calls (and nothing once the
/// next request comes later than they take), and the wasted ones' cost is part of the cost.
#[test]
fn the_replay_drives_the_facades_prepared_summary() {
    let inputs = [("chat".to_owned(), chat(120))];
    let v = variants(16_000, &[Policy::Batch]);
    let on = &totals(&inputs, &v, &options(FIVE_SECONDS, Some(0.8)))[0];
    let w = &on.latency;
    assert!(w.prepared > 0, "{w:?}");
    assert_eq!(
        w.prepared,
        w.prepared_used + w.prepared_wasted + w.prepared_empty
    );
    assert_eq!(
        w.prepared_wasted,
        w.wasted_pass_between
            + w.wasted_span_changed
            + w.wasted_superseded
            + w.wasted_insufficient
            + w.wasted_failed
            + w.wasted_unused
    );
    assert!(w.prepared_used > 0, "{w:?}");
    // 30 s between requests, 5 s a call: a used candidate is ready when the trigger comes.
    assert_eq!(
        w.trigger_ms.iter().filter(|&&ms| ms == 0).count() as u64,
        w.prepared_used
    );
    assert!(w.wasted_cost_usd <= on.cost_summary_usd);
    // The same replay twice gives the same numbers (the candidates run at known moments).
    let again = &totals(&inputs, &v, &options(FIVE_SECONDS, Some(0.8)))[0];
    assert_eq!(again.latency, on.latency);
    assert_eq!(again.summary_calls, on.summary_calls);
}

/// On the fixtures, every candidate is either used or wasted, and the waits at the trigger
/// add up to less than without preparation.
#[test]
fn on_the_fixtures_a_prepared_summary_shortens_the_waits() {
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
    for b in &on.rows {
        let wb = &b.latency;
        assert_eq!(
            wb.prepared,
            wb.prepared_used + wb.prepared_wasted + wb.prepared_empty
        );
        assert!(wb.wasted_cost_usd <= b.cost_summary_usd + 1e-9);
    }
    let (off, on) = (&off.totals[0].latency, &on.totals[0].latency);
    assert!(on.prepared_used > 0);
    assert!(on.trigger().total_ms < off.trigger().total_ms);
}
