//! Criterion group `batch_pass`: one forced batch pass over a synthetic tool-heavy transcript
//! (user, assistant with 3 tool calls, 3 tool results of ~2,000 chars, final assistant) with an
//! instant summarizer and no store. Ids are message counts.
//!
//! `cargo bench --bench batch`

mod common;

use hermes_compaction::OneShot;
use std::hint::black_box;
use std::sync::Arc;

use common::InstantSummarizer;
use compaction_core::{Estimator, Message, ToolCall, Transcript};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hermes_compaction::{Compressor, Config};

/// A synthetic tool-heavy session of about `n` messages.
fn session(n: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    let mut i = 0;
    while msgs.len() < n {
        msgs.push(Message::user(format!("task {i}: fix the failing test")));
        let calls: Vec<ToolCall> = (0..3)
            .map(|k| ToolCall::function(format!("c{i}-{k}"), "bash", r#"{"command":"cargo test"}"#))
            .collect();
        msgs.push(Message::assistant_tool_calls("", calls));
        for k in 0..3 {
            let out = format!("test output line {k} {i}\n").repeat(80);
            msgs.push(Message::tool_result(format!("c{i}-{k}"), out));
        }
        msgs.push(Message::assistant(format!("task {i} is done")));
        i += 1;
    }
    msgs
}

fn batch_pass(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("batch_pass");
    group.sample_size(20);
    for n in [2_400usize, 100_000] {
        let msgs = session(n);
        let mut config = Config::default();
        config.model.context_length = 200_000;
        // `HERMES_BENCH_POLICY=previous` times the policy defaults before issue 13 (no
        // ledger), for the before/after figures in docs/PERFORMANCE.md.
        if std::env::var("HERMES_BENCH_POLICY").as_deref() == Ok("previous") {
            let c = &mut config.compression;
            c.small_window_min_threshold = 0.75;
            c.threshold_floor_tokens = 64_000;
            c.tail_ratio = 0.2;
            c.prune_minimum_tokens = 8_000;
            c.proactive_prune_tokens = 0;
            c.ledger_max_tokens = 0;
        }
        let counter = Arc::new(Estimator::default());
        let base = Transcript::new(msgs, counter.as_ref());
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_batched(
                || {
                    let c = Compressor::builder(config.clone())
                        .summarizer(Arc::new(InstantSummarizer))
                        .counter(counter.clone())
                        .session("bench")
                        .build()
                        .unwrap();
                    (c, base.clone())
                },
                |(mut comp, mut t)| {
                    let r = rt
                        .block_on(comp.one_shot(&mut t, OneShot::batch()))
                        .into_batch()
                        .unwrap();
                    // Returned so that dropping the transcript is not timed.
                    (black_box(r), t, comp)
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, batch_pass);
criterion_main!(benches);
