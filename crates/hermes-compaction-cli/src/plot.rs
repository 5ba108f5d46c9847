//! Occupancy over requests per policy, as a standalone SVG (hand-written, no dependencies).
//!
//! One panel per transcript; in each, one polyline per policy. The dashed grey line is the
//! threshold (100%), the dashed red line the context window.

use std::fmt::Write as _;

use crate::simulate::Simulation;

const WIDTH: f64 = 900.0;
const PANEL: f64 = 180.0;
const MARGIN_LEFT: f64 = 60.0;
const MARGIN_RIGHT: f64 = 150.0;
const COLORS: [&str; 6] = [
    "#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
];

/// The SVG document.
pub fn occupancy_svg(sim: &Simulation) -> String {
    let mut transcripts: Vec<&str> = Vec::new();
    for r in &sim.rows {
        if !transcripts.contains(&r.transcript.as_str()) {
            transcripts.push(&r.transcript);
        }
    }
    let height = PANEL * transcripts.len().max(1) as f64 + 20.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (k, name) in transcripts.iter().enumerate() {
        let top = 20.0 + PANEL * k as f64;
        // Occupancy barely depends on the pricing: plot the first one.
        let first = sim.pricings.first().map(|p| p.name());
        let rows: Vec<_> = sim
            .rows
            .iter()
            .filter(|r| r.transcript == *name && Some(r.profile.as_str()) == first)
            .collect();
        let window = rows.first().map_or(1.0, |r| {
            r.context_length as f64 / r.threshold_tokens.max(1) as f64
        });
        let peak = rows.iter().map(|r| r.peak_occupancy).fold(0.0, f64::max);
        let ymax = (peak.max(window) * 1.05).max(0.1);
        let n = rows
            .iter()
            .map(|r| r.occupancy.len())
            .max()
            .unwrap_or(0)
            .max(2);
        let plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
        let plot_h = PANEL - 45.0;
        let x = |i: usize| MARGIN_LEFT + plot_w * i as f64 / (n - 1) as f64;
        let y = |v: f64| top + 15.0 + plot_h * (1.0 - (v / ymax).min(1.0));
        let _ = writeln!(
            s,
            r#"<text x="{MARGIN_LEFT}" y="{:.1}" font-weight="bold">{}</text>"#,
            top + 8.0,
            escape(name)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{MARGIN_LEFT}" y="{:.1}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#ccc"/>"##,
            top + 15.0
        );
        for (v, color, label) in [(1.0, "#999", "threshold"), (window, "#d62728", "window")] {
            let _ = writeln!(
                s,
                r#"<line x1="{MARGIN_LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-dasharray="4 3"/><text x="4" y="{:.1}" fill="{color}">{label}</text>"#,
                MARGIN_LEFT + plot_w,
                y(v) + 4.0,
                y = y(v)
            );
        }
        for (j, r) in rows.iter().enumerate() {
            let color = COLORS[j % COLORS.len()];
            let mut pts = String::new();
            for (i, v) in r.occupancy.iter().enumerate() {
                let _ = write!(pts, "{:.1},{:.1} ", x(i), y(f64::from(*v)));
            }
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.2" points="{}"/>"#,
                pts.trim_end()
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" fill="{color}">{} (peak {:.0}%)</text>"#,
                WIDTH - MARGIN_RIGHT + 8.0,
                top + 28.0 + 14.0 * j as f64,
                escape(&r.policy),
                r.peak_occupancy * 100.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">requests ({})</text>"#,
            MARGIN_LEFT + plot_w,
            top + PANEL - 16.0,
            n
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
