//! Empirical CDFs of latencies (one line per sample set), on a log x axis when the tail is long.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::{
    Figure, PlotError, colour, err, fmt_num, label_font, legend, log_range, nice_range, render,
    tick_font, title_font,
};

/// At most this many points per line are drawn (evenly spaced ranks, the extremes kept).
const MAX_POINTS: usize = 4000;

/// A named set of samples (e.g. the task latencies of one variant), in the unit given to [`cdf`].
#[derive(Debug, Clone, PartialEq)]
pub struct SampleSet {
    /// Legend label.
    pub label: String,
    /// The samples, any order.
    pub values: Vec<f64>,
    /// When `values` is a bounded sample of a larger set (runs keep at most
    /// `sim::metrics::MAX_SAMPLES` per metric), the whole set's size and exact quantiles, so
    /// the legend states those and not the sample's; `None`: `values` is the whole set.
    pub whole: Option<Whole>,
}

/// A sample set's true size and exact median and 99th percentile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Whole {
    pub count: u64,
    pub p50: f64,
    pub p99: f64,
}

/// Draws the empirical CDF of each set: x is `quantity (unit)`, y the fraction of samples at or
/// below x. The x axis is logarithmic when the pooled p99/p50 exceeds 20 and every sample is
/// positive. Legend entries give each set's n, p50 and p99. Errors: no samples at all, or a
/// non-finite sample.
pub fn cdf(
    stem: &Path,
    title: &str,
    quantity: &str,
    unit: &str,
    sets: &[SampleSet],
) -> Result<Vec<PathBuf>, PlotError> {
    let mut sorted = Vec::with_capacity(sets.len());
    for s in sets {
        if let Some((i, v)) = s.values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(PlotError::NotDrawn(format!(
                "cdf: set {} sample #{i} is {v}, not a finite number",
                s.label
            )));
        }
        let mut v = s.values.clone();
        v.sort_by(f64::total_cmp);
        sorted.push((s.label.clone(), v, s.whole));
    }
    let mut all: Vec<f64> = sorted
        .iter()
        .flat_map(|(_, v, _)| v.iter().copied())
        .collect();
    if all.is_empty() {
        return Err("cdf: no samples to plot".into());
    }
    all.sort_by(f64::total_cmp);
    let (p50, p99) = (
        crate::quantile::of_sorted(&all, 0.5),
        crate::quantile::of_sorted(&all, 0.99),
    );
    let (min, max) = (all[0], all[all.len() - 1]);
    let log = min > 0.0 && p99 / p50 > 20.0;
    render(
        stem,
        &Cdf {
            title: title.to_string(),
            x_desc: if log {
                format!("{quantity} ({unit}, log scale)")
            } else {
                format!("{quantity} ({unit})")
            },
            sets: sorted,
            log,
            min,
            max,
        },
    )
}

struct Cdf {
    title: String,
    x_desc: String,
    sets: Vec<(String, Vec<f64>, Option<Whole>)>,
    log: bool,
    min: f64,
    max: f64,
}

impl Cdf {
    fn chart<DB: DrawingBackend, X>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x: X,
    ) -> Result<(), String>
    where
        X: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
    {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .margin_right(30)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x, 0.0..1.02)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_label_formatter(&|v| fmt_num(*v))
            .x_desc(self.x_desc.as_str())
            .y_desc("fraction of samples ≤ x")
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        for (i, (_, v, _)) in self.sets.iter().enumerate() {
            if v.is_empty() {
                continue;
            }
            let n = v.len();
            let step = n.div_ceil(MAX_POINTS).max(1);
            let mut pts = vec![(v[0], 0.0)];
            let mut prev = 0.0;
            let mut k = 0;
            while k < n {
                let j = if k + step >= n { n - 1 } else { k + step - 1 };
                let y = (j + 1) as f64 / n as f64;
                pts.push((v[j], prev));
                pts.push((v[j], y));
                prev = y;
                k = j + 1;
            }
            if n == 1 {
                // One sample: show the jump with a marker too.
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (v[0], 1.0),
                        5,
                        colour(i).filled(),
                    )))
                    .map_err(&e)?;
            }
            chart
                .draw_series(LineSeries::new(pts, colour(i).stroke_width(3)))
                .map_err(&e)?;
        }
        Ok(())
    }
}

impl Figure for Cdf {
    const NAME: &'static str = "cdf";

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let items: Vec<_> = self
            .sets
            .iter()
            .enumerate()
            .map(|(i, (l, v, whole))| {
                let text = if let Some(w) = whole.filter(|w| w.count > 0) {
                    let drawn = if (v.len() as u64) < w.count {
                        format!("; {} drawn", v.len())
                    } else {
                        String::new()
                    };
                    format!(
                        "{l} (n={}, p50={}, p99={}{drawn})",
                        w.count,
                        fmt_num(w.p50),
                        fmt_num(w.p99),
                    )
                } else if v.is_empty() {
                    format!("{l} (no samples)")
                } else {
                    format!(
                        "{l} (n={}, p50={}, p99={})",
                        v.len(),
                        fmt_num(crate::quantile::of_sorted(v, 0.5)),
                        fmt_num(crate::quantile::of_sorted(v, 0.99))
                    )
                };
                (text, colour(i))
            })
            .collect();
        let area = legend(&area, Self::NAME, &items)?;
        if self.log {
            let (lo, hi) = log_range(self.min, self.max);
            self.chart(&area, (lo..hi).log_scale())
        } else {
            let (lo, hi) = nice_range(self.min, self.max, 0.03);
            self.chart(&area, lo..hi)
        }
    }
}
