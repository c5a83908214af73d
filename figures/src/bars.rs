//! Grouped bars, the class-wise bar charts of the papers (CFA Fig. 6, WAT Fig. 2, BAT Fig. 5):
//! one group per class (then summary groups such as the worst class and the mean), one bar per
//! series (method) in each group, an outline on each series' worst group, optional error bars
//! and an optional lighter lower part (e.g. the standard error inside the robust error).

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use crate::legend;
use crate::style::{self, DrawResult};

/// The opacity over white of the lower part of a bar ([`BarSeries::lower`]).
pub const LOWER_TINT: f64 = 0.35;

/// Width of one group of bars on the x axis (groups are 1 apart).
const GROUP: f64 = 0.84;

/// One series: a bar in every group.
#[derive(Clone, Debug, PartialEq)]
pub struct BarSeries {
    pub color: RGBColor,
    pub values: Vec<f64>,
    /// Half-widths of error bars (e.g. the standard deviation over seeds).
    pub errors: Option<Vec<f64>>,
    /// A lower part of each bar, drawn lighter (e.g. the standard error inside the robust
    /// error).
    pub lower: Option<Vec<f64>>,
    /// The group whose bar gets a thick outline (the series' worst class).
    pub outlined: Option<usize>,
}

/// The layout of a grouped bar chart.
#[derive(Clone, Debug, PartialEq)]
pub struct BarLayout<'a> {
    pub caption: String,
    pub axes: [&'a str; 2],
    /// Two lines of text under each group.
    pub labels: Vec<(String, String)>,
    /// A separator line is drawn after this many groups (before the summary groups).
    pub separator_after: Option<usize>,
    pub y: Range<f64>,
}

/// Draws `series` as grouped bars on `plot` (the caller draws the legend).
pub fn draw_grouped<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Shift>,
    layout: &BarLayout<'_>,
    series: &[BarSeries],
) -> DrawResult<(), DB> {
    let groups = layout.labels.len();
    let (y0, y1) = (layout.y.start, layout.y.end);
    let mut chart = ChartBuilder::on(plot)
        .margin(18)
        .margin_right(34)
        .x_label_area_size(112)
        .y_label_area_size(95)
        .caption(layout.caption.clone(), style::caption_font())
        .build_cartesian_2d(-0.5..groups as f64 - 0.5, y0..y1)?;
    let [x_desc, y_desc] = layout.axes;
    style::mesh_style(&mut chart, x_desc, y_desc)
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&style::tick_plain)
        .draw()?;
    if let Some(after) = layout.separator_after {
        let sep = after as f64 - 0.5;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(sep, y0), (sep, y1)],
            style::REFERENCE.stroke_width(2),
        )))?;
    }
    let width = GROUP / series.len().max(1) as f64;
    for (i, s) in series.iter().enumerate() {
        let mut error_bars = Vec::new();
        for (g, &v) in s.values.iter().enumerate().take(groups) {
            let x0 = g as f64 - GROUP / 2.0 + i as f64 * width;
            let (left, right) = (x0 + 0.08 * width, x0 + 0.92 * width);
            let corners = [(left, y0), (right, v)];
            chart.draw_series(std::iter::once(Rectangle::new(corners, s.color.filled())))?;
            if let Some(lower) = s.lower.as_ref().and_then(|l| l.get(g)) {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(left, y0), (right, lower.min(v))],
                    style::tint(s.color, LOWER_TINT).filled(),
                )))?;
            }
            let outline = if s.outlined == Some(g) {
                BLACK.stroke_width(3)
            } else {
                BLACK.mix(0.5).stroke_width(1)
            };
            chart.draw_series(std::iter::once(Rectangle::new(corners, outline)))?;
            if let Some(e) = s.errors.as_ref().and_then(|e| e.get(g)) {
                error_bars.push((x0 + width / 2.0, (v - e).max(y0), (v + e).min(y1)));
            }
        }
        legend::error_bars(&mut chart, &error_bars, BLACK)?;
    }
    for (g, (first, second)) in layout.labels.iter().enumerate() {
        let at = (g as f64, y0);
        for (line, text) in [(10, first), (34, second)] {
            legend::text_at(
                plot,
                &chart,
                at,
                (0, line),
                text,
                style::tick_font(),
                HPos::Center,
            )?;
        }
    }
    Ok(())
}

/// A y range for accuracies `values`: from a little below the smallest (rounded down to a
/// tenth, at least 0) to a little above the largest (rounded up to a twentieth, at most 1).
/// Returns the range and whether it is truncated (starts above 0).
pub fn accuracy_range(values: impl IntoIterator<Item = f64>) -> (Range<f64>, bool) {
    let (lo, hi) = values
        .into_iter()
        .fold((1.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let y0 = ((lo - 0.08) * 10.0).floor().max(0.0) / 10.0;
    let y1 = ((hi + 0.04) * 20.0).ceil().min(20.0) / 20.0;
    (y0..y1.max(y0 + 0.05), y0 > 0.0)
}
