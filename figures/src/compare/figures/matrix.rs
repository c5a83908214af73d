//! Heat-map panels of K × K matrices (rows true classes), shared by the confusion matrices
//! under attack ([`super::Confusion`]), the training confusion matrices
//! ([`crate::compare::epochs::TrainConfusion`]) and the homing matrix
//! ([`crate::compare::homing::Homing`]), and the long table of their cells.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::caption;
use crate::style::{self, Chart, DrawResult};
use crate::table::{Cell, Table};

/// White to dark blue.
pub(crate) fn heat(v: f64) -> RGBColor {
    let t = v.clamp(0.0, 1.0).sqrt();
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(255.0, 8.0), lerp(255.0, 48.0), lerp(255.0, 107.0))
}

/// How the cells of a heat-map matrix read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MatrixCells {
    /// The value drawn darkest.
    pub full: f64,
    /// Fractions written as percent (else counts, with one decimal when not whole).
    pub percent: bool,
    /// Grey diagonal cells without numbers (Tian et al. Fig. 4), instead of outlined ones.
    pub hide_diagonal: bool,
}

impl MatrixCells {
    /// Fractions of the row, as percent, the diagonal outlined.
    pub const FRACTIONS: MatrixCells = MatrixCells {
        full: 1.0,
        percent: true,
        hide_diagonal: false,
    };

    /// Counts, darkest at the largest of `values`, the diagonal hidden.
    pub fn counts(values: impl Iterator<Item = f64>) -> MatrixCells {
        MatrixCells {
            full: values.fold(0.0, f64::max).max(1.0),
            percent: false,
            hide_diagonal: true,
        }
    }

    fn text(&self, v: f64) -> String {
        if self.percent {
            format!("{:.0}", 100.0 * v)
        } else if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    }
}

/// Appends one row per cell (i, j) of K × K matrices to `t`: the `prefix` cells, the true
/// class i, the predicted class j, then each matrix's value at (i, j). `t` has exactly these
/// columns.
pub(crate) fn push_matrices(t: &mut Table, prefix: &[Cell], matrices: &[&Vec<Vec<f64>>]) {
    let Some(first) = matrices.first() else {
        return;
    };
    for (i, row) in first.iter().enumerate() {
        for j in 0..row.len() {
            let mut cells = prefix.to_vec();
            cells.extend([Cell::from(i), Cell::from(j)]);
            cells.extend(matrices.iter().map(|m| Cell::from(m[i][j])));
            t.push(cells).expect("the table's columns");
        }
    }
}

/// One heat-map panel of a K × K matrix (rows true classes), numbers in the cells up to 12
/// classes; a NaN cell (not measured) is drawn pale with a dash.
pub(crate) fn draw_matrix<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    caption: &str,
    m: &[Vec<f64>],
    cells: MatrixCells,
    [x_desc, y_desc]: [&str; 2],
) -> DrawResult<(), DB> {
    let k = m.len();
    let below = caption::draw(panel, caption, 14)?;
    let mut chart = ChartBuilder::on(&below)
        .margin(14)
        .margin_top(4)
        .x_label_area_size(70)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..k as f64 - 0.5, k as f64 - 0.5..-0.5)?;
    style::mesh_style(&mut chart, x_desc, y_desc)
        .disable_mesh()
        .x_labels(k.min(20))
        .y_labels(k.min(20))
        .x_label_formatter(&style::tick_whole)
        .y_label_formatter(&style::tick_whole)
        .draw()?;
    for (i, row) in m.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            draw_cell(&mut chart, (i, j), v, cells, k <= 12)?;
        }
    }
    if !cells.hide_diagonal {
        for i in 0..k {
            let x = i as f64;
            chart.draw_series(std::iter::once(Rectangle::new(
                cell_corners(x, x),
                style::NEG.stroke_width(2),
            )))?;
        }
    }
    Ok(())
}

/// The corners of the cell centred on (`x`, `y`).
fn cell_corners(x: f64, y: f64) -> [(f64, f64); 2] {
    [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)]
}

/// Draws cell (`i`, `j`) holding `v`: grey on a hidden diagonal, pale with a dash when not
/// measured (NaN), else shaded by `v` with its number when `numbers`.
fn draw_cell<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    (i, j): (usize, usize),
    v: f64,
    cells: MatrixCells,
    numbers: bool,
) -> DrawResult<(), DB> {
    let (x, y) = (j as f64, i as f64);
    let text = |s: String, color: &RGBColor| {
        Text::new(
            s,
            (x, y),
            (style::FAMILY, 15)
                .into_font()
                .color(color)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        )
    };
    if i == j && cells.hide_diagonal {
        let fill = style::tint(style::REFERENCE, 0.25).filled();
        chart.draw_series(std::iter::once(Rectangle::new(cell_corners(x, y), fill)))?;
    } else if v.is_nan() {
        // Not measured: a pale cell with a dash.
        let fill = style::tint(style::REFERENCE, 0.08).filled();
        chart.draw_series(std::iter::once(Rectangle::new(cell_corners(x, y), fill)))?;
        chart.draw_series(std::iter::once(text("–".into(), &style::REFERENCE)))?;
    } else {
        let shade = v / cells.full;
        let fill = heat(shade).filled();
        chart.draw_series(std::iter::once(Rectangle::new(cell_corners(x, y), fill)))?;
        if numbers {
            let color = if shade > 0.45 { WHITE } else { BLACK };
            chart.draw_series(std::iter::once(text(cells.text(v), &color)))?;
        }
    }
    Ok(())
}
