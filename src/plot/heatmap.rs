//! A sweep over two parameters as a heatmap: one cell per (x, y) setting coloured by its value,
//! with a colour-scale legend and the value written in each cell.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Figure, PlotError, err, fmt_num, label_font, nice_range, render, tick_font, title_font,
};

/// Cells are annotated with their values up to this many cells.
const MAX_ANNOTATED: usize = 400;

const MISSING: RGBColor = RGBColor(200, 200, 200);

/// A matrix of values over two swept parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// The x parameter, with its unit (e.g. `batch size`).
    pub x_name: String,
    /// The x settings, left to right, as labels.
    pub x_values: Vec<String>,
    /// The y parameter, with its unit (e.g. `nodes`).
    pub y_name: String,
    /// The y settings, bottom to top, as labels.
    pub y_values: Vec<String>,
    /// `values[y][x]`; a non-finite value is a missing point (drawn grey, `n/a`).
    pub values: Vec<Vec<f64>>,
    /// What the values are, with unit (e.g. `throughput (samples/s)`), for the colour scale.
    pub value_name: String,
}

/// Draws the heatmap with a colour scale (viridis) on the right and each cell's value written in
/// it (up to 400 cells). Errors: no x or y settings, or `values` not `y_values.len()` rows of
/// `x_values.len()` values.
pub fn heatmap(stem: &Path, title: &str, map: &Heatmap) -> Result<Vec<PathBuf>, PlotError> {
    let (nx, ny) = (map.x_values.len(), map.y_values.len());
    if nx == 0 || ny == 0 {
        return Err(PlotError::NotDrawn(format!(
            "heatmap: nothing to plot ({nx} x settings, {ny} y settings)"
        )));
    }
    if map.values.len() != ny {
        return Err(PlotError::NotDrawn(format!(
            "heatmap: {} rows of values for {ny} y settings",
            map.values.len()
        )));
    }
    if let Some((j, r)) = map.values.iter().enumerate().find(|(_, r)| r.len() != nx) {
        return Err(PlotError::NotDrawn(format!(
            "heatmap: row {j} ({}) has {} values for {nx} x settings",
            map.y_values[j],
            r.len()
        )));
    }
    let finite = map
        .values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi) = if lo.is_finite() {
        if hi > lo {
            (lo, hi)
        } else {
            nice_range(lo, hi, 0.0)
        }
    } else {
        (0.0, 1.0)
    };
    render(
        stem,
        &Heat {
            title: title.to_string(),
            map,
            lo,
            hi,
        },
    )
}

/// Viridis, sampled at five stops and interpolated linearly; `t` in 0..1.
fn viridis(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

struct Heat<'a> {
    title: String,
    map: &'a Heatmap,
    lo: f64,
    hi: f64,
}

impl Heat<'_> {
    fn t(&self, v: f64) -> f64 {
        (v - self.lo) / (self.hi - self.lo)
    }
}

impl Figure for Heat<'_> {
    const NAME: &'static str = "heatmap";

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let (w, _) = area.dim_in_pixel();
        let (main, scale_area) = area.split_horizontally(w.saturating_sub(190));
        let m = self.map;
        let (nx, ny) = (m.x_values.len(), m.y_values.len());
        let mut chart = ChartBuilder::on(&main)
            .margin(10)
            .x_label_area_size(55)
            .y_label_area_size(110)
            .build_cartesian_2d(-0.5..(nx as f64 - 0.5), -0.5..(ny as f64 - 0.5))
            .map_err(&e)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nx)
            .y_labels(ny)
            .x_label_formatter(&|v| super::category(&m.x_values, *v, false))
            .y_label_formatter(&|v| super::category(&m.y_values, *v, false))
            .x_desc(m.x_name.as_str())
            .y_desc(m.y_name.as_str())
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        let annotate = nx * ny <= MAX_ANNOTATED;
        for (j, row) in m.values.iter().enumerate() {
            for (i, &v) in row.iter().enumerate() {
                let (x, y) = (i as f64, j as f64);
                let c = if v.is_finite() {
                    viridis(self.t(v))
                } else {
                    MISSING
                };
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        c.filled(),
                    )))
                    .map_err(&e)?;
                if annotate {
                    let light = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
                    let ink = if light > 140.0 { BLACK } else { WHITE };
                    let text = if v.is_finite() {
                        fmt_num(v)
                    } else {
                        "n/a".into()
                    };
                    chart
                        .draw_series(std::iter::once(Text::new(
                            text,
                            (x, y),
                            tick_font()
                                .color(&ink)
                                .pos(plotters::style::text_anchor::Pos::new(
                                    plotters::style::text_anchor::HPos::Center,
                                    plotters::style::text_anchor::VPos::Center,
                                )),
                        )))
                        .map_err(&e)?;
                }
            }
        }

        // The colour scale.
        let mut bar = ChartBuilder::on(&scale_area)
            .margin(10)
            .margin_top(20)
            .x_label_area_size(55)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..1.0, self.lo..self.hi)
            .map_err(&e)?;
        bar.configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_desc(m.value_name.as_str())
            .y_label_formatter(&|v| fmt_num(*v))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        const STEPS: usize = 100;
        let dv = (self.hi - self.lo) / STEPS as f64;
        bar.draw_series((0..STEPS).map(|k| {
            let v = self.lo + dv * k as f64;
            Rectangle::new(
                [(0.0, v), (1.0, v + dv)],
                viridis((k as f64 + 0.5) / STEPS as f64).filled(),
            )
        }))
        .map_err(&e)?;
        Ok(())
    }
}
