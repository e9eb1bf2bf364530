//! Comparison bars with confidence intervals: groups (variants, hardware mixes, policies) side
//! by side for one or more metrics (step time, makespan, cost, energy, ...), one
//! panel per metric.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Figure, PlotError, colour, err, fmt_num, label_font, nice_range, render, tick_font, title_font,
};

/// One group's value for a metric, with its confidence interval when known.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The group (variant, hardware mix, policy).
    pub group: String,
    /// The estimate (e.g. the mean over seeds).
    pub value: f64,
    /// Its confidence interval `(lo, hi)`, with `lo <= value <= hi`; `None` when unknown (one
    /// seed), drawn without whiskers.
    pub ci: Option<(f64, f64)>,
}

/// A group with no value for a metric, and why (`no price in catalog: MI250X`): drawn as an
/// `n/a` slot of its own and listed under the panel, never left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    pub group: String,
    pub why: String,
}

/// One metric's panel: its name, unit, bars, and the groups without a value.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricBars {
    /// The metric (e.g. `step time`, `cost`).
    pub name: String,
    /// Its unit (e.g. `tasks/s`, `$`, `kWh`, `TFLOP/s per W`).
    pub unit: String,
    /// One bar per group, in drawing order.
    pub bars: Vec<Bar>,
    /// The groups that have no value, after the bars.
    pub missing: Vec<Missing>,
}

/// Draws one panel per metric (small multiples, up to three per row), each bar labelled with its
/// value and whiskers for its confidence interval; a group keeps its colour across panels. A
/// group without a value gets an `n/a` slot after the bars and its reason under the panel.
/// `ci_note` describes the whiskers (e.g. `95% CI over 20 seeds`) and is printed under the title.
/// Errors: no metrics, every metric without bars or missing groups, a non-finite value or
/// interval, or an interval that does not contain its value.
pub fn comparison(
    stem: &Path,
    title: &str,
    ci_note: &str,
    metrics: &[MetricBars],
) -> Result<Vec<PathBuf>, PlotError> {
    if metrics
        .iter()
        .all(|m| m.bars.is_empty() && m.missing.is_empty())
    {
        return Err("comparison: no bars to plot".into());
    }
    let mut groups: Vec<String> = Vec::new();
    for m in metrics {
        for g in &m.missing {
            if !groups.contains(&g.group) {
                groups.push(g.group.clone());
            }
        }
        for b in &m.bars {
            let (lo, hi) = b.ci.unwrap_or((b.value, b.value));
            if !b.value.is_finite() || !lo.is_finite() || !hi.is_finite() {
                return Err(PlotError::NotDrawn(format!(
                    "comparison: metric {} group {} has a non-finite value or interval ({}, {lo}..{hi})",
                    m.name, b.group, b.value
                )));
            }
            if lo > b.value || b.value > hi {
                return Err(PlotError::NotDrawn(format!(
                    "comparison: metric {} group {}: interval {lo}..{hi} does not contain the value {}",
                    m.name, b.group, b.value
                )));
            }
            if !groups.contains(&b.group) {
                groups.push(b.group.clone());
            }
        }
    }
    render(
        stem,
        &Comparison {
            title: title.to_string(),
            note: ci_note.to_string(),
            metrics,
            groups,
        },
    )
}

struct Comparison<'a> {
    title: String,
    note: String,
    metrics: &'a [MetricBars],
    groups: Vec<String>,
}

impl Comparison<'_> {
    /// Panels per row: up to three, fewer when many groups need room for their names (about
    /// 110 pixels a bar: one panel a row past six groups, two past four).
    fn cols(&self) -> usize {
        let groups = self.slots();
        let most = match groups {
            0..=4 => 3,
            5..=6 => 2,
            _ => 1,
        };
        self.metrics.len().clamp(1, most)
    }
}

impl Comparison<'_> {
    /// The most slots (bars and `n/a` groups) any panel has.
    fn slots(&self) -> usize {
        self.metrics
            .iter()
            .map(|m| m.bars.len() + m.missing.len())
            .max()
            .unwrap_or(0)
    }
}

impl Figure for Comparison<'_> {
    const NAME: &'static str = "comparison";

    fn size(&self) -> (u32, u32) {
        let rows = self.metrics.len().div_ceil(self.cols()) as u32;
        let groups = self.slots();
        let w = if self.cols() == 1 {
            (110 * groups as u32 + 150).clamp(1000, 1600)
        } else {
            1500
        };
        (w, 110 + 460 * rows)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let (note, area) = area.split_vertically(30);
        let (w, _) = note.dim_in_pixel();
        let note_text = format!("bars: mean; whiskers: {}", self.note);
        let note_style = label_font().pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Top,
        ));
        note.draw_text(&note_text, &note_style, (w as i32 / 2, 2))
            .map_err(&e)?;
        let rows = self.metrics.len().div_ceil(self.cols());
        let panels = area.split_evenly((rows, self.cols()));
        for (m, panel) in self.metrics.iter().zip(panels.iter()) {
            let caption = if m.unit.is_empty() {
                m.name.clone()
            } else {
                format!("{} ({})", m.name, m.unit)
            };
            // Groups without a value, with why, under the panel's chart.
            let (panel, note) = if m.missing.is_empty() {
                (panel.clone(), None)
            } else {
                let h = panel.dim_in_pixel().1;
                let (top, bottom) = panel.split_vertically(h.saturating_sub(24));
                (top, Some(bottom))
            };
            if let Some(note) = &note {
                let text: Vec<String> = m
                    .missing
                    .iter()
                    .map(|g| format!("{}: {}", g.group, g.why))
                    .collect();
                let style = tick_font().pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ));
                let (w, _) = note.dim_in_pixel();
                note.draw_text(
                    &format!("n/a (not plotted): {}", text.join("; ")),
                    &style,
                    (w as i32 / 2, 2),
                )
                .map_err(&e)?;
            }
            if m.bars.is_empty() {
                let panel = panel.titled(&caption, label_font()).map_err(&e)?;
                let msg = if m.missing.is_empty() {
                    "no data"
                } else {
                    "n/a for every group"
                };
                super::no_data(&panel, Self::NAME, msg)?;
                continue;
            }
            let lo = m
                .bars
                .iter()
                .map(|b| b.ci.map_or(b.value, |c| c.0))
                .fold(0.0f64, f64::min);
            let hi = m
                .bars
                .iter()
                .map(|b| b.ci.map_or(b.value, |c| c.1))
                .fold(0.0f64, f64::max);
            let (y0, y1) = nice_range(lo, hi, 0.08);
            let (y0, y1) = (
                if lo >= 0.0 { 0.0 } else { y0 },
                if hi <= 0.0 { 0.0 } else { y1 },
            );
            let g = m.bars.len() + m.missing.len();
            let mut chart = ChartBuilder::on(&panel)
                .caption(&caption, label_font())
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(75)
                .build_cartesian_2d(-0.6..(g as f64 - 0.4), y0..y1)
                .map_err(&e)?;
            let names: Vec<&str> = m
                .bars
                .iter()
                .map(|b| b.group.as_str())
                .chain(m.missing.iter().map(|g| g.group.as_str()))
                .collect();
            let fmt_x = |v: &f64| super::category(&names, *v, false);
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_labels(g)
                .x_label_formatter(&fmt_x)
                .y_desc(if m.unit.is_empty() {
                    "value"
                } else {
                    m.unit.as_str()
                })
                .y_label_formatter(&|v| fmt_num(*v))
                .axis_desc_style(label_font())
                .label_style(tick_font())
                .draw()
                .map_err(&e)?;
            for (i, b) in m.bars.iter().enumerate() {
                let x = i as f64;
                let c = colour(self.groups.iter().position(|g| *g == b.group).unwrap_or(i));
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.35, 0.0), (x + 0.35, b.value)],
                        c.filled(),
                    )))
                    .map_err(&e)?;
                if let Some((lo, hi)) = b.ci {
                    let whisker = BLACK.stroke_width(2);
                    let lines = [
                        vec![(x, lo), (x, hi)],
                        vec![(x - 0.08, lo), (x + 0.08, lo)],
                        vec![(x - 0.08, hi), (x + 0.08, hi)],
                    ];
                    chart
                        .draw_series(lines.into_iter().map(|l| PathElement::new(l, whisker)))
                        .map_err(&e)?;
                }
                let top = b.ci.map_or(b.value, |c| c.1).max(b.value);
                let anchor = if b.value >= 0.0 { top } else { b.value };
                chart
                    .draw_series(std::iter::once(Text::new(
                        fmt_num(b.value),
                        (x + 0.05, anchor),
                        tick_font().pos(plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Left,
                            plotters::style::text_anchor::VPos::Bottom,
                        )),
                    )))
                    .map_err(&e)?;
            }
            for (j, _) in m.missing.iter().enumerate() {
                let x = (m.bars.len() + j) as f64;
                chart
                    .draw_series(std::iter::once(Text::new(
                        "n/a",
                        (x, 0.0),
                        tick_font().pos(plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Center,
                            plotters::style::text_anchor::VPos::Bottom,
                        )),
                    )))
                    .map_err(&e)?;
            }
        }
        Ok(())
    }
}
