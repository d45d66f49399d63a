//! CSV files and SVG plots.

use crate::fleet::Run;
use crate::sim::Strategy;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// One line of a plot: its name and its points.
pub type Line = (String, Vec<(f64, f64)>);

/// Writes `rows` under `header` as CSV to `path`.
pub fn write_csv(path: &Path, header: &str, rows: &[String]) -> io::Result<()> {
    let mut out = String::with_capacity(64 * (rows.len() + 1));
    out.push_str(header);
    out.push('\n');
    for r in rows {
        out.push_str(r);
        out.push('\n');
    }
    std::fs::write(path, out)
}

/// The per-second counters of several policies' runs, one row per policy and second.
pub fn timeseries_rows(runs: &[(Strategy, &Run)], horizon: f64) -> Vec<String> {
    let mut rows = Vec::new();
    for (strategy, run) in runs {
        for (i, b) in run.series.bins.iter().enumerate() {
            let t = i as f64 * run.series.width;
            if t >= horizon {
                break;
            }
            let mut r = String::new();
            let fill = run.fill_rate.get(i).copied().unwrap_or(0.0);
            let queue = if b.attempts == 0 {
                0.0
            } else {
                b.queue_s / b.attempts as f64
            };
            write!(
                r,
                "{},{},{},{},{},{},{},{},{},{:.3},{:.4},{},{}",
                strategy.name(),
                t,
                b.offered,
                b.attempts,
                b.served,
                b.delivered,
                b.throttled,
                b.succeeded,
                b.failed,
                fill,
                queue,
                b.call_attempts,
                b.offered_succeeded
            )
            .expect("writing to a String");
            rows.push(r);
        }
    }
    rows
}

/// The header of [`timeseries_rows`].
pub const TIMESERIES_HEADER: &str = "strategy,second,offered,attempts,served,delivered,throttled,\
                                     succeeded,failed,mean_fill_rate,mean_queue_s,\
                                     attempts_of_calls_offered,calls_offered_that_succeeded";

const COLORS: [RGBColor; 9] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x55, 0x55, 0x55),
];

/// Draws `lines` as an SVG line plot at `path`.
pub fn line_plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0_f64);
    for (_, pts) in lines {
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    if !x0.is_finite() || x1 <= x0 {
        (x0, x1) = (0.0, 1.0);
    }
    let y1 = if y1 > 0.0 { y1 * 1.08 } else { 1.0 };

    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..y1)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// One line per policy: `f(bin)` for each second before `horizon`.
pub fn per_second(
    runs: &[(Strategy, &Run)],
    horizon: f64,
    f: impl Fn(&crate::sim::Bin, usize, &Run) -> Option<f64>,
) -> Vec<Line> {
    runs.iter()
        .map(|(s, run)| {
            let pts = run
                .series
                .bins
                .iter()
                .enumerate()
                .take_while(|(i, _)| (*i as f64) < horizon)
                .filter_map(|(i, b)| f(b, i, run).map(|y| (i as f64, y)))
                .collect();
            (s.name().to_string(), pts)
        })
        .collect()
}
