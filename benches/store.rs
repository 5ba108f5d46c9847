//! compaction-store benchmarks.
//!
//! `store_commit`: one micro-shaped `archive_and_compact` (archive the rolling marker and the
//! next four rows, insert one new marker) in a session of 1,000 or 100,000 active rows. After
//! each timed commit four rows are appended (untimed) so the active count stays constant.
//! `store_append`: batched append throughput (1,000 messages per call).
//!
//! SQLite runs on a temporary file; PostgreSQL runs only when `HERMES_TEST_DATABASE_URL` is
//! set, in a throw-away schema.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use compaction_core::{MarkerKind, Message, Role, ToolCall, marker};
use compaction_store::{Commit, CommitSplice, Store, StoreOptions};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const SESSION: &str = "bench";

/// Realistically sized messages (a few hundred bytes each), cycling through roles.
fn message(i: usize) -> Message {
    match i % 4 {
        0 => Message::user(format!(
            "request {i}: please look at src/module_{i}.rs and fix the failing test; {}",
            "context ".repeat(20)
        )),
        1 => Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                format!("call_{i}"),
                "read_file",
                format!(r#"{{"path":"src/module_{i}.rs"}}"#),
            )],
        ),
        2 => Message::tool_result(
            format!("call_{}", i - 1),
            format!("fn f{i}() {{ {} }}", "let x = 1; ".repeat(25)),
        ),
        _ => Message::assistant(format!(
            "Fixed module {i}: the bound check was off by one. {}",
            "detail ".repeat(15)
        )),
    }
}

struct Backend {
    name: &'static str,
    store: Store,
    _dir: Option<tempfile::TempDir>,
}

async fn backends(tag: &str) -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("bench.db").display());
    let mut out = vec![Backend {
        name: "sqlite",
        store: Store::connect(&url).await.unwrap(),
        _dir: Some(dir),
    }];
    if let Ok(url) = std::env::var("HERMES_TEST_DATABASE_URL") {
        let options = StoreOptions {
            postgres_schema: Some(format!("hermes_bench_{tag}_{}", std::process::id())),
            ..StoreOptions::default()
        };
        out.push(Backend {
            name: "postgres",
            store: Store::connect_with(&url, &options).await.unwrap(),
            _dir: None,
        });
    }
    out
}

async fn finish(backends: Vec<Backend>) {
    for b in backends {
        if let Some(pg) = b.store.downcast_ref::<compaction_store::PostgresStore>() {
            pg.drop_schema().await.unwrap();
        }
    }
}

/// A session of `n` active rows: returns their ids in order.
async fn fill(store: &Store, session: &str, n: usize) -> Vec<i64> {
    store.create_session(session).await.unwrap();
    let mut ids = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        let k = (n - i).min(5_000);
        let mut batch: Vec<Message> = (i..i + k).map(message).collect();
        ids.extend(store.append(session, &mut batch).await.unwrap());
        i += k;
    }
    ids
}

fn store_commit(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let backends = rt.block_on(backends("commit"));
    let mut group = c.benchmark_group("store_commit");
    group.sample_size(30);
    for b in &backends {
        for n in [1_000usize, 100_000] {
            let session = format!("{SESSION}-{n}");
            let ids = rt.block_on(fill(&b.store, &session, n));
            // Rows 0..3 are the head; row 3 plays the rolling marker; the rest follow.
            let mut marker_id = ids[3];
            let mut queue: VecDeque<i64> = ids[4..].iter().copied().collect();
            let mut generation = 0u64;
            let mut next = n;
            group.bench_function(format!("{}/{n}", b.name), |bench| {
                bench.iter_custom(|iters| {
                    rt.block_on(async {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let mut archive = vec![marker_id];
                            archive.extend(queue.drain(..4));
                            let mut commit = Commit {
                                generation,
                                splices: vec![CommitSplice {
                                    archive,
                                    insert_after: None,
                                    insert: vec![marker::render(
                                        MarkerKind::Micro,
                                        Role::Assistant,
                                        "rolling summary of the earlier turns",
                                    )],
                                }],
                                ..Default::default()
                            };
                            let start = Instant::now();
                            let new = b
                                .store
                                .archive_and_compact(&session, &mut commit)
                                .await
                                .unwrap();
                            total += start.elapsed();
                            marker_id = new[0];
                            generation += 1;
                            let mut more: Vec<Message> = (next..next + 4).map(message).collect();
                            next += 4;
                            queue.extend(b.store.append(&session, &mut more).await.unwrap());
                        }
                        total
                    })
                })
            });
        }
    }
    group.finish();
    rt.block_on(finish(backends));
}

fn store_append(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let backends = rt.block_on(backends("append"));
    let mut group = c.benchmark_group("store_append");
    group.sample_size(20);
    const BATCH: usize = 1_000;
    group.throughput(Throughput::Elements(BATCH as u64));
    for b in &backends {
        rt.block_on(b.store.create_session(SESSION)).unwrap();
        let template: Vec<Message> = (0..BATCH).map(message).collect();
        group.bench_function(format!("{}/{BATCH}", b.name), |bench| {
            bench.iter_batched(
                || template.clone(),
                |mut batch| rt.block_on(b.store.append(SESSION, &mut batch)).unwrap(),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    rt.block_on(finish(backends));
}

criterion_group!(benches, store_commit, store_append);
criterion_main!(benches);
