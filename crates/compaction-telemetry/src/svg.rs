//! The project's one SVG writer (feature `svg`): a small line and scatter chart, hand-written,
//! no dependencies.
//!
//! A [`Chart`] has numeric axes, any number of [`Series`] (a polyline or points), dashed
//! horizontal [`Rule`]s (a threshold, a window) and [`Marker`]s (a small triangle on the x
//! axis, for events). [`Chart::to_svg`] renders one standalone document; [`stack`] renders
//! several charts one above the other in one document. The session charts of
//! [`chart`](crate::chart) and the simulator's plots are both drawn with it; it knows nothing
//! about either.

use std::fmt::Write as _;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// A polyline through the points in order.
    #[default]
    Line,
    /// One dot per point (a scatter plot).
    Points,
    /// One hollow ring per point, larger than a dot: a dot of another series drawn at the same
    /// place stays visible inside it (a starting point beside a recommended one).
    Rings,
}

/// One data series.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Legend text (empty: no legend entry).
    pub label: String,
    /// `class` attribute of the polyline or of each dot (empty: none).
    pub class: String,
    /// Stroke or fill colour (empty: the palette's next colour).
    pub color: String,
    /// How it is drawn.
    pub style: Style,
    /// `(x, y)` in data units.
    pub points: Vec<(f64, f64)>,
    /// Per-point tooltips for [`Style::Points`] (missing entries: none).
    pub titles: Vec<String>,
}

/// A dashed horizontal line across the plot at `y`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rule {
    /// Where, in data units.
    pub y: f64,
    /// Text at the right end of the line (empty: none).
    pub label: String,
    /// `class` attribute (empty: none).
    pub class: String,
    /// Colour.
    pub color: String,
}

/// A small triangle standing on the x axis at `x`, with a tooltip.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Marker {
    /// Where, in data units.
    pub x: f64,
    /// Tooltip text.
    pub title: String,
    /// `class` attribute (empty: none).
    pub class: String,
    /// Fill colour.
    pub color: String,
}

/// A chart: axes, series, rules and markers.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Appended to every y tick label (for example `%`).
    pub y_unit: String,
    /// Width and height of the chart, pixels.
    pub size: (f64, f64),
    /// X range; `None`: from the data (starting at 0 when all data is positive).
    pub x_range: Option<(f64, f64)>,
    /// Y range; `None`: from the data and the rules, with 5% headroom.
    pub y_range: Option<(f64, f64)>,
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Dashed horizontal lines.
    pub rules: Vec<Rule>,
    /// Event markers.
    pub markers: Vec<Marker>,
}

impl Default for Chart {
    fn default() -> Self {
        Chart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            y_unit: String::new(),
            size: (800.0, 400.0),
            x_range: None,
            y_range: None,
            series: Vec::new(),
            rules: Vec::new(),
            markers: Vec::new(),
        }
    }
}

/// The colours of series without one, in order.
pub const PALETTE: [&str; 8] = [
    "#2c3e50", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const LEGEND: f64 = 170.0;

impl Chart {
    /// A standalone SVG document of the chart.
    pub fn to_svg(&self) -> String {
        stack(std::slice::from_ref(self))
    }

    fn right_margin(&self) -> f64 {
        if self.series.iter().any(|s| !s.label.is_empty()) {
            LEGEND
        } else {
            20.0
        }
    }

    fn x_bounds(&self) -> (f64, f64) {
        if let Some(r) = self.x_range {
            return r;
        }
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.markers.iter().map(|m| m.x));
        bounds(xs, 1.0)
    }

    fn y_bounds(&self) -> (f64, f64) {
        if let Some(r) = self.y_range {
            return r;
        }
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.rules.iter().map(|r| r.y));
        let (lo, hi) = bounds(ys, 1.05);
        (lo, hi)
    }

    /// Writes the chart's elements with its top-left corner at `(0, dy)`.
    fn write(&self, s: &mut String, dy: f64) {
        let (width, height) = self.size;
        let plot_w = (width - LEFT - self.right_margin()).max(10.0);
        let plot_h = (height - TOP - BOTTOM).max(10.0);
        let (x0, x1) = self.x_bounds();
        let (y0, y1) = self.y_bounds();
        let top = dy + TOP;
        let bottom = top + plot_h;
        let x = |v: f64| LEFT + (v - x0) / (x1 - x0) * plot_w;
        let y = |v: f64| bottom - (v.clamp(y0, y1) - y0) / (y1 - y0) * plot_h;

        if !self.title.is_empty() {
            let _ = writeln!(
                s,
                r#"<text x="{LEFT}" y="{:.1}" font-size="14">{}</text>"#,
                dy + 20.0,
                escape(&self.title)
            );
        }
        let _ = writeln!(
            s,
            r#"<g class="axes" stroke="black"><line x1="{LEFT}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}"/><line x1="{LEFT}" y1="{top:.1}" x2="{LEFT}" y2="{bottom:.1}"/></g>"#,
            LEFT + plot_w
        );
        for v in ticks(y0, y1, 0.0) {
            let yy = y(v);
            let _ = writeln!(
                s,
                r#"<g class="ytick"><line x1="{:.1}" y1="{yy:.1}" x2="{LEFT}" y2="{yy:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}{}</text></g>"#,
                LEFT - 4.0,
                LEFT - 6.0,
                yy + 4.0,
                number(v),
                escape(&self.y_unit)
            );
        }
        // Whole-number data (turns, requests) gets whole-number ticks.
        let whole = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.markers.iter().map(|m| m.x))
            .all(|v| v.fract() == 0.0);
        for v in ticks(x0, x1, if whole { 1.0 } else { 0.0 }) {
            let xx = x(v);
            let _ = writeln!(
                s,
                r#"<g class="xtick"><line x1="{xx:.1}" y1="{bottom:.1}" x2="{xx:.1}" y2="{:.1}" stroke="black"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text></g>"#,
                bottom + 4.0,
                bottom + 16.0,
                number(v)
            );
        }
        if !self.x_label.is_empty() {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                LEFT + plot_w / 2.0,
                bottom + 38.0,
                escape(&self.x_label)
            );
        }
        if !self.y_label.is_empty() {
            let mid = top + plot_h / 2.0;
            let _ = writeln!(
                s,
                r#"<text x="14" y="{mid:.1}" text-anchor="middle" transform="rotate(-90 14 {mid:.1})">{}</text>"#,
                escape(&self.y_label)
            );
        }
        for r in &self.rules {
            let yy = y(r.y);
            let _ = writeln!(
                s,
                r#"<line{} x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="{}" stroke-dasharray="6 4"/>"#,
                class_attr(&r.class),
                LEFT + plot_w,
                escape(&r.color)
            );
            if !r.label.is_empty() {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" fill="{}" text-anchor="end">{}</text>"#,
                    LEFT + plot_w - 2.0,
                    yy - 3.0,
                    escape(&r.color),
                    escape(&r.label)
                );
            }
        }
        for m in &self.markers {
            let _ = writeln!(
                s,
                r#"<path{} d="M {:.1} {:.1} l -4 8 l 8 0 z" fill="{}"><title>{}</title></path>"#,
                class_attr(&m.class),
                x(m.x),
                bottom - 8.0,
                escape(&m.color),
                escape(&m.title)
            );
        }
        let mut legend = 0;
        for (k, series) in self.series.iter().enumerate() {
            let color = if series.color.is_empty() {
                PALETTE[k % PALETTE.len()].to_owned()
            } else {
                escape(&series.color)
            };
            match series.style {
                Style::Line if !series.points.is_empty() => {
                    let pts: Vec<String> = series
                        .points
                        .iter()
                        .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
                        .collect();
                    let _ = writeln!(
                        s,
                        r#"<polyline{} fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
                        class_attr(&series.class),
                        pts.join(" ")
                    );
                }
                Style::Line => {}
                Style::Points | Style::Rings => {
                    let shape = if series.style == Style::Rings {
                        format!(r#"r="7" fill="none" stroke="{color}" stroke-width="2""#)
                    } else {
                        format!(r#"r="3.5" fill="{color}""#)
                    };
                    for (i, &(a, b)) in series.points.iter().enumerate() {
                        let title = series
                            .titles
                            .get(i)
                            .map(|t| format!("<title>{}</title>", escape(t)))
                            .unwrap_or_default();
                        let _ = writeln!(
                            s,
                            r#"<circle{} cx="{:.1}" cy="{:.1}" {shape}>{title}</circle>"#,
                            class_attr(&series.class),
                            x(a),
                            y(b)
                        );
                    }
                }
            }
            if !series.label.is_empty() {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" fill="{color}">{}</text>"#,
                    LEFT + plot_w + 10.0,
                    top + 10.0 + 14.0 * f64::from(legend),
                    escape(&series.label)
                );
                legend += 1;
            }
        }
    }
}

/// Several charts one above the other in one standalone SVG document (as wide as the widest).
pub fn stack(charts: &[Chart]) -> String {
    let width = charts.iter().map(|c| c.size.0).fold(0.0, f64::max).max(1.0);
    let height = charts.iter().map(|c| c.size.1).sum::<f64>().max(1.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let mut dy = 0.0;
    for c in charts {
        c.write(&mut s, dy);
        dy += c.size.1;
    }
    s.push_str("</svg>\n");
    s
}

/// `(min, max)` of `values` with `max` scaled by `headroom` (a range of 1 when there is
/// nothing or one value); starts at 0 when every value is positive.
fn bounds(values: impl Iterator<Item = f64>, headroom: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if lo >= 0.0 {
        lo = 0.0;
    }
    hi = if hi > 0.0 { hi * headroom } else { hi };
    if hi - lo < 1e-12 {
        hi = lo + 1.0;
    }
    (lo, hi)
}

/// Tick values: multiples of the smallest step of the 1, 2, 5 x 10^k series, at least
/// `min_step`, giving at most ten intervals over `[lo, hi]`.
pub fn ticks(lo: f64, hi: f64, min_step: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo];
    }
    let mut magnitude = 10f64.powf((span / 10.0).log10().floor());
    let step = loop {
        if let Some(m) = [1.0, 2.0, 5.0]
            .iter()
            .map(|m| m * magnitude)
            .find(|step| span / step <= 10.0 + 1e-9 && *step >= min_step - 1e-12)
        {
            break m;
        }
        magnitude *= 10.0;
    };
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick label: an integer when it is one, else at most three decimals.
fn number(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn class_attr(class: &str) -> String {
    if class.is_empty() {
        String::new()
    } else {
        format!(r#" class="{}""#, escape(class))
    }
}

/// Text made safe for SVG content and attributes (control characters dropped).
pub fn escape(s: &str) -> String {
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
    fn ticks_are_round_and_at_most_ten_intervals() {
        assert_eq!(
            ticks(0.0, 125.0, 0.0),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0]
        );
        assert_eq!(ticks(0.0, 4.0, 0.0).len(), 9);
        assert_eq!(ticks(0.0, 4.0, 1.0), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(ticks(0.0, 11.0, 1.0).len(), 6);
        assert_eq!(ticks(0.0, 1.0, 0.0).len(), 11);
        for (lo, hi) in [(0.0, 7.3), (0.5, 0.93), (0.0, 5_000.0), (-3.0, 17.0)] {
            let t = ticks(lo, hi, 0.0);
            assert!(t.len() >= 2 && t.len() <= 11, "{lo}..{hi}: {t:?}");
            assert!(t.iter().all(|v| *v >= lo - 1e-9 && *v <= hi + 1e-9));
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b>&\"'\n"), "a&lt;b&gt;&amp;&quot;&apos;");
    }

    #[test]
    fn a_scatter_has_one_dot_per_point_and_stacked_charts_share_a_document() {
        let c = Chart {
            series: vec![Series {
                style: Style::Points,
                class: "front".into(),
                points: vec![(1.0, 2.0), (2.0, 1.0), (3.0, 0.5)],
                titles: vec!["a<".into()],
                ..Series::default()
            }],
            ..Chart::default()
        };
        let svg = c.to_svg();
        assert_eq!(svg.matches("<circle class=\"front\"").count(), 3);
        assert!(svg.contains("<title>a&lt;</title>"));
        let both = stack(&[c.clone(), c]);
        assert_eq!(both.matches("<svg").count(), 1);
        assert_eq!(both.matches("<circle").count(), 6);
        assert!(both.contains("height=\"800\""));
    }

    #[test]
    fn a_ring_is_hollow_and_larger_than_a_dot() {
        let series = |style, class: &str| Series {
            style,
            class: class.into(),
            color: "#123456".into(),
            points: vec![(1.0, 1.0)],
            ..Series::default()
        };
        let c = Chart {
            series: vec![series(Style::Rings, "start"), series(Style::Points, "pick")],
            ..Chart::default()
        };
        let svg = c.to_svg();
        let ring = &svg[svg.find("<circle class=\"start\"").unwrap()..];
        let ring = &ring[..ring.find("</circle>").unwrap()];
        assert!(
            ring.contains("r=\"7\" fill=\"none\" stroke=\"#123456\""),
            "{ring}"
        );
        assert_eq!(svg.matches("<circle class=\"pick\"").count(), 1);
        assert!(svg.contains("r=\"3.5\" fill=\"#123456\""));
    }
}
