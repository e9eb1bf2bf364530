//! Predicted against published: one point per row on log-log axes, one colour per kind, the
//! line of perfect agreement dashed and ±10% and ±20% around it dotted.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Figure, PlotError, colour, err, fmt_num, label_font, legend, log_range, render, tick_font,
    title_font,
};

/// The points of one kind: `(published, predicted)`, both positive.
#[derive(Debug, Clone, PartialEq)]
pub struct AccuracyKind {
    pub kind: String,
    pub points: Vec<(f64, f64)>,
}

/// Draws every kind's points. Errors: no point, or a value that is not a positive number.
pub fn accuracy(
    stem: &Path,
    title: &str,
    kinds: &[AccuracyKind],
) -> Result<Vec<PathBuf>, PlotError> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for k in kinds {
        for &(a, b) in &k.points {
            if !(a.is_finite() && a > 0.0 && b.is_finite() && b > 0.0) {
                return Err(PlotError::NotDrawn(format!(
                    "accuracy: {} has point ({a}, {b}): published and predicted must be positive numbers",
                    k.kind
                )));
            }
            (lo, hi) = (lo.min(a).min(b), hi.max(a).max(b));
        }
    }
    if !lo.is_finite() {
        return Err("accuracy: no points to plot".into());
    }
    render(
        stem,
        &Scatter {
            title: title.to_string(),
            kinds: kinds.to_vec(),
            range: log_range(lo, hi),
        },
    )
}

struct Scatter {
    title: String,
    kinds: Vec<AccuracyKind>,
    range: (f64, f64),
}

impl Figure for Scatter {
    const NAME: &'static str = "accuracy";

    fn size(&self) -> (u32, u32) {
        (1000, 900)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let items: Vec<_> = self
            .kinds
            .iter()
            .enumerate()
            .map(|(i, k)| (format!("{} ({} rows)", k.kind, k.points.len()), colour(i)))
            .collect();
        let area = legend(&area, Self::NAME, &items)?;
        let (lo, hi) = self.range;
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(30)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_desc("published (each row's own unit, log scale)")
            .y_desc("Orrery (same unit, log scale)")
            .x_label_formatter(&|v| fmt_num(*v))
            .y_label_formatter(&|v| fmt_num(*v))
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;
        chart
            .draw_series(DashedLineSeries::new(
                [(lo, lo), (hi, hi)],
                10,
                6,
                BLACK.stroke_width(2),
            ))
            .map_err(&e)?;
        for f in [0.9, 1.1, 0.8, 1.2] {
            chart
                .draw_series(DashedLineSeries::new(
                    [(lo, lo * f), (hi, hi * f)],
                    3,
                    5,
                    RGBColor(150, 150, 150).stroke_width(1),
                ))
                .map_err(&e)?;
        }
        for (i, k) in self.kinds.iter().enumerate() {
            chart
                .draw_series(
                    k.points
                        .iter()
                        .map(|&p| Circle::new(p, 5, colour(i).filled())),
                )
                .map_err(&e)?;
        }
        Ok(())
    }
}
