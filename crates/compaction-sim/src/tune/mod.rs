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
//! prune-first runway, proactive pruning, micro-compaction's cadence and reclaim gate,
//! insertion-time trimming, and the summary request's form: warm (the agent's own model, its
//! cached prefix at the hit price) or standalone (a model at
//! `auxiliary.compression.price_ratio` of the agent model's prices, from the starting
//! configuration). The search is a seeded random sample of the space (always including the
//! starting configuration), then rounds of one-knob moves from the points on the front, until
//! the budget of candidates is spent; when the request form is searched, the last candidate is
//! the recommendation with the other form (one more move when the search has evaluated it
//! already), so the recommendation's form is the cheaper of the two at its other settings. Every candidate replays every
//! session; a candidate with a window overflow is infeasible and never on the front. The
//! fractional knobs' values are cut to the ranges [`Config::validate`] accepts
//! ([`Config::f64_range`]), and a candidate that `validate` rejects is never evaluated, so the
//! tuner never proposes a configuration the loader would refuse.
//!
//! The cost is the issue units' cost under the price table ([`Row::unit_cost`]); under a
//! cache profile with prices, the profile's dollars without the main model's output (the
//! same for every policy); under a profile without prices (`local`), prompt input-token
//! equivalents plus the summary calls' ([`Row::summary_token_equivalents`]: at
//! `price_ratio` for standalone requests, so the request form is chosen there too).

mod knobs;
mod render;

use std::collections::HashSet;

use serde::Serialize;

use hermes_compaction::Config;
use hermes_compaction::core::Message;

pub use knobs::Knobs;
use knobs::{Rng, Space};

use crate::policy::Variant;
use crate::pricing::Pricing;
use crate::row::Row;
use crate::run::{Options, Progress, simulate};
use crate::{Error, Result, SummarizerFactory};

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
    /// Content recall, pooled: far identifiers held by unchanged original messages.
    pub content_recall: f64,
    /// Effective cost in the issue units: the cost plus the re-read cost
    /// ([`reread`](crate::reread)).
    pub effective_cost: f64,
    /// Requests that needed a re-read round.
    pub reread_rounds: u64,
    /// Tokens those rounds fetched again.
    pub reread_tokens: u64,
    /// Mean share of ledger facts (paths, commands, latest ask) in the prompt over requests.
    pub mean_retention: f64,
    /// Smallest share of facts in a prompt.
    pub min_retention: f64,
    /// Summarizer calls.
    pub summary_calls: u64,
    /// Of [`unit_cost`](Self::unit_cost), the summary calls' (at the summarizer's price
    /// ratio, [`Row::summary_unit_cost`]).
    pub summary_unit_cost: f64,
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
            content_recall: d.far_recall_content,
            effective_cost: total.effective_cost,
            reread_rounds: total.reread_rounds,
            reread_tokens: total.reread_tokens,
            mean_retention: d.mean_retention,
            min_retention: total.retention_min,
            summary_calls: total.summary_calls,
            summary_unit_cost: total.summary_unit_cost,
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
        Pricing::Profile(_) => total.prompt_token_equivalents + total.summary_token_equivalents,
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
    /// Whether the summary request's form (warm or standalone, [`Knobs::warm_cache`]) is
    /// part of the space (false: the starting configuration's form throughout).
    pub warm: bool,
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
            warm: true,
            min_recall: None,
            min_retention: None,
            max_summary_calls: None,
            threads: 0,
        }
    }
}

impl TuneOptions {
    /// Refuses limits given out of range, as the command line does:
    /// [`min_recall`](Self::min_recall) and [`min_retention`](Self::min_retention) are shares (0 to 1), the
    /// [`budget`](Self::budget) at least one candidate. [`tune`] itself takes any limits.
    ///
    /// ```
    /// use compaction_sim::tune::TuneOptions;
    ///
    /// assert!(TuneOptions::default().check().is_ok());
    /// let e = TuneOptions { min_recall: Some(1.5), ..TuneOptions::default() }.check().unwrap_err();
    /// assert_eq!(e.to_string(), "--min-recall 1.5: must be between 0 and 1");
    /// let e = TuneOptions { budget: 0, ..TuneOptions::default() }.check().unwrap_err();
    /// assert_eq!(e.to_string(), "--budget must be more than 0");
    /// ```
    ///
    /// # Errors
    ///
    /// The first limit out of range (retention, then recall, then the budget).
    pub fn check(&self) -> Result<()> {
        for (flag, v) in [
            ("--min-retention", self.min_retention),
            ("--min-recall", self.min_recall),
        ] {
            if let Some(r) = v
                && !(0.0..=1.0).contains(&r)
            {
                return Err(Error::Config(format!(
                    "{flag} {r}: must be between 0 and 1"
                )));
            }
        }
        if self.budget == 0 {
            return Err(Error::Config("--budget must be more than 0".into()));
        }
        Ok(())
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
    /// Whether the summary request's form was searched ([`TuneOptions::warm`]).
    pub warm_searched: bool,
    /// The standalone summary model's price per token relative to the agent model's, that
    /// the standalone points were priced at (`auxiliary.compression.price_ratio` of the
    /// starting configuration).
    pub price_ratio: f64,
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

    /// What the unit counts, in words (the tuned TOML's header says it beside the figure).
    pub fn meaning(self) -> &'static str {
        match self {
            CostUnit::Dollars => "dollars at the cache profile's prices, summaries included",
            CostUnit::IssueUnits => {
                "issue units of docs/ECONOMICS.md: the price table's cost of every request and \
                 summary"
            }
            CostUnit::TokenEquivalents => {
                "prompt input-token equivalents plus summary tokens (the profile has no prices)"
            }
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
/// `progress` is called after each candidate with (done, budget). Any limits are accepted
/// (one no point reaches keeps the starting configuration); [`TuneOptions::check`] is the
/// command line's range check.
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
        latency: crate::latency::LatencyOptions::default(),
        check_laws: false,
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
                foresight: 0,
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
        let k = Knobs::random(
            &space,
            &mut rng,
            options.micro,
            options.trim,
            (!options.warm).then_some(start.warm_cache),
        );
        if seen.insert(k.key()) && valid(&k) {
            first.push(k);
        }
    }
    evaluate(first, &mut all)?;
    // One candidate is kept for the recommendation's other request form.
    let reserve = usize::from(options.warm && budget > 1);
    let round = 8.max(budget / 8);
    let min_recall = options.min_recall.unwrap_or(all[0].far_recall);
    let choose = |all: &[Point]| -> (Vec<Point>, Vec<Point>, Option<Point>) {
        let feasible: Vec<Point> = all.iter().filter(|p| p.overflows == 0).cloned().collect();
        let front = pareto_front(&feasible);
        let chosen = front
            .iter()
            .filter(|p| p.meets(min_recall, options.min_retention, options.max_summary_calls))
            .min_by(|a, b| a.cost.total_cmp(&b.cost))
            .cloned();
        (feasible, front, chosen)
    };
    let mut form_checked = reserve == 0;
    loop {
        let limit = budget - if form_checked { 0 } else { reserve };
        while all.len() < limit {
            let feasible: Vec<Point> = all.iter().filter(|p| p.overflows == 0).cloned().collect();
            let front = pareto_front(&feasible);
            let parents: Vec<Knobs> = if front.is_empty() {
                vec![start]
            } else {
                front.iter().map(|p| p.knobs).collect()
            };
            let mut batch = Vec::new();
            let want = round.min(limit - all.len());
            let mut tries = 0;
            while batch.len() < want && tries < 100 * want {
                tries += 1;
                let parent = parents[rng.below(parents.len() as u64) as usize];
                let k =
                    parent.neighbour(&space, &mut rng, options.micro, options.trim, options.warm);
                if seen.insert(k.key()) && valid(&k) {
                    batch.push(k);
                }
            }
            if batch.is_empty() {
                break;
            }
            evaluate(batch, &mut all)?;
        }
        if form_checked {
            break;
        }
        form_checked = true;
        // The recommendation with the other request form, so the form is chosen by cost
        // (when the search has evaluated it already, the slot goes to one more move).
        let knobs = choose(&all).2.map_or(start, |p| p.knobs);
        let other = Knobs {
            warm_cache: !knobs.warm_cache,
            ..knobs
        };
        if seen.insert(other.key()) && valid(&other) {
            evaluate(vec![other], &mut all)?;
        }
    }
    let (feasible, front, chosen) = choose(&all);
    let baseline = all[0].clone();
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
        warm_searched: options.warm,
        price_ratio: base.auxiliary.compression.price_ratio,
    })
}
