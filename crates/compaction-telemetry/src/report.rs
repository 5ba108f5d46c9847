//! The report: turns telemetry logs into the numbers that judge compaction on a session's
//! trajectory.
//!
//! Input is read line by line with a bounded line length ([`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES)),
//! so memory does not grow with the size of the logs. Per session the report keeps a few
//! counters and, for medians, a sparse value -> count map (durations in ms, occupancy in
//! tenths of a percent, message indexes): memory grows with the number of sessions and of
//! distinct values, never with the number of lines. Medians are exact.
//!
//! Accepted input: plain text lines holding a telemetry prefix anywhere (our human
//! formatter, Hermes Agent's `agent.log`), JSON lines of the tracing JSON formatter, and gzip
//! files of either (feature `gzip`). Lines that are not UTF-8, longer than the cap, or carry a
//! prefix without a readable JSON object are skipped and counted, never fatal.
//!
//! Definitions used below:
//! - *compression event*: a change of the transcript that breaks the prompt cache: a
//!   committed batch attempt (`compacted` or `prune_only`) or a micro pass that `absorbed`
//!   or did a `defrag`.
//! - *summary call*: a micro pass that called the summarizer (`absorbed`, `summarize_failed`, `store_failed`,
//!   `defrag`, `defrag_failed`), or a batch attempt that was `compacted` or reports summarizer
//!   tokens or time.
//! - *turns between compressions*: the number of turn lines between consecutive compression
//!   events of one session, averaged over sessions that log turns.
//! - *tokens reclaimed*: `tokens_before - tokens_after` of a compression event.
//! - *insert trims*: insertion-time trims that were due (`trimmed`, `kept_no_store`,
//!   `kept_store_failed`); *tokens saved by trimming* sums `tokens_saved` of the `trimmed`
//!   ones (a message kept whole saved nothing, whatever its line says).
//!
//! Trimming is reported on its own and folded into no other figure. `net tokens saved` is
//! documented as the micro passes' sum of `-tokens_delta`, not as a total over mechanisms, and
//! a trim is not a compression event: it shortens a message before the message joins the
//! transcript, so it breaks no prompt cache and reclaims nothing from the transcript. The
//! economics (events, tokens reclaimed per event, cache-break depth) therefore leave it out.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
pub use crate::scan::InputStats;
use crate::scan::{self, BatchRec, MicroRec, Record, TrimRec, TurnRec};
use crate::stats::Counts;

/// What [`run`] prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Add one section per session id after the overall one.
    pub per_session: bool,
    /// Print JSON instead of the human table.
    pub json: bool,
}

/// Reads `paths` and renders the report: the human table, or pretty JSON with
/// `options.json`. This is what `hermes-compaction report` calls.
pub fn run<P: AsRef<Path>>(paths: &[P], options: ReportOptions) -> Result<String> {
    let report = Report::from_paths(paths, options)?;
    if options.json {
        report.to_json()
    } else {
        Ok(report.to_string())
    }
}

/// The report over a set of logs. `Display` renders the human table; `Serialize` the JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// What was read and what was skipped.
    pub input: InputStats,
    /// Every session together.
    pub overall: Summary,
    /// One summary per session id (empty unless asked for). Lines without a session id are
    /// grouped under `""`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sessions: BTreeMap<String, Summary>,
}

impl Report {
    /// Reads log files (plain or gzip) one after the other.
    pub fn from_paths<P: AsRef<Path>>(paths: &[P], options: ReportOptions) -> Result<Report> {
        let mut builder = ReportBuilder::new();
        for path in paths {
            builder.add_path(path.as_ref())?;
        }
        Ok(builder.finish(options))
    }

    /// Reads logs from readers (plain or gzip) one after the other.
    pub fn from_readers<R: Read>(
        readers: impl IntoIterator<Item = R>,
        options: ReportOptions,
    ) -> Result<Report> {
        let mut builder = ReportBuilder::new();
        for reader in readers {
            builder.add_reader(reader)?;
        }
        Ok(builder.finish(options))
    }

    /// Pretty-printed JSON of the report.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(Error::Json)
    }
}

/// Builds a [`Report`] from inputs added one at a time.
#[derive(Debug, Default)]
pub struct ReportBuilder {
    input: InputStats,
    sessions: BTreeMap<String, Acc>,
}

impl ReportBuilder {
    /// An empty builder.
    pub fn new() -> ReportBuilder {
        ReportBuilder::default()
    }

    /// Streams one log file into the report.
    pub fn add_path(&mut self, path: &Path) -> Result<()> {
        let sessions = &mut self.sessions;
        scan::scan_path(path, &mut self.input, &mut |r| feed(sessions, r))
    }

    /// Streams one reader into the report.
    pub fn add_reader(&mut self, reader: impl Read) -> Result<()> {
        let sessions = &mut self.sessions;
        scan::scan_reader(reader, &mut self.input, &mut |r| feed(sessions, r))
    }

    /// What has been read so far.
    pub fn input(&self) -> &InputStats {
        &self.input
    }

    /// The report over everything added.
    pub fn finish(self, options: ReportOptions) -> Report {
        let mut total = Acc::default();
        for acc in self.sessions.values() {
            total.merge(acc);
        }
        let overall = Summary::new(&total, self.sessions.len() as u64);
        let sessions = if options.per_session {
            self.sessions
                .iter()
                .map(|(id, acc)| (id.clone(), Summary::new(acc, 1)))
                .collect()
        } else {
            BTreeMap::new()
        };
        Report {
            input: self.input,
            overall,
            sessions,
        }
    }
}

/// The numbers for one session or for all of them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Sessions covered.
    pub sessions: u64,
    /// Micro passes.
    pub micro: MicroStats,
    /// Batch attempts.
    pub batch: BatchStats,
    /// Turns.
    pub turns: TurnStats,
    /// Insertion-time trims.
    pub trims: TrimStats,
    /// The session-economics metrics of the cache-aware compaction note.
    pub economics: Economics,
}

/// Micro-pass numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MicroStats {
    /// Micro pass lines.
    pub passes: u64,
    /// Passes per outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// Sum of `-tokens_delta` over all passes.
    pub net_tokens_saved: i64,
    /// Mean `exchange_tokens` of absorbed passes.
    pub mean_absorbed_exchange_tokens: Option<f64>,
    /// Pass duration.
    pub duration_ms: Option<MedianMax>,
    /// Occupancy after each pass, as a percentage of the threshold.
    pub occupancy_pct: Option<Spread>,
}

/// Batch-attempt numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchStats {
    /// Attempt lines.
    pub attempts: u64,
    /// Attempts per outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// Failed attempts per failure class.
    pub failure_classes: BTreeMap<String, u64>,
    /// Committed attempts (`compacted` + `prune_only`).
    pub compactions: u64,
    /// Attempts that used the deterministic fallback summary.
    pub fallback_used: u64,
    /// Micro passes per committed batch compaction.
    pub micro_passes_per_batch: Option<f64>,
    /// Attempt duration.
    pub duration_ms: Option<MedianMax>,
}

/// Turn numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TurnStats {
    /// Turn lines.
    pub turns: u64,
    /// Occupancy at the end of each turn.
    pub occupancy_pct: Option<Spread>,
}

/// Insertion-time trim numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrimStats {
    /// Trim lines (trims that were due, whatever their outcome).
    pub trims: u64,
    /// Trims per outcome (`trimmed`, `kept_no_store`, `kept_store_failed`).
    pub outcomes: BTreeMap<String, u64>,
    /// Trims per source (`tool_result`, `user_paste`); lines without one are not counted here.
    pub sources: BTreeMap<String, u64>,
    /// Sum of `tokens_saved` over `trimmed` trims.
    pub tokens_saved: u64,
}

/// Session economics (how often the cache broke, what it cost).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Economics {
    /// Compression events (cache-breaking rewrites).
    pub compression_events: u64,
    /// Compression events per 100 turns; `None` without turn lines.
    pub compression_events_per_100_turns: Option<f64>,
    /// Mean turns between consecutive compression events.
    pub mean_turns_between_compressions: Option<f64>,
    /// Summarizer calls.
    pub summary_calls: u64,
    /// Summarizer calls per session.
    pub summary_calls_per_session: Option<f64>,
    /// Mean `tokens_before - tokens_after` per compression event.
    pub mean_tokens_reclaimed_per_event: Option<f64>,
    /// Sum of the provider-reported prompt tokens of turn lines.
    pub prompt_tokens: u64,
    /// Sum of the summarizer's prompt plus completion tokens.
    pub summary_tokens: u64,
    /// `prompt_tokens + summary_tokens`.
    pub prompt_plus_summary_tokens: u64,
    /// Earliest changed message index of compression events (cache-break depth).
    pub earliest_changed_index: Option<MinMedian>,
    /// Batch compactions accepted after pruning alone.
    pub prune_only: u64,
    /// Batch compactions that summarized.
    pub full_summary: u64,
    /// `prune_only / full_summary`; `None` when there was no full summary.
    pub prune_only_to_full_summary: Option<f64>,
}

/// Median and maximum.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MedianMax {
    /// The median.
    pub median: f64,
    /// The maximum.
    pub max: u64,
}

/// Minimum, median and maximum of a percentage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    /// The minimum.
    pub min: f64,
    /// The median.
    pub median: f64,
    /// The maximum.
    pub max: f64,
}

/// Minimum and median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MinMedian {
    /// The minimum.
    pub min: u64,
    /// The median.
    pub median: f64,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.input;
        writeln!(
            f,
            "telemetry report: {} input(s), {} lines, {} events, {} skipped \
             ({} malformed, {} not UTF-8, {} overlong), {} truncated input(s)",
            i.inputs,
            i.lines,
            i.events,
            i.skipped_lines(),
            i.malformed_lines,
            i.non_utf8_lines,
            i.overlong_lines,
            i.truncated_inputs
        )?;
        writeln!(f)?;
        writeln!(f, "== overall: {} session(s) ==", self.overall.sessions)?;
        self.overall.write_table(f, true)?;
        for (id, summary) in &self.sessions {
            writeln!(f)?;
            let id = if id.is_empty() { "(no session id)" } else { id };
            writeln!(f, "== session {id} ==")?;
            summary.write_table(f, false)?;
        }
        Ok(())
    }
}

impl Summary {
    fn new(acc: &Acc, sessions: u64) -> Summary {
        let events = acc.events;
        let summary_tokens = acc.summary_tokens;
        Summary {
            sessions,
            micro: MicroStats {
                passes: acc.micro_passes,
                outcomes: acc.micro_outcomes.clone(),
                net_tokens_saved: acc.micro_saved,
                mean_absorbed_exchange_tokens: mean(acc.absorbed_tokens, acc.absorbed_sized),
                duration_ms: median_max(&acc.micro_ms),
                occupancy_pct: spread(&acc.micro_occupancy),
            },
            batch: BatchStats {
                attempts: acc.batch_attempts,
                outcomes: acc.batch_outcomes.clone(),
                failure_classes: acc.failure_classes.clone(),
                compactions: acc.batch_compactions,
                fallback_used: acc.fallback_used,
                micro_passes_per_batch: ratio(acc.micro_passes, acc.batch_compactions),
                duration_ms: median_max(&acc.batch_ms),
            },
            turns: TurnStats {
                turns: acc.turns,
                occupancy_pct: spread(&acc.turn_occupancy),
            },
            trims: TrimStats {
                trims: acc.trims,
                outcomes: acc.trim_outcomes.clone(),
                sources: acc.trim_sources.clone(),
                tokens_saved: acc.trim_saved,
            },
            economics: Economics {
                compression_events: events,
                compression_events_per_100_turns: ratio(events * 100, acc.turns),
                mean_turns_between_compressions: ratio(acc.gap_turns, acc.gap_count),
                summary_calls: acc.summary_calls,
                summary_calls_per_session: ratio(acc.summary_calls, sessions),
                mean_tokens_reclaimed_per_event: mean_signed(acc.reclaimed, acc.reclaimed_sized),
                prompt_tokens: acc.prompt_tokens,
                summary_tokens,
                prompt_plus_summary_tokens: acc.prompt_tokens.saturating_add(summary_tokens),
                earliest_changed_index: acc.earliest_changed.min().and_then(|min| {
                    Some(MinMedian {
                        min,
                        median: acc.earliest_changed.median()?,
                    })
                }),
                prune_only: acc.prune_only,
                full_summary: acc.full_summary,
                prune_only_to_full_summary: ratio(acc.prune_only, acc.full_summary),
            },
        }
    }

    fn write_table(&self, f: &mut fmt::Formatter<'_>, overall: bool) -> fmt::Result {
        let (m, b, t, e) = (&self.micro, &self.batch, &self.turns, &self.economics);
        let tr = &self.trims;
        row(
            f,
            "micro passes",
            format!("{}{}", m.passes, mix(&m.outcomes)),
        )?;
        row(f, "net tokens saved", m.net_tokens_saved)?;
        row(
            f,
            "mean absorbed exchange tokens",
            num(m.mean_absorbed_exchange_tokens),
        )?;
        row(f, "pass duration ms", med_max(m.duration_ms))?;
        row(
            f,
            "occupancy % (micro passes)",
            spread_text(m.occupancy_pct),
        )?;
        row(
            f,
            "batch attempts",
            format!("{}{}", b.attempts, mix(&b.outcomes)),
        )?;
        if !b.failure_classes.is_empty() {
            row(f, "batch failure classes", mix_list(&b.failure_classes))?;
        }
        row(f, "batch compactions", b.compactions)?;
        row(f, "batch fallback summaries", b.fallback_used)?;
        row(f, "batch duration ms", med_max(b.duration_ms))?;
        row(f, "micro passes per batch", num(b.micro_passes_per_batch))?;
        row(
            f,
            "insert trims",
            format!("{}{}", tr.trims, mix(&tr.outcomes)),
        )?;
        if !tr.sources.is_empty() {
            row(f, "insert trim sources", mix_list(&tr.sources))?;
        }
        row(f, "tokens saved by trimming", tr.tokens_saved)?;
        row(f, "turns", t.turns)?;
        row(f, "occupancy % (turns)", spread_text(t.occupancy_pct))?;
        row(f, "compression events", e.compression_events)?;
        row(
            f,
            "compression events / 100 turns",
            num(e.compression_events_per_100_turns),
        )?;
        row(
            f,
            "mean turns between compressions",
            num(e.mean_turns_between_compressions),
        )?;
        if overall {
            row(
                f,
                "summary calls",
                format!(
                    "{} ({} per session)",
                    e.summary_calls,
                    num(e.summary_calls_per_session)
                ),
            )?;
        } else {
            row(f, "summary calls", e.summary_calls)?;
        }
        row(
            f,
            "mean tokens reclaimed per event",
            num(e.mean_tokens_reclaimed_per_event),
        )?;
        row(
            f,
            "prompt + summary tokens",
            format!(
                "{} (prompt {}, summary {})",
                e.prompt_plus_summary_tokens, e.prompt_tokens, e.summary_tokens
            ),
        )?;
        row(
            f,
            "earliest changed index",
            match e.earliest_changed_index {
                Some(x) => format!("min {}, median {}", x.min, one(x.median)),
                None => "-".into(),
            },
        )?;
        row(
            f,
            "prune-only : full-summary",
            format!(
                "{} : {} (ratio {})",
                e.prune_only,
                e.full_summary,
                num(e.prune_only_to_full_summary)
            ),
        )
    }
}

/// Running totals of one session (or, merged, of many).
#[derive(Clone, Debug, Default)]
struct Acc {
    micro_passes: u64,
    micro_outcomes: BTreeMap<String, u64>,
    micro_saved: i64,
    absorbed_tokens: u64,
    absorbed_sized: u64,
    micro_ms: Counts,
    /// Tenths of a percent.
    micro_occupancy: Counts,

    batch_attempts: u64,
    batch_outcomes: BTreeMap<String, u64>,
    failure_classes: BTreeMap<String, u64>,
    batch_compactions: u64,
    fallback_used: u64,
    batch_ms: Counts,
    prune_only: u64,
    full_summary: u64,

    turns: u64,
    /// Tenths of a percent.
    turn_occupancy: Counts,
    prompt_tokens: u64,

    trims: u64,
    trim_outcomes: BTreeMap<String, u64>,
    trim_sources: BTreeMap<String, u64>,
    trim_saved: u64,

    events: u64,
    reclaimed: i64,
    reclaimed_sized: u64,
    earliest_changed: Counts,
    summary_calls: u64,
    summary_tokens: u64,
    /// Turn position (turn lines seen in the session) of the last compression event.
    last_event_at: Option<u64>,
    gap_turns: u64,
    gap_count: u64,
}

fn feed(sessions: &mut BTreeMap<String, Acc>, record: Record) {
    let id = record.session();
    if !sessions.contains_key(id) {
        sessions.insert(id.to_owned(), Acc::default());
    }
    if let Some(acc) = sessions.get_mut(id) {
        match &record {
            Record::Micro(r) => acc.micro(r),
            Record::Batch(r) => acc.batch(r),
            Record::Turn(r) => acc.turn(r),
            Record::Trim(r) => acc.trim(r),
        }
    }
}

impl Acc {
    fn micro(&mut self, r: &MicroRec) {
        self.micro_passes += 1;
        *self.micro_outcomes.entry(r.outcome.clone()).or_insert(0) += 1;
        let reclaimed = r.reclaimed();
        self.micro_saved = self.micro_saved.saturating_add(reclaimed.unwrap_or(0));
        if r.outcome == "absorbed"
            && let Some(t) = r.exchange_tokens
        {
            self.absorbed_tokens = self.absorbed_tokens.saturating_add(t);
            self.absorbed_sized += 1;
        }
        if let Some(ms) = r.duration_ms {
            self.micro_ms.add(ms);
        }
        if let Some(p) = r.occupancy_pct {
            self.micro_occupancy.add(tenths(p));
        }
        self.summary_tokens = self
            .summary_tokens
            .saturating_add(r.summary_tokens.unwrap_or(0));
        if matches!(
            r.outcome.as_str(),
            "absorbed" | "summarize_failed" | "defrag" | "defrag_failed" | "store_failed"
        ) {
            self.summary_calls += 1;
        }
        if matches!(r.outcome.as_str(), "absorbed" | "defrag") {
            self.compression_event(reclaimed, r.earliest_changed_index);
        }
    }

    fn batch(&mut self, r: &BatchRec) {
        self.batch_attempts += 1;
        *self.batch_outcomes.entry(r.outcome.clone()).or_insert(0) += 1;
        if let Some(class) = &r.failure_class {
            *self.failure_classes.entry(class.clone()).or_insert(0) += 1;
        }
        if r.fallback_used {
            self.fallback_used += 1;
        }
        if let Some(ms) = r.duration_ms {
            self.batch_ms.add(ms);
        }
        let summary_tokens = r.summary_tokens.unwrap_or(0);
        self.summary_tokens = self.summary_tokens.saturating_add(summary_tokens);
        match r.outcome.as_str() {
            "prune_only" => self.prune_only += 1,
            "compacted" => self.full_summary += 1,
            _ => {}
        }
        if r.outcome == "compacted" || summary_tokens > 0 || r.summarize_ms.unwrap_or(0) > 0 {
            self.summary_calls += 1;
        }
        if r.committed() {
            self.batch_compactions += 1;
            let reclaimed = match (r.tokens_before, r.tokens_after) {
                (Some(b), Some(a)) => Some(i128::from(b) - i128::from(a)),
                _ => None,
            }
            .map(|d| d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64);
            self.compression_event(reclaimed, r.earliest_changed_index);
        }
    }

    fn turn(&mut self, r: &TurnRec) {
        self.turns += 1;
        self.prompt_tokens = self
            .prompt_tokens
            .saturating_add(r.prompt_tokens.unwrap_or(0));
        if let Some(p) = r.occupancy_pct {
            self.turn_occupancy.add(tenths(p));
        }
    }

    fn trim(&mut self, r: &TrimRec) {
        self.trims += 1;
        *self.trim_outcomes.entry(r.outcome.clone()).or_insert(0) += 1;
        if let Some(source) = &r.source {
            *self.trim_sources.entry(source.clone()).or_insert(0) += 1;
        }
        self.trim_saved = self.trim_saved.saturating_add(r.saved());
    }

    fn compression_event(&mut self, reclaimed: Option<i64>, earliest: Option<u64>) {
        self.events += 1;
        if let Some(r) = reclaimed {
            self.reclaimed = self.reclaimed.saturating_add(r);
            self.reclaimed_sized += 1;
        }
        if let Some(i) = earliest {
            self.earliest_changed.add(i);
        }
        // Gaps are measured in turn lines; a session that logs no turns has none.
        if let Some(prev) = self.last_event_at
            && self.turns > 0
        {
            self.gap_turns += self.turns - prev;
            self.gap_count += 1;
        }
        self.last_event_at = Some(self.turns);
    }

    fn merge(&mut self, o: &Acc) {
        self.micro_passes += o.micro_passes;
        add_mix(&mut self.micro_outcomes, &o.micro_outcomes);
        self.micro_saved = self.micro_saved.saturating_add(o.micro_saved);
        self.absorbed_tokens = self.absorbed_tokens.saturating_add(o.absorbed_tokens);
        self.absorbed_sized += o.absorbed_sized;
        self.micro_ms.merge(&o.micro_ms);
        self.micro_occupancy.merge(&o.micro_occupancy);
        self.batch_attempts += o.batch_attempts;
        add_mix(&mut self.batch_outcomes, &o.batch_outcomes);
        add_mix(&mut self.failure_classes, &o.failure_classes);
        self.batch_compactions += o.batch_compactions;
        self.fallback_used += o.fallback_used;
        self.batch_ms.merge(&o.batch_ms);
        self.prune_only += o.prune_only;
        self.full_summary += o.full_summary;
        self.turns += o.turns;
        self.turn_occupancy.merge(&o.turn_occupancy);
        self.prompt_tokens = self.prompt_tokens.saturating_add(o.prompt_tokens);
        self.trims += o.trims;
        add_mix(&mut self.trim_outcomes, &o.trim_outcomes);
        add_mix(&mut self.trim_sources, &o.trim_sources);
        self.trim_saved = self.trim_saved.saturating_add(o.trim_saved);
        self.events += o.events;
        self.reclaimed = self.reclaimed.saturating_add(o.reclaimed);
        self.reclaimed_sized += o.reclaimed_sized;
        self.earliest_changed.merge(&o.earliest_changed);
        self.summary_calls += o.summary_calls;
        self.summary_tokens = self.summary_tokens.saturating_add(o.summary_tokens);
        self.gap_turns += o.gap_turns;
        self.gap_count += o.gap_count;
    }
}

fn add_mix(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, n) in from {
        *into.entry(k.clone()).or_insert(0) += n;
    }
}

fn tenths(pct: f64) -> u64 {
    (pct * 10.0).round().clamp(0.0, u64::MAX as f64) as u64
}

/// Rounds to two decimals, the precision of every derived number in the report.
fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| r2(a as f64 / b as f64))
}

fn mean(sum: u64, n: u64) -> Option<f64> {
    ratio(sum, n)
}

fn mean_signed(sum: i64, n: u64) -> Option<f64> {
    (n > 0).then(|| r2(sum as f64 / n as f64))
}

fn median_max(c: &Counts) -> Option<MedianMax> {
    Some(MedianMax {
        median: r2(c.median()?),
        max: c.max()?,
    })
}

fn spread(c: &Counts) -> Option<Spread> {
    if c.is_empty() {
        return None;
    }
    Some(Spread {
        min: c.min()? as f64 / 10.0,
        median: r2(c.median()? / 10.0),
        max: c.max()? as f64 / 10.0,
    })
}

fn row(f: &mut fmt::Formatter<'_>, label: &str, value: impl fmt::Display) -> fmt::Result {
    writeln!(f, "  {label:<34}{value}")
}

fn mix(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return String::new();
    }
    format!(" ({})", mix_list(m))
}

fn mix_list(m: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
    parts.join(", ")
}

fn one(x: f64) -> String {
    format!("{x:.1}")
}

fn num(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), one)
}

fn med_max(x: Option<MedianMax>) -> String {
    x.map_or_else(
        || "-".into(),
        |x| format!("median {}, max {}", one(x.median), x.max),
    )
}

fn spread_text(x: Option<Spread>) -> String {
    x.map_or_else(
        || "-".into(),
        |x| {
            format!(
                "min {}, median {}, max {}",
                one(x.min),
                one(x.median),
                one(x.max)
            )
        },
    )
}
