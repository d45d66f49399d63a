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
    let named: Vec<(&str, &Run)> = runs.iter().map(|(s, run)| (s.name(), *run)).collect();
    timeseries_rows_named(&named, horizon)
}

/// [`timeseries_rows`] of runs named by their policies' names (guarded policies included).
pub fn timeseries_rows_named(runs: &[(&str, &Run)], horizon: f64) -> Vec<String> {
    let mut rows = Vec::new();
    for (name, run) in runs {
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
                name,
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
    plot(path, title, x_label, y_label, lines, Scale::Linear, &[])
}

/// The y axis of a plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// From 0.
    Linear,
    /// Logarithmic (for latencies spanning milliseconds to seconds); points at or below 0 are
    /// left out.
    Log,
}

/// Draws `lines` as an SVG line plot at `path`, line `i` in color `colors[i]` of the palette
/// (or `i` if `colors` has no entry for it), so that plots of different subsets of the same
/// policies give each policy the same color.
pub fn plot(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    scale: Scale,
    colors: &[usize],
) -> Result<(), Box<dyn std::error::Error>> {
    let lines: Vec<(Line, RGBColor)> = lines
        .iter()
        .enumerate()
        .map(|(i, (name, pts))| {
            let pts = pts
                .iter()
                .copied()
                .filter(|&(_, y)| scale == Scale::Linear || y > 0.0)
                .collect();
            let color = COLORS[colors.get(i).copied().unwrap_or(i) % COLORS.len()];
            ((name.clone(), pts), color)
        })
        .collect();
    let (x0, x1, y0, y1) = bounds(lines.iter().map(|(l, _)| l));
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70);
    match scale {
        Scale::Linear => {
            let y1 = if y1 > 0.0 { y1 * 1.08 } else { 1.0 };
            let chart = builder.build_cartesian_2d(x0..x1, 0.0..y1)?;
            draw_lines(chart, x_label, y_label, &lines)?;
        }
        Scale::Log => {
            let (y0, y1) = if y1 > 0.0 && y0.is_finite() {
                (y0 / 1.5, y1 * 1.5)
            } else {
                (1.0, 10.0)
            };
            let chart = builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())?;
            draw_lines(chart, x_label, y_label, &lines)?;
        }
    }
    root.present()?;
    Ok(())
}

/// The smallest and largest x, and the smallest positive and the largest y, of `lines`.
fn bounds<'l>(lines: impl Iterator<Item = &'l Line>) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, 0.0_f64);
    for (_, pts) in lines {
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
            if y > 0.0 {
                y0 = y0.min(y);
            }
        }
    }
    if !x0.is_finite() || x1 <= x0 {
        (x0, x1) = (0.0, 1.0);
    }
    (x0, x1, y0, y1)
}

/// The mesh, the lines and their legend, on `chart`.
fn draw_lines<'a, DB, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    x_label: &str,
    y_label: &str,
    lines: &[(Line, RGBColor)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    for ((name, pts), color) in lines {
        let color = *color;
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
