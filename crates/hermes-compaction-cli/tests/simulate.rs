//! The simulator's numbers are consistent.

use hermes_compaction::core::{Message, ToolCall};
use serde_json::Value;

use crate::common::{fixtures, repo_root, run, s, texts, tool_session, write_jsonl};

fn simulate_json(inputs: &[&str], context: u64, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let mut args = vec!["simulate", "--context-length"];
    let ctx = context.to_string();
    args.push(&ctx);
    args.push("--json");
    args.push(s(&json));
    args.extend_from_slice(extra);
    args.push("--input");
    args.extend_from_slice(inputs);
    let o = run(&args);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("window overflows"), "{stdout}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// Totals are the sums (and maxima) of the rows of their pricing and policy; derived means come
/// from the sums; each cost is the sum of its parts.
fn check_totals(sim: &Value) {
    let rows = sim["rows"].as_array().unwrap();
    for r in rows.iter().chain(sim["totals"].as_array().unwrap()) {
        let parts: f64 = [
            "cost_input_usd",
            "cost_cache_read_usd",
            "cost_cache_write_usd",
            "cost_output_usd",
            "cost_summary_usd",
        ]
        .iter()
        .map(|k| f(r, k))
        .sum::<f64>()
            + f(&r["latency"], "wasted_cost_usd");
        assert!((f(r, "cost_usd") - parts).abs() <= 1e-9 * parts.max(1.0));
        assert!(u(r, "cache_write_tokens") <= u(r, "cache_miss_tokens"));
        assert!(u(r, "cache_hit_tokens") <= u(r, "reused_prefix_tokens"));
    }
    for total in sim["totals"].as_array().unwrap() {
        let policy = total["policy"].as_str().unwrap();
        let profile = total["profile"].as_str().unwrap();
        let of: Vec<&Value> = rows
            .iter()
            .filter(|r| r["policy"] == policy && r["profile"] == profile)
            .collect();
        assert!(!of.is_empty());
        for k in [
            "transcripts",
            "messages",
            "turns",
            "requests",
            "events",
            "prune_events",
            "summary_events",
            "micro_events",
            "summary_calls",
            "reclaimed_tokens",
            "overflows",
            "prompt_tokens",
            "cache_hit_tokens",
            "cache_miss_tokens",
            "cache_write_tokens",
            "reused_prefix_tokens",
            "expired_requests",
            "trimmed_results",
            "trim_saved_tokens",
            "output_tokens",
            "summary_prompt_tokens",
            "summary_output_tokens",
        ] {
            let sum: u64 = of.iter().map(|r| u(r, k)).sum();
            assert_eq!(u(total, k), sum, "{policy} {k}");
        }
        for k in [
            "cost_usd",
            "prompt_token_equivalents",
            "cost_input_usd",
            "cost_cache_read_usd",
            "cost_cache_write_usd",
            "cost_output_usd",
            "cost_summary_usd",
            "occupancy_sum",
            "compaction_ms",
        ] {
            let sum: f64 = of.iter().map(|r| f(r, k)).sum();
            assert!(
                (f(total, k) - sum).abs() <= 1e-6 * sum.max(1.0),
                "{policy} {k}"
            );
        }
        let peak = of
            .iter()
            .map(|r| f(r, "peak_occupancy"))
            .fold(0.0, f64::max);
        assert_eq!(f(total, "peak_occupancy"), peak);
        let n: usize = of
            .iter()
            .map(|r| r["earliest_changed"].as_array().unwrap().len())
            .sum();
        assert_eq!(total["earliest_changed"].as_array().unwrap().len(), n);
        // Properly weighted means.
        let d = &total["derived"];
        let mean = f(total, "occupancy_sum") / u(total, "requests") as f64;
        assert!((f(d, "mean_occupancy") - mean).abs() < 1e-9);
        let per100 = 100.0 * u(total, "events") as f64 / u(total, "turns") as f64;
        assert!((f(d, "events_per_100_turns") - per100).abs() < 1e-9);
        assert_eq!(
            u(total, "cache_hit_tokens") + u(total, "cache_miss_tokens"),
            u(total, "prompt_tokens")
        );
        assert_eq!(
            u(total, "events"),
            u(total, "prune_events") + u(total, "summary_events") + u(total, "micro_events")
        );
    }
}

#[test]
fn the_example_session_replays_consistently() {
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let sim = simulate_json(&[s(&example)], 32_000, &[]);
    check_totals(&sim);
    let totals = sim["totals"].as_array().unwrap();
    let by = |p: &str| totals.iter().find(|t| t["policy"] == p).unwrap();
    let none = by("none");
    assert_eq!(u(none, "events"), 0);
    assert_eq!(u(none, "summary_calls"), 0);
    assert!(u(none, "overflows") > 0);
    // Without compaction every request extends the previous one: all but the new messages hit.
    assert!(u(none, "cache_hit_tokens") > u(none, "cache_miss_tokens"));
    for p in ["batch", "batch-naive", "micro"] {
        assert!(u(by(p), "events") > 0, "{p}");
        assert_eq!(u(by(p), "overflows"), 0, "{p}");
        assert!(u(by(p), "prompt_tokens") < u(none, "prompt_tokens"), "{p}");
    }
    assert!(u(by("micro"), "micro_events") > 0);
}

#[test]
fn the_plot_and_the_price_table() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let svg = dir.path().join("occ.svg");
    let prices = dir.path().join("p.toml");
    std::fs::write(&prices, "input_per_mtok = 0.0\ncached_input_per_mtok = 0.0\noutput_per_mtok = 0.0\nsummary_input_per_mtok = 0.0\nsummary_output_per_mtok = 0.0\n").unwrap();
    let sim = simulate_json(
        &[s(&example)],
        32_000,
        &[
            "--plot",
            s(&svg),
            "--prices",
            s(&prices),
            "--policies",
            "none,prune-first",
        ],
    );
    assert_eq!(sim["policies"], serde_json::json!(["none", "prune-first"]));
    for t in sim["totals"].as_array().unwrap() {
        assert_eq!(f(t, "cost_usd"), 0.0);
    }
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert_eq!(text.matches("<polyline").count(), 2);
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "input_per_mtok = \"free\"\n").unwrap();
    let o = run(&["simulate", "--prices", s(&bad), "--input", s(&example)]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bad_simulator_input_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "{\"role\":\"user\",\"content\":\"a\"}\n{nope\n").unwrap();
    let o = run(&["simulate", "--input", s(&p)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        texts(&o)
            .1
            .starts_with(&format!("error: {}:2: invalid JSON", p.display()))
    );
}

#[test]
fn on_the_long_fixtures_at_64k_only_the_baseline_overflows() {
    let Some(files) = fixtures() else { return };
    let paths: Vec<&str> = files.iter().map(|p| s(p)).collect();
    let sim = simulate_json(
        &paths,
        64_000,
        &["--policies", "none,batch,batch-naive,micro"],
    );
    check_totals(&sim);
    let rows = sim["rows"].as_array().unwrap();
    let mut long = 0;
    for r in rows.iter().filter(|r| r["policy"] == "none") {
        assert_eq!(u(r, "events"), 0);
        if u(r, "overflows") == 0 {
            continue;
        }
        long += 1;
        let name = r["transcript"].as_str().unwrap();
        for other in rows
            .iter()
            .filter(|o| o["transcript"] == name && o["policy"] != "none")
        {
            assert_eq!(
                u(other, "overflows"),
                0,
                "{} overflows on {name}",
                other["policy"]
            );
            assert!(u(other, "events") > 0);
        }
    }
    assert!(
        long >= 2,
        "expected the long fixtures to overflow the 64K baseline"
    );
}

#[test]
fn a_sweep_over_all_profiles_prices_each_and_local_costs_nothing() {
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let sim = simulate_json(
        &[s(&example)],
        32_000,
        &[
            "--cache-profile",
            "all",
            "--policies",
            "none,micro,micro+gate",
        ],
    );
    check_totals(&sim);
    let names = ["anthropic", "openai", "openai-gpt5", "google", "local"];
    let profiles = sim["profiles"].as_array().unwrap();
    let got: Vec<&str> = profiles
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(got, names);
    assert_eq!(sim["totals"].as_array().unwrap().len(), 5 * 3);
    assert_eq!(sim["rows"].as_array().unwrap().len(), 5 * 3);
    assert_eq!(sim["prices"], Value::Null);
    for p in profiles {
        let totals = p["totals"].as_array().unwrap();
        assert_eq!(totals.len(), 3);
        assert!(totals.iter().all(|t| t["profile"] == p["name"]));
        let cheapest = totals
            .iter()
            .min_by(|a, b| f(a, "cost_usd").total_cmp(&f(b, "cost_usd")))
            .unwrap();
        assert_eq!(p["cheapest"], cheapest["policy"]);
        // Same replay inputs under every profile: the prompts only differ by policy.
        assert_eq!(p["pricing"]["kind"], "profile");
    }
    let by = |profile: &str, policy: &str| {
        sim["totals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["profile"] == profile && t["policy"] == policy)
            .unwrap()
            .clone()
    };
    for policy in ["none", "micro"] {
        let local = by("local", policy);
        for k in ["cost_cache_read_usd", "cost_cache_write_usd", "cost_usd"] {
            assert_eq!(f(&local, k), 0.0, "local {policy} {k}");
        }
        assert_eq!(u(&local, "cache_write_tokens"), 0);
        // Without prices, the price-free measure still ranks policies: every token counts.
        assert_eq!(
            f(&local, "prompt_token_equivalents"),
            u(&local, "prompt_tokens") as f64
        );
        // Explicit caching writes what it does not read; automatic caching writes nothing.
        assert!(u(&by("anthropic", policy), "cache_write_tokens") > 0);
        assert!(f(&by("anthropic", policy), "cost_cache_write_usd") > 0.0);
        assert_eq!(u(&by("openai", policy), "cache_write_tokens"), 0);
        assert!(u(&by("openai", policy), "cache_hit_tokens") > 0);
    }
    // Without compaction the baseline overflows, and costs more than micro with the economic
    // gate everywhere a price is charged. (Micro without a gate folds every turn and can cost
    // more than no compaction where output is dear, e.g. openai-gpt5: the premium its user
    // accepts for no stalls, docs/ECONOMICS.md.)
    for name in &names[..4] {
        assert!(
            f(&by(name, "none"), "cost_usd") > f(&by(name, "micro+gate"), "cost_usd"),
            "{name}"
        );
    }
}

#[test]
fn trimming_on_insert_sends_fewer_prompt_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let session = write_jsonl(dir.path(), "big.jsonl", &tool_session(10, 30_000));
    let sim = simulate_json(
        &[s(&session)],
        32_000,
        &[
            "--cache-profile",
            "anthropic",
            "--policies",
            "batch,batch+trim,micro,micro+trim",
            "--insert-trim-tokens",
            "2000",
        ],
    );
    check_totals(&sim);
    let totals = sim["totals"].as_array().unwrap();
    let by = |p: &str| totals.iter().find(|t| t["policy"] == p).unwrap();
    for (plain, trimmed) in [("batch", "batch+trim"), ("micro", "micro+trim")] {
        assert_eq!(u(by(plain), "trimmed_results"), 0);
        assert_eq!(u(by(trimmed), "trimmed_results"), 10, "{trimmed}");
        assert!(u(by(trimmed), "trim_saved_tokens") > 10 * 5_000);
        assert!(
            u(by(trimmed), "prompt_tokens") <= u(by(plain), "prompt_tokens"),
            "{trimmed}"
        );
        assert!(
            f(by(trimmed), "cost_usd") <= f(by(plain), "cost_usd"),
            "{trimmed}"
        );
        assert_eq!(u(by(trimmed), "overflows"), 0);
    }
}

#[test]
fn a_request_after_the_time_to_live_gets_no_cache_hits() {
    let dir = tempfile::tempdir().unwrap();
    let msgs = tool_session(6, 6_000);
    let plain = write_jsonl(dir.path(), "plain.jsonl", &msgs);
    let args = |gap: &'static str| {
        [
            "--cache-profile",
            "anthropic",
            "--policies",
            "none",
            "--request-gap-secs",
            gap,
        ]
    };
    let live = simulate_json(&[s(&plain)], 128_000, &args("30"));
    let t = &live["totals"][0];
    assert_eq!(u(t, "expired_requests"), 0);
    assert!(u(t, "cache_hit_tokens") > 0);
    // Ten minutes between requests: the 5-minute cache has always expired.
    let late = simulate_json(&[s(&plain)], 128_000, &args("600"));
    let t = &late["totals"][0];
    assert_eq!(u(t, "expired_requests"), u(t, "requests") - 1);
    assert_eq!(u(t, "cache_hit_tokens"), 0);
    assert!(f(t, "cost_usd") > f(&live["totals"][0], "cost_usd"));
    // Timestamps on the messages win over the assumed gap.
    let jsonl: String = std::fs::read_to_string(&plain)
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut v: Value = serde_json::from_str(line).unwrap();
            v["timestamp"] = Value::from(1_767_225_600 + 600 * i as u64);
            format!("{v}\n")
        })
        .collect();
    let stamped = dir.path().join("stamped.jsonl");
    std::fs::write(&stamped, jsonl).unwrap();
    let sim = simulate_json(&[s(&stamped)], 128_000, &args("30"));
    let t = &sim["totals"][0];
    assert_eq!(u(t, "expired_requests"), u(t, "requests") - 1);
    assert_eq!(u(t, "cache_hit_tokens"), 0);
}

/// The waits at the trigger are in the JSON, a prepared summary shortens them, and its
/// wasted candidates are part of the cost; an impossible soft threshold is refused.
#[test]
fn simulate_reports_the_wait_at_the_trigger_and_prepared_summaries() {
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let latency = [
        "--policies",
        "batch",
        "--summary-latency-ms",
        "5000",
        "--summary-ms-per-token",
        "0",
    ];
    let off = simulate_json(&[s(&example)], 16_000, &latency);
    let mut prepared = latency.to_vec();
    prepared.extend(["--prepare-at", "0.5"]);
    let on = simulate_json(&[s(&example)], 16_000, &prepared);
    check_totals(&on);
    let (off, on) = (&off["totals"][0], &on["totals"][0]);
    let wait = |t: &Value, k: &str| u(&t["derived"]["trigger_wait"], k);
    assert!(u(off, "summary_calls") > 0, "{off}");
    assert_eq!(wait(off, "passes"), u(off, "summary_events"));
    assert_eq!(wait(off, "total_ms"), 5_000 * u(off, "summary_calls"));
    // Preparation changes when passes land (the facade's mechanism); here, 30 s between
    // requests and 5 s a call, every pass uses its candidate and waits nothing.
    assert!(wait(on, "total_ms") < wait(off, "total_ms"));
    let l = &on["latency"];
    assert!(u(l, "prepared_used") > 0, "{l}");
    assert_eq!(wait(on, "passes"), u(l, "prepared_used"));
    assert_eq!(wait(on, "p95_ms"), 0);
    assert_eq!(
        u(l, "prepared"),
        u(l, "prepared_used") + u(l, "prepared_wasted") + u(l, "prepared_empty")
    );
    // The wasted candidates' calls were made: their cost is part of the summary cost.
    assert!(f(l, "wasted_cost_usd") <= f(on, "cost_summary_usd"));
    let o = run(&["simulate", "--prepare-at", "1.5", "--input", s(&example)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        texts(&o)
            .1
            .contains("--prepare-at must be more than 0 and less than 1 (got 1.5)")
    );
}

#[test]
fn an_unknown_cache_profile_is_refused() {
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let o = run(&[
        "simulate",
        "--cache-profile",
        "azure",
        "--input",
        s(&example),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(texts(&o).1.contains("--cache-profile azure: unknown"));
}

#[test]
fn the_trace_has_one_line_per_request_in_the_documented_format() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let trace = dir.path().join("trace.jsonl");
    let trace_text = dir.path().join("trace-text.jsonl");
    let sim = simulate_json(
        &[s(&example)],
        32_000,
        &[
            "--trace",
            s(&trace),
            "--trace-text",
            s(&trace_text),
            "--policies",
            "none,batch",
        ],
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let totals = sim["totals"].as_array().unwrap();
    let requests: u64 = totals.iter().map(|t| u(t, "requests")).sum();
    assert_eq!(lines.len() as u64, requests);
    for l in &lines {
        let keys: Vec<&str> = l.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["policy", "transcript", "request", "chars", "hashes"]);
        assert_eq!(l["transcript"], "coding-agent.jsonl");
        let n = l["chars"].as_array().unwrap().len();
        assert_eq!(l["hashes"].as_array().unwrap().len(), n);
    }
    // Every hash of the trace once in the text file, each with its wire JSON.
    let traced: std::collections::BTreeSet<&str> = lines
        .iter()
        .flat_map(|l| l["hashes"].as_array().unwrap().iter())
        .map(|h| h.as_str().unwrap())
        .collect();
    let text_lines = std::fs::read_to_string(&trace_text).unwrap();
    let mut hashes = Vec::new();
    for l in text_lines.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["hash", "wire"]);
        let wire: Value = serde_json::from_str(v["wire"].as_str().unwrap()).unwrap();
        assert!(wire.get("role").is_some());
        hashes.push(v["hash"].as_str().unwrap().to_owned());
    }
    let unique: std::collections::BTreeSet<&str> = hashes.iter().map(String::as_str).collect();
    assert_eq!(unique.len(), hashes.len());
    assert_eq!(unique, traced);
    for t in totals {
        for k in [
            "summary_calls",
            "summary_prompt_tokens",
            "summary_output_tokens",
            "unit_prompt_tokens",
            "unit_hit_tokens",
        ] {
            u(t, k);
        }
        let d = &t["derived"];
        assert!(f(d, "mean_retention") > 0.0 && f(d, "mean_retention") <= 1.0);
    }
    // One pricing only.
    let o = run(&[
        "simulate",
        "--cache-profile",
        "all",
        "--trace",
        s(&trace),
        "--input",
        s(&example),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn tune_writes_a_configuration_that_loads_and_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let toml = dir.path().join("tuned.toml");
    let svg = dir.path().join("front.svg");
    let o = run(&[
        "tune",
        "--context-length",
        "32000",
        "--budget",
        "6",
        "--output",
        s(&toml),
        "--plot",
        s(&svg),
        "--input",
        s(&example),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("on the front"), "{stdout}");
    assert!(stdout.contains("<- recommended"), "{stdout}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // The written file is a configuration the other commands accept.
    let out = dir.path().join("out.jsonl");
    let o = run(&[
        "compact",
        "--config",
        s(&toml),
        "--input",
        s(&example),
        "--output",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let o = run(&["tune", "--budget", "0", "--input", s(&example)]);
    assert_eq!(o.status.code(), Some(2));
    // Issue 34 item 1: at a twentieth of the agent model's price the standalone summary
    // request wins, and the tuned file says so with the price it assumed.
    let cheap = dir.path().join("cheap.toml");
    let o = run(&[
        "tune",
        "--context-length",
        "32000",
        "--budget",
        "2",
        "--summary-price-ratio",
        "0.05",
        "--output",
        s(&cheap),
        "--input",
        s(&example),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let tuned = std::fs::read_to_string(&cheap).unwrap();
    assert!(tuned.contains("warm_cache = \"off\"\n"), "{tuned}");
    assert!(tuned.contains("price_ratio = 0.05\n"), "{tuned}");
    assert!(tuned.contains("Summary request: standalone"), "{tuned}");
    let o = run(&["tune", "--summary-price-ratio=-1", "--input", s(&example)]);
    let stderr = texts(&o).1;
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("price_ratio"), "{stderr}");
}

/// `--profile NAME` is an engine option of every command: `simulate` replays under the
/// profile's policy (here a higher threshold, so fewer compressions), and `simulate` and
/// `tune` refuse an unknown profile (exit 2) instead of ignoring the flag.
#[test]
fn simulate_and_tune_apply_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        "[compression]\nthreshold = 0.5\n[profiles.roomy]\nthreshold = 0.85\n",
    )
    .unwrap();
    let events = |extra: &[&str]| -> u64 {
        let mut args = vec!["--config", s(&cfg), "--policies", "batch"];
        args.extend_from_slice(extra);
        let sim = simulate_json(&[s(&example)], 32_000, &args);
        u(&sim["totals"][0], "events")
    };
    let plain = events(&[]);
    let roomy = events(&["--profile", "roomy"]);
    assert!(plain > 0);
    assert!(
        roomy < plain,
        "profile ignored: {roomy} events against {plain}"
    );
    for cmd in ["simulate", "tune"] {
        let o = run(&[
            cmd,
            "--config",
            s(&cfg),
            "--profile",
            "missing",
            "--input",
            s(&example),
        ]);
        let stderr = texts(&o).1;
        assert_eq!(o.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("profile `missing`"), "{cmd}: {stderr}");
    }
}

/// Issue 31, item 2: a trace scored with --score-trace goes through the policies' scorer, so
/// the library's own trace scored that way gives its own figures, as one more column.
#[test]
fn a_scored_trace_gets_the_figures_of_the_replay_it_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let example = repo_root().join("examples/sessions/coding-agent.jsonl");
    let trace = dir.path().join("trace.jsonl");
    let trace_text = dir.path().join("trace-text.jsonl");
    let first = simulate_json(
        &[s(&example)],
        16_000,
        &[
            "--trace",
            s(&trace),
            "--trace-text",
            s(&trace_text),
            "--policies",
            "batch",
        ],
    );
    let totals = dir.path().join("totals.json");
    let batch = &first["totals"][0];
    std::fs::write(
        &totals,
        serde_json::json!({"totals": [{
            "summary_calls": u(batch, "summary_calls"),
            "summary_prompt_tokens": u(batch, "summary_prompt_tokens"),
            "summary_output_tokens": u(batch, "summary_output_tokens"),
        }]})
        .to_string(),
    )
    .unwrap();
    let scored = simulate_json(
        &[s(&example)],
        16_000,
        &[
            "--policies",
            "batch",
            "--score-trace",
            s(&trace),
            "--score-text",
            s(&trace_text),
            "--score-totals",
            s(&totals),
        ],
    );
    assert_eq!(scored["policies"], serde_json::json!(["batch", "batch"]));
    let (mine, theirs) = (&scored["totals"][0], &scored["totals"][1]);
    for k in [
        "requests",
        "unit_prompt_tokens",
        "unit_hit_tokens",
        "far_identifiers",
        "far_held",
        "far_held_content",
        "reread_rounds",
        "reread_tokens",
        "summary_output_tokens",
    ] {
        assert_eq!(u(mine, k), u(theirs, k), "{k}");
    }
    for k in ["unit_cost", "effective_cost"] {
        assert!((f(mine, k) - f(theirs, k)).abs() < 1e-6, "{k}");
    }
    assert!(f(mine, "effective_cost") >= f(mine, "unit_cost"));
    // The text file is required, and a missing message is named.
    let o = run(&[
        "simulate",
        "--score-trace",
        s(&trace),
        "--input",
        s(&example),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", texts(&o).1);
    std::fs::write(&trace_text, "").unwrap();
    let o = run(&[
        "simulate",
        "--score-trace",
        s(&trace),
        "--score-text",
        s(&trace_text),
        "--input",
        s(&example),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        texts(&o).1.contains("is not in the text file"),
        "{}",
        texts(&o).1
    );
}

/// `--check-laws` checks every pass of every replay: the passes of a session that compacts
/// under every policy keep every law; the line says how many replays it checked, the JSON
/// holds the (empty) list, and without the flag the JSON has no such key.
#[test]
fn simulate_check_laws_checks_every_pass() {
    let dir = tempfile::tempdir().unwrap();
    let session = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let json = dir.path().join("sim.json");
    let o = run(&[
        "simulate",
        "--context-length",
        "16000",
        "--policies",
        "batch,micro,micro+gate",
        "--check-laws",
        "--json",
        s(&json),
        "--input",
        s(&session),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("laws: every pass of the 3 replays kept every law"),
        "{stdout}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["law_violations"], serde_json::json!([]));
    // Passes ran: the check had something to check.
    let passes: u64 = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(r, "events"))
        .sum();
    assert!(passes > 0, "{v}");
    let plain = simulate_json(&[s(&session)], 16_000, &["--policies", "batch"]);
    assert!(plain.get("law_violations").is_none());
}

/// `--foresight N` replays each policy once more with the next N answers' needs pinned, as
/// `POLICY+foresightN` beside it, with every column of its own; 0 is refused.
#[test]
fn foresight_adds_a_bound_beside_each_policy() {
    let dir = tempfile::tempdir().unwrap();
    let session = write_jsonl(dir.path(), "tools.jsonl", &tool_session(12, 6_000));
    let sim = simulate_json(
        &[s(&session)],
        16_000,
        &[
            "--policies",
            "none,batch",
            "--foresight",
            "4",
            "--foresight",
            "50",
        ],
    );
    check_totals(&sim);
    let names: Vec<&str> = sim["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["policy"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "none",
            "none+foresight4",
            "none+foresight50",
            "batch",
            "batch+foresight4",
            "batch+foresight50"
        ]
    );
    let by = |p: &str| {
        sim["totals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["policy"] == p)
            .unwrap()
            .clone()
    };
    // `none` keeps everything: foresight changes nothing of it.
    assert_eq!(
        u(&by("none"), "unit_prompt_tokens"),
        u(&by("none+foresight4"), "unit_prompt_tokens")
    );
    assert!(u(&by("batch+foresight4"), "requests") > 0);

    let o = run(&["simulate", "--foresight", "0", "--input", s(&session)]);
    let (_, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--foresight"), "{stderr}");
}

/// `--needs FILE` writes one line per input, without text: each message's role, tool, size
/// and the answers that need it (the re-read model's rule), for tools/predictors/.
#[test]
fn needs_writes_what_each_message_is_needed_for_without_text() {
    let dir = tempfile::tempdir().unwrap();
    let quoted = vec![
        Message::system("You are a coding agent."),
        Message::user("fix the header parser"),
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                "c1",
                "read_file",
                r#"{"path":"src/parser.rs"}"#,
            )],
        ),
        Message::tool_result("c1", "fn parse_header_v2() {} // token hunter2-secret"),
        Message::assistant("parse_header_v2 drops the last field"),
        Message::user("thanks"),
        Message::assistant("done"),
    ];
    let a = write_jsonl(dir.path(), "quoted.jsonl", &quoted);
    let b = write_jsonl(dir.path(), "tools.jsonl", &tool_session(3, 600));
    let out = dir.path().join("needs.jsonl");
    let o = run(&[
        "simulate",
        "--policies",
        "none",
        "--needs",
        s(&out),
        "--input",
        s(&a),
        s(&b),
    ]);
    let (_, stderr) = texts(&o);
    assert!(o.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(!text.contains("parse_header_v2"), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["transcript"], "quoted.jsonl");
    assert_eq!(lines[1]["transcript"], "tools.jsonl");
    let msgs = lines[0]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), quoted.len());
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    // The read's output is needed by answer 1, which quotes it; the closing answer needs
    // nothing.
    assert_eq!(msgs[3]["tool"], "read_file");
    assert_eq!(msgs[3]["used_by"], serde_json::json!([1]));
    assert_eq!(msgs[3]["answer"], 1);
    assert_eq!(msgs[6]["answer"], 2);
    assert!(msgs[3]["ids"].as_array().is_some_and(|ids| !ids.is_empty()));
    assert!(msgs[1]["tool"].is_null());
    assert_eq!(
        lines[1]["messages"].as_array().unwrap().len(),
        tool_session(3, 600).len()
    );
}
