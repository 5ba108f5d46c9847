//! compaction-core benchmarks: parse, token counting, partition.
use criterion::{Criterion, criterion_group, criterion_main};

fn placeholder(c: &mut Criterion) {
    c.bench_function("estimate_ascii_1mb", |b| {
        let text = "a".repeat(1 << 20);
        b.iter(|| compaction_core::tokens::estimate_text(std::hint::black_box(&text)))
    });
}

criterion_group!(benches, placeholder);
criterion_main!(benches);
