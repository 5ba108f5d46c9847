//! Occupancy-over-turns charts as hand-written SVG (feature `svg`, no dependencies).
//!
//! One chart per session: occupancy at the end of each turn (from `compaction turn
//! telemetry` lines) as a line, the threshold as a dashed line at 100%, and a marker at the
//! turn of every compression event (micro `absorbed`/`defrag`, committed batch attempts).
//! Collecting the points keeps one small entry per turn line of every session, which is the
//! chart's own size; the rest of the input is streamed like the report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::scan::{self, InputStats, Record};

/// The data of one session's chart.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionChart {
    /// Opaque session id (`""` for lines without one).
    pub session_id: String,
    /// Occupancy at the end of each turn that reported it, in log order.
    pub points: Vec<ChartPoint>,
    /// Compression events, at the turn they followed.
    pub compactions: Vec<ChartMark>,
}

/// One turn's occupancy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChartPoint {
    /// Turn index.
    pub turn: u64,
    /// Occupancy as a percentage of the threshold.
    pub occupancy_pct: f64,
}

/// One compression event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ChartMark {
    /// Index of the last turn logged before the event (0 before any turn).
    pub turn: u64,
    /// Which path compressed.
    pub kind: CompactionKind,
}

/// Which path produced a compression event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionKind {
    /// A committed batch attempt.
    Batch,
    /// A micro pass that absorbed or defragged.
    Micro,
}

/// The charts of every session in the log files, ordered by session id.
pub fn charts_from_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<SessionChart>> {
    let mut collector = Collector::default();
    let mut stats = InputStats::default();
    for path in paths {
        scan::scan_path(path.as_ref(), &mut stats, &mut |r| collector.feed(r))?;
    }
    Ok(collector.finish())
}

/// The charts of every session in the readers, ordered by session id.
pub fn charts_from_readers<R: Read>(
    readers: impl IntoIterator<Item = R>,
) -> Result<Vec<SessionChart>> {
    let mut collector = Collector::default();
    let mut stats = InputStats::default();
    for reader in readers {
        scan::scan_reader(reader, &mut stats, &mut |r| collector.feed(r))?;
    }
    Ok(collector.finish())
}

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;

impl SessionChart {
    /// A standalone SVG document of the chart.
    pub fn to_svg(&self) -> String {
        let max_turn = self
            .points
            .iter()
            .map(|p| p.turn)
            .chain(self.compactions.iter().map(|m| m.turn))
            .max()
            .unwrap_or(0)
            .max(1);
        let max_pct = self
            .points
            .iter()
            .map(|p| p.occupancy_pct)
            .fold(100.0_f64, f64::max);
        // Headroom above the threshold line, rounded up to a multiple of 25%.
        let y_max = ((max_pct * 1.1) / 25.0).ceil() * 25.0;
        let plot_w = WIDTH - LEFT - RIGHT;
        let plot_h = HEIGHT - TOP - BOTTOM;
        let x = |turn: u64| LEFT + turn as f64 / max_turn as f64 * plot_w;
        let y = |pct: f64| TOP + plot_h - pct.clamp(0.0, y_max) / y_max * plot_h;
        let bottom = TOP + plot_h;

        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let title = if self.session_id.is_empty() {
            "(no session id)".to_owned()
        } else {
            escape(&self.session_id)
        };
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="20" font-size="14">occupancy over turns: session {title}</text>"#
        );

        // Axes and ticks.
        let _ = writeln!(
            s,
            r#"<g class="axes" stroke="black"><line x1="{LEFT}" y1="{bottom}" x2="{:.1}" y2="{bottom}"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}"/></g>"#,
            LEFT + plot_w
        );
        let mut pct = 0.0;
        while pct <= y_max {
            let yy = y(pct);
            let _ = writeln!(
                s,
                r#"<g class="ytick"><line x1="{:.1}" y1="{yy:.1}" x2="{LEFT}" y2="{yy:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="end">{pct}%</text></g>"#,
                LEFT - 4.0,
                LEFT - 6.0,
                yy + 4.0
            );
            pct += 25.0;
        }
        let step = nice_step(max_turn);
        let mut turn = 0;
        while turn <= max_turn {
            let xx = x(turn);
            let _ = writeln!(
                s,
                r#"<g class="xtick"><line x1="{xx:.1}" y1="{bottom}" x2="{xx:.1}" y2="{:.1}" stroke="black"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{turn}</text></g>"#,
                bottom + 4.0,
                bottom + 16.0
            );
            turn += step;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">turn</text>"#,
            LEFT + plot_w / 2.0,
            HEIGHT - 8.0
        );
        let _ = writeln!(
            s,
            r#"<text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">occupancy (% of threshold)</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0
        );

        // Threshold.
        let ty = y(100.0);
        let _ = writeln!(
            s,
            r##"<line class="threshold" x1="{LEFT}" y1="{ty:.1}" x2="{:.1}" y2="{ty:.1}" stroke="#c0392b" stroke-dasharray="6 4"/>"##,
            LEFT + plot_w
        );

        // Compression events.
        for m in &self.compactions {
            let (class, color) = match m.kind {
                CompactionKind::Batch => ("mark-batch", "#c0392b"),
                CompactionKind::Micro => ("mark-micro", "#2980b9"),
            };
            let xx = x(m.turn);
            let _ = writeln!(
                s,
                r#"<path class="{class}" d="M {xx:.1} {:.1} l -4 8 l 8 0 z" fill="{color}"><title>{} compaction after turn {}</title></path>"#,
                bottom - 8.0,
                match m.kind {
                    CompactionKind::Batch => "batch",
                    CompactionKind::Micro => "micro",
                },
                m.turn
            );
        }

        // Occupancy line.
        if !self.points.is_empty() {
            let pts: Vec<String> = self
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(p.turn), y(p.occupancy_pct)))
                .collect();
            let _ = writeln!(
                s,
                r##"<polyline class="occupancy" fill="none" stroke="#2c3e50" stroke-width="1.5" points="{}"/>"##,
                pts.join(" ")
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

#[derive(Default)]
struct Collector {
    /// Per session: the chart, the last turn index seen, and the turn lines seen.
    sessions: BTreeMap<String, (SessionChart, u64, u64)>,
}

impl Collector {
    fn feed(&mut self, record: Record) {
        // Insertion-time trims change no occupancy curve and mark no compaction.
        if matches!(record, Record::Trim(_)) {
            return;
        }
        let id = record.session();
        let (chart, last_turn, seen) = self.sessions.entry(id.to_owned()).or_insert_with(|| {
            (
                SessionChart {
                    session_id: id.to_owned(),
                    ..SessionChart::default()
                },
                0,
                0,
            )
        });
        match record {
            Record::Turn(t) => {
                let turn = t.turn.unwrap_or(*seen);
                *last_turn = turn;
                *seen += 1;
                if let Some(p) = t.occupancy_pct {
                    chart.points.push(ChartPoint {
                        turn,
                        occupancy_pct: p,
                    });
                }
            }
            Record::Micro(m) if matches!(m.outcome.as_str(), "absorbed" | "defrag") => {
                chart.compactions.push(ChartMark {
                    turn: *last_turn,
                    kind: CompactionKind::Micro,
                });
            }
            Record::Batch(b) if b.committed() => chart.compactions.push(ChartMark {
                turn: *last_turn,
                kind: CompactionKind::Batch,
            }),
            _ => {}
        }
    }

    fn finish(self) -> Vec<SessionChart> {
        self.sessions.into_values().map(|(c, _, _)| c).collect()
    }
}

/// The smallest step of the 1, 2, 5, 10, 20, ... series giving at most ten intervals.
fn nice_step(max: u64) -> u64 {
    let mut step = 1;
    while max.div_ceil(step) > 10 {
        let mut magnitude = 1;
        while magnitude * 10 <= step {
            magnitude *= 10;
        }
        step = match step / magnitude {
            1 => 2 * magnitude,
            2 => 5 * magnitude,
            _ => 10 * magnitude,
        };
    }
    step
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_steps_are_1_2_5() {
        assert_eq!(nice_step(1), 1);
        assert_eq!(nice_step(10), 1);
        assert_eq!(nice_step(11), 2);
        assert_eq!(nice_step(45), 5);
        assert_eq!(nice_step(100), 10);
        assert_eq!(nice_step(101), 20);
        assert_eq!(nice_step(5000), 500);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b>&\"'\n"), "a&lt;b&gt;&amp;&quot;&apos;");
    }
}
