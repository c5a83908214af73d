//! CFA Figure 1(b): A_y (dotted), R_y at ε = 2η = 0.8 (solid) and the full-adversary R_y
//! (dashed) against w, with markers at w*_y (CFA Theorem 3, with the σ² factor of caveat C3).

use classwise_theory::model::{Adversary, BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::grid;
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::Table;

/// The curves of Figure 1(b) on a grid of w.
pub struct Fig1b {
    pub model: BinaryModel,
    pub eps: f64,
    pub w: Vec<f64>,
    /// Per class (index 0: y = +1, 1: y = −1): A_y, R_y (paper adversary), R_y (full adversary).
    pub clean: [Vec<f64>; 2],
    pub robust: [Vec<f64>; 2],
    pub robust_full: [Vec<f64>; 2],
    /// w*_y (CFA Theorem 3, with the σ² factor).
    pub w_star: [f64; 2],
}

const CLASSES: [Class; 2] = [Class::Pos, Class::Neg];
const NAMES: [&str; 2] = ["₊₁", "₋₁"];
const AXES: [&str; 2] = ["w   (f_w(x) = sign(x₁ + (x₂ + … + x_(d+1))/w))", "accuracy"];

impl Fig1b {
    /// The paper's setting: d = 1, σ² = 0.6, η = 0.4, p = 0.85/0.7, ε = 0.8, w ∈ [0.01, 3].
    pub fn new() -> Result<Self> {
        let model = figure1_model();
        Self::with(model, 2.0 * model.eta(), &grid(0.01, 3.0, 300))
    }

    /// Any model, budget and grid of w > 0.
    pub fn with(model: BinaryModel, eps: f64, w: &[f64]) -> Result<Self> {
        let per_class = |f: &dyn Fn(Class, f64) -> classwise_theory::Result<f64>| {
            CLASSES.map(|y| {
                w.iter()
                    .map(|&w| f(y, w))
                    .collect::<classwise_theory::Result<Vec<_>>>()
            })
        };
        let [a0, a1] = per_class(&|y, w| model.clean_accuracy(y, w));
        let [r0, r1] = per_class(&|y, w| model.robust_accuracy(y, w, eps, Adversary::Paper));
        let [f0, f1] = per_class(&|y, w| model.robust_accuracy(y, w, eps, Adversary::Full));
        Ok(Fig1b {
            model,
            eps,
            w: w.to_vec(),
            clean: [a0?, a1?],
            robust: [r0?, r1?],
            robust_full: [f0?, f1?],
            w_star: crate::theory::w_stars(&model)?,
        })
    }

    fn points(&self, v: &[f64]) -> Vec<(f64, f64)> {
        self.w.iter().copied().zip(v.iter().copied()).collect()
    }
}

impl Figure for Fig1b {
    fn id(&self) -> &'static str {
        "cfa-fig1b"
    }

    fn title(&self) -> String {
        format!(
            "CFA Figure 1(b): class-wise clean and robust accuracy of f_w (ε = {})",
            self.eps
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Figure 1(b) (section 2, Theorems 3 and 4), with the full ℓ∞ adversary added"
    }

    fn look_at(&self) -> &'static str {
        "The hard class −1 peaks at a smaller w than the easy class +1 (w*₋₁ = 0.635 < \
         w*₊₁ = 1.301), so no single w is best for both, and the robust curves of the two \
         classes are much closer together than the clean ones."
    }

    fn tables(&self) -> Vec<Table> {
        let curves = Table::columns(
            "",
            &[
                ("w", &self.w),
                ("A_pos", &self.clean[0]),
                ("A_neg", &self.clean[1]),
                ("R_pos", &self.robust[0]),
                ("R_neg", &self.robust[1]),
                ("R_full_pos", &self.robust_full[0]),
                ("R_full_neg", &self.robust_full[1]),
            ],
        )
        .expect("equal lengths by construction");
        vec![curves, crate::theory::w_star_table(&self.w_star)]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let x_max = self.w.last().copied().unwrap_or(1.0);
        let mut chart = style::chart(
            area,
            &format!(
                "d = {}, σ² = {:.1}, η = {}, p₊₁ = {}, p₋₁ = {}",
                self.model.d(),
                self.model.sigma().powi(2),
                self.model.eta(),
                self.model.p(Class::Pos),
                self.model.p(Class::Neg)
            ),
            0.0..x_max,
            0.0..1.0,
        )?;
        let [x_desc, y_desc] = AXES;
        style::mesh(&mut chart, x_desc, y_desc)?;
        for (i, color) in [style::POS, style::NEG].into_iter().enumerate() {
            let y = NAMES[i];
            style::line(
                &mut chart,
                &self.points(&self.clean[i]),
                color,
                Dash::Dotted,
                &format!("A{y} (clean)"),
            )?;
            style::line(
                &mut chart,
                &self.points(&self.robust[i]),
                color,
                Dash::Solid,
                &format!("R{y} (robust, x₁ pinned)"),
            )?;
            style::line(
                &mut chart,
                &self.points(&self.robust_full[i]),
                color,
                Dash::Dashed,
                &format!("R{y} (robust, full ℓ∞ adversary)"),
            )?;
            let w = self.w_star[i];
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(w, 0.0), (w, 0.97)],
                color.mix(0.6).stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("w*{y} = {w:.3}"),
                (w + 0.03, 0.97 - 0.05 * i as f64),
                style::legend_font().color(&color),
            )))?;
        }
        style::legend(&mut chart, SeriesLabelPosition::LowerRight)
    }
}
