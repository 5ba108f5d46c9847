//! The policy tuner: replays the user's sessions under many configurations, keeps the Pareto
//! front of (cost, far recall, summary calls), and recommends one point: the cheapest on the
//! front that keeps at least the far recall asked for (by default the starting
//! configuration's) within the summary calls allowed.
//!
//! Far recall ([`recall`](crate::recall), pooled, summaries included) is the quality objective;
//! ledger-fact retention is reported beside it but not optimised, since the ledger holds those
//! facts by construction.
//!
//! The search space ([`Knobs`]) covers the threshold and its floor, the tail budget, the
//! prune-first runway, proactive pruning, micro-compaction's cadence and reclaim gate, and
//! insertion-time trimming. The search is a seeded random sample of the space (always
//! including the starting configuration), then rounds of one-knob moves from the points on
//! the front, until the budget of candidates is spent. Every candidate replays every
//! session; a candidate with a window overflow is infeasible and never on the front. The
//! fractional knobs' values are cut to the ranges [`Config::validate`] accepts
//! ([`Config::f64_range`]), and a candidate that `validate` rejects is never evaluated, so the
//! tuner never proposes a configuration the loader would refuse.
//!
//! The cost is the issue units' cost under the price table ([`Row::unit_cost`]); under a
//! cache profile with prices, the profile's dollars without the main model's output (the
//! same for every policy); under a profile without prices (`local`), prompt input-token
//! equivalents plus summary tokens.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde::Serialize;

use hermes_compaction::core::Message;
use hermes_compaction::{Config, ReclaimGate};

use compaction_telemetry::svg::{Chart, Series, Style};

use crate::policy::Variant;
use crate::pricing::Pricing;
use crate::row::Row;
use crate::run::{Options, Progress, simulate};
use crate::{Result, SummarizerFactory};

/// The values one candidate gives the tuned settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Knobs {
    /// `compression.threshold`.
    pub threshold: f64,
    /// `compression.small_window_min_threshold` (the search moves it with `threshold`, so
    /// the threshold it picks applies below `small_window_tokens` too).
    pub small_window_min_threshold: f64,
    /// `compression.threshold_floor_tokens`.
    pub threshold_floor_tokens: u64,
    /// `compression.tail_ratio` (the tail budget, a fraction of the threshold).
    pub tail_ratio: f64,
    /// `compression.prune_runway_ratio` (its highest valid value, 0.9: prune-only is accepted
    /// only when it buys that much runway).
    pub prune_runway_ratio: f64,
    /// `compression.prune_minimum_tokens`.
    pub prune_minimum_tokens: u64,
    /// `compression.proactive_prune_tokens` (0: off).
    pub proactive_prune_tokens: u64,
    /// `compression.micro_compact`.
    pub micro_compact: bool,
    /// `compression.micro_compact_every_n_turns`.
    pub micro_compact_every_n_turns: u64,
    /// `compression.micro_compact_min_reclaim_tokens` (off, a number of tokens, or the
    /// economic gate `"auto"`).
    pub micro_compact_min_reclaim_tokens: ReclaimGate,
    /// `compression.insert_trim_tokens` (0: off).
    pub insert_trim_tokens: u64,
}

const THRESHOLD: [f64; 9] = [0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.80];
const FLOOR: [u64; 4] = [0, 16_000, 32_000, 64_000];
const TARGET: [f64; 6] = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30];
/// `f64::INFINITY` stands for the highest value validation accepts.
const RUNWAY: [f64; 6] = [0.0, 0.15, 0.25, 0.35, 0.5, f64::INFINITY];
const PRUNE_MIN: [u64; 3] = [0, 8_000, 16_000];
const PROACTIVE: [u64; 5] = [0, 8_000, 16_000, 24_000, 32_000];
const EVERY: [u64; 3] = [1, 2, 4];
const RECLAIM: [ReclaimGate; 5] = [
    ReclaimGate::Off,
    ReclaimGate::Auto,
    ReclaimGate::Tokens(2_000),
    ReclaimGate::Tokens(4_000),
    ReclaimGate::Tokens(8_000),
];
const TRIM: [u64; 3] = [0, 4_000, 8_000];

/// The values the search draws the fractional knobs from, cut to what validation accepts.
#[derive(Clone, Debug)]
struct Space {
    threshold: Vec<f64>,
    target: Vec<f64>,
    runway: Vec<f64>,
    every: Vec<u64>,
}

impl Space {
    fn new() -> Space {
        let within = |key: &str, values: &[f64]| -> Vec<f64> {
            let (lo, hi) = Config::f64_range(key).unwrap_or((f64::MIN, f64::MAX));
            let mut out: Vec<f64> = values.iter().map(|v| v.clamp(lo, hi)).collect();
            out.dedup();
            out
        };
        Space {
            threshold: within("compression.threshold", &THRESHOLD)
                .into_iter()
                .filter(|v| {
                    Config::f64_range("compression.small_window_min_threshold")
                        .is_none_or(|(lo, hi)| (lo..=hi).contains(v))
                })
                .collect(),
            target: within("compression.tail_ratio", &TARGET),
            runway: within("compression.prune_runway_ratio", &RUNWAY),
            every: {
                let (lo, hi) = Config::u64_range("compression.micro_compact_every_n_turns")
                    .unwrap_or((0, u64::MAX));
                EVERY.iter().map(|v| (*v).clamp(lo, hi)).collect()
            },
        }
    }
}

impl Knobs {
    /// The knobs of `config`.
    pub fn of(config: &Config) -> Knobs {
        let c = &config.compression;
        Knobs {
            threshold: c.threshold,
            small_window_min_threshold: c.small_window_min_threshold,
            threshold_floor_tokens: c.threshold_floor_tokens,
            tail_ratio: c.tail_ratio,
            prune_runway_ratio: c.prune_runway_ratio,
            prune_minimum_tokens: c.prune_minimum_tokens,
            proactive_prune_tokens: c.proactive_prune_tokens,
            micro_compact: c.micro_compact,
            micro_compact_every_n_turns: c.micro_compact_every_n_turns,
            micro_compact_min_reclaim_tokens: c.micro_compact_min_reclaim_tokens,
            insert_trim_tokens: c.insert_trim_tokens,
        }
    }

    /// `base` with these knobs.
    pub fn apply(&self, base: &Config) -> Config {
        let mut config = base.clone();
        let c = &mut config.compression;
        c.enabled = true;
        c.threshold = self.threshold;
        c.small_window_min_threshold = self.small_window_min_threshold;
        c.threshold_floor_tokens = self.threshold_floor_tokens;
        c.tail_ratio = self.tail_ratio;
        c.prune_runway_ratio = self.prune_runway_ratio;
        c.prune_minimum_tokens = self.prune_minimum_tokens;
        c.proactive_prune_tokens = self.proactive_prune_tokens;
        c.micro_compact = self.micro_compact;
        c.micro_compact_every_n_turns = self.micro_compact_every_n_turns;
        c.micro_compact_min_reclaim_tokens = self.micro_compact_min_reclaim_tokens;
        c.insert_trim_tokens = self.insert_trim_tokens;
        config
    }

    /// A short stable name, for tables and rows.
    pub fn name(&self) -> String {
        let small = if self.small_window_min_threshold == self.threshold {
            String::new()
        } else {
            format!("/{:.2}", self.small_window_min_threshold)
        };
        let mut s = format!(
            "t{:.2}{small}-f{}k-r{:.2}-w{:.2}-m{}k-p{}k",
            self.threshold,
            self.threshold_floor_tokens / 1_000,
            self.tail_ratio,
            self.prune_runway_ratio,
            self.prune_minimum_tokens / 1_000,
            self.proactive_prune_tokens / 1_000
        );
        if self.micro_compact {
            let _ = write!(
                s,
                "-micro{}g{}",
                self.micro_compact_every_n_turns,
                match self.micro_compact_min_reclaim_tokens {
                    ReclaimGate::Auto => "auto".to_owned(),
                    g => format!("{}k", g.fixed_tokens() / 1_000),
                }
            );
        }
        if self.insert_trim_tokens > 0 {
            let _ = write!(s, "-trim{}k", self.insert_trim_tokens / 1_000);
        }
        s
    }

    /// The configuration keys these knobs set, as TOML `[compression]` lines.
    pub fn toml_lines(&self) -> String {
        format!(
            "threshold = {}\nsmall_window_min_threshold = {}\nthreshold_floor_tokens = {}\ntail_ratio = {}\nprune_runway_ratio = {}\nprune_minimum_tokens = {}\nproactive_prune_tokens = {}\nmicro_compact = {}\nmicro_compact_every_n_turns = {}\nmicro_compact_min_reclaim_tokens = {}\ninsert_trim_tokens = {}\n",
            float(self.threshold),
            float(self.small_window_min_threshold),
            self.threshold_floor_tokens,
            float(self.tail_ratio),
            float(self.prune_runway_ratio),
            self.prune_minimum_tokens,
            self.proactive_prune_tokens,
            self.micro_compact,
            self.micro_compact_every_n_turns,
            match self.micro_compact_min_reclaim_tokens {
                ReclaimGate::Auto => "\"auto\"".to_owned(),
                g => g.to_string(),
            },
            self.insert_trim_tokens
        )
    }

    fn key(&self) -> String {
        format!("{self:?}")
    }

    /// A random point of the space.
    fn random(space: &Space, rng: &mut Rng, micro: bool, trim: bool) -> Knobs {
        let micro = micro && rng.below(2) == 1;
        let threshold = rng.pick(&space.threshold);
        Knobs {
            threshold,
            small_window_min_threshold: threshold,
            threshold_floor_tokens: rng.pick(&FLOOR),
            tail_ratio: rng.pick(&space.target),
            prune_runway_ratio: rng.pick(&space.runway),
            prune_minimum_tokens: rng.pick(&PRUNE_MIN),
            proactive_prune_tokens: rng.pick(&PROACTIVE),
            micro_compact: micro,
            micro_compact_every_n_turns: if micro { rng.pick(&space.every) } else { 1 },
            micro_compact_min_reclaim_tokens: if micro {
                rng.pick(&RECLAIM)
            } else {
                ReclaimGate::Off
            },
            insert_trim_tokens: if trim { rng.pick(&TRIM) } else { 0 },
        }
    }

    /// This point with one knob moved to a neighbouring value.
    fn neighbour(&self, space: &Space, rng: &mut Rng, micro: bool, trim: bool) -> Knobs {
        let mut k = *self;
        let knobs = if micro { 10 } else { 7 };
        match rng.below(knobs) {
            0 | 6 if k.small_window_min_threshold != k.threshold => {
                k.small_window_min_threshold = k.threshold;
            }
            0 => {
                k.threshold = step(&space.threshold, k.threshold, rng);
                k.small_window_min_threshold = k.threshold;
            }
            6 if !trim => {
                k.threshold = step(&space.threshold, k.threshold, rng);
                k.small_window_min_threshold = k.threshold;
            }
            1 => k.threshold_floor_tokens = step(&FLOOR, k.threshold_floor_tokens, rng),
            2 => k.tail_ratio = step(&space.target, k.tail_ratio, rng),
            3 => k.prune_runway_ratio = step(&space.runway, k.prune_runway_ratio, rng),
            4 => k.prune_minimum_tokens = step(&PRUNE_MIN, k.prune_minimum_tokens, rng),
            5 => k.proactive_prune_tokens = step(&PROACTIVE, k.proactive_prune_tokens, rng),
            6 => k.insert_trim_tokens = step(&TRIM, k.insert_trim_tokens, rng),
            7 => k.micro_compact = !k.micro_compact,
            8 => {
                k.micro_compact_every_n_turns =
                    step(&space.every, k.micro_compact_every_n_turns, rng)
            }
            _ => {
                k.micro_compact_min_reclaim_tokens =
                    step(&RECLAIM, k.micro_compact_min_reclaim_tokens, rng)
            }
        }
        k
    }
}

/// `v` moved one place up or down in `values` (a random value when `v` is not one of them).
fn step<T: Copy + PartialEq>(values: &[T], v: T, rng: &mut Rng) -> T {
    let Some(at) = values.iter().position(|x| *x == v) else {
        return rng.pick(values);
    };
    let up = rng.below(2) == 1;
    let i = if (up && at + 1 < values.len()) || at == 0 {
        (at + 1).min(values.len() - 1)
    } else {
        at - 1
    };
    values[i]
}

/// A float as TOML writes it (always with a decimal point).
fn float(v: f64) -> String {
    let s = format!("{v}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// A small deterministic generator (SplitMix64), so a seed reproduces a search.
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<T: Copy>(&mut self, values: &[T]) -> T {
        values[self.below(values.len() as u64) as usize]
    }
}

/// One evaluated configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// [`Knobs::name`].
    pub name: String,
    /// The knobs.
    pub knobs: Knobs,
    /// The objective (see the module docs), lower is better.
    pub cost: f64,
    /// Cost in the issue units.
    pub unit_cost: f64,
    /// Dollars under the pricing.
    pub cost_usd: f64,
    /// Far recall, pooled, summaries included (see [`recall`](crate::recall)): the quality
    /// objective.
    pub far_recall: f64,
    /// Far recall, pooled, verbatim only.
    pub far_recall_verbatim: f64,
    /// Mean share of ledger facts (paths, commands, latest ask) in the prompt over requests.
    pub mean_retention: f64,
    /// Smallest share of facts in a prompt.
    pub min_retention: f64,
    /// Summarizer calls.
    pub summary_calls: u64,
    /// Requests over the window (estimator tokens or issue units).
    pub overflows: u64,
    /// The totals row of the replay.
    #[serde(skip)]
    pub total: Row,
}

impl Point {
    fn from_total(knobs: Knobs, total: Row, pricing: &Pricing) -> Point {
        let d = total.derived();
        Point {
            name: knobs.name(),
            knobs,
            cost: objective(&total, pricing),
            unit_cost: total.unit_cost,
            cost_usd: total.cost_usd,
            far_recall: d.far_recall,
            far_recall_verbatim: d.far_recall_verbatim,
            mean_retention: d.mean_retention,
            min_retention: total.retention_min,
            summary_calls: total.summary_calls,
            overflows: total.overflows.max(total.unit_overflows),
            total,
        }
    }

    /// Whether `self` is at least as good as `other` on cost, far recall and summary calls,
    /// and better on one.
    pub fn dominates(&self, other: &Point) -> bool {
        let no_worse = self.cost <= other.cost
            && self.far_recall >= other.far_recall
            && self.summary_calls <= other.summary_calls;
        let better = self.cost < other.cost
            || self.far_recall > other.far_recall
            || self.summary_calls < other.summary_calls;
        no_worse && better
    }

    /// Whether this point keeps at least `min_recall` far recall and `min_retention` retention
    /// with at most `max_summary_calls` summary calls.
    pub fn meets(
        &self,
        min_recall: f64,
        min_retention: Option<f64>,
        max_summary_calls: Option<u64>,
    ) -> bool {
        self.far_recall >= min_recall
            && min_retention.is_none_or(|r| self.mean_retention >= r)
            && max_summary_calls.is_none_or(|m| self.summary_calls <= m)
    }
}

/// The tuner's objective for a totals row (see the module docs).
pub fn objective(total: &Row, pricing: &Pricing) -> f64 {
    match pricing {
        Pricing::Table(_) => total.unit_cost,
        Pricing::Profile(_) if total.cost_usd > 0.0 => total.cost_usd - total.cost_output_usd,
        Pricing::Profile(_) => {
            total.prompt_token_equivalents
                + total.summary_prompt_tokens as f64
                + total.summary_output_tokens as f64
        }
    }
}

/// How [`tune`] searches.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneOptions {
    /// The pricing every candidate is replayed and costed under.
    pub pricing: Pricing,
    /// Seconds between requests without timestamps.
    pub request_gap_secs: u64,
    /// Candidates to evaluate, the starting configuration included.
    pub budget: usize,
    /// Of those, the share drawn at random before the local moves (0 to 1).
    pub explore: f64,
    /// Seed of the search.
    pub seed: u64,
    /// Whether micro-compaction is part of the space.
    pub micro: bool,
    /// Whether insertion-time trimming is part of the space.
    pub trim: bool,
    /// The recommendation keeps at least this far recall, 0 to 1 (`None`: the starting
    /// configuration's).
    pub min_recall: Option<f64>,
    /// The recommendation keeps at least this mean ledger-fact retention (`None`: no limit).
    pub min_retention: Option<f64>,
    /// The recommendation makes at most this many summary calls (`None`: no limit).
    pub max_summary_calls: Option<u64>,
    /// Worker threads (0: every core).
    pub threads: usize,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            pricing: Pricing::Table(crate::Prices::default()),
            request_gap_secs: crate::replay::DEFAULT_REQUEST_GAP_SECS,
            budget: 48,
            explore: 0.5,
            seed: 13,
            micro: true,
            trim: true,
            min_recall: None,
            min_retention: None,
            max_summary_calls: None,
            threads: 0,
        }
    }
}

/// What [`tune`] found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tuning {
    /// The starting configuration's point.
    pub baseline: Point,
    /// Every feasible point evaluated, in evaluation order.
    pub points: Vec<Point>,
    /// The Pareto front, by cost.
    pub front: Vec<Point>,
    /// The recommended point (the baseline when no front point meets the limits).
    pub recommended: Point,
    /// Whether the recommended point meets the limits (false: no point did, and the
    /// recommendation is the baseline).
    pub meets_limits: bool,
    /// The far recall the recommendation had to keep.
    pub min_recall: f64,
    /// Candidates evaluated (feasible or not).
    pub evaluated: usize,
    /// What [`Point::cost`] is counted in.
    pub cost_unit: CostUnit,
}

/// What the tuner's cost is counted in, which follows the pricing (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostUnit {
    /// The issue units of docs/ECONOMICS.md (the price table).
    IssueUnits,
    /// Dollars at a cache profile's prices.
    Dollars,
    /// Prompt input-token equivalents plus summary tokens (a profile without prices).
    TokenEquivalents,
}

impl CostUnit {
    /// The unit of `pricing`'s objective; `dollars` says whether its replays cost any.
    fn of(pricing: &Pricing, dollars: bool) -> CostUnit {
        match pricing {
            Pricing::Table(_) => CostUnit::IssueUnits,
            Pricing::Profile(_) if dollars => CostUnit::Dollars,
            Pricing::Profile(_) => CostUnit::TokenEquivalents,
        }
    }

    /// A cost as people read it: `$12.34`, or millions with two decimals and the unit.
    pub fn format(self, cost: f64) -> String {
        match self {
            CostUnit::Dollars => format!("${cost:.2}"),
            CostUnit::IssueUnits => format!("{:.2}M units", cost / 1e6),
            CostUnit::TokenEquivalents => format!("{:.2}M tokens", cost / 1e6),
        }
    }

    /// The plot's axis: the label and the divisor of the values.
    fn axis(self) -> (&'static str, f64) {
        match self {
            CostUnit::Dollars => ("cost ($)", 1.0),
            CostUnit::IssueUnits => ("cost (millions of issue units)", 1e6),
            CostUnit::TokenEquivalents => ("cost (millions of input-token equivalents)", 1e6),
        }
    }
}

/// The points of `points` no other point dominates, by cost (duplicates of a point's
/// figures kept once).
pub fn pareto_front(points: &[Point]) -> Vec<Point> {
    let mut front: Vec<Point> = Vec::new();
    for p in points {
        if points.iter().any(|q| q.dominates(p)) {
            continue;
        }
        let same = |q: &Point| {
            q.cost == p.cost && q.far_recall == p.far_recall && q.summary_calls == p.summary_calls
        };
        if !front.iter().any(same) {
            front.push(p.clone());
        }
    }
    front.sort_by(|a, b| a.cost.total_cmp(&b.cost));
    front
}

/// Searches the policy space over `inputs` starting from `base` (see the module docs).
/// `progress` is called after each candidate with (done, budget).
pub fn tune(
    inputs: &[(String, Vec<Message>)],
    base: &Config,
    options: &TuneOptions,
    summarizer: SummarizerFactory<'_>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Tuning> {
    let budget = options.budget.max(1);
    let sim_options = Options {
        pricings: vec![options.pricing.clone()],
        request_gap_secs: options.request_gap_secs,
        trace: false,
        trace_text: false,
        threads: options.threads,
    };
    let space = Space::new();
    let valid = |k: &Knobs| k.apply(base).validate().is_ok();
    let mut rng = Rng(options.seed);
    let mut seen: HashSet<String> = HashSet::new();
    let mut all: Vec<Point> = Vec::new();
    let evaluate = |batch: Vec<Knobs>, all: &mut Vec<Point>| -> Result<()> {
        let variants: Vec<Variant> = batch
            .iter()
            .map(|k| Variant {
                name: k.name(),
                config: k.apply(base),
            })
            .collect();
        let sim = simulate(
            inputs,
            &variants,
            &sim_options,
            summarizer,
            &|_: Progress<'_>| {},
        )?;
        for (k, total) in batch.into_iter().zip(sim.totals) {
            all.push(Point::from_total(k, total, &options.pricing));
            progress(all.len(), budget);
        }
        Ok(())
    };
    // The baseline, then a random sample, then local moves from the front in rounds.
    let start = Knobs::of(base);
    seen.insert(start.key());
    let explore = ((budget as f64 * options.explore.clamp(0.0, 1.0)) as usize).max(1);
    let mut first = vec![start];
    let mut tries = 0;
    while first.len() < explore.min(budget) && tries < 100 * budget {
        tries += 1;
        let k = Knobs::random(&space, &mut rng, options.micro, options.trim);
        if seen.insert(k.key()) && valid(&k) {
            first.push(k);
        }
    }
    evaluate(first, &mut all)?;
    let round = 8.max(budget / 8);
    while all.len() < budget {
        let feasible: Vec<Point> = all.iter().filter(|p| p.overflows == 0).cloned().collect();
        let front = pareto_front(&feasible);
        let parents: Vec<Knobs> = if front.is_empty() {
            vec![start]
        } else {
            front.iter().map(|p| p.knobs).collect()
        };
        let mut batch = Vec::new();
        let want = round.min(budget - all.len());
        let mut tries = 0;
        while batch.len() < want && tries < 100 * want {
            tries += 1;
            let parent = parents[rng.below(parents.len() as u64) as usize];
            let k = parent.neighbour(&space, &mut rng, options.micro, options.trim);
            if seen.insert(k.key()) && valid(&k) {
                batch.push(k);
            }
        }
        if batch.is_empty() {
            break;
        }
        evaluate(batch, &mut all)?;
    }
    let feasible: Vec<Point> = all.iter().filter(|p| p.overflows == 0).cloned().collect();
    let baseline = all[0].clone();
    let front = pareto_front(&feasible);
    let min_recall = options.min_recall.unwrap_or(baseline.far_recall);
    let chosen = front
        .iter()
        .filter(|p| p.meets(min_recall, options.min_retention, options.max_summary_calls))
        .min_by(|a, b| a.cost.total_cmp(&b.cost))
        .cloned();
    let meets_limits = chosen.is_some();
    let recommended = chosen.unwrap_or_else(|| baseline.clone());
    let cost_unit = CostUnit::of(&options.pricing, baseline.cost_usd > 0.0);
    Ok(Tuning {
        baseline,
        evaluated: all.len(),
        cost_unit,
        points: feasible,
        front,
        recommended,
        meets_limits,
        min_recall,
    })
}

impl Tuning {
    /// The front as a table: one line per point, by cost.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} candidates, {} feasible, {} on the front (cost: lower is better; far recall: pooled, with summaries / verbatim; ledger-fact retention: mean / min)",
            self.evaluated,
            self.points.len(),
            self.front.len()
        );
        let _ = writeln!(
            s,
            "{:>16}  {:>10}  {:>15}  {:>15}  {:>7}  name",
            "cost", "units (M)", "far recall", "retention", "summary"
        );
        let unit = self.cost_unit;
        let line = |s: &mut String, p: &Point, mark: &str| {
            let _ = writeln!(
                s,
                "{:>16}  {:>10.3}  {:>6.1}% / {:>5.1}%  {:>6.1}% / {:>5.1}%  {:>7}  {}{mark}",
                unit.format(p.cost),
                p.unit_cost / 1e6,
                p.far_recall * 100.0,
                p.far_recall_verbatim * 100.0,
                p.mean_retention * 100.0,
                p.min_retention * 100.0,
                p.summary_calls,
                p.name
            );
        };
        for p in &self.front {
            let mark = if p.knobs == self.recommended.knobs {
                "  <- recommended"
            } else {
                ""
            };
            line(&mut s, p, mark);
        }
        let _ = writeln!(s, "starting configuration:");
        line(&mut s, &self.baseline, "");
        if self.meets_limits && self.recommended.knobs == self.baseline.knobs {
            let _ = writeln!(
                s,
                "the recommendation is the starting configuration itself: no point on the front is cheaper at this far recall and summary-call limit, so there is nothing to change"
            );
        }
        if !self.meets_limits {
            let _ = writeln!(
                s,
                "no point on the front meets the limits (far recall >= {:.1}% and the summary-call and retention limits); the starting configuration is kept",
                self.min_recall * 100.0
            );
        }
        s
    }

    /// The front and every other feasible point as a scatter plot (cost against far
    /// recall), the baseline and the recommendation marked.
    pub fn svg(&self) -> String {
        let (x_label, divisor) = self.cost_unit.axis();
        let pt = |p: &Point| (p.cost / divisor, p.far_recall * 100.0);
        let title = |p: &Point| {
            format!(
                "{}: cost {}, far recall {:.1}%, retention {:.1}%, {} summary calls",
                p.name,
                self.cost_unit.format(p.cost),
                p.far_recall * 100.0,
                p.mean_retention * 100.0,
                p.summary_calls
            )
        };
        let others: Vec<&Point> = self
            .points
            .iter()
            .filter(|p| !self.front.iter().any(|f| f.knobs == p.knobs))
            .collect();
        let series = |label: &str, class: &str, color: &str, style, ps: Vec<&Point>| Series {
            label: label.into(),
            class: class.into(),
            color: color.into(),
            style,
            points: ps.iter().map(|p| pt(p)).collect(),
            titles: ps.iter().map(|p| title(p)).collect(),
        };
        let costs = self
            .points
            .iter()
            .chain([&self.baseline, &self.recommended])
            .map(|p| p.cost / divisor);
        let (lo, hi) = costs.fold((f64::INFINITY, 0.0_f64), |(lo, hi), c| {
            (lo.min(c), hi.max(c))
        });
        let pad = ((hi - lo) * 0.05).max(1e-6);
        let chart = Chart {
            title: "policy search: cost against far recall".into(),
            x_label: x_label.into(),
            x_range: lo.is_finite().then_some((lo - pad, hi + pad)),
            y_label: "far recall, pooled, with summaries (%)".into(),
            y_unit: "%".into(),
            size: (900.0, 500.0),
            y_range: Some((0.0, 100.0)),
            series: vec![
                series("other points", "point", "#bbbbbb", Style::Points, others),
                series(
                    "Pareto front",
                    "front",
                    "#1f77b4",
                    Style::Line,
                    self.front.iter().collect(),
                ),
                series(
                    "front points",
                    "front-point",
                    "#1f77b4",
                    Style::Points,
                    self.front.iter().collect(),
                ),
                series(
                    "starting configuration",
                    "baseline",
                    "#7f7f7f",
                    Style::Points,
                    vec![&self.baseline],
                ),
                series(
                    "recommended",
                    "recommended",
                    "#d62728",
                    Style::Points,
                    vec![&self.recommended],
                ),
            ],
            ..Chart::default()
        };
        chart.to_svg()
    }

    /// The recommended configuration as TOML that `Config::load` (and `--config`) accepts:
    /// the context length and cache profile it was tuned for and every tuned key.
    pub fn toml(&self, base: &Config, pricing: &Pricing) -> String {
        let p = &self.recommended;
        let profile = match pricing {
            Pricing::Table(_) => base.compression.cache_profile.clone(),
            Pricing::Profile(p) => p.name.clone(),
        };
        format!(
            "# Written by `hermes-compaction tune`: cost {:.0} ({:.3}M issue units), far recall {:.1}%, mean retention {:.1}%, {} summary calls, 0 overflows over the tuned sessions.\n[model]\ncontext_length = {}\n\n[compression]\ncache_profile = {:?}\n{}",
            p.cost,
            p.unit_cost / 1e6,
            p.far_recall * 100.0,
            p.mean_retention * 100.0,
            p.summary_calls,
            base.model.context_length,
            profile,
            p.knobs.toml_lines()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 25, item 3: the grid is cut to the table `validate` checks, so every point of it
    /// validates (the tuner once proposed `prune_runway_ratio = 1.0`, which validation
    /// rejects).
    #[test]
    fn every_grid_point_validates() {
        let space = Space::new();
        let base = Config::default();
        let mut points = 0;
        for &threshold in &space.threshold {
            for &tail_ratio in &space.target {
                for &prune_runway_ratio in &space.runway {
                    for micro_compact in [false, true] {
                        let knobs = Knobs {
                            threshold,
                            small_window_min_threshold: threshold,
                            tail_ratio,
                            prune_runway_ratio,
                            micro_compact,
                            ..Knobs::of(&base)
                        };
                        let config = knobs.apply(&base);
                        config
                            .validate()
                            .unwrap_or_else(|e| panic!("{knobs:?}: {e}"));
                        points += 1;
                    }
                }
            }
        }
        assert!(space.runway.iter().all(|r| *r <= 0.9), "{:?}", space.runway);
        // The count and token axes, one at a time (validation checks each key alone).
        let axes: [(&str, &[u64]); 5] = [
            ("floor", &FLOOR),
            ("prune_min", &PRUNE_MIN),
            ("proactive", &PROACTIVE),
            ("every", &space.every),
            ("trim", &TRIM),
        ];
        for (axis, values) in axes {
            for &v in values {
                let mut k = Knobs::of(&base);
                match axis {
                    "floor" => k.threshold_floor_tokens = v,
                    "prune_min" => k.prune_minimum_tokens = v,
                    "proactive" => k.proactive_prune_tokens = v,
                    "every" => k.micro_compact_every_n_turns = v,
                    _ => k.insert_trim_tokens = v,
                }
                k.apply(&base)
                    .validate()
                    .unwrap_or_else(|e| panic!("{axis} = {v}: {e}"));
                points += 1;
            }
        }
        for gate in RECLAIM {
            let mut k = Knobs::of(&base);
            k.micro_compact_min_reclaim_tokens = gate;
            k.apply(&base)
                .validate()
                .unwrap_or_else(|e| panic!("reclaim = {gate:?}: {e}"));
            points += 1;
        }
        assert!(points > 100, "{points}");
        // The TOML a point writes loads back as that point, with no deprecation warning.
        let knobs = Knobs::of(&base);
        let (loaded, warnings) =
            Config::from_toml_str_with_warnings(&format!("[compression]\n{}", knobs.toml_lines()))
                .expect("the written TOML loads");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(Knobs::of(&loaded), knobs);
    }
}
