//! What a tuning prints: the front as a table, the points as an SVG scatter plot, and the
//! recommended configuration as TOML.

use std::fmt::Write as _;

use hermes_compaction::Config;

use compaction_telemetry::svg::{Chart, Series, Style};

use super::{Point, Tuning};
use crate::pricing::Pricing;

impl Tuning {
    /// The front as a table: one line per point, by cost.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} candidates, {} feasible, {} on the front (cost: lower is better; far recall: pooled, with summaries / verbatim; content: far recall by unchanged originals; effective: issue units + re-reads; ledger-fact retention: mean / min)",
            self.evaluated,
            self.points.len(),
            self.front.len()
        );
        let _ = writeln!(
            s,
            "{:>16}  {:>10}  {:>15}  {:>7}  {:>13}  {:>15}  {:>7}  name",
            "cost", "units (M)", "far recall", "content", "effective (M)", "retention", "summary"
        );
        let unit = self.cost_unit;
        let line = |s: &mut String, p: &Point, mark: &str| {
            let _ = writeln!(
                s,
                "{:>16}  {:>10.3}  {:>6.1}% / {:>5.1}%  {:>6.1}%  {:>13.3}  {:>6.1}% / {:>5.1}%  {:>7}  {}{mark}",
                unit.format(p.cost),
                p.unit_cost / 1e6,
                p.far_recall * 100.0,
                p.far_recall_verbatim * 100.0,
                p.content_recall * 100.0,
                p.effective_cost / 1e6,
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
        if self.warm_searched {
            let _ = writeln!(
                s,
                "(name ending -warm: summary requests warm, the agent's own model with its cached prefix; otherwise standalone, a model at {} x the agent model's price per token, auxiliary.compression.price_ratio)",
                self.price_ratio
            );
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
        // Far recall scaled to the points (a front at 81-97% spread over the plot, not
        // squeezed into the top fifth of 0-100%), with a margin, within 0-100%.
        let recalls = self
            .points
            .iter()
            .chain([&self.baseline, &self.recommended])
            .map(|p| p.far_recall * 100.0);
        let (r_lo, r_hi) = recalls.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r), hi.max(r))
        });
        let r_pad = ((r_hi - r_lo) * 0.1).max(1.0);
        let y_range = r_lo
            .is_finite()
            .then(|| ((r_lo - r_pad).max(0.0), (r_hi + r_pad).min(100.0)));
        // The start as a ring and the recommendation as a dot drawn after it, so both show
        // where they coincide or nearly; the legend gives each one's figures with units.
        let figures = |p: &Point| {
            format!(
                "  {}, {:.1}%",
                self.cost_unit.format(p.cost),
                p.far_recall * 100.0
            )
        };
        // A legend line of its own (no points): the figures under a marker's name.
        let note = |text: String| Series {
            label: text,
            color: "#555555".into(),
            style: Style::Points,
            ..Series::default()
        };
        let same = self.recommended.knobs == self.baseline.knobs;
        let marked = if same {
            vec![
                series(
                    "",
                    "baseline",
                    "#7f7f7f",
                    Style::Rings,
                    vec![&self.baseline],
                ),
                series(
                    "recommended = start",
                    "recommended",
                    "#d62728",
                    Style::Points,
                    vec![&self.recommended],
                ),
                note(figures(&self.recommended)),
            ]
        } else {
            vec![
                series(
                    "starting configuration",
                    "baseline",
                    "#7f7f7f",
                    Style::Rings,
                    vec![&self.baseline],
                ),
                note(figures(&self.baseline)),
                series(
                    "recommended",
                    "recommended",
                    "#d62728",
                    Style::Points,
                    vec![&self.recommended],
                ),
                note(figures(&self.recommended)),
            ]
        };
        let mut all = vec![
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
        ];
        all.extend(marked);
        let chart = Chart {
            title: "policy search: cost against far recall".into(),
            x_label: x_label.into(),
            x_range: lo.is_finite().then_some((lo - pad, hi + pad)),
            y_label: "far recall, pooled, with summaries (%)".into(),
            y_unit: "%".into(),
            size: (900.0, 500.0),
            y_range,
            series: all,
            ..Chart::default()
        };
        chart.to_svg()
    }

    /// The recommended configuration as TOML that `ConfigLoader` (and `--config`) accepts:
    /// the context length and cache profile it was tuned for and every tuned key (with the
    /// summary request's form and the price ratio it was chosen at when the form was searched).
    pub fn toml(&self, base: &Config, pricing: &Pricing) -> String {
        let p = &self.recommended;
        let profile = match pricing {
            Pricing::Table(_) => base.compression.cache_profile.clone(),
            Pricing::Profile(p) => p.name.clone(),
        };
        let auxiliary = if self.warm_searched {
            format!(
                "\n[auxiliary.compression]\n{}",
                p.knobs.auxiliary_toml_lines(self.price_ratio)
            )
        } else {
            String::new()
        };
        format!(
            "# Written by `hermes-compaction tune`: cost {} ({}{}), far recall {:.1}%, mean retention {:.1}%, {} summary calls, 0 overflows over the tuned sessions.\n{}[model]\ncontext_length = {}\n\n[compression]\ncache_profile = {:?}\n{}{}",
            self.cost_unit.format(p.cost),
            self.cost_unit.meaning(),
            if self.cost_unit == super::CostUnit::IssueUnits {
                String::new()
            } else {
                format!("; {:.3}M issue units", p.unit_cost / 1e6)
            },
            p.far_recall * 100.0,
            p.mean_retention * 100.0,
            p.summary_calls,
            self.form_line(),
            base.model.context_length,
            profile,
            p.knobs.toml_lines(),
            auxiliary
        )
    }

    /// What the recommendation's summary request is and what it costs, as a `#` comment line
    /// (empty when the form was not searched).
    fn form_line(&self) -> String {
        if !self.warm_searched {
            return String::new();
        }
        let p = &self.recommended;
        let form = if p.knobs.warm_cache {
            "warm (the agent's own model, its cached prefix at the hit price)".to_owned()
        } else {
            format!(
                "standalone (a model at {} x the agent model's price per token)",
                self.price_ratio
            )
        };
        format!(
            "# Summary request: {form}; the summary calls cost {:.3}M issue units of the {:.3}M.\n",
            p.summary_unit_cost / 1e6,
            p.unit_cost / 1e6
        )
    }
}
