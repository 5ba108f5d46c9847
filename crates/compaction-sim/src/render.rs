//! What a simulation prints: the side-by-side table, the cost-by-profile summary, the JSON,
//! and the progress bar of a long run (a simulation's replays, a tuning's candidates).

use std::fmt::Write as _;

use crate::pricing::Pricing;
use crate::row::{Derived, Row};
use crate::run::Simulation;

impl Simulation {
    /// The text report: for each pricing, a table per transcript (with `per_transcript`)
    /// and the totals table, then the cost by profile when there are several pricings.
    /// `transcripts` are the names of the inputs, in order.
    pub fn report(&self, transcripts: &[&str], per_transcript: bool) -> String {
        let mut text = String::new();
        for pricing in &self.pricings {
            let name = pricing.name();
            if per_transcript {
                for input in transcripts {
                    let rows: Vec<_> = self
                        .rows
                        .iter()
                        .filter(|r| r.transcript == *input && r.profile == name)
                        .collect();
                    text.push_str(&table(&format!("{input} [{name}]"), &rows));
                    text.push('\n');
                }
            }
            let title = format!("{} transcript(s), totals [{name}]", transcripts.len());
            text.push_str(&table(&title, &self.totals_of(name)));
            text.push('\n');
        }
        if self.pricings.len() > 1 {
            text.push_str(&cost_by_profile(self));
        }
        text
    }

    /// [`trace`](Self::trace) as JSON lines (`text = false`), or
    /// [`trace_text`](Self::trace_text) (`text = true`).
    pub fn trace_jsonl(&self, text: bool) -> String {
        let lines: Vec<serde_json::Result<String>> = if text {
            self.trace_text.iter().map(serde_json::to_string).collect()
        } else {
            self.trace.iter().map(serde_json::to_string).collect()
        };
        let mut out = String::new();
        for line in lines {
            // Plain structs of strings and numbers: serializing cannot fail.
            out.push_str(&line.unwrap_or_default());
            out.push('\n');
        }
        out
    }
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

/// The simulation as JSON: rows and totals (each with its derived metrics, the waits at the
/// trigger and of micro passes among them, and its `profile`),
/// `prices` (the price table when one was used, else null), and `profiles`: per pricing its
/// name, its settings, its totals and the cheapest policy.
pub fn to_json(sim: &Simulation) -> serde_json::Value {
    let row = |r: &Row| {
        let mut v = serde_json::to_value(r).unwrap_or_default();
        if let (Some(obj), Ok(mut d)) = (v.as_object_mut(), serde_json::to_value(r.derived())) {
            if let Some(d) = d.as_object_mut() {
                let waits = [
                    ("trigger_wait", r.latency.trigger()),
                    ("micro_wait", r.latency.micro()),
                ];
                for (key, w) in waits {
                    d.insert(key.into(), serde_json::to_value(w).unwrap_or_default());
                }
            }
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
    let mut out = serde_json::json!({
        "policies": sim.policies,
        "prices": prices,
        "profiles": profiles,
        "rows": sim.rows.iter().map(row).collect::<Vec<_>>(),
        "totals": sim.totals.iter().map(row).collect::<Vec<_>>(),
    });
    if sim.laws_checked
        && let Some(obj) = out.as_object_mut()
    {
        obj.insert(
            "law_violations".into(),
            serde_json::to_value(&sim.violations).unwrap_or_default(),
        );
    }
    out
}

/// What `simulate --check-laws` prints after its tables: one line per violation (policy,
/// transcript, request, hook, pass kind, the violation as the checker names it), or one line
/// saying that every pass kept every law.
///
/// ```
/// use compaction_sim::LawFinding;
/// use compaction_sim::render::law_lines;
///
/// assert_eq!(law_lines(&[], 42), "laws: every pass of the 42 replays kept every law\n");
/// let found = LawFinding {
///     policy: "micro".into(),
///     transcript: "s.jsonl".into(),
///     request: 7,
///     hook: "after_tool_round",
///     pass: "Micro".into(),
///     violation: "law 5 (one rolling marker): a second rolling micro marker at 6".into(),
/// };
/// assert_eq!(
///     law_lines(&[found], 3),
///     "laws: 1 violations (policy, transcript, request, hook, pass: violation)\n  \
///      micro s.jsonl request 7 after_tool_round Micro: law 5 (one rolling marker): a second \
///      rolling micro marker at 6\n"
/// );
/// ```
pub fn law_lines(violations: &[crate::LawFinding], replays: usize) -> String {
    if violations.is_empty() {
        return format!("laws: every pass of the {replays} replays kept every law\n");
    }
    let mut out = format!(
        "laws: {} violations (policy, transcript, request, hook, pass: violation)\n",
        violations.len()
    );
    for v in violations {
        out.push_str(&format!(
            "  {} {} request {} {} {}: {}\n",
            v.policy, v.transcript, v.request, v.hook, v.pass, v.violation
        ));
    }
    out
}

/// A progress bar 30 cells wide, then `done/total` and `label`: what a command redraws on a
/// terminal (after a carriage return) as replays or candidates finish.
///
/// ```
/// use compaction_sim::render::progress_bar;
///
/// assert_eq!(progress_bar(1, 3, "batch"), format!("[{}{}] 1/3 batch", "#".repeat(10), " ".repeat(20)));
/// assert_eq!(progress_bar(0, 0, "configurations"), format!("[{}] 0/0 configurations", " ".repeat(30)));
/// ```
pub fn progress_bar(done: usize, total: usize, label: &str) -> String {
    let width = 30;
    let filled = (done * width / total.max(1)).min(width);
    format!(
        "[{}{}] {done}/{total} {label}",
        "#".repeat(filled),
        " ".repeat(width - filled)
    )
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
    add("far recall pooled: summaries / verbatim", &|_, d| {
        format!(
            "{:.1}% / {:.1}%",
            d.far_recall * 100.0,
            d.far_recall_verbatim * 100.0
        )
    });
    add("far recall pooled without names indexes", &|_, d| {
        format!("{:.1}%", d.far_recall_unindexed * 100.0)
    });
    add("content recall pooled (unchanged originals)", &|_, d| {
        format!("{:.1}%", d.far_recall_content * 100.0)
    });
    add("far recall session mean (sessions)", &|r, d| {
        format!(
            "{:.1}% ({})",
            d.far_recall_session_mean * 100.0,
            r.far_sessions
        )
    });
    add("far recall per-request mean: summ. / verb.", &|_, d| {
        format!(
            "{:.1}% / {:.1}%",
            d.far_recall_request_mean * 100.0,
            d.far_recall_verbatim_request_mean * 100.0
        )
    });
    add("  far identifiers (requests)", &|r, _| {
        format!("{} ({})", r.far_identifiers, r.far_requests)
    });
    add("ledger-fact retention mean / min", &|r, d| {
        format!(
            "{:.1}% / {:.1}%",
            d.mean_retention * 100.0,
            r.retention_min * 100.0
        )
    });
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
    add("  refused, then compacted", &|r, _| r.refused.to_string());
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
    add("  of the input, cached (warm request)", &|r, _| {
        r.summary_prompt_hit_tokens.to_string()
    });
    add("estimated cost", &|r, _| format!("${:.2}", r.cost_usd));
    add("added wait at trigger p50 / p95 / max (passes)", &|r, _| {
        r.latency.trigger().cell()
    });
    add("micro passes' wait p50 / p95 / max (passes)", &|r, _| {
        r.latency.micro().cell()
    });
    add("  after a turn (of them, waited for)", &|r, _| {
        let w = &r.latency;
        format!(
            "{} ({})",
            w.micro_between_turns, w.micro_between_turns_waited
        )
    });
    add(
        "summaries prepared ahead: used / wasted / empty",
        &|r, _| {
            let w = &r.latency;
            format!(
                "{} / {} / {}",
                w.prepared_used, w.prepared_wasted, w.prepared_empty
            )
        },
    );
    add(
        "  wasted: before the trigger / span changed / superseded / insufficient / failed / unused",
        &|r, _| {
            let w = &r.latency;
            format!(
                "{} / {} / {} / {} / {} / {}",
                w.wasted_pass_between,
                w.wasted_span_changed,
                w.wasted_superseded,
                w.wasted_insufficient,
                w.wasted_failed,
                w.wasted_unused
            )
        },
    );
    add("  wasted: tokens in / out, cost", &|r, _| {
        let w = &r.latency;
        format!(
            "{} / {}, ${:.2}",
            w.wasted_prompt_tokens, w.wasted_output_tokens, w.wasted_cost_usd
        )
    });
    add("cost in issue units (M)", &|r, _| {
        format!("{:.2}M", r.unit_cost / 1e6)
    });
    add("  of it, the summary calls (M)", &|r, _| {
        format!("{:.3}M", r.summary_unit_cost / 1e6)
    });
    add("re-read rounds / tokens fetched", &|r, _| {
        format!("{} / {}", r.reread_rounds, r.reread_tokens)
    });
    add("re-read cost in issue units (M)", &|r, _| {
        format!("{:.2}M", r.reread_cost / 1e6)
    });
    add("effective cost in issue units (M)", &|r, _| {
        format!("{:.2}M", r.effective_cost / 1e6)
    });
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
