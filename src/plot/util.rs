//! Utilization over time: for each device class (or link class), a fraction (0..1) as a step
//! line over the whole run; a dashed series shares the colour of the solid one before it (busy
//! solid, allocated dashed).

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Figure, PlotError, colour, err, fmt_num, label_font, legend, render, tick_font, time_unit,
    title_font,
};

/// One device class's utilization: `(t, busy)` points, `t` in seconds and `busy` the fraction of
/// the class's devices busy from `t` until the next point (0..1). Points may come in any order.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UtilSeries {
    /// The device class (e.g. `H100_SXM`).
    pub label: String,
    /// `(time s, busy fraction)` points.
    #[serde(rename = "time_s_busy_fraction")]
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed in the colour of the solid series before it (not a legend entry of its
    /// own colour).
    pub dashed: bool,
}

/// Draws each series as a step line over time from 0 (or the earliest point) to `t_end`
/// seconds (held from each point to the next, the last one to `t_end`; a non-finite or
/// non-positive `t_end` means the latest point). Errors: no series with any point, a
/// non-finite number, or a fraction outside 0..1.
pub fn utilization(
    stem: &Path,
    title: &str,
    series: &[UtilSeries],
    t_end: f64,
) -> Result<Vec<PathBuf>, PlotError> {
    let mut sorted = Vec::with_capacity(series.len());
    let (mut t0, mut t1) = (f64::INFINITY, f64::NEG_INFINITY);
    for s in series {
        let mut pts = s.points.clone();
        for &(t, b) in &pts {
            if !t.is_finite() || !b.is_finite() {
                return Err(PlotError::NotDrawn(format!(
                    "utilization: series {} has a non-finite point ({t}, {b})",
                    s.label
                )));
            }
            if !(-1e-9..=1.0 + 1e-9).contains(&b) {
                return Err(PlotError::NotDrawn(format!(
                    "utilization: series {} has busy fraction {b} at t = {t} s, outside 0..1",
                    s.label
                )));
            }
            t0 = t0.min(t);
            t1 = t1.max(t);
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        sorted.push((s.label.clone(), pts));
    }
    if !t0.is_finite() {
        return Err("utilization: no data points to plot".into());
    }
    let t0 = t0.min(0.0);
    let t1 = if t_end.is_finite() && t_end > 0.0 {
        t_end.max(t1)
    } else {
        t1
    };
    let (t0, t1) = if t1 > t0 { (t0, t1) } else { (t0, t0 + 1.0) };
    let dashed = series.iter().map(|s| s.dashed).collect();
    render(
        stem,
        &Util {
            title: title.to_string(),
            series: sorted,
            dashed,
            t0,
            t1,
        },
    )
}

struct Util {
    title: String,
    series: Vec<(String, Vec<(f64, f64)>)>,
    dashed: Vec<bool>,
    t0: f64,
    t1: f64,
}

impl Util {
    /// Colour index of each series: a dashed one takes the solid one's before it.
    fn colours(&self) -> Vec<usize> {
        let mut next = 0;
        self.dashed
            .iter()
            .map(|d| {
                if *d && next > 0 {
                    next - 1
                } else {
                    next += 1;
                    next - 1
                }
            })
            .collect()
    }
}

impl Figure for Util {
    const NAME: &'static str = "utilization";

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let colours = self.colours();
        let items: Vec<_> = self
            .series
            .iter()
            .zip(&colours)
            .map(|((l, _), c)| (l.clone(), colour(*c)))
            .collect();
        let area = legend(&area, Self::NAME, &items)?;
        let (unit, scale) = time_unit(self.t1);
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(30)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(self.t0 / scale..self.t1 / scale, 0.0..1.05)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| fmt_num(*v))
            .x_desc(format!("time ({unit})"))
            .y_desc("utilization (%)")
            .y_label_formatter(&|v: &f64| format!("{:.0}", v * 100.0))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        for (i, (_, pts)) in self.series.iter().enumerate() {
            let mut step = Vec::with_capacity(pts.len() * 2 + 1);
            for (j, &(t, b)) in pts.iter().enumerate() {
                step.push((t / scale, b));
                let next = pts.get(j + 1).map_or(self.t1, |p| p.0);
                step.push((next / scale, b));
            }
            let style = colour(colours[i]).stroke_width(3);
            if self.dashed[i] {
                chart
                    .draw_series(DashedLineSeries::new(step, 12, 8, style))
                    .map_err(&e)?;
            } else {
                chart
                    .draw_series(LineSeries::new(step, style))
                    .map_err(&e)?;
            }
        }
        Ok(())
    }
}
