//! The one scorer of a sequence of prompts: the library's replay feeds it the prompts its
//! compressor builds, [`score_foreign`] the prompts another compressor built (a trace in the
//! format of `simulate --trace` / `--trace-text`), so both sides are measured by the same
//! code: cost in the issue units, far recall and content recall
//! ([`recall`](crate::recall)), the [re-read model](crate::reread), ledger-fact retention.

use std::collections::HashMap;

use serde::Deserialize;

use hermes_compaction::core::Message;

use crate::recall::Recall;
use crate::reread::reread_cost;
use crate::retention::{Retention, Wire, digest};
use crate::row::{Row, unit_cost};
use crate::{Error, Result};

/// The scoring state of one session.
#[derive(Debug, Default)]
pub struct Scorer {
    recall: Recall,
    retention: Retention,
    /// Wire digests of the previous prompt.
    previous: Vec<u64>,
}

impl Scorer {
    /// Records the next message of the recorded session as the agent appended it (before any
    /// trimming): `original` is its wire form.
    pub fn observe(&mut self, m: &Message, original: &Wire) {
        self.retention.observe(m);
        self.recall.observe(original);
    }

    /// Tells retention's incremental search that the prompt was rewritten.
    pub fn rewritten(&mut self) {
        self.retention.rewritten();
    }

    /// Scores the request answered by `answer` (the next recorded message, not yet
    /// observed) with `prompt` as sent, into `row`. Returns how many leading messages the
    /// prompt shares with the previous one (the cache hits).
    pub fn request(&mut self, row: &mut Row, answer: &Wire, prompt: &[Wire]) -> usize {
        let common = self
            .previous
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| **a == b.hash)
            .count();
        let units: u64 = prompt.iter().map(Wire::units).sum();
        row.unit_prompt_tokens += units;
        row.unit_hit_tokens += prompt[..common].iter().map(Wire::units).sum::<u64>();
        row.unit_peak_tokens = row.unit_peak_tokens.max(units);
        if units > row.context_length {
            row.unit_overflows += 1;
        }
        let far = self.recall.request(answer, prompt);
        row.record_recall(far);
        // The re-read model: the content re-read since the last rewrite rides along (the
        // request above dropped it if this prompt is a rewrite).
        let carried = self.recall.carried_units();
        row.reread_carried_tokens += carried;
        let sources = self.recall.missing_sources(answer);
        if !sources.is_empty() {
            let fetched = self.recall.fetch(&sources);
            row.reread_rounds += 1;
            row.reread_resent_tokens += units + carried;
            row.reread_tokens += fetched;
        }
        let share = self.retention.share(prompt);
        row.retention_sum += share;
        row.retention_min = row.retention_min.min(share);
        self.previous.clear();
        self.previous.extend(prompt.iter().map(|w| w.hash));
        common
    }

    /// Closes `row` once the session is over and its summary tokens are in: the session's
    /// recall share, the cost in the issue units, the re-read cost and the effective cost,
    /// with the summary calls at the agent model's prices ([`finish_at`](Self::finish_at)
    /// with 1.0).
    pub fn finish(row: &mut Row) {
        Scorer::finish_at(row, 1.0);
    }

    /// [`finish`](Self::finish) with the summary calls at `summary_price_ratio` times the
    /// agent model's prices (a standalone summarizer's price ratio,
    /// [`summary_price_ratio`](crate::pricing::summary_price_ratio)).
    pub fn finish_at(row: &mut Row, summary_price_ratio: f64) {
        row.close_session_recall();
        // A warm-cache summary request's prefix is priced as the hit it is.
        row.summary_unit_cost = summary_price_ratio
            * crate::row::summary_unit_cost(
                row.summary_prompt_tokens,
                row.summary_prompt_hit_tokens,
                row.summary_output_tokens,
            );
        row.unit_cost =
            unit_cost(row.unit_prompt_tokens, row.unit_hit_tokens, 0, 0) + row.summary_unit_cost;
        row.reread_cost = reread_cost(row);
        row.effective_cost = row.unit_cost + row.reread_cost;
    }
}

/// One line of a foreign trace (the format of `simulate --trace`).
#[derive(Clone, Debug, Deserialize)]
pub struct ForeignLine {
    /// The compressor's name.
    pub policy: String,
    /// The session, by file name with or without `.jsonl`.
    pub transcript: String,
    /// Request number within the session, from 0: the n-th assistant message, not counting
    /// one that opens the session.
    pub request: u64,
    /// Per prompt message: Unicode scalar values of its wire JSON.
    pub chars: Vec<u64>,
    /// Per prompt message: its digest in the trace's own hash (any string; looked up in the
    /// text file).
    pub hashes: Vec<String>,
}

/// A foreign trace: its lines, the text of its messages by hash, and its summary calls.
#[derive(Clone, Debug, Default)]
pub struct ForeignTrace {
    /// One per request.
    pub lines: Vec<ForeignLine>,
    /// The wire JSON of every message, by the trace's hash.
    pub texts: HashMap<String, String>,
    /// Summary calls, prompt tokens and output tokens of the whole run (the totals file),
    /// added to the totals row only (a trace does not say which session they belong to).
    pub summary: Option<(u64, u64, u64)>,
}

#[derive(Deserialize)]
struct TextLine {
    hash: String,
    wire: String,
}

#[derive(Deserialize)]
struct TotalsFile {
    totals: Vec<TotalsLine>,
}

#[derive(Deserialize)]
struct TotalsLine {
    summary_calls: u64,
    summary_prompt_tokens: u64,
    summary_output_tokens: u64,
}

impl ForeignTrace {
    /// Reads a trace (`trace`: JSON lines as `simulate --trace` writes them), the text of
    /// its messages (`text`: `{"hash", "wire"}` lines) and optionally its totals
    /// (`{"totals": [{"summary_calls", "summary_prompt_tokens", "summary_output_tokens"}]}`,
    /// summed). `names` name the three inputs in errors.
    ///
    /// # Errors
    ///
    /// A line that is not what it should be, named by file and line number.
    pub fn parse(
        trace: &str,
        text: &str,
        totals: Option<&str>,
        names: [&str; 3],
    ) -> Result<ForeignTrace> {
        let bad = |file: &str, n: usize, e: &dyn std::fmt::Display| {
            Error::Config(format!("{file}:{}: {e}", n + 1))
        };
        let mut out = ForeignTrace::default();
        for (n, line) in trace.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let l: ForeignLine = serde_json::from_str(line).map_err(|e| bad(names[0], n, &e))?;
            if l.chars.len() != l.hashes.len() {
                return Err(bad(names[0], n, &"chars and hashes differ in length"));
            }
            out.lines.push(l);
        }
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let t: TextLine = serde_json::from_str(line).map_err(|e| bad(names[1], n, &e))?;
            out.texts.insert(t.hash, t.wire);
        }
        if let Some(totals) = totals {
            let f: TotalsFile = serde_json::from_str(totals)
                .map_err(|e| Error::Config(format!("{}: {e}", names[2])))?;
            let sum = f.totals.iter().fold((0, 0, 0), |a, t| {
                (
                    a.0 + t.summary_calls,
                    a.1 + t.summary_prompt_tokens,
                    a.2 + t.summary_output_tokens,
                )
            });
            out.summary = Some(sum);
        }
        Ok(out)
    }

    /// The compressor's name (the first line's policy).
    pub fn policy(&self) -> &str {
        self.lines.first().map_or("foreign", |l| l.policy.as_str())
    }
}

/// Scores a foreign trace over the recorded sessions `inputs` (file name, messages) with the
/// same [`Scorer`] as a replay: one row per input (named as the input), in input order, and
/// the totals row (with the trace's summary tokens). `profile` names the rows' pricing.
///
/// A prompt message counts as an unchanged original when its wire JSON is identical to the
/// library's wire JSON of a recorded message (the library's digest of the text is used, not
/// the trace's own hash).
///
/// # Errors
///
/// An input without requests in the trace (or a trace session without an input), a request
/// count that differs from the session's, or a hash the text file lacks.
pub fn score_foreign(
    trace: &ForeignTrace,
    inputs: &[(String, Vec<Message>)],
    context_length: u64,
    profile: &str,
) -> Result<(Vec<Row>, Row)> {
    let policy = trace.policy().to_owned();
    let stem = |name: &str| name.strip_suffix(".jsonl").unwrap_or(name).to_owned();
    let mut by_session: HashMap<String, Vec<&ForeignLine>> = HashMap::new();
    for l in &trace.lines {
        by_session.entry(stem(&l.transcript)).or_default().push(l);
    }
    for name in by_session.keys() {
        if !inputs.iter().any(|(n, _)| stem(n) == *name) {
            return Err(Error::Config(format!(
                "the trace has session {name}, which is not among the inputs"
            )));
        }
    }
    let mut rows = Vec::with_capacity(inputs.len());
    for (name, msgs) in inputs {
        let Some(lines) = by_session.get_mut(&stem(name)) else {
            return Err(Error::Config(format!(
                "the trace has no requests for {name}: score a trace over the same inputs"
            )));
        };
        lines.sort_by_key(|l| l.request);
        let requests = msgs
            .iter()
            .enumerate()
            .filter(|(i, m)| m.is_assistant() && *i > 0)
            .count();
        if lines.len() != requests {
            return Err(Error::Config(format!(
                "{name}: the trace has {} requests, the session {requests} assistant messages",
                lines.len()
            )));
        }
        let mut row = Row {
            policy: policy.clone(),
            profile: profile.into(),
            transcript: name.clone(),
            transcripts: 1,
            messages: msgs.len() as u64,
            context_length,
            retention_min: 1.0,
            ..Row::default()
        };
        let mut scorer = Scorer::default();
        let mut next = lines.iter();
        let mut prompt: Vec<Wire> = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            let original = Wire::of(m);
            if m.is_user() {
                row.turns += 1;
            }
            if m.is_assistant() && i > 0 {
                let Some(line) = next.next() else {
                    break;
                };
                prompt.clear();
                for (hash, chars) in line.hashes.iter().zip(&line.chars) {
                    let Some(json) = trace.texts.get(hash) else {
                        return Err(Error::Config(format!(
                            "{name}, request {}: message {hash} is not in the text file",
                            line.request
                        )));
                    };
                    prompt.push(Wire {
                        hash: digest(json),
                        json: json.clone(),
                        chars: *chars,
                    });
                }
                scorer.request(&mut row, &original, &prompt);
                row.requests += 1;
            }
            scorer.observe(m, &original);
        }
        Scorer::finish(&mut row);
        rows.push(row);
    }
    let refs: Vec<&Row> = rows.iter().collect();
    let mut total = Row::total(&policy, &refs);
    if let Some((calls, input, output)) = trace.summary {
        total.summary_calls = calls;
        total.summary_prompt_tokens = input;
        total.summary_output_tokens = output;
    }
    Scorer::finish(&mut total);
    // The totals' session figures are sums of the rows', not of the pooled total.
    total.far_sessions = refs.iter().map(|r| r.far_sessions).sum();
    total.far_session_share_sum = refs.iter().map(|r| r.far_session_share_sum).sum();
    Ok((rows, total))
}
