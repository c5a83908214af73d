//! A legend drawn as a row (or rows) of entries in its own strip below the panels, so it is
//! shared by every panel and never covers data; point markers, error bars and labels placed
//! outside the plotting area.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::style::{self, Chart, Dash, DrawResult};

/// The shape of a point marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Circle,
    Square,
    Triangle,
}

/// What an entry shows before its label.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Glyph {
    /// A line sample, optionally with a marker on it.
    Line {
        color: RGBColor,
        dash: Dash,
        marker: Option<Shape>,
    },
    /// A marker alone (filled or hollow).
    Marker {
        color: RGBColor,
        shape: Shape,
        filled: bool,
    },
    /// A filled box (bar charts).
    Box { color: RGBColor },
}

/// One legend entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub glyph: Glyph,
    pub label: String,
}

impl Entry {
    pub fn line(color: RGBColor, dash: Dash, label: impl Into<String>) -> Self {
        Entry {
            glyph: Glyph::Line {
                color,
                dash,
                marker: None,
            },
            label: label.into(),
        }
    }

    pub fn line_marker(
        color: RGBColor,
        dash: Dash,
        shape: Shape,
        label: impl Into<String>,
    ) -> Self {
        Entry {
            glyph: Glyph::Line {
                color,
                dash,
                marker: Some(shape),
            },
            label: label.into(),
        }
    }

    pub fn marker(color: RGBColor, shape: Shape, filled: bool, label: impl Into<String>) -> Self {
        Entry {
            glyph: Glyph::Marker {
                color,
                shape,
                filled,
            },
            label: label.into(),
        }
    }

    pub fn boxed(color: RGBColor, label: impl Into<String>) -> Self {
        Entry {
            glyph: Glyph::Box { color },
            label: label.into(),
        }
    }
}

/// Width of a glyph in pixels.
const GLYPH: i32 = 40;
/// Space between a glyph and its label, and between entries.
const GAP: i32 = 10;
const ENTRY_GAP: i32 = 34;
/// Height of one legend row.
pub const ROW: u32 = 34;

/// The height a legend of `rows` rows needs.
pub fn strip_height(rows: usize) -> u32 {
    ROW * rows as u32 + 16
}

/// Splits `area` into the panels above and a legend strip of `rows` rows below.
pub fn split<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: usize,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let h = area.dim_in_pixel().1;
    area.split_vertically(h.saturating_sub(strip_height(rows)))
}

/// The width of an entry drawn in `area`: glyph, gap and label.
fn entry_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, e: &Entry) -> i32 {
    let (tw, _) = area
        .estimate_text_size(&e.label, &style::legend_font())
        .unwrap_or((8 * e.label.len() as u32, 18));
    GLYPH + GAP + tw as i32
}

/// `rows` with every row that is wider than `area` broken into rows that fit, in order: a
/// legend of many methods with long names stays inside the figure. Every row is cut into pieces
/// of the same number of entries (the most for which every piece fits), and the pieces
/// alternate (the first piece of each row, then the second of each, …), so entries that were
/// above one another stay above one another.
pub fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: Vec<Vec<Entry>>,
) -> Vec<Vec<Entry>> {
    // The frame's margins and the entries' gaps (draw_rows).
    let room = area.dim_in_pixel().0 as i32 - 2 * 14 - 8;
    let widths: Vec<Vec<i32>> = (rows.iter())
        .map(|row| row.iter().map(|e| entry_width(area, e)).collect())
        .collect();
    let fits = |n: usize| {
        (widths.iter().flat_map(|w| w.chunks(n)))
            .all(|c| c.iter().sum::<i32>() + ENTRY_GAP * (c.len() as i32 - 1) <= room)
    };
    let longest = widths.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let n = (1..=longest).rev().find(|&n| fits(n)).unwrap_or(1);
    let pieces: Vec<Vec<Vec<Entry>>> = (rows.into_iter())
        .map(|row| row.chunks(n).map(<[Entry]>::to_vec).collect())
        .collect();
    let most = pieces.iter().map(Vec::len).max().unwrap_or(0);
    (0..most)
        .flat_map(|i| pieces.iter().filter_map(move |p| p.get(i).cloned()))
        .collect()
}

/// Draws `rows` (each a list of entries) centred in `strip`, with a light frame.
pub fn draw_rows<DB: DrawingBackend>(
    strip: &DrawingArea<DB, Shift>,
    rows: &[Vec<Entry>],
) -> DrawResult<(), DB> {
    let font = style::legend_font();
    let (w, _) = strip.dim_in_pixel();
    let widths: Vec<Vec<i32>> = rows
        .iter()
        .map(|row| row.iter().map(|e| entry_width(strip, e)).collect())
        .collect();
    let total = |ws: &[i32]| ws.iter().sum::<i32>() + ENTRY_GAP * (ws.len() as i32 - 1).max(0);
    let widest = widths.iter().map(|ws| total(ws)).max().unwrap_or(0);
    let left = ((w as i32 - widest) / 2).max(4);
    strip.draw(&Rectangle::new(
        [
            (left - 14, 4),
            (left + widest + 14, ROW as i32 * rows.len() as i32 + 10),
        ],
        RGBColor(0, 0, 0).mix(0.4).stroke_width(1),
    ))?;
    for (r, (row, ws)) in rows.iter().zip(&widths).enumerate() {
        let y = 7 + ROW as i32 * r as i32 + ROW as i32 / 2;
        let mut x = left + (widest - total(ws)) / 2;
        for (e, &ew) in row.iter().zip(ws) {
            glyph(strip, e.glyph, x, y)?;
            strip.draw(&Text::new(
                e.label.clone(),
                (x + GLYPH + GAP, y),
                font.pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
            ))?;
            x += ew + ENTRY_GAP;
        }
    }
    Ok(())
}

/// Draws one glyph with its left edge at `x`, centred vertically on `y`.
fn glyph<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    g: Glyph,
    x: i32,
    y: i32,
) -> DrawResult<(), DB> {
    match g {
        Glyph::Line {
            color,
            dash,
            marker,
        } => {
            let (size, spacing) = match dash {
                Dash::Solid => (GLYPH, 0),
                Dash::Dashed => (12, 8),
                Dash::Dotted => (3, 6),
            };
            area.draw(&plotters::element::DashedPathElement::new(
                vec![(x, y), (x + GLYPH, y)],
                size,
                spacing,
                style::stroke(color),
            ))?;
            if let Some(shape) = marker {
                pixel_marker(area, shape, (x + GLYPH / 2, y), color, true)?;
            }
        }
        Glyph::Marker {
            color,
            shape,
            filled,
        } => pixel_marker(area, shape, (x + GLYPH / 2, y), color, filled)?,
        Glyph::Box { color } => {
            area.draw(&Rectangle::new(
                [(x + 6, y - 10), (x + GLYPH - 6, y + 10)],
                color.filled(),
            ))?;
            area.draw(&Rectangle::new(
                [(x + 6, y - 10), (x + GLYPH - 6, y + 10)],
                BLACK.stroke_width(1),
            ))?;
        }
    }
    Ok(())
}

/// Marker size (radius-like) in pixels.
pub const MARKER: i32 = 6;

fn marker_style(color: RGBColor, alpha: f64, filled: bool) -> ShapeStyle {
    let c = color.mix(alpha);
    if filled {
        c.filled()
    } else {
        c.stroke_width(2)
    }
}

/// A marker at a pixel position of a plain area (legends).
fn pixel_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    shape: Shape,
    at: (i32, i32),
    color: RGBColor,
    filled: bool,
) -> DrawResult<(), DB> {
    let s = marker_style(color, 1.0, filled);
    match shape {
        Shape::Circle => area.draw(&Circle::new(at, MARKER, s)),
        Shape::Square => area.draw(&Rectangle::new(
            [
                (at.0 - MARKER + 1, at.1 - MARKER + 1),
                (at.0 + MARKER - 1, at.1 + MARKER - 1),
            ],
            s,
        )),
        Shape::Triangle => area.draw(&TriangleMarker::new(at, MARKER + 2, s)),
    }
}

/// Draws `points` of `chart` as markers of opacity `alpha`.
pub fn markers<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    points: &[(f64, f64)],
    shape: Shape,
    color: RGBColor,
    alpha: f64,
    filled: bool,
) -> DrawResult<(), DB> {
    let s = marker_style(color, alpha, filled);
    let pts = points.iter().copied();
    match shape {
        Shape::Circle => {
            chart.draw_series(pts.map(|p| Circle::new(p, MARKER, s)))?;
        }
        Shape::Square => {
            chart.draw_series(pts.map(|p| {
                EmptyElement::at(p)
                    + Rectangle::new([(-MARKER + 1, -MARKER + 1), (MARKER - 1, MARKER - 1)], s)
            }))?;
        }
        Shape::Triangle => {
            chart.draw_series(pts.map(|p| TriangleMarker::new(p, MARKER + 2, s)))?;
        }
    }
    Ok(())
}

/// Draws vertical error bars from `lo` to `hi` at each `x`, with 10-pixel caps.
pub fn error_bars<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    bars: &[(f64, f64, f64)],
    color: RGBColor,
) -> DrawResult<(), DB> {
    let s = color.stroke_width(2);
    chart.draw_series(
        bars.iter()
            .map(|&(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], s)),
    )?;
    for end in [1, 2] {
        chart.draw_series(bars.iter().map(|&(x, lo, hi)| {
            let y = if end == 1 { lo } else { hi };
            EmptyElement::at((x, y)) + PathElement::new(vec![(-5, 0), (5, 0)], s)
        }))?;
    }
    Ok(())
}

/// Draws `text` hanging below the data point `at` of `chart` (centred on it, or starting at it
/// with `HPos::Left`), but on `area` (which contains the chart), shifted by `offset` pixels:
/// labels outside the plotting area, e.g. under bars.
pub fn text_at<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart<'_, DB>,
    at: (f64, f64),
    offset: (i32, i32),
    text: &str,
    font: TextStyle<'_>,
    h: plotters::style::text_anchor::HPos,
) -> DrawResult<(), DB> {
    let (px, py) = chart.backend_coord(&at);
    let (bx, by) = area.get_base_pixel();
    area.draw(&Text::new(
        text.to_owned(),
        (px - bx + offset.0, py - by + offset.1),
        font.pos(plotters::style::text_anchor::Pos::new(
            h,
            plotters::style::text_anchor::VPos::Top,
        )),
    ))
}
