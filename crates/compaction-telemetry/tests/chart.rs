//! Occupancy-over-turns SVG charts.

use compaction_telemetry::chart::{CompactionKind, charts_from_paths, charts_from_readers};

use crate::common::data;

#[test]
fn one_chart_per_session_with_points_and_marks() {
    let charts = charts_from_paths(&[data("mixed.log"), data("json-formatter.log")]).unwrap();
    let ids: Vec<&str> = charts.iter().map(|c| c.session_id.as_str()).collect();
    assert_eq!(ids, ["", "alpha", "beta", "gamma"]);

    let alpha = &charts[1];
    let turns: Vec<(u64, f64)> = alpha
        .points
        .iter()
        .map(|p| (p.turn, p.occupancy_pct))
        .collect();
    assert_eq!(
        turns,
        [(0, 10.0), (1, 30.0), (2, 50.0), (3, 90.0), (4, 35.0)]
    );
    let marks: Vec<(u64, CompactionKind)> =
        alpha.compactions.iter().map(|m| (m.turn, m.kind)).collect();
    assert_eq!(
        marks,
        [
            (1, CompactionKind::Micro),
            (2, CompactionKind::Micro),
            (3, CompactionKind::Batch)
        ]
    );

    let svg = alpha.to_svg();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("class=\"mark-micro\"").count(), 2);
    assert_eq!(svg.matches("class=\"mark-batch\"").count(), 1);
    assert_eq!(svg.matches("class=\"threshold\"").count(), 1);
    let polyline = svg
        .lines()
        .find(|l| l.contains("class=\"occupancy\""))
        .unwrap();
    let points = polyline.split("points=\"").nth(1).unwrap();
    assert_eq!(points.split(' ').count(), 5);
    // Axes: y ticks every 25% up to at least the threshold, x ticks per turn.
    assert!(svg.contains(">100%</text>"));
    assert!(svg.contains(">4</text>"));
}

#[test]
fn threshold_line_sits_at_100_percent_and_ids_are_escaped() {
    let log = concat!(
        r#"compaction turn telemetry: {"occupancy_pct":0.0,"session_id":"<a&b>","turn":0}"#,
        "\n",
        r#"compaction turn telemetry: {"occupancy_pct":100.0,"session_id":"<a&b>","turn":10}"#,
        "\n",
    );
    let charts = charts_from_readers([log.as_bytes()]).unwrap();
    let svg = charts[0].to_svg();
    assert!(svg.contains("session &lt;a&amp;b&gt;"));
    assert!(!svg.contains("<a&b>"));
    // The last point is at 100%: its y equals the threshold line's y.
    let threshold_y = svg
        .lines()
        .find(|l| l.contains("class=\"threshold\""))
        .and_then(|l| l.split("y1=\"").nth(1))
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let polyline = svg
        .lines()
        .find(|l| l.contains("class=\"occupancy\""))
        .unwrap();
    let last = polyline
        .split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let last_y = last
        .split(' ')
        .next_back()
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap();
    assert_eq!(last_y, threshold_y);
}

#[test]
fn a_session_without_turns_still_renders() {
    let log = r#"micro compaction telemetry: {"outcome":"absorbed","session_id":"m"}"#;
    let charts = charts_from_readers([log.as_bytes()]).unwrap();
    assert_eq!(charts.len(), 1);
    assert!(charts[0].points.is_empty());
    let svg = charts[0].to_svg();
    assert!(!svg.contains("class=\"occupancy\""));
    assert_eq!(svg.matches("class=\"mark-micro\"").count(), 1);
}
