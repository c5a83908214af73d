//! CFA Theorem 1 (Sec. 2.3, App. B.2): the class gaps A₊₁ − A₋₁ = (p₊₁ − p₋₁)P(|T| < w) and
//! R₊₁ − R₋₁ against w for d ∈ {1, 10, 100}, at the Figure 1 parameters and the evaluation
//! budget ε = 2η, under both adversaries.

use classwise_theory::model::{Adversary, BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{log_grid, note, points, reference, variant};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::Table;

/// The dimensions compared.
pub const DIMS: [u32; 3] = [1, 10, 100];

const X_DESC: &str = "w   (log scale)";
const Y_CLEAN: &str = "A₊₁(w) − A₋₁(w)";
const Y_ROBUST: &str = "R₊₁(w, ε) − R₋₁(w, ε)";

/// The clean and robust class gaps on a log grid of w, one curve per d.
pub struct Thm1Gaps {
    /// d = 1 (the other d share η, σ and p).
    pub model: BinaryModel,
    pub eps: f64,
    pub w: Vec<f64>,
    /// Indexed like [`DIMS`]: A₊₁ − A₋₁, R₊₁ − R₋₁ (paper adversary), R^full₊₁ − R^full₋₁.
    pub clean: Vec<Vec<f64>>,
    pub robust: Vec<Vec<f64>>,
    pub robust_full: Vec<Vec<f64>>,
}

impl Thm1Gaps {
    /// Figure 1 parameters, ε = 2η = 0.8, 400 points of w ∈ [0.01, 1000].
    pub fn new() -> Result<Self> {
        let model = figure1_model();
        Self::with(model, 2.0 * model.eta(), &log_grid(0.01, 1000.0, 400))
    }

    /// Any base model (its d is replaced by each of [`DIMS`]), budget and grid of w > 0.
    pub fn with(model: BinaryModel, eps: f64, w: &[f64]) -> Result<Self> {
        let (mut clean, mut robust, mut robust_full) = (Vec::new(), Vec::new(), Vec::new());
        for d in DIMS {
            let m = variant(&model, d, model.sigma(), model.p(Class::Neg))?;
            let curve = |f: &dyn Fn(f64) -> classwise_theory::Result<f64>| {
                w.iter()
                    .map(|&w| f(w))
                    .collect::<classwise_theory::Result<Vec<_>>>()
            };
            clean.push(curve(&|w| m.clean_gap(w))?);
            robust.push(curve(&|w| m.robust_gap(w, eps, Adversary::Paper))?);
            robust_full.push(curve(&|w| m.robust_gap(w, eps, Adversary::Full))?);
        }
        Ok(Thm1Gaps {
            model,
            eps,
            w: w.to_vec(),
            clean,
            robust,
            robust_full,
        })
    }

    /// p₊₁ − p₋₁, the limit of every gap as w → ∞.
    pub fn limit(&self) -> f64 {
        self.model.p(Class::Pos) - self.model.p(Class::Neg)
    }
}

impl Figure for Thm1Gaps {
    fn id(&self) -> &'static str {
        "cfa-thm1-gaps"
    }

    fn title(&self) -> String {
        format!(
            "CFA Theorem 1: the class gaps grow with w (η = {}, σ² = {:.1}, p₊₁ = {}, p₋₁ = {})",
            self.model.eta(),
            self.model.sigma().powi(2),
            self.model.p(Class::Pos),
            self.model.p(Class::Neg)
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Theorem 1 (Sec. 2.3, eq. (17))"
    }

    fn look_at(&self) -> &'static str {
        "Every gap is positive, rises monotonically from 0 (as w → 0) to p₊₁ − p₋₁ = 0.15, and \
         rises later for larger d; at ε = 2η the paper-adversary robust gap is identical to the \
         clean gap, while the full ℓ∞ adversary delays it further."
    }

    fn size(&self) -> (u32, u32) {
        style::WIDE
    }

    fn tables(&self) -> Vec<Table> {
        let mut names = Vec::new();
        for (kind, _) in self.series() {
            for d in DIMS {
                names.push(format!("{kind}_d{d}"));
            }
        }
        let mut cols: Vec<(&str, &[f64])> = vec![("w", &self.w)];
        let all: Vec<&Vec<f64>> = self.series().into_iter().flat_map(|(_, s)| s).collect();
        for (name, v) in names.iter().zip(all) {
            cols.push((name, v));
        }
        vec![Table::columns("", &cols).expect("equal lengths by construction")]
    }

    fn axis_labels(&self) -> Vec<String> {
        [X_DESC, Y_CLEAN, Y_ROBUST].map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((1, 2));
        let x = self.w[0]..self.w[self.w.len() - 1];
        // Room above the limit for the legends.
        let top = self.limit() * 1.6;

        let mut a = style::frame(
            &panels[0],
            "(a) clean gap, d ∈ {1, 10, 100}",
            x.clone().log_scale(),
            0.0..top,
        )?;
        style::mesh_with(
            &mut a,
            X_DESC,
            Y_CLEAN,
            &style::tick_log,
            &style::tick_plain,
        )?;
        self.limit_line(&mut a)?;
        for (k, d) in DIMS.into_iter().enumerate() {
            style::line(
                &mut a,
                &points(&self.w, &self.clean[k]),
                style::color(k),
                Dash::Solid,
                &format!("d = {d}"),
            )?;
        }
        style::legend(&mut a, SeriesLabelPosition::UpperLeft)?;

        let mut b = style::frame(
            &panels[1],
            &format!("(b) robust gap at ε = 2η = {}", self.eps),
            x.log_scale(),
            0.0..top,
        )?;
        style::mesh_with(
            &mut b,
            X_DESC,
            Y_ROBUST,
            &style::tick_log,
            &style::tick_plain,
        )?;
        self.limit_line(&mut b)?;
        for (k, d) in DIMS.into_iter().enumerate() {
            style::line(
                &mut b,
                &points(&self.w, &self.robust[k]),
                style::color(k),
                Dash::Solid,
                &format!("d = {d}, x₁ pinned (identical to (a))"),
            )?;
            style::line(
                &mut b,
                &points(&self.w, &self.robust_full[k]),
                style::color(k),
                Dash::Dashed,
                &format!("d = {d}, full ℓ∞ adversary"),
            )?;
        }
        style::legend(&mut b, SeriesLabelPosition::UpperLeft)
    }
}

impl Thm1Gaps {
    /// The three families of curves, named as in the CSV.
    fn series(&self) -> [(&'static str, &Vec<Vec<f64>>); 3] {
        [
            ("clean_gap", &self.clean),
            ("robust_gap", &self.robust),
            ("robust_gap_full", &self.robust_full),
        ]
    }

    /// The dashed limit p₊₁ − p₋₁ with its label.
    fn limit_line<'a, DB: DrawingBackend + 'a>(
        &self,
        chart: &mut ChartContext<
            'a,
            DB,
            Cartesian2d<LogCoord<f64>, plotters::coord::types::RangedCoordf64>,
        >,
    ) -> DrawResult<(), DB> {
        let (x0, x1) = (self.w[0], self.w[self.w.len() - 1]);
        let g = self.limit();
        reference(chart, vec![(x0, g), (x1, g)], style::REFERENCE, true)?;
        note(
            chart,
            &format!("p₊₁ − p₋₁ = {g:.2}"),
            (x1 / 30.0, g * 1.1),
            style::REFERENCE,
        )
    }
}
