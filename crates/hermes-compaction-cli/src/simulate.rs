//! `simulate`: replay transcripts as an agent lives them, under several policies, and compare.
//!
//! The replay follows the hooks an agent calls. Each user message starts a turn (and ends the
//! previous one with [`Compressor::finalize_turn`]); before each assistant message the model is
//! called: [`Compressor::after_tool_round`] when a tool round just finished, then
//! [`Compressor::before_request`], the prompt is measured, and [`Compressor::after_response`]
//! receives that size as the provider's usage. The prompt is the compacted transcript as it is
//! at that moment.
//!
//! The prefix-cache model: a request reuses the longest run of leading messages whose wire
//! JSON is unchanged since the previous request; those tokens are cache hits, the rest misses.

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clap::ValueEnum;
use serde::Serialize;

use hermes_compaction::core::{Estimator, Message, TokenCounter, Transcript};
use hermes_compaction::llm::Summarizer;
use hermes_compaction::{BatchReport, Compressor, Config, MicroOutcomeKind, MicroReport, Outcome};

use crate::cli::SimulateArgs;
use crate::input::{Input, Strictness};
use crate::prices::Prices;
use crate::setup::{CountingSummarizer, SummarizerKind, build_summarizer, load_config};
use crate::{Error, Result, write_atomically, write_out};

/// A compaction policy the simulator can replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Never compacts: the baseline.
    None,
    /// The default configuration: batch compaction with prune-first at the low-water mark.
    Batch,
    /// Same as `batch` (the name says how it decides).
    PruneFirst,
    /// Batch compaction that accepts prune-only whenever it lands below the threshold
    /// (prune_minimum_tokens = 0, prune_runway_ratio = 0).
    BatchNaive,
    /// Micro-compaction after every turn (and every tool round), batch as the safety net.
    Micro,
}

impl Policy {
    /// The name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Batch => "batch",
            Policy::PruneFirst => "prune-first",
            Policy::BatchNaive => "batch-naive",
            Policy::Micro => "micro",
        }
    }

    /// `base` changed as this policy says.
    pub fn configure(self, base: &Config) -> Config {
        let mut c = base.clone();
        match self {
            Policy::None => {
                c.compression.enabled = false;
                c.compression.micro_compact = false;
            }
            Policy::Batch | Policy::PruneFirst => c.compression.micro_compact = false,
            Policy::BatchNaive => {
                c.compression.micro_compact = false;
                c.compression.prune_minimum_tokens = 0;
                c.compression.prune_runway_ratio = 0.0;
            }
            Policy::Micro => {
                c.compression.micro_compact = true;
            }
        }
        c
    }
}

/// The numbers of one policy over one transcript (or, for totals, over several). Everything
/// is a sum, a maximum or a list, so totals are exact; the derived means are in
/// [`Derived`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    /// Policy name.
    pub policy: String,
    /// Transcript file name (`TOTAL` for totals).
    pub transcript: String,
    /// Transcripts summed in this row.
    pub transcripts: u64,
    /// Messages replayed.
    pub messages: u64,
    /// Turns (user messages).
    pub turns: u64,
    /// Model requests (assistant messages).
    pub requests: u64,
    /// Passes that changed the transcript.
    pub events: u64,
    /// Batch passes that only pruned.
    pub prune_events: u64,
    /// Batch passes that summarized.
    pub summary_events: u64,
    /// Micro passes that absorbed, progressed or defragged.
    pub micro_events: u64,
    /// Summarizer calls.
    pub summary_calls: u64,
    /// Summary calls whose tokens are estimates (the summarizer reported no usage).
    pub summary_calls_estimated: u64,
    /// Tokens removed by the events (before minus after, summed).
    pub reclaimed_tokens: u64,
    /// Largest prompt / threshold.
    pub peak_occupancy: f64,
    /// Sum of prompt / threshold over requests.
    pub occupancy_sum: f64,
    /// Requests whose prompt exceeded the context length.
    pub overflows: u64,
    /// Prompt tokens of all requests.
    pub prompt_tokens: u64,
    /// Prompt tokens served from the prefix cache.
    pub cache_hit_tokens: u64,
    /// Prompt tokens not in the cache.
    pub cache_miss_tokens: u64,
    /// Estimated tokens of the assistant messages (the model's output).
    pub output_tokens: u64,
    /// Prompt tokens of summary calls.
    pub summary_prompt_tokens: u64,
    /// Output tokens of summary calls.
    pub summary_output_tokens: u64,
    /// Estimated cost in dollars.
    pub cost_usd: f64,
    /// Earliest changed message index of each event.
    pub earliest_changed: Vec<usize>,
    /// Wall time spent in compaction passes, milliseconds.
    pub compaction_ms: f64,
    /// Threshold and context length of the replay.
    pub threshold_tokens: u64,
    /// Context length.
    pub context_length: u64,
    /// Prompt / threshold at each request (for the plot).
    #[serde(skip)]
    pub occupancy: Vec<f32>,
}

/// Means and ratios of a [`Row`], computed from its sums.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Derived {
    /// Events per 100 turns.
    pub events_per_100_turns: f64,
    /// Turns / events (`None` without events).
    pub mean_turns_between_compressions: Option<f64>,
    /// Reclaimed tokens / events.
    pub reclaimed_per_event: Option<f64>,
    /// Occupancy sum / requests.
    pub mean_occupancy: f64,
    /// Cache hits / prompt tokens.
    pub cache_hit_rate: f64,
    /// Smallest earliest changed index.
    pub earliest_changed_min: Option<usize>,
    /// Median earliest changed index.
    pub earliest_changed_median: Option<f64>,
    /// `prune : summary` events.
    pub prune_to_summary: String,
}

impl Row {
    /// The derived metrics.
    pub fn derived(&self) -> Derived {
        let per = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let mut idx = self.earliest_changed.clone();
        idx.sort_unstable();
        let median = match idx.len() {
            0 => None,
            n if n % 2 == 1 => Some(idx[n / 2] as f64),
            n => Some((idx[n / 2 - 1] + idx[n / 2]) as f64 / 2.0),
        };
        Derived {
            events_per_100_turns: per(self.events * 100, self.turns).unwrap_or(0.0),
            mean_turns_between_compressions: per(self.turns, self.events),
            reclaimed_per_event: per(self.reclaimed_tokens, self.events),
            mean_occupancy: if self.requests > 0 {
                self.occupancy_sum / self.requests as f64
            } else {
                0.0
            },
            cache_hit_rate: per(self.cache_hit_tokens, self.prompt_tokens).unwrap_or(0.0),
            earliest_changed_min: idx.first().copied(),
            earliest_changed_median: median,
            prune_to_summary: format!("{}:{}", self.prune_events, self.summary_events),
        }
    }

    /// The totals of `rows` (sums, maxima, concatenated lists).
    pub fn total(policy: &str, rows: &[&Row]) -> Row {
        let mut t = Row {
            policy: policy.into(),
            transcript: "TOTAL".into(),
            ..Row::default()
        };
        for r in rows {
            t.transcripts += r.transcripts;
            t.messages += r.messages;
            t.turns += r.turns;
            t.requests += r.requests;
            t.events += r.events;
            t.prune_events += r.prune_events;
            t.summary_events += r.summary_events;
            t.micro_events += r.micro_events;
            t.summary_calls += r.summary_calls;
            t.summary_calls_estimated += r.summary_calls_estimated;
            t.reclaimed_tokens += r.reclaimed_tokens;
            t.peak_occupancy = t.peak_occupancy.max(r.peak_occupancy);
            t.occupancy_sum += r.occupancy_sum;
            t.overflows += r.overflows;
            t.prompt_tokens += r.prompt_tokens;
            t.cache_hit_tokens += r.cache_hit_tokens;
            t.cache_miss_tokens += r.cache_miss_tokens;
            t.output_tokens += r.output_tokens;
            t.summary_prompt_tokens += r.summary_prompt_tokens;
            t.summary_output_tokens += r.summary_output_tokens;
            t.cost_usd += r.cost_usd;
            t.earliest_changed.extend(&r.earliest_changed);
            t.compaction_ms += r.compaction_ms;
            t.threshold_tokens = r.threshold_tokens;
            t.context_length = r.context_length;
        }
        t
    }

    fn record_batch(&mut self, r: &BatchReport) -> bool {
        self.compaction_ms += r.duration.as_secs_f64() * 1e3;
        let changed = match r.outcome {
            Outcome::Pruned => {
                self.prune_events += 1;
                true
            }
            Outcome::Summarized => {
                self.summary_events += 1;
                true
            }
            _ => false,
        };
        if changed {
            self.event(r.tokens_before, r.tokens_after, r.earliest_changed_index);
        }
        changed
    }

    fn record_micro(&mut self, r: &MicroReport) -> bool {
        self.compaction_ms += r.duration.as_secs_f64() * 1e3;
        let changed = matches!(
            r.outcome,
            MicroOutcomeKind::Absorbed | MicroOutcomeKind::Progressed | MicroOutcomeKind::Defrag
        );
        if changed {
            self.micro_events += 1;
            self.event(r.tokens_before, r.tokens_after, r.earliest_changed_index);
        }
        changed
    }

    fn event(&mut self, before: u64, after: u64, earliest: Option<usize>) {
        self.events += 1;
        self.reclaimed_tokens += before.saturating_sub(after);
        if let Some(i) = earliest {
            self.earliest_changed.push(i);
        }
    }
}

/// What one simulation produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Simulation {
    /// Policies in column order.
    pub policies: Vec<String>,
    /// One row per policy and transcript, transcripts in input order.
    pub rows: Vec<Row>,
    /// One total per policy.
    pub totals: Vec<Row>,
    /// The price table used.
    pub prices: Prices,
}

/// Runs `simulate`.
pub fn run(args: &SimulateArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let config = load_config(args.engine.config.as_deref(), args.engine.context_length)?;
    let prices = match &args.prices {
        Some(p) => Prices::load(p)?,
        None => Prices::default(),
    };
    let mut inputs = Vec::new();
    for path in &args.input {
        let input = Input::read(path, Strictness::COMPACTION)?;
        inputs.push((display_name(path), input.messages));
    }
    let mut policies = Vec::new();
    for p in &args.policies {
        if !policies.contains(p) {
            policies.push(*p);
        }
    }
    let sim = simulate(
        &inputs,
        &policies,
        &config,
        args.engine.summarizer,
        &prices,
        std::io::stderr().is_terminal(),
    )?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&to_json(&sim))
            .map_err(|e| Error::Config(format!("cannot render JSON: {e}")))?;
        write_atomically(path, json.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        write_atomically(path, crate::plot::occupancy_svg(&sim).as_bytes())?;
    }
    let mut text = String::new();
    if args.per_transcript {
        for (name, _) in &inputs {
            let rows: Vec<&Row> = sim.rows.iter().filter(|r| &r.transcript == name).collect();
            text.push_str(&table(name, &rows));
            text.push('\n');
        }
    }
    let totals: Vec<&Row> = sim.totals.iter().collect();
    let title = format!("{} transcript(s), totals", inputs.len());
    text.push_str(&table(&title, &totals));
    write_out(out, &text)
}

/// Replays every transcript under every policy (in parallel over the available cores) and
/// computes the totals. `progress` draws a bar on stderr.
pub fn simulate(
    inputs: &[(String, Vec<Message>)],
    policies: &[Policy],
    config: &Config,
    summarizer: Option<SummarizerKind>,
    prices: &Prices,
    progress: bool,
) -> Result<Simulation> {
    // Build once up front so a configuration error is reported before any work.
    build_summarizer(config, summarizer)?;
    let jobs: Vec<(usize, Policy)> = (0..inputs.len())
        .flat_map(|i| policies.iter().map(move |&p| (i, p)))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Row>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let rt = match crate::runtime() {
                    Ok(rt) => rt,
                    Err(_) => return,
                };
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(i, policy)) = jobs.get(k) else {
                        break;
                    };
                    let (name, msgs) = &inputs[i];
                    let row = build_summarizer(config, summarizer).map(|inner| {
                        rt.block_on(replay(name, msgs, policy, config, inner, prices))
                    });
                    if let Ok(mut r) = results.lock() {
                        r[k] = Some(row);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress_line(progress, n, jobs.len(), policy, name);
                }
            });
        }
    });
    if progress {
        #[allow(clippy::print_stderr)]
        {
            eprintln!();
        }
    }
    let results = results.into_inner().unwrap_or_default();
    let mut rows = Vec::with_capacity(jobs.len());
    for r in results {
        match r {
            Some(row) => rows.push(row?),
            None => {
                return Err(Error::Pass(
                    "a replay did not finish (could not start a runtime)".into(),
                ));
            }
        }
    }
    let totals = policies
        .iter()
        .map(|p| {
            let of: Vec<&Row> = rows.iter().filter(|r| r.policy == p.name()).collect();
            Row::total(p.name(), &of)
        })
        .collect();
    Ok(Simulation {
        policies: policies.iter().map(|p| p.name().to_owned()).collect(),
        rows,
        totals,
        prices: *prices,
    })
}

/// Replays one transcript under one policy.
pub async fn replay(
    name: &str,
    msgs: &[Message],
    policy: Policy,
    base: &Config,
    summarizer: Arc<dyn Summarizer>,
    prices: &Prices,
) -> Row {
    let config = policy.configure(base);
    let counting = Arc::new(CountingSummarizer::new(summarizer));
    let counter = Estimator::default();
    let context_length = config.model.context_length;
    let mut c = Compressor::new(
        config,
        counting.clone(),
        Arc::new(Estimator::default()),
        format!("sim-{}-{name}", policy.name()),
    );
    let threshold = c.threshold_tokens().max(1);
    let mut row = Row {
        policy: policy.name().into(),
        transcript: name.into(),
        transcripts: 1,
        messages: msgs.len() as u64,
        threshold_tokens: threshold,
        context_length,
        ..Row::default()
    };
    let mut t = c.transcript(Vec::new());
    let mut hashes: Vec<u64> = Vec::with_capacity(msgs.len());
    let mut previous: Vec<u64> = Vec::new();
    let mut in_turn = false;
    for m in msgs {
        if m.is_user() {
            if in_turn {
                finalize(&mut c, &mut t, &mut row, &mut hashes).await;
            }
            in_turn = true;
            row.turns += 1;
        }
        if m.is_assistant() {
            if t.messages().last().is_some_and(Message::is_tool)
                && let Some(r) = c.after_tool_round(&mut t).await
                && (row.record_micro(&r) || r.messages_after != r.messages_before)
            {
                rehash(&t, &mut hashes);
            }
            let (ticket, report) = c.before_request(&mut t).await;
            if let Some(r) = report
                && (row.record_batch(&r) || r.messages_after != r.messages_before)
            {
                rehash(&t, &mut hashes);
            }
            let prompt = t.current_tokens();
            let common = previous
                .iter()
                .zip(&hashes)
                .take_while(|(a, b)| a == b)
                .count();
            let hit = t.tokens_in(0..common).min(prompt);
            row.requests += 1;
            row.prompt_tokens += prompt;
            row.cache_hit_tokens += hit;
            row.cache_miss_tokens += prompt - hit;
            let occ = prompt as f64 / threshold as f64;
            row.occupancy_sum += occ;
            row.peak_occupancy = row.peak_occupancy.max(occ);
            row.occupancy.push(occ as f32);
            if prompt > context_length {
                row.overflows += 1;
            }
            previous.clone_from(&hashes);
            c.after_response(&mut t, ticket, prompt);
            row.output_tokens += counter.count_message(m);
        }
        hashes.push(wire_hash(m));
        t.push(m.clone(), c.counter());
    }
    if in_turn {
        finalize(&mut c, &mut t, &mut row, &mut hashes).await;
    }
    let usage = counting.usage();
    row.summary_calls = usage.calls;
    row.summary_calls_estimated = usage.estimated_calls;
    row.summary_prompt_tokens = usage.prompt_tokens;
    row.summary_output_tokens = usage.output_tokens;
    row.cost_usd = prices.cost(
        row.cache_miss_tokens,
        row.cache_hit_tokens,
        row.output_tokens,
        row.summary_prompt_tokens,
        row.summary_output_tokens,
    );
    row
}

async fn finalize(c: &mut Compressor, t: &mut Transcript, row: &mut Row, hashes: &mut Vec<u64>) {
    if let Some(r) = c.finalize_turn(t).await
        && (row.record_micro(&r) || r.messages_after != r.messages_before)
    {
        rehash(t, hashes);
    }
}

fn rehash(t: &Transcript, hashes: &mut Vec<u64>) {
    hashes.clear();
    hashes.extend(t.messages().iter().map(wire_hash));
}

fn wire_hash(m: &Message) -> u64 {
    let mut h = DefaultHasher::new();
    m.to_wire_json().hash(&mut h);
    h.finish()
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn progress_line(tty: bool, done: usize, total: usize, policy: Policy, name: &str) {
    #[allow(clippy::print_stderr)]
    if tty {
        let width = 30;
        let filled = done * width / total.max(1);
        eprint!(
            "\r[{}{}] {done}/{total} {:<12} {:<40.40}",
            "#".repeat(filled),
            " ".repeat(width - filled),
            policy.name(),
            name
        );
    } else {
        eprintln!("simulated {done}/{total}: {} {name}", policy.name());
    }
}

/// The simulation as JSON: rows and totals, each with its derived metrics.
pub fn to_json(sim: &Simulation) -> serde_json::Value {
    let row = |r: &Row| {
        let mut v = serde_json::to_value(r).unwrap_or_default();
        if let (Some(obj), Ok(d)) = (v.as_object_mut(), serde_json::to_value(r.derived())) {
            obj.insert("derived".into(), d);
        }
        v
    };
    serde_json::json!({
        "policies": sim.policies,
        "prices": sim.prices,
        "rows": sim.rows.iter().map(row).collect::<Vec<_>>(),
        "totals": sim.totals.iter().map(row).collect::<Vec<_>>(),
    })
}

/// The side-by-side table: one column per row (policy), one line per metric.
pub fn table(title: &str, rows: &[&Row]) -> String {
    let d: Vec<Derived> = rows.iter().map(|r| r.derived()).collect();
    let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_owned(), |x| format!("{x:.prec$}"));
    let mut lines: Vec<(&str, Vec<String>)> = Vec::new();
    let mut add = |label: &'static str, f: &dyn Fn(&Row, &Derived) -> String| {
        lines.push((label, rows.iter().zip(&d).map(|(r, d)| f(r, d)).collect()));
    };
    add("turns / requests", &|r, _| {
        format!("{} / {}", r.turns, r.requests)
    });
    add("compression events", &|r, _| r.events.to_string());
    add("  prune-only : full summary", &|_, d| {
        d.prune_to_summary.clone()
    });
    add("  micro passes", &|r, _| r.micro_events.to_string());
    add("events per 100 turns", &|_, d| {
        format!("{:.1}", d.events_per_100_turns)
    });
    add("mean turns between compressions", &|_, d| {
        opt(d.mean_turns_between_compressions, 1)
    });
    add("summary calls", &|r, _| r.summary_calls.to_string());
    add("tokens reclaimed per event", &|_, d| {
        opt(d.reclaimed_per_event, 0)
    });
    add("peak occupancy", &|r, _| {
        format!("{:.0}%", r.peak_occupancy * 100.0)
    });
    add("mean occupancy", &|_, d| {
        format!("{:.0}%", d.mean_occupancy * 100.0)
    });
    add("window overflows", &|r, _| r.overflows.to_string());
    add("prompt tokens", &|r, _| r.prompt_tokens.to_string());
    add("  cache hit", &|r, _| r.cache_hit_tokens.to_string());
    add("  cache miss", &|r, _| r.cache_miss_tokens.to_string());
    add("  hit rate", &|_, d| {
        format!("{:.1}%", d.cache_hit_rate * 100.0)
    });
    add("summary tokens in / out", &|r, _| {
        let est = if r.summary_calls_estimated > 0 {
            " (est.)"
        } else {
            ""
        };
        format!(
            "{} / {}{est}",
            r.summary_prompt_tokens, r.summary_output_tokens
        )
    });
    add("estimated cost", &|r, _| format!("${:.2}", r.cost_usd));
    add("earliest changed index min / median", &|_, d| {
        format!(
            "{} / {}",
            d.earliest_changed_min.map_or("-".into(), |v| v.to_string()),
            opt(d.earliest_changed_median, 0)
        )
    });
    add("compaction wall time", &|r, _| {
        format!("{:.0} ms", r.compaction_ms)
    });

    let label_w = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let mut col_w: Vec<usize> = rows.iter().map(|r| r.policy.len()).collect();
    for (_, vals) in &lines {
        for (w, v) in col_w.iter_mut().zip(vals) {
            *w = (*w).max(v.len());
        }
    }
    let mut s = String::new();
    let (threshold, context) = rows
        .first()
        .map_or((0, 0), |r| (r.threshold_tokens, r.context_length));
    let _ = writeln!(
        s,
        "{title} (context {context} tokens, threshold {threshold}; occupancy = prompt / threshold)"
    );
    let _ = write!(s, "{:label_w$}", "policy");
    for (r, w) in rows.iter().zip(&col_w) {
        let _ = write!(s, "  {:>w$}", r.policy);
    }
    s.push('\n');
    for (label, vals) in &lines {
        let _ = write!(s, "{label:label_w$}");
        for (v, w) in vals.iter().zip(&col_w) {
            let _ = write!(s, "  {v:>w$}");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_compaction::llm::ExtractiveSummarizer;

    fn replay_now(msgs: &[Message], policy: Policy) -> Row {
        let rt = crate::runtime().unwrap();
        let mut config = Config::default();
        config.model.context_length = 16_000;
        rt.block_on(replay(
            "t",
            msgs,
            policy,
            &config,
            Arc::new(ExtractiveSummarizer::default()),
            &Prices::default(),
        ))
    }

    #[test]
    fn the_prefix_cache_hits_what_the_previous_request_sent() {
        let msgs = vec![
            Message::system("sys"),
            Message::user("first question"),
            Message::assistant("first answer"),
            Message::user("second question"),
            Message::assistant("second answer"),
        ];
        let row = replay_now(&msgs, Policy::None);
        let e = Estimator::default();
        let tok =
            |r: std::ops::Range<usize>| -> u64 { msgs[r].iter().map(|m| e.count_message(m)).sum() };
        assert_eq!((row.turns, row.requests), (2, 2));
        assert_eq!(row.prompt_tokens, tok(0..2) + tok(0..4));
        // The second request reuses the two messages of the first.
        assert_eq!(row.cache_hit_tokens, tok(0..2));
        assert_eq!(row.cache_miss_tokens, tok(0..2) + tok(2..4));
        assert_eq!(row.output_tokens, tok(2..3) + tok(4..5));
        assert_eq!(row.events, 0);
        let cost = Prices::default().cost(
            row.cache_miss_tokens,
            row.cache_hit_tokens,
            row.output_tokens,
            0,
            0,
        );
        assert!((row.cost_usd - cost).abs() < 1e-12);
    }

    #[test]
    fn totals_weight_means_by_requests_and_turns() {
        let a = Row {
            turns: 10,
            requests: 10,
            events: 1,
            occupancy_sum: 5.0,
            earliest_changed: vec![4],
            ..Row::default()
        };
        let b = Row {
            turns: 30,
            requests: 90,
            events: 5,
            occupancy_sum: 81.0,
            earliest_changed: vec![2, 9],
            ..Row::default()
        };
        let t = Row::total("p", &[&a, &b]);
        let d = t.derived();
        assert_eq!(d.events_per_100_turns, 15.0);
        assert_eq!(d.mean_occupancy, 0.86);
        assert_eq!(d.mean_turns_between_compressions, Some(40.0 / 6.0));
        assert_eq!(d.earliest_changed_min, Some(2));
        assert_eq!(d.earliest_changed_median, Some(4.0));
    }
}
