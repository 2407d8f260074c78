//! The cost curve drawn: each measurement's cost at each size as a ratio
//! to its cost at the smallest size, against the size on a log scale, as
//! one SVG with no script (docs/benchmarks.md shows it).

use std::fmt::Write;

/// One line of the plot: a measurement's ratios, size by size.
pub struct Series {
    pub name: String,
    pub points: Vec<(usize, f64)>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 40.0;
const TOP: f64 = 16.0;
const RIGHT: f64 = 220.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

/// The SVG of `series`, ratio 0 to `top` (at least 2) on the y axis.
pub fn svg(title: &str, series: &[Series]) -> String {
    let sizes: Vec<usize> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let (min, max) = (
        sizes.iter().copied().min().unwrap_or(1).max(1) as f64,
        sizes.iter().copied().max().unwrap_or(10).max(2) as f64,
    );
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(2.0_f64, f64::max)
        .ceil();
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |size: f64| LEFT + (size.ln() - min.ln()) / (max.ln() - min.ln()).max(1e-9) * plot_w;
    let y = |ratio: f64| TOP + plot_h - ratio / top * plot_h;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<title>{title}</title>"#);
    let _ = writeln!(
        out,
        r#"<line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="black"/>"#,
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h,
        TOP + plot_h
    );
    for ratio in [1.0, 1.5, top] {
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#ccc"/><text x="{2:.1}" y="{0:.1}" text-anchor="end">{ratio}×</text>"##,
            y(ratio),
            LEFT + plot_w,
            LEFT - 4.0
        );
    }
    let mut ticks = sizes.clone();
    ticks.sort_unstable();
    ticks.dedup();
    for size in ticks {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{size}</text>"#,
            x(size as f64),
            TOP + plot_h + 14.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">size (log scale)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 6.0
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = s
            .points
            .iter()
            .map(|(size, ratio)| format!("{:.1},{:.1}", x(*size as f64), y(*ratio)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            points.join(" ")
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" fill="{colour}">{}</text>"#,
            LEFT + plot_w + 8.0,
            TOP + 12.0 + i as f64 * 14.0,
            s.name
        );
    }
    out.push_str("</svg>\n");
    out
}
