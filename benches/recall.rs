//! Insertion-time trimming and recall benchmarks.
//!
//! `trim_plan`: the pure trimming decision on a 1 MB command output.
//! `recall_search`: `search_archived` on SQLite (temporary file) in a session of 10,000
//! archived rows (already indexed), for a word that 1% of them hold; and `recall_catch_up`:
//! the first search after 1,000 more rows were archived, which indexes them.

use std::time::{Duration, Instant};

use compaction_core::prune::ToolInfo;
use compaction_core::trim::{TrimConfig, plan_trim};
use compaction_core::{Edit, Estimator, MarkerKind, Message, Role, marker};
use compaction_store::{Commit, Store};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn trim_plan(c: &mut Criterion) {
    let output: String = (0..20_000)
        .map(|i| format!("test module_{i:05}::case ... ok ({i} ms)\n"))
        .collect::<String>()
        + "test result: FAILED. exit code: 101";
    let m = Message::tool_result("call_1", output.clone());
    let tool = ToolInfo {
        name: "bash",
        arguments: r#"{"command":"cargo test"}"#,
    };
    let cfg = TrimConfig {
        max_tokens: 8_000,
        ..TrimConfig::default()
    };
    let e = Estimator::default();
    let mut g = c.benchmark_group("trim_plan");
    g.throughput(Throughput::Bytes(output.len() as u64));
    g.bench_function("1MB_shell_output", |b| {
        b.iter(|| plan_trim(&m, Some(&tool), &cfg, &e).expect("trims"))
    });
    g.finish();
}

fn message(i: usize) -> Message {
    let rare = if i.is_multiple_of(100) { " numbat" } else { "" };
    Message::tool_result(
        format!("call_{i}"),
        format!(
            "output of step {i}{rare}: {}",
            "compiled crate ok; ".repeat(20)
        ),
    )
}

/// Appends `n` rows after `from` and archives them behind one marker.
async fn archive_batch(store: &Store, from: usize, n: usize) {
    let mut messages: Vec<Message> = (from..from + n).map(message).collect();
    store.append("s", &mut messages).await.unwrap();
    let edit = Edit::single(
        0..n,
        vec![marker::render(MarkerKind::Batch, Role::User, "summary")],
    );
    let generation = store.generation("s").await.unwrap();
    let mut commit = Commit::from_edit(generation, &edit, &messages).unwrap();
    store.archive_and_compact("s", &mut commit).await.unwrap();
}

fn recall_search(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("recall.db").display());
    let store = rt.block_on(async {
        let store = Store::connect(&url).await.unwrap();
        store.create_session("s").await.unwrap();
        for k in 0..10 {
            archive_batch(&store, k * 1_000, 1_000).await;
        }
        // Index everything once.
        store.search_archived("s", "numbat", 5).await.unwrap();
        store
    });
    let mut g = c.benchmark_group("recall_search");
    g.bench_function("sqlite_10k_archived", |b| {
        b.iter(|| {
            rt.block_on(store.search_archived("s", "numbat", 5))
                .unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("recall_catch_up");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1_000));
    let mut next = 10_000;
    g.bench_function("sqlite_index_1k_archived_rows", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                rt.block_on(archive_batch(&store, next, 1_000));
                next += 1_000;
                let start = Instant::now();
                rt.block_on(store.search_archived("s", "numbat", 5))
                    .unwrap();
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, trim_plan, recall_search);
criterion_main!(benches);
