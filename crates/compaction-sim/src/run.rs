//! Every transcript under every variant and pricing, in parallel, with the totals.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;

use hermes_compaction::core::Message;

use crate::latency::LatencyOptions;
use crate::policy::Variant;
use crate::pricing::{Prices, Pricing};
use crate::replay::{
    DEFAULT_REQUEST_GAP_SECS, LawFinding, Replay, ReplayOptions, TraceLine, TraceText, replay,
};
use crate::row::Row;
use crate::{Error, Result, SummarizerFactory};

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
    /// With [`Options::trace`]: every request of every replay, in the order of the rows.
    #[serde(skip)]
    pub trace: Vec<TraceLine>,
    /// With [`Options::trace_text`]: every distinct message of every traced prompt, once
    /// (by digest, across all replays), in the order of the rows.
    #[serde(skip)]
    pub trace_text: Vec<TraceText>,
    /// Whether every pass was checked against the laws ([`Options::check_laws`]).
    pub laws_checked: bool,
    /// With [`Options::check_laws`]: what the passes broke, in the order of the rows (empty
    /// when every pass kept every law).
    pub violations: Vec<LawFinding>,
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

/// How [`simulate`] runs, beyond the variants.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Each pricing replays every transcript under every variant.
    pub pricings: Vec<Pricing>,
    /// Seconds assumed between two requests when the messages carry no timestamps.
    pub request_gap_secs: u64,
    /// Record the trace.
    pub trace: bool,
    /// Record the text of the traced messages, each distinct one once.
    pub trace_text: bool,
    /// Worker threads (0: the available cores).
    pub threads: usize,
    /// The summarizer's latency and the summary prepared ahead.
    pub latency: LatencyOptions,
    /// Check every pass of every replay against the laws
    /// ([`ReplayOptions::check_laws`]); what they broke is in [`Simulation::violations`].
    pub check_laws: bool,
}

impl Default for Options {
    /// The price table, 30 s between requests, no trace, every core, the default latency
    /// model without a summary prepared ahead.
    fn default() -> Self {
        Options {
            pricings: vec![Pricing::Table(Prices::default())],
            request_gap_secs: DEFAULT_REQUEST_GAP_SECS,
            trace: false,
            trace_text: false,
            threads: 0,
            latency: LatencyOptions::default(),
            check_laws: false,
        }
    }
}

impl Options {
    /// The command line's rule for a trace: a trace (or its text) takes one pricing, since a
    /// trace line names no pricing ([`simulate`] itself records every pricing's requests).
    ///
    /// ```
    /// use compaction_sim::{Options, Pricing};
    ///
    /// let traced = Options { trace: true, ..Options::default() };
    /// assert!(traced.check().is_ok());
    /// let every = compaction_sim::pricing::profiles().into_iter().map(Pricing::Profile).collect();
    /// let e = Options { pricings: every, ..traced }.check().unwrap_err();
    /// assert_eq!(e.to_string(), "--trace and --trace-text take one pricing (not --cache-profile all)");
    /// ```
    ///
    /// # Errors
    ///
    /// [`trace`](Self::trace) or [`trace_text`](Self::trace_text) with several pricings;
    /// invalid [`latency`](Self::latency) options ([`LatencyOptions::check`]).
    pub fn check(&self) -> Result<()> {
        self.latency.check()?;
        if (self.trace || self.trace_text) && self.pricings.len() > 1 {
            return Err(Error::Config(
                "--trace and --trace-text take one pricing (not --cache-profile all)".into(),
            ));
        }
        Ok(())
    }
}

/// One finished replay, for a progress display.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a> {
    /// Replays finished so far.
    pub done: usize,
    /// Replays in all.
    pub total: usize,
    /// The variant just replayed.
    pub policy: &'a str,
    /// The transcript just replayed.
    pub transcript: &'a str,
}

/// Replays every transcript under every variant and pricing (in parallel) and computes the
/// totals. `summarizer` is called once per replay; `progress` after each.
pub fn simulate(
    inputs: &[(String, Vec<Message>)],
    variants: &[Variant],
    options: &Options,
    summarizer: SummarizerFactory<'_>,
    progress: &(dyn Fn(Progress<'_>) + Sync),
) -> Result<Simulation> {
    // Build once up front so a configuration error is reported before any work.
    summarizer()?;
    let jobs: Vec<(usize, usize, usize)> = (0..options.pricings.len())
        .flat_map(|k| {
            (0..inputs.len()).flat_map(move |i| (0..variants.len()).map(move |v| (k, i, v)))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Replay>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if options.threads == 0 {
        cores
    } else {
        options.threads
    };
    let workers = threads.min(jobs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let rt = match crate::runtime() {
                    Ok(rt) => rt,
                    Err(_) => return,
                };
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(k, i, v)) = jobs.get(j) else {
                        break;
                    };
                    let (name, msgs) = &inputs[i];
                    let replay_options = ReplayOptions {
                        pricing: options.pricings[k].clone(),
                        request_gap_secs: options.request_gap_secs,
                        trace: options.trace,
                        trace_text: options.trace_text,
                        latency: options.latency,
                        check_laws: options.check_laws,
                    };
                    let out = summarizer().and_then(|inner| {
                        rt.block_on(replay(name, msgs, &variants[v], inner, &replay_options))
                    });
                    if let Ok(mut r) = results.lock() {
                        r[j] = Some(out);
                    }
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(Progress {
                        done: n,
                        total: jobs.len(),
                        policy: &variants[v].name,
                        transcript: name,
                    });
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let mut rows = Vec::with_capacity(jobs.len());
    let mut trace = Vec::new();
    let mut trace_text = Vec::new();
    let mut texts_seen = std::collections::HashSet::new();
    let mut violations = Vec::new();
    for r in results {
        match r {
            Some(out) => {
                let out = out?;
                rows.push(out.row);
                violations.extend(out.violations);
                trace.extend(out.trace);
                for t in out.texts {
                    if texts_seen.insert(t.hash.clone()) {
                        trace_text.push(t);
                    }
                }
            }
            None => {
                return Err(Error::Config(
                    "a replay did not finish (could not start a runtime)".into(),
                ));
            }
        }
    }
    let mut totals = Vec::new();
    for pricing in &options.pricings {
        for v in variants {
            let of: Vec<&Row> = rows
                .iter()
                .filter(|r| r.policy == v.name && r.profile == pricing.name())
                .collect();
            totals.push(Row::total(&v.name, &of));
        }
    }
    Ok(Simulation {
        policies: variants.iter().map(|v| v.name.clone()).collect(),
        pricings: options.pricings.clone(),
        rows,
        totals,
        trace,
        trace_text,
        laws_checked: options.check_laws,
        violations,
    })
}
