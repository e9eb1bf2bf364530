//! Transport comparison: speedup over a baseline transport per transfer size (one line per
//! transport), and where one transfer's time goes (latency / overhead / staging / bandwidth).

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::{
    Figure, PlotError, colour, err, fmt_bytes, fmt_num, label_font, legend, log_range, nice_range,
    render, tick_font, time_unit, title_font,
};

/// One transport's speedup over the baseline: `(transfer size in bytes, speedup)` points, the
/// speedup being baseline time / this transport's time (> 1: faster).
#[derive(Debug, Clone, PartialEq)]
pub struct TransportCurve {
    /// The transport (e.g. `nccl`, `gpudirect_rdma`).
    pub transport: String,
    /// `(bytes, speedup)` points, any order.
    pub points: Vec<(f64, f64)>,
}

/// Where one transfer's time goes under one transport, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TransportBreakdown {
    /// The transport.
    pub transport: String,
    /// Fixed latency (s).
    pub latency: f64,
    /// Software overhead (s).
    pub overhead: f64,
    /// Staging copies (s).
    pub staging: f64,
    /// Time at bandwidth (s).
    pub bandwidth: f64,
}

/// Draws speedup over `baseline` against transfer size (log x in binary byte units; log y when
/// the speedups span more than 20×), one line per transport, with the baseline's 1× as a dashed
/// line. Errors: no point at all, a non-finite value, or a size or speedup that is not positive.
pub fn transport_speedup(
    stem: &Path,
    title: &str,
    baseline: &str,
    curves: &[TransportCurve],
) -> Result<Vec<PathBuf>, PlotError> {
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, 0.0f64, f64::INFINITY, 0.0f64);
    let mut sorted = Vec::with_capacity(curves.len());
    for c in curves {
        for &(x, y) in &c.points {
            if !(x.is_finite() && x > 0.0 && y.is_finite() && y > 0.0) {
                return Err(PlotError::NotDrawn(format!(
                    "transport_speedup: transport {} has point ({x} B, {y}×): sizes and speedups must be positive numbers",
                    c.transport
                )));
            }
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        let mut p = c.points.clone();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        sorted.push((c.transport.clone(), p));
    }
    if !x0.is_finite() {
        return Err("transport_speedup: no points to plot".into());
    }
    render(
        stem,
        &Speedup {
            title: title.to_string(),
            baseline: baseline.to_string(),
            curves: sorted,
            x: log_range(x0, x1),
            y: (y0.min(1.0), y1.max(1.0)),
        },
    )
}

struct Speedup {
    title: String,
    baseline: String,
    curves: Vec<(String, Vec<(f64, f64)>)>,
    x: (f64, f64),
    y: (f64, f64),
}

impl Speedup {
    fn chart<DB: DrawingBackend, Y>(
        &self,
        area: &DrawingArea<DB, Shift>,
        y: Y,
    ) -> Result<(), String>
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .margin_right(30)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d((self.x.0..self.x.1).log_scale(), y)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_desc("transfer size (bytes, log scale; 1 kB = 1000 B)")
            .y_desc(format!("speedup over {} (×)", self.baseline))
            .x_label_formatter(&|v| fmt_si_bytes(*v))
            .y_label_formatter(&|v| fmt_num(*v))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        chart
            .draw_series(DashedLineSeries::new(
                [(self.x.0, 1.0), (self.x.1, 1.0)],
                10,
                6,
                BLACK.stroke_width(2),
            ))
            .map_err(&e)?;
        for (i, (_, p)) in self.curves.iter().enumerate() {
            chart
                .draw_series(LineSeries::new(
                    p.iter().copied(),
                    colour(i).stroke_width(3),
                ))
                .map_err(&e)?;
            chart
                .draw_series(p.iter().map(|&pt| Circle::new(pt, 4, colour(i).filled())))
                .map_err(&e)?;
        }
        Ok(())
    }
}

impl Figure for Speedup {
    const NAME: &'static str = "transport_speedup";

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let mut items: Vec<_> = self
            .curves
            .iter()
            .enumerate()
            .map(|(i, (l, _))| (l.clone(), colour(i)))
            .collect();
        items.push((format!("{} (baseline, 1×)", self.baseline), BLACK));
        let area = legend(&area, Self::NAME, &items)?;
        if self.y.1 / self.y.0 > 20.0 {
            let (lo, hi) = log_range(self.y.0, self.y.1);
            self.chart(&area, (lo..hi).log_scale())
        } else {
            let (lo, hi) = nice_range(self.y.0, self.y.1, 0.08);
            self.chart(&area, lo.max(0.0)..hi)
        }
    }
}

/// Draws one stacked bar per transport splitting the time of one transfer of `size_bytes` into
/// latency, overhead, staging and bandwidth (time unit chosen from the longest total). Errors: no
/// rows, or a component that is negative or not finite.
pub fn transport_breakdown(
    stem: &Path,
    title: &str,
    size_bytes: f64,
    rows: &[TransportBreakdown],
) -> Result<Vec<PathBuf>, PlotError> {
    if rows.is_empty() {
        return Err("transport_breakdown: no transports to plot".into());
    }
    for r in rows {
        for (name, v) in parts(r) {
            if !v.is_finite() || v < 0.0 {
                return Err(PlotError::NotDrawn(format!(
                    "transport_breakdown: transport {} {name} is {v} s; it must be a non-negative number",
                    r.transport
                )));
            }
        }
    }
    let title = if size_bytes.is_finite() && size_bytes >= 0.0 {
        format!("{title} ({} transfer)", fmt_bytes(size_bytes))
    } else {
        title.to_string()
    };
    render(stem, &Breakdown { title, rows })
}

/// A byte count in decimal units (`1 kB`, `10 MB`), matching decimal log ticks.
fn fmt_si_bytes(b: f64) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1000.0 && i + 1 < UNITS.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}", fmt_num(v), UNITS[i])
}

fn parts(r: &TransportBreakdown) -> [(&'static str, f64); 4] {
    [
        ("latency", r.latency),
        ("overhead", r.overhead),
        ("staging", r.staging),
        ("bandwidth", r.bandwidth),
    ]
}

struct Breakdown<'a> {
    title: String,
    rows: &'a [TransportBreakdown],
}

impl Figure for Breakdown<'_> {
    const NAME: &'static str = "transport_breakdown";

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let items: Vec<_> = parts(&self.rows[0])
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.to_string(), colour(i)))
            .collect();
        let area = legend(&area, Self::NAME, &items)?;
        let max = self
            .rows
            .iter()
            .map(|r| parts(r).iter().map(|p| p.1).sum::<f64>())
            .fold(0.0f64, f64::max);
        let (unit, scale) = time_unit(max);
        let (_, y1) = nice_range(0.0, if max > 0.0 { max / scale } else { 1.0 }, 0.08);
        let n = self.rows.len();
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(30)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.6..(n as f64 - 0.4), 0.0..y1)
            .map_err(&e)?;
        let names: Vec<&str> = self.rows.iter().map(|r| r.transport.as_str()).collect();
        let fmt_x = |v: &f64| super::category(&names, *v, false);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&fmt_x)
            .x_desc("transport")
            .y_desc(format!("transfer time ({unit})"))
            .y_label_formatter(&|v| fmt_num(*v))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        for (i, r) in self.rows.iter().enumerate() {
            let x = i as f64;
            let mut base = 0.0;
            for (k, (_, v)) in parts(r).iter().enumerate() {
                let top = base + v / scale;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.35, base), (x + 0.35, top)],
                        colour(k).filled(),
                    )))
                    .map_err(&e)?;
                base = top;
            }
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("{} {unit}", fmt_num(base)),
                    (x - 0.3, base),
                    tick_font().pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Left,
                        plotters::style::text_anchor::VPos::Bottom,
                    )),
                )))
                .map_err(&e)?;
        }
        Ok(())
    }
}
