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

use std::cell::Cell;
use std::collections::hash_map::DefaultHasher;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clap::ValueEnum;
use serde::Serialize;

use hermes_compaction::core::cache::{self, PROFILE_NAMES, RequestShape};
use hermes_compaction::core::{Estimator, Message, TokenCounter, Transcript};
use hermes_compaction::llm::Summarizer;
use hermes_compaction::store::Store;
use hermes_compaction::{
    BatchReport, CacheProfile, Compressor, Config, MicroOutcomeKind, MicroReport, Outcome,
    Persistence,
};

use crate::cli::SimulateArgs;
use crate::input::{Input, Strictness};
use crate::prices::{Prices, Pricing};
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
    /// `batch` with insertion-time trimming: each tool result over the trim limit is trimmed
    /// by [`Compressor::on_tool_result`] before it is appended (originals kept in an
    /// in-memory store).
    #[value(name = "batch+trim")]
    #[serde(rename = "batch+trim")]
    BatchTrim,
    /// `micro` with insertion-time trimming.
    #[value(name = "micro+trim")]
    #[serde(rename = "micro+trim")]
    MicroTrim,
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
            Policy::BatchTrim => "batch+trim",
            Policy::MicroTrim => "micro+trim",
        }
    }

    /// Whether tool results are trimmed as they are appended.
    pub fn trims(self) -> bool {
        matches!(self, Policy::BatchTrim | Policy::MicroTrim)
    }

    /// `base` changed as this policy says. Trimming policies trim tool results over
    /// `insert_trim_tokens`; the others never trim (`compression.insert_trim_tokens = 0`), so
    /// the two can be compared.
    pub fn configure(self, base: &Config, insert_trim_tokens: u64) -> Config {
        let mut c = base.clone();
        c.compression.insert_trim_tokens = if self.trims() { insert_trim_tokens } else { 0 };
        match self {
            Policy::None => {
                c.compression.enabled = false;
                c.compression.micro_compact = false;
            }
            Policy::Batch | Policy::PruneFirst | Policy::BatchTrim => {
                c.compression.micro_compact = false
            }
            Policy::BatchNaive => {
                c.compression.micro_compact = false;
                c.compression.prune_minimum_tokens = 0;
                c.compression.prune_runway_ratio = 0.0;
            }
            Policy::Micro | Policy::MicroTrim => {
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
    /// Pricing name: a cache profile, or `prices` for the price table.
    pub profile: String,
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
    /// Of the misses, tokens written to an explicit cache (charged the write premium).
    pub cache_write_tokens: u64,
    /// Prompt tokens identical to the previous request's leading messages (what a cache could
    /// serve; hits are these minus expired caches and prefixes under the provider's minimum).
    pub reused_prefix_tokens: u64,
    /// Requests sent after the cache had expired (gap since the previous one >= TTL).
    pub expired_requests: u64,
    /// The prompts' cost in input-token equivalents (price-free: cached x cached ratio +
    /// uncached + writes x (write ratio - 1)); what ranks policies for a profile without
    /// prices, like `local`.
    pub prompt_token_equivalents: f64,
    /// Tool results trimmed on insertion.
    pub trimmed_results: u64,
    /// Tokens insertion-time trimming kept out of the transcript (original minus compact).
    pub trim_saved_tokens: u64,
    /// Estimated tokens of the assistant messages (the model's output).
    pub output_tokens: u64,
    /// Prompt tokens of summary calls.
    pub summary_prompt_tokens: u64,
    /// Output tokens of summary calls.
    pub summary_output_tokens: u64,
    /// Estimated cost in dollars: the sum of the five parts below.
    pub cost_usd: f64,
    /// Uncached prompt tokens at the input price.
    pub cost_input_usd: f64,
    /// Cached prompt tokens at the cached-input price.
    pub cost_cache_read_usd: f64,
    /// The cache-write premium: written tokens x input price x (write ratio - 1).
    pub cost_cache_write_usd: f64,
    /// Output tokens of the main model.
    pub cost_output_usd: f64,
    /// Summary calls (prompt and output).
    pub cost_summary_usd: f64,
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
            profile: rows.first().map(|r| r.profile.clone()).unwrap_or_default(),
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
            t.cache_write_tokens += r.cache_write_tokens;
            t.reused_prefix_tokens += r.reused_prefix_tokens;
            t.expired_requests += r.expired_requests;
            t.prompt_token_equivalents += r.prompt_token_equivalents;
            t.trimmed_results += r.trimmed_results;
            t.trim_saved_tokens += r.trim_saved_tokens;
            t.output_tokens += r.output_tokens;
            t.summary_prompt_tokens += r.summary_prompt_tokens;
            t.summary_output_tokens += r.summary_output_tokens;
            t.cost_usd += r.cost_usd;
            t.cost_input_usd += r.cost_input_usd;
            t.cost_cache_read_usd += r.cost_cache_read_usd;
            t.cost_cache_write_usd += r.cost_cache_write_usd;
            t.cost_output_usd += r.cost_output_usd;
            t.cost_summary_usd += r.cost_summary_usd;
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
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Simulation {
    /// Policies in column order.
    pub policies: Vec<String>,
    /// The pricings, in order (one replay of every transcript and policy per pricing).
    pub pricings: Vec<Pricing>,
    /// One row per pricing, policy and transcript: pricings in order, then transcripts in
    /// input order, then policies.
    pub rows: Vec<Row>,
    /// One total per pricing and policy, in the same order.
    pub totals: Vec<Row>,
}

impl Simulation {
    /// The totals priced with `pricing` (by name), in policy order.
    pub fn totals_of(&self, pricing: &str) -> Vec<&Row> {
        self.totals
            .iter()
            .filter(|r| r.profile == pricing)
            .collect()
    }
}

/// How [`simulate`] runs, beyond the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Each pricing replays every transcript under every policy (a cache profile also drives
    /// the compressor's cache-aware decisions).
    pub pricings: Vec<Pricing>,
    /// Seconds assumed between two requests when the messages carry no timestamps.
    pub request_gap_secs: u64,
    /// The trim limit of the `+trim` policies, tokens.
    pub insert_trim_tokens: u64,
    /// The summarizer (`None`: the configuration's).
    pub summarizer: Option<SummarizerKind>,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

impl Default for Options {
    /// The price table, 30 s between requests, trimming at 8,000 tokens.
    fn default() -> Self {
        Options {
            pricings: vec![Pricing::Table(Prices::default())],
            request_gap_secs: DEFAULT_REQUEST_GAP_SECS,
            insert_trim_tokens: DEFAULT_INSERT_TRIM_TOKENS,
            summarizer: None,
            progress: false,
        }
    }
}

/// The assumed gap between requests without timestamps, seconds.
pub const DEFAULT_REQUEST_GAP_SECS: u64 = 30;
/// The `+trim` policies' limit when neither the flag nor the configuration sets one.
pub const DEFAULT_INSERT_TRIM_TOKENS: u64 = 8_000;

/// Runs `simulate`.
pub fn run(args: &SimulateArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let config = load_config(args.engine.config.as_deref(), args.engine.context_length)?;
    let pricings = pricings(args, &config)?;
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
    let insert_trim_tokens =
        args.insert_trim_tokens
            .unwrap_or(match config.compression.insert_trim_tokens {
                0 => DEFAULT_INSERT_TRIM_TOKENS,
                n => n,
            });
    if insert_trim_tokens == 0 {
        return Err(Error::Config(
            "--insert-trim-tokens must be more than 0".into(),
        ));
    }
    let options = Options {
        pricings,
        request_gap_secs: args.request_gap_secs,
        insert_trim_tokens,
        summarizer: args.engine.summarizer,
        progress: std::io::stderr().is_terminal(),
    };
    let sim = simulate(&inputs, &policies, &config, &options)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&to_json(&sim))
            .map_err(|e| Error::Config(format!("cannot render JSON: {e}")))?;
        write_atomically(path, json.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        write_atomically(path, crate::plot::occupancy_svg(&sim).as_bytes())?;
    }
    let mut text = String::new();
    for pricing in &sim.pricings {
        let name = pricing.name();
        if args.per_transcript {
            for (input, _) in &inputs {
                let rows: Vec<&Row> = sim
                    .rows
                    .iter()
                    .filter(|r| &r.transcript == input && r.profile == name)
                    .collect();
                text.push_str(&table(&format!("{input} [{name}]"), &rows));
                text.push('\n');
            }
        }
        let title = format!("{} transcript(s), totals [{name}]", inputs.len());
        text.push_str(&table(&title, &sim.totals_of(name)));
        text.push('\n');
    }
    if sim.pricings.len() > 1 {
        text.push_str(&cost_by_profile(&sim));
    }
    write_out(out, &text)
}

/// The pricings `simulate` was asked for: `--cache-profile NAME|custom|prices|all`, else the
/// price table when `--prices` is given, else the configuration's cache profile, else the
/// built-in price table.
pub fn pricings(args: &SimulateArgs, config: &Config) -> Result<Vec<Pricing>> {
    let table = || -> Result<Pricing> {
        Ok(Pricing::Table(match &args.prices {
            Some(p) => Prices::load(p)?,
            None => Prices::default(),
        }))
    };
    let Some(name) = args.cache_profile.as_deref() else {
        if args.prices.is_some() {
            return Ok(vec![table()?]);
        }
        return Ok(vec![match config.cache_profile() {
            Some(p) => Pricing::Profile(p),
            None => table()?,
        }]);
    };
    Ok(match name {
        "all" => CacheProfile::all()
            .into_iter()
            .map(Pricing::Profile)
            .collect(),
        "prices" => vec![table()?],
        "custom" => vec![Pricing::Profile(config.compression.cache_custom.clone())],
        _ => match CacheProfile::named(name) {
            Some(p) => vec![Pricing::Profile(p)],
            None => {
                return Err(Error::Config(format!(
                    "--cache-profile {name}: unknown (expected one of {}, custom, prices, all)",
                    PROFILE_NAMES.join(", ")
                )));
            }
        },
    })
}

/// Replays every transcript under every policy and pricing (in parallel over the available
/// cores) and computes the totals.
pub fn simulate(
    inputs: &[(String, Vec<Message>)],
    policies: &[Policy],
    config: &Config,
    options: &Options,
) -> Result<Simulation> {
    // Build once up front so a configuration error is reported before any work.
    build_summarizer(config, options.summarizer)?;
    let jobs: Vec<(usize, usize, Policy)> = (0..options.pricings.len())
        .flat_map(|k| (0..inputs.len()).flat_map(move |i| policies.iter().map(move |&p| (k, i, p))))
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
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(k, i, policy)) = jobs.get(j) else {
                        break;
                    };
                    let (name, msgs) = &inputs[i];
                    let replay_options = ReplayOptions {
                        pricing: options.pricings[k].clone(),
                        request_gap_secs: options.request_gap_secs,
                        insert_trim_tokens: options.insert_trim_tokens,
                    };
                    let row = build_summarizer(config, options.summarizer).and_then(|inner| {
                        rt.block_on(replay(name, msgs, policy, config, inner, &replay_options))
                    });
                    if let Ok(mut r) = results.lock() {
                        r[j] = Some(row);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress_line(options.progress, n, jobs.len(), policy, name);
                }
            });
        }
    });
    if options.progress {
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
    let mut totals = Vec::new();
    for pricing in &options.pricings {
        for p in policies {
            let of: Vec<&Row> = rows
                .iter()
                .filter(|r| r.policy == p.name() && r.profile == pricing.name())
                .collect();
            totals.push(Row::total(p.name(), &of));
        }
    }
    Ok(Simulation {
        policies: policies.iter().map(|p| p.name().to_owned()).collect(),
        pricings: options.pricings.clone(),
        rows,
        totals,
    })
}

/// How one replay is priced and timed.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    /// The pricing.
    pub pricing: Pricing,
    /// Seconds between requests when the messages carry no timestamps.
    pub request_gap_secs: u64,
    /// The trim limit of the `+trim` policies.
    pub insert_trim_tokens: u64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            pricing: Pricing::Table(Prices::default()),
            request_gap_secs: DEFAULT_REQUEST_GAP_SECS,
            insert_trim_tokens: DEFAULT_INSERT_TRIM_TOKENS,
        }
    }
}

/// Replays one transcript under one policy.
///
/// Time is simulated: a request happens at the latest `timestamp` (or `created_at`) a message
/// since the previous request carries (unix seconds or milliseconds, or RFC 3339), else
/// `request_gap_secs` after the previous request. The compressor's clock follows it, so its
/// time-to-live rule sees the same gaps the pricing does.
pub async fn replay(
    name: &str,
    msgs: &[Message],
    policy: Policy,
    base: &Config,
    summarizer: Arc<dyn Summarizer>,
    options: &ReplayOptions,
) -> Result<Row> {
    let mut config = policy.configure(base, options.insert_trim_tokens);
    if let Pricing::Profile(p) = &options.pricing {
        config.compression.cache_profile = "custom".into();
        config.compression.cache_custom = p.clone();
    }
    let counting = Arc::new(CountingSummarizer::new(summarizer));
    let counter = Estimator::default();
    let context_length = config.model.context_length;
    let session = format!("sim-{}-{name}", policy.name());
    let mut c = Compressor::new(
        config,
        counting.clone(),
        Arc::new(Estimator::default()),
        session.clone(),
    )
    .with_clock(sim_clock);
    let persistence = if policy.trims() {
        let store = Store::connect("sqlite::memory:").await?.into_dyn();
        store.create_session(&session).await?;
        Some(Persistence {
            store,
            session,
            generation: 0,
        })
    } else {
        None
    };
    let threshold = c.threshold_tokens().max(1);
    let mut row = Row {
        policy: policy.name().into(),
        profile: options.pricing.name().into(),
        transcript: name.into(),
        transcripts: 1,
        messages: msgs.len() as u64,
        threshold_tokens: threshold,
        context_length,
        ..Row::default()
    };
    let gap_ms = options.request_gap_secs.saturating_mul(1_000);
    let mut requests: Vec<RequestShape> = Vec::new();
    let mut last_request_ms: Option<u64> = None;
    let mut seen_ms: Option<u64> = None;
    set_sim_clock(0);
    let mut t = c.transcript(Vec::new());
    let mut hashes: Vec<u64> = Vec::with_capacity(msgs.len());
    let mut previous: Vec<u64> = Vec::new();
    let mut in_turn = false;
    for m in msgs {
        if let Some(ts) = timestamp_ms(m) {
            seen_ms = Some(seen_ms.map_or(ts, |s| s.max(ts)));
        }
        if m.is_user() {
            if in_turn {
                finalize(&mut c, &mut t, &mut row, &mut hashes).await;
            }
            in_turn = true;
            row.turns += 1;
        }
        if m.is_assistant() {
            let now = match (seen_ms.take(), last_request_ms) {
                (Some(ts), Some(last)) => ts.max(last),
                (Some(ts), None) => ts,
                (None, Some(last)) => last.saturating_add(gap_ms),
                (None, None) => 0,
            };
            set_sim_clock(now);
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
            let reused = t.tokens_in(0..common).min(prompt);
            let output = counter.count_message(m);
            requests.push(RequestShape {
                prompt_tokens: prompt,
                reused_prefix_tokens: reused,
                output_tokens: output,
                secs_since_previous: last_request_ms.map(|last| (now - last) / 1_000),
            });
            last_request_ms = Some(now);
            row.requests += 1;
            row.prompt_tokens += prompt;
            row.reused_prefix_tokens += reused;
            let occ = prompt as f64 / threshold as f64;
            row.occupancy_sum += occ;
            row.peak_occupancy = row.peak_occupancy.max(occ);
            row.occupancy.push(occ as f32);
            if prompt > context_length {
                row.overflows += 1;
            }
            previous.clone_from(&hashes);
            c.after_response(&mut t, ticket, prompt);
            row.output_tokens += output;
        }
        let mut m = m.clone();
        if m.is_tool() && policy.trims() {
            let (trimmed, status) = c.on_tool_result(&t, m, persistence.as_ref()).await;
            if status.saved_tokens() > 0 {
                row.trimmed_results += 1;
                row.trim_saved_tokens += status.saved_tokens();
            }
            m = trimmed;
        }
        hashes.push(wire_hash(&m));
        t.push(m, c.counter());
    }
    if in_turn {
        finalize(&mut c, &mut t, &mut row, &mut hashes).await;
    }
    let usage = counting.usage();
    row.summary_calls = usage.calls;
    row.summary_calls_estimated = usage.estimated_calls;
    row.summary_prompt_tokens = usage.prompt_tokens;
    row.summary_output_tokens = usage.output_tokens;
    price(&mut row, &options.pricing, &requests);
    Ok(row)
}

/// Fills the cache split and the cost of `row` from its requests and summary tokens.
pub fn price(row: &mut Row, pricing: &Pricing, requests: &[RequestShape]) {
    let mtok = |tokens: u64, per_mtok: f64| tokens as f64 * per_mtok / 1e6;
    let (summary_in, summary_out) = (row.summary_prompt_tokens, row.summary_output_tokens);
    match pricing {
        Pricing::Table(p) => {
            let hit: u64 = requests.iter().map(|r| r.reused_prefix_tokens).sum();
            let prompt: u64 = requests.iter().map(|r| r.prompt_tokens).sum();
            row.cache_hit_tokens = hit;
            row.cache_miss_tokens = prompt - hit;
            row.cache_write_tokens = 0;
            row.expired_requests = 0;
            row.prompt_token_equivalents = if p.input_per_mtok > 0.0 {
                row.cache_miss_tokens as f64
                    + hit as f64 * p.cached_input_per_mtok / p.input_per_mtok
            } else {
                prompt as f64
            };
            row.cost_input_usd = mtok(row.cache_miss_tokens, p.input_per_mtok);
            row.cost_cache_read_usd = mtok(hit, p.cached_input_per_mtok);
            row.cost_cache_write_usd = 0.0;
            row.cost_output_usd = mtok(row.output_tokens, p.output_per_mtok);
            row.cost_summary_usd = mtok(summary_in, p.summary_input_per_mtok)
                + mtok(summary_out, p.summary_output_per_mtok);
        }
        Pricing::Profile(p) => {
            let total = cache::price_session(p, requests);
            row.cache_hit_tokens = total.cached_tokens;
            row.cache_miss_tokens = total.uncached_tokens;
            row.cache_write_tokens = total.cache_write_tokens;
            row.expired_requests = requests
                .iter()
                .filter(|r| {
                    p.has_cache()
                        && r.secs_since_previous
                            .is_some_and(|s| cache::cache_expired(p, s))
                })
                .count() as u64;
            row.prompt_token_equivalents = total.input_token_equivalents(p);
            row.cost_input_usd = mtok(total.uncached_tokens, p.input_price_per_mtok);
            row.cost_cache_read_usd = mtok(total.cached_tokens, p.cached_input_price_per_mtok);
            row.cost_cache_write_usd = mtok(total.cache_write_tokens, p.input_price_per_mtok)
                * (p.cache_write_price_ratio - 1.0);
            row.cost_output_usd = mtok(total.output_tokens, p.output_price_per_mtok);
            row.cost_summary_usd = mtok(summary_in, p.input_price_per_mtok)
                + mtok(summary_out, p.output_price_per_mtok);
        }
    }
    row.cost_usd = row.cost_input_usd
        + row.cost_cache_read_usd
        + row.cost_cache_write_usd
        + row.cost_output_usd
        + row.cost_summary_usd;
}

/// One line per pricing, one column per policy: the total cost, the cheapest marked `*`.
pub fn cost_by_profile(sim: &Simulation) -> String {
    let mut s = String::from(
        "estimated cost by cache profile (* = cheapest policy; a profile without prices shows \
         prompt input-token equivalents in millions)\n",
    );
    let label_w = sim
        .pricings
        .iter()
        .map(|p| p.name().len())
        .max()
        .unwrap_or(0)
        .max("profile".len());
    let cells: Vec<Vec<String>> = sim
        .pricings
        .iter()
        .map(|p| {
            let totals = sim.totals_of(p.name());
            let priced = totals.iter().any(|r| r.cost_usd > 0.0);
            let key = |r: &Row| {
                if priced {
                    r.cost_usd
                } else {
                    r.prompt_token_equivalents
                }
            };
            let best = totals.iter().map(|r| key(r)).fold(f64::INFINITY, f64::min);
            totals
                .iter()
                .map(|r| {
                    let mark = if key(r) <= best { "*" } else { " " };
                    if priced {
                        format!("${:.2}{mark}", r.cost_usd)
                    } else {
                        format!("{:.1}M{mark}", r.prompt_token_equivalents / 1e6)
                    }
                })
                .collect()
        })
        .collect();
    let col_w: Vec<usize> = sim
        .policies
        .iter()
        .enumerate()
        .map(|(j, p)| {
            cells
                .iter()
                .filter_map(|row| row.get(j).map(String::len))
                .chain([p.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(s, "{:label_w$}", "profile");
    for (p, w) in sim.policies.iter().zip(&col_w) {
        let _ = write!(s, "  {p:>w$}");
    }
    s.push('\n');
    for (pricing, row) in sim.pricings.iter().zip(&cells) {
        let _ = write!(s, "{:label_w$}", pricing.name());
        for (v, w) in row.iter().zip(&col_w) {
            let _ = write!(s, "  {v:>w$}");
        }
        s.push('\n');
    }
    s
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

thread_local! {
    /// The simulated time of the replay running on this thread (each worker thread runs one
    /// replay at a time on its own current-thread runtime), unix milliseconds.
    static SIM_NOW_MS: Cell<u64> = const { Cell::new(0) };
}

fn sim_clock() -> u64 {
    SIM_NOW_MS.with(Cell::get)
}

fn set_sim_clock(ms: u64) {
    SIM_NOW_MS.with(|c| c.set(ms));
}

/// A message's `timestamp` (or `created_at`) in unix milliseconds: a number (seconds, or
/// milliseconds when it is 10^11 or more), a numeric string, or an RFC 3339 string.
pub fn timestamp_ms(m: &Message) -> Option<u64> {
    let raw = m
        .extra_fields()
        .find(|(k, _)| *k == "timestamp" || *k == "created_at")?
        .1;
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    let number = match &v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => match s.trim().parse::<f64>() {
            Ok(n) => Some(n),
            Err(_) => return rfc3339_ms(s.trim()),
        },
        _ => None,
    }?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    Some(if number >= 1e11 {
        number as u64
    } else {
        (number * 1e3) as u64
    })
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|+HH:MM|-HH:MM]` in unix milliseconds (no zone: UTC).
fn rfc3339_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let frac = s.get(start..i)?;
        let digits: String = frac.chars().chain("000".chars()).take(3).collect();
        millis = digits.parse().ok()?;
    }
    let offset_secs = match s.get(i..)? {
        "" | "Z" | "z" => 0,
        z if z.len() == 6 && matches!(&z[..1], "+" | "-") && &z[3..4] == ":" => {
            let v = num(i + 1..i + 3)? * 3_600 + num(i + 4..i + 6)? * 60;
            if z.starts_with('-') { -v } else { v }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3_600 + mi * 60 + sec - offset_secs;
    u64::try_from(secs * 1_000 + millis).ok()
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

/// The simulation as JSON: rows and totals (each with its derived metrics and its `profile`),
/// `prices` (the price table when one was used, else null), and `profiles`: per pricing its
/// name, its settings, its totals and the cheapest policy.
pub fn to_json(sim: &Simulation) -> serde_json::Value {
    let row = |r: &Row| {
        let mut v = serde_json::to_value(r).unwrap_or_default();
        if let (Some(obj), Ok(d)) = (v.as_object_mut(), serde_json::to_value(r.derived())) {
            obj.insert("derived".into(), d);
        }
        v
    };
    let prices = sim.pricings.iter().find_map(|p| match p {
        Pricing::Table(t) => Some(*t),
        Pricing::Profile(_) => None,
    });
    let profiles: Vec<serde_json::Value> = sim
        .pricings
        .iter()
        .map(|p| {
            let totals = sim.totals_of(p.name());
            let cheapest = totals
                .iter()
                .min_by(|a, b| a.cost_usd.total_cmp(&b.cost_usd))
                .map(|r| r.policy.clone());
            serde_json::json!({
                "name": p.name(),
                "pricing": p,
                "cheapest": cheapest,
                "totals": totals.into_iter().map(row).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "policies": sim.policies,
        "prices": prices,
        "profiles": profiles,
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
    add("  cache writes", &|r, _| r.cache_write_tokens.to_string());
    add("  requests after cache expiry", &|r, _| {
        r.expired_requests.to_string()
    });
    add("tool results trimmed on insert", &|r, _| {
        format!("{} (-{} tok)", r.trimmed_results, r.trim_saved_tokens)
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
    add("prompt input-token equivalents", &|r, _| {
        format!("{:.0}", r.prompt_token_equivalents)
    });
    add("  input / cache read / cache write", &|r, _| {
        format!(
            "{:.2} / {:.2} / {:.2}",
            r.cost_input_usd, r.cost_cache_read_usd, r.cost_cache_write_usd
        )
    });
    add("  output / summaries", &|r, _| {
        format!("{:.2} / {:.2}", r.cost_output_usd, r.cost_summary_usd)
    });
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
        replay_with(msgs, policy, &ReplayOptions::default())
    }

    fn replay_with(msgs: &[Message], policy: Policy, options: &ReplayOptions) -> Row {
        let rt = crate::runtime().unwrap();
        let mut config = Config::default();
        config.model.context_length = 16_000;
        rt.block_on(replay(
            "t",
            msgs,
            policy,
            &config,
            Arc::new(ExtractiveSummarizer::default()),
            options,
        ))
        .unwrap()
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

    fn big_tool_session(turns: usize, output_chars: usize) -> Vec<Message> {
        use hermes_compaction::core::ToolCall;
        let mut msgs = vec![Message::system("You are a coding agent.")];
        for i in 0..turns {
            let id = format!("call_{i}");
            msgs.push(Message::user(format!("request {i}: run the tests")));
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(
                    &id,
                    "run_shell",
                    "{\"cmd\":\"cargo test\"}",
                )],
            ));
            let line = format!("test case {i} line ok\n");
            msgs.push(Message::tool_result(
                &id,
                line.repeat(output_chars / line.len()),
            ));
            msgs.push(Message::assistant(format!("request {i} done")));
        }
        msgs
    }

    #[test]
    fn trimming_on_insert_shrinks_the_prompts_and_keeps_the_turns() {
        let msgs = big_tool_session(12, 24_000);
        let options = ReplayOptions {
            insert_trim_tokens: 2_000,
            ..ReplayOptions::default()
        };
        let plain = replay_with(&msgs, Policy::Batch, &options);
        let trimmed = replay_with(&msgs, Policy::BatchTrim, &options);
        assert_eq!(plain.trimmed_results, 0);
        assert_eq!(trimmed.trimmed_results, 12);
        assert!(trimmed.trim_saved_tokens > 12 * 3_000);
        assert_eq!(
            (trimmed.turns, trimmed.requests),
            (plain.turns, plain.requests)
        );
        assert!(trimmed.prompt_tokens < plain.prompt_tokens);
        assert!(trimmed.events <= plain.events);
    }

    fn stamped(raw: &str) -> Message {
        Message::from_json(&format!(
            r#"{{"role":"user","content":"x","timestamp":{raw}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn timestamps_in_seconds_milliseconds_and_rfc3339() {
        let at = |raw: &str| timestamp_ms(&stamped(raw));
        // 2026-01-01T00:00:00Z = 1767225600 s.
        assert_eq!(at("1767225600"), Some(1_767_225_600_000));
        assert_eq!(at("1767225600.5"), Some(1_767_225_600_500));
        assert_eq!(at("1767225600123"), Some(1_767_225_600_123));
        assert_eq!(at(r#""1767225600""#), Some(1_767_225_600_000));
        assert_eq!(at(r#""2026-01-01T00:00:00Z""#), Some(1_767_225_600_000));
        assert_eq!(at(r#""2026-01-01T00:00:00.25Z""#), Some(1_767_225_600_250));
        assert_eq!(
            at(r#""2026-01-01 02:00:00+02:00""#),
            Some(1_767_225_600_000)
        );
        assert_eq!(at(r#""2024-02-29T12:00:00""#), Some(1_709_208_000_000));
        for bad in [
            r#""yesterday""#,
            r#""2026-13-01T00:00:00Z""#,
            "-5",
            "null",
            "true",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(timestamp_ms(&Message::user("no stamp")), None);
    }

    #[test]
    fn profile_pricing_splits_the_cost_of_core_price_session() {
        let requests = [
            RequestShape {
                prompt_tokens: 20_000,
                reused_prefix_tokens: 0,
                output_tokens: 1_000,
                secs_since_previous: None,
            },
            RequestShape {
                prompt_tokens: 22_000,
                reused_prefix_tokens: 20_000,
                output_tokens: 500,
                secs_since_previous: Some(30),
            },
            RequestShape {
                prompt_tokens: 23_000,
                reused_prefix_tokens: 22_000,
                output_tokens: 500,
                secs_since_previous: Some(400),
            },
        ];
        for p in CacheProfile::all() {
            let mut row = Row {
                output_tokens: 2_000,
                summary_prompt_tokens: 10_000,
                summary_output_tokens: 1_000,
                ..Row::default()
            };
            price(&mut row, &Pricing::Profile(p.clone()), &requests);
            let core = cache::price_session(&p, &requests);
            let summaries =
                (10_000.0 * p.input_price_per_mtok + 1_000.0 * p.output_price_per_mtok) / 1e6;
            assert!(
                (row.cost_usd - core.dollars - summaries).abs() < 1e-12,
                "{}",
                p.name
            );
            assert!((row.cost_summary_usd - summaries).abs() < 1e-12);
            assert_eq!(row.cache_hit_tokens + row.cache_miss_tokens, 65_000);
            let expired = u64::from(p.has_cache());
            assert_eq!(row.expired_requests, expired, "{}", p.name);
        }
        let mut row = Row::default();
        price(
            &mut row,
            &Pricing::Profile(CacheProfile::anthropic()),
            &requests,
        );
        // Only the second request reads the cache; the third comes after the 300 s TTL.
        assert_eq!(row.cache_hit_tokens, 20_000);
        assert_eq!(row.cache_write_tokens, 45_000);
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
