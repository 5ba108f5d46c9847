//! Micro-compaction pass: cursor resolution, exchange search, material, assembly and splice.
//!
//! Group `micro_pass` (ids = messages): one whole pass with an instant summarizer on the
//! synthetic tool-heavy transcript (user, assistant with 3 tool calls, 3 results of ~2,000
//! characters, final assistant), including applying the edit to the transcript. Passes run
//! back to back on one transcript with the state carried over, as in a session; the transcript
//! is rebuilt (untimed) when a tenth of it has been absorbed. Group `micro_plan` times the pure
//! part alone (plan and assemble, no splice) to show what the splice costs. Group `micro_turn`
//! times the facade's whole `finalize_turn` on the same sessions: the hook, the (instant,
//! asynchronous) summarizer call, the splice and the telemetry line, formatted by a `tracing`
//! subscriber that writes to a sink. Group `micro_turn_store` adds persistence: the session
//! lives in a SQLite file (WAL, the embedded default) and each pass commits what it changed
//! with `archive_and_compact` (ids 2400 and 100000, the first to compare with Hermes Agent's
//! ~0.33 s per pass with its store at 2,400 messages). Group `micro_one_shot_gated` times
//! the one-shot micro run (`Compressor::one_shot` in micro mode, what `hermes-compaction compact
//! --mode micro` runs) over a whole synthetic session at the default configuration, 128K
//! window, with a reclaim gate (`micro_compact_min_reclaim_tokens`) that refuses every pass:
//! the replay through the hooks alone, which must stay linear in the transcript (issue 26).
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::InstantSummarizer;
use compaction_core::micro::{
    self, MicroConfig, MicroEvent, MicroHook, MicroPlanner, MicroRequest, MicroStep,
};
use compaction_core::{Estimator, Message, ToolCall, Transcript};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use hermes_compaction::core::micro::MicroOutcomeKind;
use hermes_compaction::{Compressor, Config};

const THRESHOLD: u64 = 100_000;

fn tool_heavy(messages: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    let mut i = 0;
    while msgs.len() < messages {
        msgs.push(Message::user(format!("request {i}: fix the failing test")));
        let ids: Vec<String> = (0..3).map(|k| format!("call_{i}_{k}")).collect();
        let calls = ids
            .iter()
            .map(|id| ToolCall::function(id, "read_file", r#"{"path":"src/lib.rs"}"#))
            .collect();
        msgs.push(Message::assistant_tool_calls("Reading the sources.", calls));
        for id in &ids {
            msgs.push(Message::tool_result(
                id,
                "fn main() { println!(\"x\"); }\n".repeat(66),
            ));
        }
        msgs.push(Message::assistant(format!("Fixed request {i}.")));
        i += 1;
    }
    msgs.truncate(messages);
    // End on a whole round: a transcript cut between a tool call and its results is one a
    // pass must leave alone (no hook compacts there), which is not what these benches time.
    while msgs
        .last()
        .is_some_and(|m| !m.is_assistant() || !m.tool_calls().is_empty())
    {
        msgs.pop();
    }
    msgs
}

struct Session {
    base: Vec<Message>,
    t: Transcript,
    planner: MicroPlanner,
}

impl Session {
    fn new(n: usize, e: &Estimator) -> Session {
        let base = tool_heavy(n);
        Session {
            t: Transcript::new(base.clone(), e),
            base,
            planner: MicroPlanner::default(),
        }
    }

    fn refill_if_needed(&mut self, e: &Estimator) {
        if self.t.len() * 10 < self.base.len() * 9 {
            self.t = Transcript::new(self.base.clone(), e);
            self.planner = MicroPlanner::default();
        }
    }

    /// One pass; `apply` also splices the transcript.
    fn pass(&mut self, cfg: &MicroConfig, e: &Estimator, apply: bool) {
        let plan = self.planner.plan(&MicroRequest {
            transcript: &self.t,
            hook: MicroHook::Turn,
            threshold_tokens: THRESHOLD,
            compacted: true,
            config: cfg,
            counter: e,
        });
        self.planner.record(MicroEvent::Planned(&plan));
        let MicroStep::Absorb(job) = &plan.step else {
            panic!(
                "the synthetic session always has an exchange to absorb: {:?}",
                plan.step
            );
        };
        let summary = format!("Rolling summary: {} exchanges absorbed.", job.ranges.len());
        let out = micro::assemble_micro(&self.t, &plan, &summary, cfg, e).expect("assembles");
        if apply {
            self.planner.record(MicroEvent::Assembled(&out));
            out.edit()
                .expect("an absorb has an edit")
                .clone()
                .apply_to(&mut self.t, e)
                .expect("applies");
        }
    }
}

fn bench(c: &mut Criterion, group: &str, apply: bool) {
    let e = Estimator::default();
    let cfg = MicroConfig::default();
    let mut g = c.benchmark_group(group);
    for n in [1_000usize, 10_000, 100_000] {
        let mut s = Session::new(n, &e);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    s.refill_if_needed(&e);
                    let start = Instant::now();
                    s.pass(&cfg, &e, apply);
                    total += start.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

fn micro_pass(c: &mut Criterion) {
    bench(c, "micro_pass", true);
}

fn micro_plan(c: &mut Criterion) {
    bench(c, "micro_plan", false);
}

/// The configuration of the facade groups: micro on, a window whose threshold is `THRESHOLD`.
fn turn_config() -> Config {
    let mut config = Config::default();
    config.model.context_length = 2 * THRESHOLD;
    config.compression.micro_compact = true;
    // One exchange per pass, the unit these figures are quoted for (the economic gate would
    // gather several, or wait).
    config.compression.cache_profile = "none".into();
    config
}

/// Times `finalize_turn` back to back, one session per size; `fresh` builds a session
/// (untimed), again when a tenth of it has been absorbed. `K` is whatever must outlive the
/// session's passes (a temporary directory).
fn time_turns<K>(
    c: &mut Criterion,
    group: &str,
    sizes: &[usize],
    rt: &tokio::runtime::Runtime,
    fresh: impl Fn(&[Message]) -> (K, Compressor, Transcript),
) {
    let mut g = c.benchmark_group(group);
    for &n in sizes {
        let base = tool_heavy(n);
        let (mut keep, mut comp, mut t) = fresh(&base);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if t.len() * 10 < base.len() * 9 {
                        (keep, comp, t) = fresh(&base);
                    }
                    let start = Instant::now();
                    let report = rt.block_on(comp.finalize_turn(&mut t));
                    total += start.elapsed();
                    let outcome = report.map(|r| r.outcome);
                    assert_eq!(outcome, Some(MicroOutcomeKind::Absorbed));
                }
                total
            })
        });
        drop(keep);
    }
    g.finish();
}

fn micro_turn(c: &mut Criterion) {
    // Telemetry lines are formatted and written (to a sink), as in a service that logs them.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::sink)
        .with_max_level(tracing::Level::INFO)
        .try_init();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let counter = Arc::new(Estimator::default());
    let config = turn_config();
    let fresh = |base: &[Message]| {
        let comp = Compressor::builder(config.clone())
            .summarizer(Arc::new(InstantSummarizer))
            .counter(counter.clone())
            .session("bench")
            .build()
            .unwrap();
        ((), comp, Transcript::new(base.to_vec(), counter.as_ref()))
    };
    time_turns(c, "micro_turn", &[1_000, 10_000, 100_000], &rt, fresh);
}

fn micro_turn_store(c: &mut Criterion) {
    use compaction_store::Store;
    use hermes_compaction::compressor::Persistence;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let counter = Arc::new(Estimator::default());
    let config = turn_config();
    // A new database holding the session, appended (untimed), and a compressor bound to it.
    let fresh = |base: &[Message]| {
        rt.block_on(async {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("bench.db").display());
            let store = Store::connect(&url).await.expect("store").into_dyn();
            store.create_session("bench").await.expect("session");
            let mut messages = base.to_vec();
            store.append("bench", &mut messages).await.expect("append");
            let persistence = Persistence {
                store,
                session: "bench".into(),
                generation: 0,
            };
            let mut comp = Compressor::builder(config.clone())
                .summarizer(Arc::new(InstantSummarizer))
                .counter(counter.clone())
                .session("bench")
                .store(persistence)
                .build()
                .unwrap();
            let t = comp.transcript(messages);
            (dir, comp, t)
        })
    };
    time_turns(c, "micro_turn_store", &[2_400, 100_000], &rt, fresh);
}

fn micro_one_shot_gated(c: &mut Criterion) {
    use hermes_compaction::OneShot;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let counter = Arc::new(Estimator::default());
    let mode = OneShot::Micro { max_passes: None };
    let mut config = Config::default();
    config.model.context_length = 128_000;
    // A gate no session of these sizes reaches: every hook plans and is refused.
    config.compression.micro_compact_min_reclaim_tokens =
        hermes_compaction::ReclaimGate::Tokens(1 << 40);
    let fresh = |base: &[Message]| {
        let comp = Compressor::builder(config.clone())
            .summarizer(Arc::new(InstantSummarizer))
            .counter(counter.clone())
            .session("bench")
            .one_shot(mode.clone())
            .build()
            .unwrap();
        (comp, Transcript::new(base.to_vec(), counter.as_ref()))
    };
    let mut g = c.benchmark_group("micro_one_shot_gated");
    g.sample_size(10);
    for n in [1_000usize, 10_000, 100_000] {
        let base = tool_heavy(n);
        // The premise: the gate refuses every pass, so the run changes nothing. The last
        // hook may find nothing to plan at all (`noop`) after the gate refused the others, so
        // the premise is what the run did, not which of the two refusals came last.
        let (mut comp, mut t) = fresh(&base);
        let report = rt.block_on(comp.one_shot(&mut t, mode.clone()));
        assert_eq!(report.stats.passes, 0, "{report:?}");
        assert!(
            matches!(report.outcome.as_str(), "gated" | "noop"),
            "{report:?}"
        );
        assert_eq!(
            t.messages(),
            &base[..],
            "the gated run rewrote the transcript"
        );
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_batched(
                || fresh(&base),
                |(mut comp, mut t)| rt.block_on(comp.one_shot(&mut t, mode.clone())),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    micro_pass,
    micro_plan,
    micro_turn,
    micro_turn_store,
    micro_one_shot_gated
);
criterion_main!(benches);
