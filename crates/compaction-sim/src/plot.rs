//! Occupancy over requests per policy, one panel per transcript, drawn with
//! `compaction-telemetry`'s SVG writer.

use compaction_telemetry::svg::{Chart, Rule, Series, stack};

use crate::run::Simulation;

/// The SVG document: per transcript, one line per policy (prompt / threshold at each
/// request), the threshold (100%) and the context window dashed.
pub fn occupancy_svg(sim: &Simulation) -> String {
    let mut transcripts: Vec<&str> = Vec::new();
    for r in &sim.rows {
        if !transcripts.contains(&r.transcript.as_str()) {
            transcripts.push(&r.transcript);
        }
    }
    // Occupancy barely depends on the pricing: plot the first one.
    let first = sim.pricings.first().map(|p| p.name());
    let charts: Vec<Chart> = transcripts
        .iter()
        .map(|name| {
            let rows: Vec<_> = sim
                .rows
                .iter()
                .filter(|r| r.transcript == *name && Some(r.profile.as_str()) == first)
                .collect();
            let window = rows.first().map_or(100.0, |r| {
                100.0 * r.context_length as f64 / r.threshold_tokens.max(1) as f64
            });
            Chart {
                title: (*name).to_owned(),
                x_label: "request".into(),
                y_label: "% of threshold".into(),
                y_unit: "%".into(),
                size: (900.0, 260.0),
                series: rows
                    .iter()
                    .map(|r| Series {
                        label: format!("{} (peak {:.0}%)", r.policy, r.peak_occupancy * 100.0),
                        class: "occupancy".into(),
                        points: r
                            .occupancy
                            .iter()
                            .enumerate()
                            .map(|(i, v)| (i as f64, f64::from(*v) * 100.0))
                            .collect(),
                        ..Series::default()
                    })
                    .collect(),
                rules: vec![
                    Rule {
                        y: 100.0,
                        label: "threshold".into(),
                        class: "threshold".into(),
                        color: "#999".into(),
                    },
                    Rule {
                        y: window,
                        label: "window".into(),
                        class: "window".into(),
                        color: "#d62728".into(),
                    },
                ],
                ..Chart::default()
            }
        })
        .collect();
    stack(&charts)
}
