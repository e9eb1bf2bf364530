//! Plots: pure functions from plain data structs (defined here, independent of `sim`) to a PNG
//! and an SVG file each.
//!
//! Every plotting function takes a `stem` (a path without extension) and writes `<stem>.png`
//! and `<stem>.svg` through [`crate::atomic::write_atomic`], creating the folder if it is
//! missing, and returns both paths (PNG first). Both images are drawn in memory before either is
//! written, so an error leaves no file (and never a half-written one). Errors ([`PlotError`])
//! name the plot and the problem, and say whether the data could not be drawn or the file could
//! not be written; no input panics: empty data, non-finite numbers, zero-length
//! ranges and single points give a sensible plot or a clear error.
//!
//! One file per plot: [`timeline`](mod@timeline) (per-device Gantt chart), [`util`] (utilization over time per
//! device class), [`cdf`](mod@cdf) (latency CDFs), [`bars`] (comparison bars with confidence intervals),
//! [`drill`](mod@drill) (failure-drill recovery), [`transports`] (speedup and time breakdown), [`heatmap`](mod@heatmap)
//! (a sweep over two parameters). [`font`] embeds the one font text is drawn with; this file holds
//! the shared styling and the rendering to files.

pub mod accuracy;
pub mod bars;
pub mod cdf;
pub mod drill;
pub mod font;
pub mod heatmap;
pub mod timeline;
pub mod transports;
pub mod util;

pub use accuracy::{AccuracyKind, accuracy};
pub use bars::{Bar, MetricBars, Missing, comparison};
pub use cdf::{SampleSet, Whole, cdf};
pub use drill::{DrillSeed, Recovery, drill};
pub use heatmap::{Heatmap, heatmap};
pub use timeline::{MAX_TIMELINE_ROWS, Span, SpanKind, TimelineRow, timeline, timeline_of};
pub use transports::{TransportBreakdown, TransportCurve, transport_breakdown, transport_speedup};
pub use util::{UtilSeries, utilization};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

/// Default image size in pixels (width, height).
pub const SIZE: (u32, u32) = (1200, 750);

/// The font family every text is drawn with (registered by [`font::ensure`]).
pub(crate) const FONT: &str = "sans-serif";

/// The label of the category at an integer axis position (bars, rows, seeds), empty between
/// positions and outside the range; `reversed` counts from the top (row 0 drawn highest).
pub(crate) fn category<S: AsRef<str>>(labels: &[S], v: f64, reversed: bool) -> String {
    let n = labels.len();
    let i = v.round();
    if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
        let k = if reversed {
            n - 1 - i as usize
        } else {
            i as usize
        };
        labels[k].as_ref().to_string()
    } else {
        String::new()
    }
}

/// Title font size in pixels.
pub(crate) const TITLE_PX: u32 = 26;
/// Axis description font size in pixels.
pub(crate) const LABEL_PX: u32 = 18;
/// Tick label and legend font size in pixels.
pub(crate) const TICK_PX: u32 = 15;

/// A colour-blind-friendly categorical palette (Okabe–Ito, then Tableau extras).
pub(crate) const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(240, 228, 66),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

/// The `i`-th categorical colour (cycling).
pub(crate) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Something that can draw itself on any plotters backend.
pub(crate) trait Figure {
    /// Name of the plot, used in error messages.
    const NAME: &'static str;
    /// Image size in pixels.
    fn size(&self) -> (u32, u32) {
        SIZE
    }
    /// Draw onto `root` (already filled white).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Why a plot is missing: its data cannot be drawn (no samples, a non-finite value: the report
/// says so and the command goes on), or its file could not be written (a full disk, a folder
/// at its path: the command fails, naming the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlotError {
    NotDrawn(String),
    Write(String),
}

impl PlotError {
    /// The message, naming the plot (and, for [`PlotError::Write`], the file).
    pub fn message(&self) -> &str {
        match self {
            PlotError::NotDrawn(m) | PlotError::Write(m) => m,
        }
    }
}

impl std::fmt::Display for PlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl From<String> for PlotError {
    fn from(m: String) -> PlotError {
        PlotError::NotDrawn(m)
    }
}

impl From<&str> for PlotError {
    fn from(m: &str) -> PlotError {
        PlotError::NotDrawn(m.to_string())
    }
}

/// Turns a plotters error into our error string.
pub(crate) fn err<E: std::fmt::Debug>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: drawing failed: {e:?}")
}

/// `<stem>.<ext>`, keeping any dots already in the stem.
fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s: OsString = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Draws `fig` as SVG and PNG in memory, then writes `<stem>.png` and `<stem>.svg` atomically.
pub(crate) fn render<F: Figure>(stem: &Path, fig: &F) -> Result<Vec<PathBuf>, PlotError> {
    let name = F::NAME;
    if stem.file_name().is_none() || stem.as_os_str().to_string_lossy().ends_with('/') {
        return Err(PlotError::Write(format!(
            "{name}: output stem {} has no file name",
            stem.display()
        )));
    }
    font::ensure()?;
    let (w, h) = fig.size();

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err(name))?;
        fig.draw(&root)?;
        root.present().map_err(err(name))?;
    }

    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err(name))?;
        fig.draw(&root)?;
        root.present().map_err(err(name))?;
    }
    let mut png = Vec::new();
    {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(&mut png)
            .write_image(&rgb, w, h, image::ColorType::Rgb8)
            .map_err(|e| format!("{name}: PNG encoding failed: {e}"))?;
    }

    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::atomic::create_dir(dir).map_err(|e| {
            PlotError::Write(format!(
                "{name}: cannot create folder {}: {e}",
                dir.display()
            ))
        })?;
    }
    let png_path = with_ext(stem, "png");
    let svg_path = with_ext(stem, "svg");
    for (path, bytes) in [(&png_path, png.as_slice()), (&svg_path, svg.as_bytes())] {
        crate::atomic::write_atomic(path, bytes)
            .map_err(|e| PlotError::Write(format!("{name}: cannot write {e}")))?;
    }
    Ok(vec![png_path, svg_path])
}

/// A drawable range from `lo..hi`: widened when empty or a single value, padded by `pad` of its
/// width on both sides.
pub(crate) fn nice_range(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() && lo <= hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    };
    if hi - lo <= f64::EPSILON * hi.abs().max(lo.abs()).max(1e-300) {
        let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
        lo -= d;
        hi += d;
    }
    let w = hi - lo;
    (lo - w * pad, hi + w * pad)
}

/// A drawable log range covering the positive `lo..hi`, to whole decades when narrow.
pub(crate) fn log_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
    let hi = if hi >= lo && hi.is_finite() { hi } else { lo };
    let (a, b) = (lo.log10().floor(), hi.log10().ceil());
    let b = if b <= a { a + 1.0 } else { b };
    (10f64.powf(a), 10f64.powf(b))
}

pub use crate::units::{fmt_bytes, fmt_num};

/// A time unit chosen for a span of seconds: its name and how many seconds it holds.
pub(crate) fn time_unit(max_seconds: f64) -> (&'static str, f64) {
    let m = max_seconds.abs();
    if m >= 3.0 * 3600.0 {
        ("h", 3600.0)
    } else if m >= 300.0 {
        ("min", 60.0)
    } else if m >= 1.0 || m == 0.0 || !m.is_finite() {
        ("s", 1.0)
    } else if m >= 1e-3 {
        ("ms", 1e-3)
    } else if m >= 1e-6 {
        ("µs", 1e-6)
    } else {
        ("ns", 1e-9)
    }
}

/// Writes a "no data" note centred in an area (for panels with nothing to show).
pub(crate) fn no_data<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    what: &'static str,
    msg: &str,
) -> Result<(), String> {
    let (w, h) = area.dim_in_pixel();
    let style = TextStyle::from((FONT, LABEL_PX).into_font())
        .color(&BLACK)
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Center,
            plotters::style::text_anchor::VPos::Center,
        ));
    area.draw_text(msg, &style, (w as i32 / 2, h as i32 / 2))
        .map_err(err(what))
}

/// Draws a legend of coloured squares and labels at the top of `area`, on as many centred lines
/// as the labels need, and returns the rest of the area.
pub(crate) fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    what: &'static str,
    items: &[(String, RGBColor)],
) -> Result<DrawingArea<DB, Shift>, String> {
    let font = tick_font();
    let sq = TICK_PX as i32;
    let (w, _) = area.dim_in_pixel();
    let avail = w as i32 - 20;
    // Lay the items out in lines: (width of the line, items with their text widths).
    type Line<'a> = (i32, Vec<(&'a String, RGBColor, i32)>);
    let mut lines: Vec<Line> = vec![(0, vec![])];
    for (label, c) in items {
        let tw = area
            .estimate_text_size(label, &font)
            .map(|(w, _)| w as i32)
            .unwrap_or(8 * label.len() as i32);
        let iw = sq + 30 + tw;
        let cur = lines.last_mut().expect("never empty");
        if cur.0 + iw > avail && !cur.1.is_empty() {
            lines.push((iw, vec![(label, *c, tw)]));
        } else {
            cur.0 += iw;
            cur.1.push((label, *c, tw));
        }
    }
    let (top, rest) = area.split_vertically(30 * lines.len() as u32);
    for (i, (total, line)) in lines.iter().enumerate() {
        let mut x = ((w as i32 - total) / 2).max(4);
        let y = 15 + 30 * i as i32;
        for (label, c, tw) in line {
            let square = [(x, y - sq / 2), (x + sq, y + sq / 2)];
            top.draw(&Rectangle::new(square, c.filled()))
                .map_err(err(what))?;
            top.draw(&Rectangle::new(square, BLACK.stroke_width(1)))
                .map_err(err(what))?;
            top.draw_text(label, &font, (x + sq + 6, y - sq / 2))
                .map_err(err(what))?;
            x += sq + 30 + tw;
        }
    }
    Ok(rest)
}

/// The title font.
pub(crate) fn title_font() -> TextStyle<'static> {
    (FONT, TITLE_PX).into_font().color(&BLACK)
}

/// The axis-description font.
pub(crate) fn label_font() -> TextStyle<'static> {
    (FONT, LABEL_PX).into_font().color(&BLACK)
}

/// The tick-label font.
pub(crate) fn tick_font() -> TextStyle<'static> {
    (FONT, TICK_PX).into_font().color(&BLACK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_compactly() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(1234.0), "1234");
        assert_eq!(fmt_num(1.5), "1.5");
        assert_eq!(fmt_num(0.01234), "0.0123");
        assert_eq!(fmt_num(2.5e9), "2.50e9");
        assert_eq!(fmt_bytes(4096.0), "4 KiB");
        assert_eq!(fmt_bytes(1024.0 * 1024.0 * 1024.0), "1 GiB");
    }

    #[test]
    fn ranges_never_collapse() {
        let (a, b) = nice_range(5.0, 5.0, 0.0);
        assert!(a < 5.0 && b > 5.0);
        let (a, b) = nice_range(0.0, 0.0, 0.1);
        assert!(a < 0.0 && b > 0.0);
        let (a, b) = nice_range(f64::NAN, 1.0, 0.0);
        assert!(a < b);
        let (a, b) = log_range(3.0, 3.0);
        assert!(a <= 3.0 && b > 3.0 && a > 0.0);
        assert_eq!(time_unit(30.0).0, "s");
        assert_eq!(time_unit(4.0 * 3600.0).0, "h");
        assert_eq!(time_unit(0.002).0, "ms");
    }

    #[test]
    fn extension_keeps_dots_in_stem() {
        assert_eq!(
            with_ext(Path::new("out/cdf.v2"), "png"),
            PathBuf::from("out/cdf.v2.png")
        );
    }
}
