//! Failure drill: per seed, when each failure struck, when it was detected and when recovery
//! finished (top), and the work each seed lost (bottom).

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Figure, PlotError, err, fmt_num, label_font, legend, nice_range, render, tick_font, time_unit,
    title_font,
};

/// At most this many seeds are drawn; the title says how many were left out.
const MAX_SEEDS: usize = 64;

const DETECTING: RGBColor = RGBColor(230, 159, 0);
const RECOVERING: RGBColor = RGBColor(200, 30, 30);
const UNFINISHED: RGBColor = RGBColor(120, 120, 120);
const FAILURE: RGBColor = RGBColor(0, 0, 0);
const LOST: RGBColor = RGBColor(0, 114, 178);

/// One failure and its recovery, in seconds from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recovery {
    /// When the failure struck.
    pub failure: f64,
    /// When it was detected (`None`: not by the end of the run).
    pub detected: Option<f64>,
    /// When recovery finished (`None`: not by the end of the run).
    pub recovered: Option<f64>,
}

/// One seed of a drill: its failures and the work it lost.
#[derive(Debug, Clone, PartialEq)]
pub struct DrillSeed {
    /// The seed.
    pub seed: u64,
    /// Its failures and recoveries.
    pub recoveries: Vec<Recovery>,
    /// Work lost to the failures, in the unit given to [`drill`].
    pub lost_work: f64,
}

/// Draws the recovery timeline of each seed (the first 64) up to `horizon` seconds (a
/// non-finite or non-positive horizon means "up to the last event") and a bar of lost work per
/// seed in `lost_work_unit` (e.g. `GPU·h`). Errors: no seeds, a non-finite time or lost work,
/// detection before the failure or recovery before detection.
pub fn drill(
    stem: &Path,
    title: &str,
    seeds: &[DrillSeed],
    horizon: f64,
    lost_work_unit: &str,
) -> Result<Vec<PathBuf>, PlotError> {
    if seeds.is_empty() {
        return Err("drill: no seeds to plot".into());
    }
    let mut last = 0.0f64;
    for s in seeds {
        if !s.lost_work.is_finite() {
            return Err(PlotError::NotDrawn(format!(
                "drill: seed {} lost work is {}, not a finite number",
                s.seed, s.lost_work
            )));
        }
        for (i, r) in s.recoveries.iter().enumerate() {
            let times = [Some(r.failure), r.detected, r.recovered];
            if times.iter().flatten().any(|t| !t.is_finite()) {
                return Err(PlotError::NotDrawn(format!(
                    "drill: seed {} failure #{i} has a non-finite time",
                    s.seed
                )));
            }
            if r.detected.is_some_and(|d| d < r.failure) {
                return Err(PlotError::NotDrawn(format!(
                    "drill: seed {} failure #{i} is detected before it happens",
                    s.seed
                )));
            }
            if r.recovered
                .is_some_and(|t| r.detected.is_none_or(|d| t < d))
            {
                return Err(PlotError::NotDrawn(format!(
                    "drill: seed {} failure #{i} recovers before it is detected",
                    s.seed
                )));
            }
            last = times.iter().flatten().fold(last, |a, &t| a.max(t));
        }
    }
    let horizon = if horizon.is_finite() && horizon > 0.0 {
        horizon.max(last)
    } else if last > 0.0 {
        last
    } else {
        1.0
    };
    let shown = &seeds[..seeds.len().min(MAX_SEEDS)];
    let title = if seeds.len() > shown.len() {
        format!("{title} (first {} of {} seeds)", shown.len(), seeds.len())
    } else {
        title.to_string()
    };
    render(
        stem,
        &Drill {
            title,
            seeds: shown,
            horizon,
            unit: lost_work_unit.to_string(),
        },
    )
}

struct Drill<'a> {
    title: String,
    seeds: &'a [DrillSeed],
    horizon: f64,
    unit: String,
}

impl Figure for Drill<'_> {
    const NAME: &'static str = "drill";

    fn size(&self) -> (u32, u32) {
        (1300, 520 + (22 * self.seeds.len() as u32).max(200))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let items = [
            ("failure", FAILURE),
            ("failed, not yet detected", DETECTING),
            ("detected, recovering", RECOVERING),
            ("not recovered by the end", UNFINISHED),
            ("lost work", LOST),
        ]
        .map(|(l, c)| (l.to_string(), c));
        let area = legend(&area, Self::NAME, &items)?;
        let (_, h) = area.dim_in_pixel();
        let (top, bottom) = area.split_vertically(h.saturating_sub(360));
        let n = self.seeds.len();
        let (unit, scale) = time_unit(self.horizon);
        let x_max = self.horizon / scale;
        let mut chart = ChartBuilder::on(&top)
            .caption("recovery timeline", label_font())
            .margin(10)
            .margin_right(30)
            .x_label_area_size(45)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..x_max, -0.5..(n as f64 - 0.5))
            .map_err(&e)?;
        let labels: Vec<String> = self
            .seeds
            .iter()
            .map(|s| format!("seed {}", s.seed))
            .collect();
        let fmt_y = |v: &f64| super::category(&labels, *v, true);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&fmt_y)
            .x_label_formatter(&|v| fmt_num(*v))
            .x_desc(format!("time ({unit})"))
            .y_desc("seed")
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        for (i, s) in self.seeds.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            for r in &s.recoveries {
                let f = r.failure / scale;
                let d = r.detected.map_or(x_max, |d| d / scale);
                let done = r.recovered.map(|t| t / scale);
                let mut rects = vec![(f, d, DETECTING)];
                if r.detected.is_some() {
                    rects.push((d, done.unwrap_or(x_max), RECOVERING));
                }
                if r.detected.is_none() || done.is_none() {
                    let from = if r.detected.is_some() { d } else { f };
                    rects.push((from, x_max, UNFINISHED));
                }
                // Unfinished phases get a thin grey strip over their colour.
                for (a, b, c) in rects {
                    let hh = if c == UNFINISHED { 0.15 } else { 0.35 };
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(a, y - hh), (b, y + hh)],
                            c.filled(),
                        )))
                        .map_err(&e)?;
                }
                chart
                    .draw_series(std::iter::once(Cross::new(
                        (f, y),
                        7,
                        FAILURE.stroke_width(3),
                    )))
                    .map_err(&e)?;
            }
        }

        let (lo, hi) = self.seeds.iter().fold((0.0f64, 0.0f64), |(a, b), s| {
            (a.min(s.lost_work), b.max(s.lost_work))
        });
        let (y0, y1) = nice_range(lo, hi, 0.1);
        let (y0, y1) = (
            if lo >= 0.0 { 0.0 } else { y0 },
            if hi <= 0.0 { 0.0 } else { y1 },
        );
        let mut chart = ChartBuilder::on(&bottom)
            .caption("lost work per seed", label_font())
            .margin(10)
            .margin_right(30)
            .x_label_area_size(45)
            .y_label_area_size(90)
            .build_cartesian_2d(-0.6..(n as f64 - 0.4), y0..y1)
            .map_err(&e)?;
        let xl: Vec<String> = self.seeds.iter().map(|s| s.seed.to_string()).collect();
        let fmt_x = |v: &f64| super::category(&xl, *v, false);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(32))
            .x_label_formatter(&fmt_x)
            .x_desc("seed")
            .y_desc(format!("lost work ({})", self.unit))
            .y_label_formatter(&|v| fmt_num(*v))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        chart
            .draw_series(self.seeds.iter().enumerate().map(|(i, s)| {
                let x = i as f64;
                Rectangle::new([(x - 0.35, 0.0), (x + 0.35, s.lost_work)], LOST.filled())
            }))
            .map_err(&e)?;
        Ok(())
    }
}
