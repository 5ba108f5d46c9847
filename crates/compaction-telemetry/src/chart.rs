//! Occupancy-over-turns charts per session (feature `svg`), drawn with [`svg`].
//!
//! One chart per session: occupancy at the end of each turn (from `compaction turn
//! telemetry` lines) as a line, the threshold as a dashed line at 100%, and a marker at the
//! turn of every compression event (micro `absorbed`/`defrag`, committed batch attempts).
//! Collecting the points keeps one small entry per turn line of every session, which is the
//! chart's own size; the rest of the input is streamed like the report.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::scan::{self, InputStats, Record};
use crate::svg;

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

impl SessionChart {
    /// A standalone SVG document of the chart (drawn with [`svg`]): occupancy
    /// as a line, the threshold dashed at 100%, a marker per compression event.
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
        let title = if self.session_id.is_empty() {
            "(no session id)".to_owned()
        } else {
            self.session_id.clone()
        };
        let markers = self
            .compactions
            .iter()
            .map(|m| {
                let (class, color, kind) = match m.kind {
                    CompactionKind::Batch => ("mark-batch", "#c0392b", "batch"),
                    CompactionKind::Micro => ("mark-micro", "#2980b9", "micro"),
                };
                svg::Marker {
                    x: m.turn as f64,
                    title: format!("{kind} compaction after turn {}", m.turn),
                    class: class.into(),
                    color: color.into(),
                }
            })
            .collect();
        let chart = svg::Chart {
            title: format!("occupancy over turns: session {title}"),
            x_label: "turn".into(),
            y_label: "occupancy (% of threshold)".into(),
            y_unit: "%".into(),
            x_range: Some((0.0, max_turn as f64)),
            y_range: Some((0.0, y_max)),
            series: vec![svg::Series {
                class: "occupancy".into(),
                color: "#2c3e50".into(),
                points: self
                    .points
                    .iter()
                    .map(|p| (p.turn as f64, p.occupancy_pct))
                    .collect(),
                ..svg::Series::default()
            }],
            rules: vec![svg::Rule {
                y: 100.0,
                class: "threshold".into(),
                color: "#c0392b".into(),
                ..svg::Rule::default()
            }],
            markers,
            ..svg::Chart::default()
        };
        chart.to_svg()
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
