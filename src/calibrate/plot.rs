//! Measured vs fitted, per transfer path, as one SVG (plotters' SVG backend: text is written as
//! SVG `<text>`, so no font library is needed at build or run time). Log–log axes: bytes
//! against seconds; fitted sizes as circles, held-out sizes as crosses, the piecewise fit as a
//! line.

use super::fit::PathFit;
use plotters::prelude::*;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

pub fn svg(fits: &[(String, PathFit)], title: &str) -> Result<String, String> {
    // Text is measured with the embedded font (plotters' ab_glyph backend has no system fonts).
    crate::plot::font::ensure()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 600)).into_drawing_area();
        draw(&root, fits, title).map_err(|e| format!("cannot draw the plot: {e}"))?;
        root.present()
            .map_err(|e| format!("cannot draw the plot: {e}"))?;
    }
    Ok(out)
}

fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}

fn draw(
    root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    fits: &[(String, PathFit)],
    title: &str,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(e)?;
    let all = fits.iter().flat_map(|(_, f)| f.medians.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, 0.0f64, f64::MAX, 0.0f64);
    for &(b, t) in all {
        if t > 0.0 {
            x0 = x0.min(b as f64);
            x1 = x1.max(b as f64);
            y0 = y0.min(t);
            y1 = y1.max(t);
        }
    }
    if x1 <= 0.0 {
        return Ok(());
    }
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0 / 1.5..x1 * 1.5).log_scale(),
            (y0 / 1.5..y1 * 1.5).log_scale(),
        )
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("bytes")
        .y_desc("seconds")
        .x_label_formatter(&|x| super::human_bytes(*x as u64))
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .draw()
        .map_err(e)?;
    for (i, (path, f)) in fits.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let held: std::collections::BTreeSet<u64> = f.holdout.iter().map(|h| h.bytes).collect();
        chart
            .draw_series(
                f.medians
                    .iter()
                    .filter(|(b, t)| *t > 0.0 && !held.contains(b))
                    .map(|&(b, t)| Circle::new((b as f64, t), 3, c.filled())),
            )
            .map_err(e)?
            .label(format!("{path} measured (fitted)"))
            .legend(move |(x, y)| Circle::new((x, y), 3, c.filled()));
        chart
            .draw_series(
                f.holdout
                    .iter()
                    .map(|h| Cross::new((h.bytes as f64, h.measured_s), 4, c.stroke_width(2))),
            )
            .map_err(e)?
            .label(format!("{path} held out"))
            .legend(move |(x, y)| Cross::new((x, y), 4, c.stroke_width(2)));
        let n = 200;
        let line = (0..=n).map(|k| {
            let x = x0 * (x1 / x0).powf(k as f64 / n as f64);
            (x, f.secs(x))
        });
        chart
            .draw_series(LineSeries::new(line, c.stroke_width(2)))
            .map_err(e)?
            .label(format!("{path} fit ({} segments)", f.segments.len()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    Ok(())
}
