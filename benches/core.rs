//! compaction-core benchmarks: parsing, token counting, estimator throughput, and the
//! head/middle/tail partition with warm caches.
//!
//! Inputs: the largest shared fixture (`pi__before-compaction.jsonl`, skipped when the shared
//! directory is missing) and synthetic transcripts of 1,000 / 10,000 / 100,000 messages.
//! Targets (issue 2): estimator at least 1 GB/s of ASCII text; partition with warm caches
//! under 50 µs at 100,000 messages.
//!
//! Also: redaction throughput on 1 MB of agent text (with and without secrets), the material
//! builder over a span with large tool outputs, and reading one message with many unknown
//! top-level keys (issue 14: linear, 1,000,000 keys in a 20 MB line under 5 s).
//!
//! Run: `cargo bench --bench core -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::path::PathBuf;

use compaction_core::Transcript;
use compaction_core::material::{self, MaterialConfig};
use compaction_core::parse;
use compaction_core::regions::{self, RegionConfig, WindowConfig};
use compaction_core::tokens::{Estimator, estimate_text};
use compaction_core::{Message, ToolCall};
use compaction_redact::redact;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
const FIXTURE: &str = "pi__before-compaction.jsonl";

fn estimator(c: &mut Criterion) {
    let mut g = c.benchmark_group("estimator");
    for (name, len) in [("ascii_1kb", 1 << 10), ("ascii_1mb", 1 << 20)] {
        let text: String = "The quick brown fox jumps over the lazy dog; cargo test -p core.\n"
            .chars()
            .cycle()
            .take(len)
            .collect();
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(name, |b| b.iter(|| estimate_text(black_box(&text))));
    }
    let mixed: String = "混合テキスト with 한국어 and ASCII. "
        .chars()
        .cycle()
        .take(1 << 18)
        .collect();
    g.throughput(Throughput::Bytes(mixed.len() as u64));
    g.bench_function("mixed_cjk_256k_chars", |b| {
        b.iter(|| estimate_text(black_box(&mixed)))
    });
    g.finish();
}

fn parsing(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_jsonl");
    g.sample_size(10);
    if let Some(bytes) = fixture() {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(FIXTURE, |b| {
            b.iter(|| parse::parse_transcript(black_box(&bytes)).expect("fixture parses"))
        });
    }
    for n in SIZES {
        let text = parse::to_jsonl(&synthetic(n));
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::new("synthetic", n), &text, |b, text| {
            b.iter(|| parse::parse_jsonl(black_box(text)).expect("synthetic parses"))
        });
    }
    g.finish();
}

fn token_counting(c: &mut Criterion) {
    let mut g = c.benchmark_group("transcript_new");
    g.sample_size(10);
    let e = Estimator::default();
    if let Some(bytes) = fixture() {
        let msgs = parse::parse_transcript(&bytes).expect("fixture parses").0;
        g.throughput(Throughput::Elements(msgs.len() as u64));
        g.bench_function(FIXTURE, |b| {
            b.iter_batched(
                || msgs.clone(),
                |m| Transcript::new(m, &e),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    for n in SIZES {
        let msgs = synthetic(n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("synthetic", n), &msgs, |b, msgs| {
            b.iter_batched(
                || msgs.clone(),
                |m| Transcript::new(m, &e),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

fn partition(c: &mut Criterion) {
    let mut g = c.benchmark_group("partition_warm");
    let e = Estimator::default();
    let threshold = WindowConfig::for_context(200_000).threshold_tokens();
    let cfg = RegionConfig::default();
    if let Some(bytes) = fixture() {
        let t = Transcript::new(parse::parse_transcript(&bytes).expect("parses").0, &e);
        g.bench_function(FIXTURE, |b| {
            b.iter(|| regions::partition(black_box(&t), threshold, &cfg, false))
        });
    }
    for n in SIZES {
        let t = Transcript::new(synthetic(n), &e);
        g.bench_with_input(BenchmarkId::new("synthetic", n), &t, |b, t| {
            b.iter(|| regions::partition(black_box(t), threshold, &cfg, false))
        });
        // The worst case for finding the latest user message: one long tool loop at the end.
        let t = Transcript::new(synthetic_long_turn(n), &e);
        g.bench_with_input(BenchmarkId::new("synthetic_long_turn", n), &t, |b, t| {
            b.iter(|| regions::partition(black_box(t), threshold, &cfg, false))
        });
    }
    g.finish();
}

fn redaction(c: &mut Criterion) {
    let mut g = c.benchmark_group("redact");
    // Agent-like text that trips the trigger scan (`token`, `key`, `://`) on every line, so
    // every pattern runs; one secret in every 64 lines.
    let text = agent_text(|_| "\"max_tokens\": 4096".to_owned());
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("agent_text_1mb", |b| b.iter(|| redact(black_box(&text))));
    // The same lines with non-ASCII prose beside them (a French comment, a CJK note, an emoji,
    // box drawing from a test runner), as real sessions carry: a regex whose word boundary is
    // Unicode-aware cannot run on the lazy DFA over such text and falls back to a slower engine.
    let mixed = agent_text(|i| format!("\"note\": \"résumé — 已修复 ✅ ├── tâche {i}\""));
    g.throughput(Throughput::Bytes(mixed.len() as u64));
    g.bench_function("agent_text_non_ascii_1mb", |b| {
        b.iter(|| redact(black_box(&mixed)))
    });
    let plain: String = "The quick brown fox jumps over the lazy dog; cargo test -p core.\n"
        .chars()
        .cycle()
        .take(1 << 20)
        .collect();
    g.throughput(Throughput::Bytes(plain.len() as u64));
    g.bench_function("no_trigger_1mb", |b| b.iter(|| redact(black_box(&plain))));
    g.finish();

    // The material builder over 200 messages whose tool outputs are 50 KB each (every one is
    // cut), so the cost of redacting around the cuts shows.
    let mut g = c.benchmark_group("material");
    g.sample_size(10);
    let mut msgs = synthetic(200);
    for m in msgs.iter_mut().filter(|m| m.is_tool()) {
        m.set_text(text[..50_000].to_owned());
    }
    g.bench_function("serialize_200_msgs_50kb_outputs", |b| {
        b.iter(|| material::serialize(black_box(&msgs), &msgs, &MaterialConfig::default()))
    });
    g.finish();
}

fn unknown_keys(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_unknown_keys");
    g.sample_size(10);
    for n in [10_000usize, 100_000, 1_000_000] {
        let line = many_keys_line(n);
        g.throughput(Throughput::Bytes(line.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &line, |b, line| {
            b.iter(|| Message::from_json(black_box(line)).expect("parses"))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    estimator,
    parsing,
    token_counting,
    partition,
    redaction,
    unknown_keys
);
criterion_main!(benches);

/// 1 MB of JSON lines naming a path and a URL, with `field(i)` between them, and a line with
/// two secrets before every 64th.
fn agent_text(field: impl Fn(usize) -> String) -> String {
    let mut text = String::new();
    let mut i = 0usize;
    while text.len() < 1 << 20 {
        if i.is_multiple_of(64) {
            text.push_str(
                "export API_TOKEN=Zm9vYmFyYmF6cXV4MTIz and sk-proj-AbCdEf0123456789AbCdEf0123\n",
            );
        }
        text.push_str(&format!(
            "{{\"path\": \"src/key_{i}.rs\", {}, \"url\": \"https://example.com/a?b={i}\"}}\n",
            field(i)
        ));
        i += 1;
    }
    text
}

/// The shared fixture's bytes, or `None` (the fixture benches are skipped) when missing.
fn fixture() -> Option<Vec<u8>> {
    let shared = std::env::var_os("HERMES_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    std::fs::read(shared.join("fixtures/transcripts").join(FIXTURE)).ok()
}

/// A system prompt, then turns of: user, assistant calling a tool, its result, a reply.
/// Message sizes vary so token counts are not uniform.
fn synthetic(n: usize) -> Vec<Message> {
    let mut out = Vec::with_capacity(n);
    out.push(Message::system("You are a careful coding agent."));
    let mut i = 0usize;
    while out.len() < n {
        let id = format!("call_{i}");
        out.push(Message::user(format!(
            "Please look at file number {i} and fix it."
        )));
        out.push(Message::assistant_tool_calls(
            "Reading it.",
            vec![ToolCall::function(
                &id,
                "read_file",
                format!("{{\"path\":\"src/f{i}.rs\"}}"),
            )],
        ));
        out.push(Message::tool_result(
            &id,
            "fn main() {}\n".repeat(5 + i % 40),
        ));
        out.push(Message::assistant(format!("Fixed file {i}.")));
        i += 1;
    }
    out.truncate(n);
    out
}

/// The same, but the last quarter is one user request followed by a long tool loop.
fn synthetic_long_turn(n: usize) -> Vec<Message> {
    let mut out = synthetic(n - n / 4);
    out.push(Message::user("Now refactor everything."));
    let mut i = 0usize;
    while out.len() + 1 < n {
        let id = format!("loop_{i}");
        out.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "shell",
                "{\"command\":\"cargo test\"}",
            )],
        ));
        out.push(Message::tool_result(
            &id,
            "test result: ok\n".repeat(3 + i % 20),
        ));
        i += 1;
    }
    out.truncate(n);
    out
}

/// One message with `n` unknown top-level keys of ~20 bytes each (1,000,000 keys: ~20 MB).
fn many_keys_line(n: usize) -> String {
    let mut line = String::with_capacity(n * 21 + 64);
    line.push_str("{\"role\":\"user\",\"content\":\"hi\"");
    for i in 0..n {
        line.push_str(&format!(",\"key_{i:08}\":{}", i % 10_000));
    }
    line.push('}');
    line
}
