//! CFA Theorems 3 and 4(a) (Sec. 2.3, App. B.4-B.5; note C4): the class-wise clean accuracies A₊₁,
//! A₋₁ and their slopes ∂A_y/∂w against w at the Figure 1 parameters, with (w*₋₁, w*₊₁) shaded:
//! there A₋₁ already falls while A₊₁ still rises.

use classwise_theory::model::{BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{note, points, reference, shade};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::Table;
use crate::theory::grid;

const X_DESC: &str = "w   (f_w(x) = sign(x₁ + (x₂ + … + x_(d+1))/w))";
const Y_A: &str = "clean accuracy A_y(w)";
const Y_B: &str = "slope ∂A_y/∂w";

const CLASSES: [Class; 2] = [Class::Pos, Class::Neg];
const NAMES: [&str; 2] = ["₊₁", "₋₁"];
const COLORS: [RGBColor; 2] = [style::POS, style::NEG];
/// The shading of (w*₋₁, w*₊₁).
const BAND: RGBColor = RGBColor(240, 180, 0);

/// A_y and ∂A_y/∂w on a grid of w, and the maximisers w*_y.
pub struct Thm34 {
    pub model: BinaryModel,
    pub w: Vec<f64>,
    /// Index 0: y = +1, 1: y = −1.
    pub clean: [Vec<f64>; 2],
    pub slope: [Vec<f64>; 2],
    /// w*_y (CFA Theorem 3 with the σ² factor of caveat C3).
    pub w_star: [f64; 2],
}

impl Thm34 {
    /// Figure 1 parameters, 300 points of w ∈ [0.01, 3].
    pub fn new() -> Result<Self> {
        Self::with(figure1_model(), &grid(0.01, 3.0, 300))
    }

    /// Any model with 1/2 < p₋₁ < p₊₁ < 1 (both maximisers finite) and grid of w > 0.
    pub fn with(model: BinaryModel, w: &[f64]) -> Result<Self> {
        let per_class = |f: &dyn Fn(Class, f64) -> classwise_theory::Result<f64>| {
            CLASSES.map(|y| {
                w.iter()
                    .map(|&w| f(y, w))
                    .collect::<classwise_theory::Result<Vec<_>>>()
            })
        };
        let [a0, a1] = per_class(&|y, w| model.clean_accuracy(y, w));
        let [s0, s1] = per_class(&|y, w| model.clean_accuracy_dw(y, w));
        Ok(Thm34 {
            model,
            w: w.to_vec(),
            clean: [a0?, a1?],
            slope: [s0?, s1?],
            w_star: crate::theory::w_stars(&model)?,
        })
    }

    /// Shading and markers common to both panels.
    fn band<'a, DB: DrawingBackend + 'a>(
        &self,
        chart: &mut style::Chart<'a, DB>,
        y: (f64, f64),
    ) -> DrawResult<(), DB> {
        shade(chart, (self.w_star[1], self.w_star[0]), y, BAND)?;
        for (i, color) in COLORS.into_iter().enumerate() {
            let w = self.w_star[i];
            reference(chart, vec![(w, y.0), (w, y.1)], color, true)?;
        }
        Ok(())
    }
}

impl Figure for Thm34 {
    fn id(&self) -> &'static str {
        "cfa-thm34"
    }

    fn title(&self) -> String {
        format!(
            "CFA Theorems 3 and 4(a): the hard class peaks earlier (d = {}, η = {}, σ² = {:.1}, \
             p = {}/{})",
            self.model.d(),
            self.model.eta(),
            self.model.sigma().powi(2),
            self.model.p(Class::Pos),
            self.model.p(Class::Neg)
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Theorems 3 and 4(a) (Sec. 2.3, App. B.4-B.5, eqs. (22)-(23)), note C4"
    }

    fn look_at(&self) -> &'static str {
        "Inside the shaded interval (w*₋₁, w*₊₁) = (0.635, 1.301) the slope of A₋₁ is already \
         negative while that of A₊₁ is still positive, which is why Theorem 4(a) needs \
         w > w*₊₁."
    }

    fn size(&self) -> (u32, u32) {
        style::WIDE
    }

    fn tables(&self) -> Vec<Table> {
        let curves = Table::columns(
            "",
            &[
                ("w", &self.w),
                ("A_pos", &self.clean[0]),
                ("A_neg", &self.clean[1]),
                ("dA_pos_dw", &self.slope[0]),
                ("dA_neg_dw", &self.slope[1]),
            ],
        )
        .expect("equal lengths by construction");
        vec![curves, crate::theory::w_star_table(&self.w_star)]
    }

    fn axis_labels(&self) -> Vec<String> {
        [X_DESC, Y_A, Y_B].map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((1, 2));
        let x = 0.0..self.w[self.w.len() - 1];

        let std::ops::Range { start: lo, end: hi } =
            style::padded(self.clean.iter().flatten().copied(), 0.08);
        let (lo, hi) = (lo - (hi - lo) * 0.25, hi);
        let mut a = style::chart(&panels[0], "(a) clean accuracy A_y", x.clone(), lo..hi)?;
        style::mesh(&mut a, X_DESC, Y_A)?;
        self.band(&mut a, (lo, hi))?;
        for (i, color) in COLORS.into_iter().enumerate() {
            style::line(
                &mut a,
                &points(&self.w, &self.clean[i]),
                color,
                Dash::Solid,
                &format!(
                    "A{}  (p{} = {})",
                    NAMES[i],
                    NAMES[i],
                    self.model.p(CLASSES[i])
                ),
            )?;
            let w = self.w_star[i];
            note(
                &mut a,
                &format!("w*{} = {w:.3}", NAMES[i]),
                (w + 0.03, lo + (hi - lo) * 0.1),
                color,
            )?;
        }
        style::legend(&mut a, SeriesLabelPosition::LowerRight)?;

        let std::ops::Range { start: lo, end: hi } =
            style::padded(self.slope.iter().flatten().copied(), 0.08);
        let mut b = style::chart(&panels[1], "(b) slope ∂A_y/∂w", x, lo..hi)?;
        style::mesh(&mut b, X_DESC, Y_B)?;
        self.band(&mut b, (lo, hi))?;
        reference(
            &mut b,
            vec![(0.0, 0.0), (self.w[self.w.len() - 1], 0.0)],
            BLACK,
            false,
        )?;
        for (i, color) in COLORS.into_iter().enumerate() {
            style::line(
                &mut b,
                &points(&self.w, &self.slope[i]),
                color,
                Dash::Solid,
                &format!("∂A{}/∂w", NAMES[i]),
            )?;
        }
        note(
            &mut b,
            "shaded: A₋₁ falls, A₊₁ rises",
            (self.w_star[1] + 0.02, hi - (hi - lo) * 0.08),
            RGBColor(120, 80, 0),
        )?;
        style::legend(&mut b, SeriesLabelPosition::UpperRight)
    }
}
