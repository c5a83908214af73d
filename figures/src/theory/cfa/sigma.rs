//! σ-scaling of CFA Theorem 3's maximisers (App. B.4, eq. (23) with σ kept explicit; caveat C3):
//! w*_y = (σ²/(2η))·logit(p_y) against σ², one curve per d; the curves for different d coincide.

use classwise_theory::model::{BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{note, points, reference, variant};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::Table;
use crate::theory::grid;

/// The dimensions compared.
pub const DIMS: [u32; 3] = [1, 10, 100];

const X_DESC: &str = "noise variance σ² of x₂ … x_(d+1)";
const Y_DESC: &str = "w*_y = argmax_w A_y(w)";

const CLASSES: [Class; 2] = [Class::Pos, Class::Neg];
const NAMES: [&str; 2] = ["₊₁", "₋₁"];
const COLORS: [RGBColor; 2] = [style::POS, style::NEG];
/// Every how many grid points a marker is drawn.
const MARK_EVERY: usize = 11;

/// w*₊₁ and w*₋₁ on a grid of σ², for each d.
pub struct SigmaScaling {
    /// The Figure 1 model; d and σ are replaced.
    pub model: BinaryModel,
    pub sigma2: Vec<f64>,
    /// `w_star[c][k]`: w*_y for class `c` (0: +1, 1: −1) and d = `DIMS[k]`.
    pub w_star: [Vec<Vec<f64>>; 2],
    /// Marked settings: σ² of CFA Figure 1 (0.6) and of the proofs (1), with (w*₊₁, w*₋₁) there.
    pub marked: Vec<(f64, [f64; 2])>,
}

/// The σ² values marked on the figure: CFA Figure 1 (App. A) and the proofs (App. B).
pub const MARKED: [(f64, &str); 2] = [(0.6, "Figure 1: σ² = 0.6"), (1.0, "proofs: σ² = 1")];

impl SigmaScaling {
    /// Figure 1 parameters, 100 points of σ² ∈ [0.02, 2].
    pub fn new() -> Result<Self> {
        Self::with(figure1_model(), &grid(0.02, 2.0, 100))
    }

    /// Any model with 1/2 < p₋₁ < p₊₁ < 1 and grid of σ² > 0.
    pub fn with(model: BinaryModel, sigma2: &[f64]) -> Result<Self> {
        let at = |y: Class, d: u32, s2: f64| -> Result<f64> {
            let m = variant(&model, d, s2.sqrt(), model.p(Class::Neg))?;
            crate::theory::w_star(&m, y)
        };
        let mut w_star = [Vec::new(), Vec::new()];
        for (c, y) in CLASSES.into_iter().enumerate() {
            for d in DIMS {
                w_star[c].push(
                    sigma2
                        .iter()
                        .map(|&s2| at(y, d, s2))
                        .collect::<Result<Vec<_>>>()?,
                );
            }
        }
        let marked = MARKED
            .iter()
            .map(|&(s2, _)| {
                Ok((
                    s2,
                    [at(Class::Pos, DIMS[0], s2)?, at(Class::Neg, DIMS[0], s2)?],
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SigmaScaling {
            model,
            sigma2: sigma2.to_vec(),
            w_star,
            marked,
        })
    }
}

impl Figure for SigmaScaling {
    fn id(&self) -> &'static str {
        "cfa-sigma"
    }

    fn title(&self) -> String {
        format!(
            "CFA Theorem 3: w*_y is linear in σ² and free of d (η = {}, p = {}/{})",
            self.model.eta(),
            self.model.p(Class::Pos),
            self.model.p(Class::Neg)
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Theorem 3 (App. B.4, eq. (23)) with the σ² factor of caveat C3"
    }

    fn look_at(&self) -> &'static str {
        "The three curves of each class (d = 1, 10, 100: circles, triangles, crosses) lie on one \
         straight line through the origin; at the paper's σ² = 0.6 the maximisers are 1.301 and \
         0.635, not the σ² = 1 values 2.168 and 1.059."
    }

    fn tables(&self) -> Vec<Table> {
        let mut names = Vec::new();
        let mut cols: Vec<&[f64]> = Vec::new();
        for (c, tag) in ["pos", "neg"].into_iter().enumerate() {
            for (k, d) in DIMS.into_iter().enumerate() {
                names.push(format!("w_star_{tag}_d{d}"));
                cols.push(&self.w_star[c][k]);
            }
        }
        let mut columns: Vec<(&str, &[f64])> = vec![("sigma2", &self.sigma2)];
        columns.extend(names.iter().map(String::as_str).zip(cols));
        let curves = Table::columns("", &columns).expect("equal lengths by construction");
        let (s2, pos, neg): (Vec<f64>, Vec<f64>, Vec<f64>) = (
            self.marked.iter().map(|m| m.0).collect(),
            self.marked.iter().map(|m| m.1[0]).collect(),
            self.marked.iter().map(|m| m.1[1]).collect(),
        );
        let marked = Table::columns(
            "markers",
            &[("sigma2", &s2), ("w_star_pos", &pos), ("w_star_neg", &neg)],
        )
        .expect("equal lengths by construction");
        vec![curves, marked]
    }

    fn axis_labels(&self) -> Vec<String> {
        [X_DESC, Y_DESC].map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let x_max = self.sigma2[self.sigma2.len() - 1];
        let y_max = self.w_star[0][0].iter().fold(0.0f64, |a, &b| a.max(b)) * 1.08;
        let mut chart = style::chart(
            area,
            "curves for d = 1, 10 and 100 coincide (drawn on top of each other)",
            0.0..x_max,
            0.0..y_max,
        )?;
        style::mesh(&mut chart, X_DESC, Y_DESC)?;
        for (&(s2, w), (_, text)) in self.marked.iter().zip(MARKED) {
            reference(
                &mut chart,
                vec![(s2, 0.0), (s2, y_max)],
                style::REFERENCE,
                true,
            )?;
            note(
                &mut chart,
                text,
                (s2 + 0.012, y_max * 0.97),
                style::REFERENCE,
            )?;
            for (c, color) in COLORS.into_iter().enumerate() {
                chart.draw_series(std::iter::once(Circle::new((s2, w[c]), 6, BLACK.filled())))?;
                note(
                    &mut chart,
                    &format!("{:.3}", w[c]),
                    (s2 - 0.1, w[c] + y_max * 0.07),
                    color,
                )?;
            }
        }
        for (c, color) in COLORS.into_iter().enumerate() {
            for (k, d) in DIMS.into_iter().enumerate() {
                let pts = points(&self.sigma2, &self.w_star[c][k]);
                let label = format!("w*{}, d = {d}", NAMES[c]);
                let marks: Vec<(f64, f64)> = pts.iter().copied().step_by(MARK_EVERY).collect();
                draw_variant(&mut chart, pts, marks, color, k, &label)?;
            }
        }
        style::legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

/// Draws one d's curve: d index 0 a wide pale line with hollow circles, 1 dashed with hollow
/// triangles, 2 dotted with crosses, so coinciding curves stay distinguishable.
fn draw_variant<'a, DB: DrawingBackend + 'a>(
    chart: &mut style::Chart<'a, DB>,
    pts: Vec<(f64, f64)>,
    marks: Vec<(f64, f64)>,
    color: RGBColor,
    k: usize,
    label: &str,
) -> DrawResult<(), DB> {
    let line: ShapeStyle = match k {
        0 => color.mix(0.35).stroke_width(10),
        _ => color.stroke_width(style::STROKE),
    };
    let (dash, gap) = match k {
        0 => (40, 0),
        1 => (12, 8),
        _ => (3, 6),
    };
    let marker = color.stroke_width(2);
    chart.draw_series(DashedLineSeries::new(pts, dash, gap, line))?;
    let path = move |(x, y): (i32, i32)| {
        EmptyElement::at((x, y)) + DashedPathElement::new(vec![(0, 0), (36, 0)], dash, gap, line)
    };
    match k {
        0 => {
            chart
                .draw_series(
                    marks
                        .into_iter()
                        .map(|p| EmptyElement::at(p) + Circle::new((0, 0), 11, marker)),
                )?
                .label(label)
                .legend(move |c| path(c) + Circle::new((18, 0), 11, marker));
        }
        1 => {
            chart
                .draw_series(
                    marks
                        .into_iter()
                        .map(|p| EmptyElement::at(p) + TriangleMarker::new((0, 0), 8, marker)),
                )?
                .label(label)
                .legend(move |c| path(c) + TriangleMarker::new((18, 0), 8, marker));
        }
        _ => {
            chart
                .draw_series(
                    marks
                        .into_iter()
                        .map(|p| EmptyElement::at(p) + Cross::new((0, 0), 5, marker)),
                )?
                .label(label)
                .legend(move |c| path(c) + Cross::new((18, 0), 5, marker));
        }
    }
    Ok(())
}
