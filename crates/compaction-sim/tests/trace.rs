//! The trace is the prompt as sent, and re-pricing it with the issue's model gives the
//! simulator's own totals in those units.

use std::collections::HashMap;

use compaction_sim::retention::digest;
use compaction_sim::row::unit_cost;
use compaction_sim::{Options, Policy, Variant};
use hermes_compaction::Config;

use crate::common::{example, run, tool_session};

fn variants(context: u64) -> Vec<Variant> {
    let mut config = Config::default();
    config.model.context_length = context;
    [
        Policy::None,
        Policy::Batch,
        Policy::BatchNaive,
        Policy::Micro,
        Policy::BatchTrim,
    ]
    .iter()
    .map(|p| p.variant(&config, 2_000))
    .collect()
}

#[test]
fn the_trace_reprices_to_the_totals_in_the_issue_units() {
    let inputs = vec![
        example(),
        ("tools.jsonl".to_owned(), tool_session(12, 12_000)),
    ];
    let options = Options {
        trace: true,
        ..Options::default()
    };
    let sim = run(&inputs, &variants(32_000), &options);
    assert_eq!(
        sim.trace.len() as u64,
        sim.totals.iter().map(|t| t.requests).sum::<u64>()
    );
    // Re-price independently: ceil(chars / 4) per message, hits = the leading messages whose
    // digest equals the previous request's, summary tokens from the totals.
    let mut previous: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut by_policy: HashMap<String, (u64, u64, u64)> = HashMap::new();
    for line in &sim.trace {
        assert_eq!(line.chars.len(), line.hashes.len());
        assert!(line.hashes.iter().all(|h| h.len() == 16));
        let key = (line.policy.clone(), line.transcript.clone());
        let old = previous.remove(&key).unwrap_or_default();
        let common = old
            .iter()
            .zip(&line.hashes)
            .take_while(|(a, b)| a == b)
            .count();
        let sizes: Vec<u64> = line.chars.iter().map(|c| c.div_ceil(4)).collect();
        let e = by_policy.entry(line.policy.clone()).or_default();
        e.0 += sizes.iter().sum::<u64>();
        e.1 += sizes[..common].iter().sum::<u64>();
        e.2 += 1;
        previous.insert(key, line.hashes.clone());
    }
    for total in &sim.totals {
        let (prompt, hit, requests) = by_policy[&total.policy];
        assert_eq!(requests, total.requests, "{}", total.policy);
        assert_eq!(prompt, total.unit_prompt_tokens, "{}", total.policy);
        assert_eq!(hit, total.unit_hit_tokens, "{}", total.policy);
        let cost = unit_cost(
            prompt,
            hit,
            total.summary_prompt_tokens,
            total.summary_output_tokens,
        );
        assert!((cost - total.unit_cost).abs() < 1e-6, "{}", total.policy);
        if total.policy != "none" {
            assert!(
                total.summary_calls > 0 || total.prune_events > 0,
                "{}",
                total.policy
            );
        }
    }
    // Compaction makes prompts cheaper than the baseline in these units too.
    let unit = |p: &str| sim.totals.iter().find(|t| t.policy == p).unwrap().unit_cost;
    assert!(unit("batch") < unit("none"));
}

#[test]
fn without_compaction_the_trace_is_the_transcript_itself() {
    let (name, msgs) = example();
    let sim = run(
        &[(name, msgs.clone())],
        &variants(1_000_000)[..1],
        &Options {
            trace: true,
            ..Options::default()
        },
    );
    let mut assistants = msgs.iter().enumerate().filter(|(_, m)| m.is_assistant());
    for line in &sim.trace {
        let (at, _) = assistants.next().unwrap();
        assert_eq!(line.chars.len(), at, "request {}", line.request);
        for (i, m) in msgs[..at].iter().enumerate() {
            let wire = m.to_wire_json();
            assert_eq!(line.chars[i], wire.chars().count() as u64);
            assert_eq!(line.hashes[i], format!("{:016x}", digest(&wire)));
        }
    }
    assert!(assistants.next().is_none());
    // Everything is still there: retention is complete at every request.
    let t = &sim.totals[0];
    assert_eq!(t.retention_min, 1.0);
    assert_eq!(t.derived().mean_retention, 1.0);
}

#[test]
fn compaction_forgets_some_facts_and_the_figures_say_how_many() {
    let inputs = vec![("tools.jsonl".to_owned(), tool_session(30, 8_000))];
    let mut variants = variants(16_000);
    // A summary budget too small to name thirty files and commands, without the ledger that
    // would keep them beside the summary.
    let mut terse = variants[1].clone();
    terse.name = "terse".into();
    terse.config.compression.summary_max_tokens = 60;
    terse.config.compression.ledger_max_tokens = 0;
    // Prune-only passes keep every call's arguments: make the pass summarize.
    terse.config.compression.prune_runway_ratio = 0.9;
    terse.config.compression.proactive_prune_tokens = 0;
    let mut ledger = terse.clone();
    ledger.name = "terse+ledger".into();
    ledger.config.compression.ledger_max_tokens = 3_000;
    variants.push(terse);
    variants.push(ledger);
    let sim = run(&inputs, &variants, &Options::default());
    let by = |p: &str| sim.totals.iter().find(|t| t.policy == p).unwrap();
    assert_eq!(by("none").retention_min, 1.0);
    for p in ["batch", "terse"] {
        let t = by(p);
        assert!(t.events > 0, "{p}");
        let mean = t.derived().mean_retention;
        assert!(mean > 0.0 && mean <= 1.0, "{p}: {mean}");
        assert!(t.retention_min <= mean, "{p}");
    }
    let (batch, terse, ledger) = (by("batch"), by("terse"), by("terse+ledger"));
    assert!(terse.retention_min < 1.0, "{}", terse.retention_min);
    // The ledger keeps what the terse summary drops.
    assert!(
        ledger.derived().mean_retention > terse.derived().mean_retention,
        "{} vs {}",
        ledger.derived().mean_retention,
        terse.derived().mean_retention
    );
    assert!(ledger.retention_min > terse.retention_min);
    assert!(
        terse.derived().mean_retention < batch.derived().mean_retention,
        "{} vs {}",
        terse.derived().mean_retention,
        batch.derived().mean_retention
    );
}

#[test]
fn the_trace_text_holds_every_traced_message_exactly_once() {
    let inputs = vec![
        example(),
        ("tools.jsonl".to_owned(), tool_session(12, 12_000)),
    ];
    let options = Options {
        trace: true,
        trace_text: true,
        ..Options::default()
    };
    let sim = run(&inputs, &variants(32_000), &options);
    let traced: std::collections::HashSet<&str> = sim
        .trace
        .iter()
        .flat_map(|l| l.hashes.iter().map(String::as_str))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for t in &sim.trace_text {
        assert!(seen.insert(t.hash.as_str()), "{} twice", t.hash);
        assert_eq!(t.hash, format!("{:016x}", digest(&t.wire)));
        // Compact wire JSON of one message.
        let v: serde_json::Value = serde_json::from_str(&t.wire).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap().len(), t.wire.len());
        assert!(v.get("role").is_some());
    }
    assert_eq!(seen, traced);
    // The lengths of the trace agree with the texts.
    let chars: HashMap<&str, u64> = sim
        .trace_text
        .iter()
        .map(|t| (t.hash.as_str(), t.wire.chars().count() as u64))
        .collect();
    for line in &sim.trace {
        for (h, c) in line.hashes.iter().zip(&line.chars) {
            assert_eq!(chars[h.as_str()], *c);
        }
    }
    // Without the option nothing is kept.
    let plain = run(&inputs, &variants(32_000)[..1], &Options::default());
    assert!(plain.trace_text.is_empty());
}
