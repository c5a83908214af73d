//! Grouped bars, the class-wise bar charts of the papers (CFA Fig. 6, WAT Fig. 2, BAT Fig. 5):
//! one group per class (then summary groups such as the worst class and the mean), one bar per
//! series (method) in each group, an outline on each series' worst group, optional error bars
//! and an optional lighter lower part (e.g. the standard error inside the robust error).

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use crate::caption;
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

impl BarSeries {
    /// (value, error bar half-width) of each bar, 0 where it has no error bar: what the bar and
    /// its error bar span, for [`accuracy_range`].
    pub fn bars(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.values.iter().enumerate().map(|(g, &v)| {
            let e = self.errors.as_ref().and_then(|e| e.get(g)).copied();
            (v, e.unwrap_or(0.0))
        })
    }
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
    let below = caption::draw(plot, &layout.caption, 40)?;
    let mut chart = ChartBuilder::on(&below)
        .margin(18)
        .margin_top(4)
        .margin_right(34)
        .x_label_area_size(112)
        .y_label_area_size(95)
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

/// The y axis of bars of accuracies (values in [0, 1]) given as (value, error bar half-width)
/// pairs; a bar without an error bar has half-width 0, and non-finite pairs are left out.
/// Returns the range and whether it is truncated (starts above 0, which the caption must say).
///
/// Bars start at 0 (their length is the value), unless every bar is close to the others: when
/// the band from the lowest bar's lower end `lo` (value − error) to the highest one's upper end
/// `hi` is at most a quarter of `lo` high (e.g. every value in 0.9..0.95), the axis may start at
/// `lo − 0.08` rounded down to a tenth, so that the differences show. It never cuts a bar: the
/// start is at least 0.08 below every value, and the end, `hi + 0.04` rounded up to a twentieth
/// (at most 1, unless a value is larger), above every value. No finite value gives `0..1`.
pub fn accuracy_range(bars: impl IntoIterator<Item = (f64, f64)>) -> (Range<f64>, bool) {
    let (mut lo, mut hi, mut top) = (f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (v, e) in bars {
        if v.is_finite() && e.is_finite() {
            lo = lo.min(v - e.abs());
            hi = hi.max(v + e.abs());
            top = top.max(v);
        }
    }
    if !lo.is_finite() {
        return (0.0..1.0, false);
    }
    let close = hi - lo <= lo / 4.0;
    let y0 = if close {
        ((lo - 0.08) * 10.0).floor().max(0.0) / 10.0
    } else {
        0.0
    };
    let y1 = (((hi + 0.04) * 20.0).ceil() / 20.0).min(1.0).max(top);
    (y0..y1.max(y0 + 0.05), y0 > 0.0)
}

/// What a caption adds for an [`accuracy_range`]: `; the y axis starts at <start>` when it is
/// truncated, nothing otherwise.
pub fn truncation_note((y, truncated): &(Range<f64>, bool)) -> String {
    if *truncated {
        format!("; the y axis starts at {}", y.start)
    } else {
        String::new()
    }
}

/// A y axis from 0 for values that start there (errors, accuracies over the epochs): up to the
/// largest finite value plus `pad`, rounded up to a tenth, at most 1 unless a value is larger;
/// `0..0.1` when no value is above 0.
pub fn from_zero(values: impl IntoIterator<Item = f64>, pad: f64) -> Range<f64> {
    let top = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let end = (((top + pad) * 10.0).ceil() / 10.0).min(1.0).max(top);
    0.0..if end > 0.0 { end } else { 0.1 }
}
