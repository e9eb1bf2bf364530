//! Per-device timeline (Gantt chart): one row per device, a coloured bar for each span of
//! compute, communication, checkpointing or failure; gaps are idle time.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    Figure, PlotError, err, fmt_num, label_font, legend, render, tick_font, time_unit, title_font,
};

/// At most this many device rows are drawn; the title says how many were left out.
pub const MAX_TIMELINE_ROWS: usize = 64;

/// What a device was doing during a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SpanKind {
    /// Running compute (kernels, tasks).
    Compute,
    /// Moving data (collectives, transfers).
    Communication,
    /// Writing or restoring a checkpoint.
    Checkpoint,
    /// Down or failed (the work done is lost).
    Failed,
}

impl SpanKind {
    /// All kinds, in legend order.
    pub const ALL: [SpanKind; 4] = [
        SpanKind::Compute,
        SpanKind::Communication,
        SpanKind::Checkpoint,
        SpanKind::Failed,
    ];

    /// The legend name.
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Compute => "compute",
            SpanKind::Communication => "communication",
            SpanKind::Checkpoint => "checkpoint",
            SpanKind::Failed => "failed",
        }
    }

    fn colour(self) -> RGBColor {
        match self {
            SpanKind::Compute => RGBColor(0, 114, 178),
            SpanKind::Communication => RGBColor(230, 159, 0),
            SpanKind::Checkpoint => RGBColor(0, 158, 115),
            SpanKind::Failed => RGBColor(200, 30, 30),
        }
    }
}

/// One busy interval of a device, in seconds from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Span {
    /// Start time (s).
    #[serde(rename = "start_s")]
    pub start: f64,
    /// End time (s), not before `start`.
    #[serde(rename = "end_s")]
    pub end: f64,
    /// What the device was doing.
    pub kind: SpanKind,
}

/// One device's row: its label (e.g. `r0.n1 gpu3`) and its busy spans (any order, may be empty).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimelineRow {
    /// Device label shown on the y axis.
    pub label: String,
    /// Busy spans; time not covered is idle.
    pub spans: Vec<Span>,
}

/// Draws a Gantt chart of `rows` (the first [`MAX_TIMELINE_ROWS`] of them, top to bottom) from
/// time 0 to `t_end` seconds (extended to the last span's end; a non-finite or non-positive
/// `t_end` means "up to the last span"). The x axis is in s, min or h depending on the length.
/// Errors: no rows, or a span with a non-finite time or ending before it starts.
pub fn timeline(
    stem: &Path,
    title: &str,
    rows: &[TimelineRow],
    t_end: f64,
) -> Result<Vec<PathBuf>, PlotError> {
    timeline_of(stem, title, rows, t_end, "device")
}

/// [`timeline`] with rows that are `what` (`device`, `node`, `rack`: the y axis says so).
pub fn timeline_of(
    stem: &Path,
    title: &str,
    rows: &[TimelineRow],
    t_end: f64,
    what: &str,
) -> Result<Vec<PathBuf>, PlotError> {
    if rows.is_empty() {
        return Err("timeline: no devices to plot".into());
    }
    let mut last = 0.0f64;
    for row in rows {
        for (i, s) in row.spans.iter().enumerate() {
            if !s.start.is_finite() || !s.end.is_finite() {
                return Err(PlotError::NotDrawn(format!(
                    "timeline: device {} span #{i} has a non-finite time ({}..{})",
                    row.label, s.start, s.end
                )));
            }
            if s.end < s.start {
                return Err(PlotError::NotDrawn(format!(
                    "timeline: device {} span #{i} ends ({} s) before it starts ({} s)",
                    row.label, s.end, s.start
                )));
            }
            last = last.max(s.end);
        }
    }
    let t_end = if t_end.is_finite() && t_end > 0.0 {
        t_end.max(last)
    } else if last > 0.0 {
        last
    } else {
        1.0
    };
    let shown = &rows[..rows.len().min(MAX_TIMELINE_ROWS)];
    let title = if rows.len() > shown.len() {
        format!("{title} (first {} of {} {what}s)", shown.len(), rows.len())
    } else {
        title.to_string()
    };
    render(
        stem,
        &Gantt {
            title,
            rows: shown,
            t_end,
            what: what.to_string(),
        },
    )
}

struct Gantt<'a> {
    title: String,
    rows: &'a [TimelineRow],
    t_end: f64,
    what: String,
}

impl Figure for Gantt<'_> {
    const NAME: &'static str = "timeline";

    fn size(&self) -> (u32, u32) {
        (1400, (170 + 22 * self.rows.len() as u32).max(420))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let e = err::<DrawingAreaErrorKind<DB::ErrorType>>(Self::NAME);
        let area = root.titled(&self.title, title_font()).map_err(&e)?;
        let mut items = vec![("idle".to_string(), RGBColor(238, 238, 238))];
        items.extend(
            SpanKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), k.colour())),
        );
        let area = legend(&area, Self::NAME, &items)?;

        let n = self.rows.len();
        let (unit, scale) = time_unit(self.t_end);
        let x_max = self.t_end / scale;
        let mut chart = ChartBuilder::on(&area)
            .margin(10)
            .margin_right(30)
            .x_label_area_size(50)
            .y_label_area_size(130)
            .build_cartesian_2d(0.0..x_max, -0.5..(n as f64 - 0.5))
            .map_err(&e)?;
        let labels: Vec<&str> = self.rows.iter().map(|r| r.label.as_str()).collect();
        let fmt_y = |v: &f64| super::category(&labels, *v, true);
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&fmt_y)
            .x_label_formatter(&|v| fmt_num(*v))
            .x_desc(format!("time ({unit})"))
            .y_desc(self.what.as_str())
            .axis_desc_style(label_font())
            .label_style(tick_font())
            .draw()
            .map_err(&e)?;

        for (i, row) in self.rows.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y - 0.4), (x_max, y + 0.4)],
                    RGBColor(238, 238, 238).filled(),
                )))
                .map_err(&e)?;
            chart
                .draw_series(row.spans.iter().map(|s| {
                    Rectangle::new(
                        [(s.start / scale, y - 0.4), (s.end / scale, y + 0.4)],
                        s.kind.colour().filled(),
                    )
                }))
                .map_err(&e)?;
        }
        Ok(())
    }
}
