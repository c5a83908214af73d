//! CFA Theorem 4(b) (Sec. 2.3, App. B.5; notes C5 and C6): the slope ∂R₋₁/∂w at the evaluation
//! budget ε = 2η for p₋₁ ∈ {0.3, 0.5, 0.7}, beside ∂R₊₁/∂w, under the paper's adversary (x₁ pinned)
//! and the full ℓ∞ adversary.

use classwise_theory::model::{Adversary, BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{note, points, reference, shade, sign_changes, variant};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};
use crate::theory::grid;

/// The values of p₋₁ compared.
pub const P_NEG: [f64; 3] = [0.3, 0.5, 0.7];
/// Panel 0: the paper's adversary; panel 1: the full ℓ∞ adversary.
pub const ADVERSARIES: [Adversary; 2] = [Adversary::Paper, Adversary::Full];

const X_DESC: &str = "w";
const Y_DESC: &str = "slope ∂R_y(w, ε)/∂w at ε = 2η";
/// Light red behind the region where a robust accuracy falls.
const FALLING: RGBColor = RGBColor(213, 94, 0);

/// A zero of a slope curve: where R_y turns from falling to rising (or back).
#[derive(Clone, Debug, PartialEq)]
pub struct Crossing {
    pub adversary: Adversary,
    pub class: Class,
    /// p_y of that curve.
    pub p: f64,
    pub w: f64,
}

/// ∂R_y/∂w on a grid of w for each adversary, and where each curve crosses 0.
pub struct Thm4b {
    /// The Figure 1 model; p₋₁ is replaced by each of [`P_NEG`].
    pub model: BinaryModel,
    pub eps: f64,
    pub w: Vec<f64>,
    /// `slope_neg[a][k]`: ∂R₋₁/∂w under `ADVERSARIES[a]` with p₋₁ = `P_NEG[k]`.
    pub slope_neg: [Vec<Vec<f64>>; 2],
    /// `slope_pos[a]`: ∂R₊₁/∂w (p₊₁ of the model) under `ADVERSARIES[a]`.
    pub slope_pos: [Vec<f64>; 2],
    /// Zero crossings on the grid, refined by bisection.
    pub crossings: Vec<Crossing>,
}

impl Thm4b {
    /// Figure 1 parameters (p₊₁ = 0.85), ε = 2η = 0.8, 300 points of w ∈ [0.005, 3].
    pub fn new() -> Result<Self> {
        let model = figure1_model();
        Self::with(model, 2.0 * model.eta(), &grid(0.005, 3.0, 300))
    }

    /// Any base model, budget and grid of w > 0.
    pub fn with(model: BinaryModel, eps: f64, w: &[f64]) -> Result<Self> {
        let curve = |m: &BinaryModel, y: Class, adv: Adversary| {
            w.iter()
                .map(|&w| m.robust_accuracy_dw(y, w, eps, adv))
                .collect::<classwise_theory::Result<Vec<_>>>()
        };
        let mut slope_neg = [Vec::new(), Vec::new()];
        let mut slope_pos = [Vec::new(), Vec::new()];
        let mut crossings = Vec::new();
        for (a, adv) in ADVERSARIES.into_iter().enumerate() {
            let mut found = |m: BinaryModel, y: Class| -> Result<()> {
                for root in sign_changes(w, |w| Ok(m.robust_accuracy_dw(y, w, eps, adv)?))? {
                    crossings.push(Crossing {
                        adversary: adv,
                        class: y,
                        p: m.p(y),
                        w: root,
                    });
                }
                Ok(())
            };
            for p in P_NEG {
                let m = variant(&model, model.d(), model.sigma(), p)?;
                slope_neg[a].push(curve(&m, Class::Neg, adv)?);
                found(m, Class::Neg)?;
            }
            slope_pos[a] = curve(&model, Class::Pos, adv)?;
            found(model, Class::Pos)?;
        }
        Ok(Thm4b {
            model,
            eps,
            w: w.to_vec(),
            slope_neg,
            slope_pos,
            crossings,
        })
    }
}

impl Thm4b {
    /// "; < 0 for w < …" when the curve of (adversary, class, p) crosses 0 once from below.
    fn zero_note(&self, adv: Adversary, y: Class, p: f64) -> String {
        let zeros: Vec<f64> = self
            .crossings
            .iter()
            .filter(|z| z.adversary == adv && z.class == y && z.p == p)
            .map(|z| z.w)
            .collect();
        match zeros.as_slice() {
            [w] => format!(": < 0 for w < {w:.3}"),
            _ => String::new(),
        }
    }
}

impl Figure for Thm4b {
    fn id(&self) -> &'static str {
        "cfa-thm4b"
    }

    fn title(&self) -> String {
        format!(
            "CFA Theorem 4(b): ∂R_y/∂w at ε = 2η = {} (d = {}, η = {}, σ² = {:.1}, p₊₁ = {})",
            self.eps,
            self.model.d(),
            self.model.eta(),
            self.model.sigma().powi(2),
            self.model.p(Class::Pos)
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Theorem 4(b) (Sec. 2.3, App. B.5, eq. (16)), notes C5 and C6"
    }

    fn look_at(&self) -> &'static str {
        "With x₁ pinned, R₋₁ rises everywhere only for p₋₁ ≥ 1/2 (p₋₁ = 0.3 falls until \
         w = 0.635); under the full ℓ∞ adversary every curve, even the easy class's, starts \
         negative, so Theorem 4(b) fails near w = 0."
    }

    fn size(&self) -> (u32, u32) {
        style::WIDE
    }

    fn tables(&self) -> Vec<Table> {
        let mut names = Vec::new();
        let mut cols: Vec<&[f64]> = Vec::new();
        for (a, tag) in ["paper", "full"].into_iter().enumerate() {
            for (k, p) in P_NEG.into_iter().enumerate() {
                names.push(format!("dR_neg_dw_{tag}_p{p}"));
                cols.push(&self.slope_neg[a][k]);
            }
            names.push(format!("dR_pos_dw_{tag}_p{}", self.model.p(Class::Pos)));
            cols.push(&self.slope_pos[a]);
        }
        let mut columns: Vec<(&str, &[f64])> = vec![("w", &self.w)];
        columns.extend(names.iter().map(String::as_str).zip(cols));
        let curves = Table::columns("", &columns).expect("equal lengths by construction");
        let mut zeros = Table::new("zeros", &["adversary", "class", "p_y", "w_zero"]);
        for c in &self.crossings {
            zeros
                .push(vec![
                    Cell::from(adversary_name(c.adversary)),
                    Cell::from(class_name(c.class)),
                    Cell::from(c.p),
                    Cell::from(c.w),
                ])
                .expect("four cells");
        }
        vec![curves, zeros]
    }

    fn axis_labels(&self) -> Vec<String> {
        [X_DESC, Y_DESC].map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((1, 2));
        let x_max = self.w[self.w.len() - 1];
        let captions = [
            "(a) x₁ pinned (App. B.1, the paper's adversary)",
            "(b) full ℓ∞ adversary (definition (4))",
        ];
        for (a, adv) in ADVERSARIES.into_iter().enumerate() {
            let all = self.slope_neg[a].iter().flatten().chain(&self.slope_pos[a]);
            let std::ops::Range { start: lo, end: hi } = style::padded(all.copied(), 0.08);
            let mut c = style::chart(&panels[a], captions[a], 0.0..x_max, lo..hi)?;
            style::mesh(&mut c, X_DESC, Y_DESC)?;
            shade(&mut c, (0.0, x_max), (lo, 0.0), FALLING)?;
            note(
                &mut c,
                "below 0: R_y falls as w grows",
                (x_max * 0.03, lo + (hi - lo) * 0.06),
                RGBColor(150, 50, 0),
            )?;
            reference(&mut c, vec![(0.0, 0.0), (x_max, 0.0)], BLACK, false)?;
            for (k, p) in P_NEG.into_iter().enumerate() {
                style::line(
                    &mut c,
                    &points(&self.w, &self.slope_neg[a][k]),
                    style::color([4, 2, 5][k]),
                    Dash::Solid,
                    &format!("∂R₋₁/∂w, p₋₁ = {p}{}", self.zero_note(adv, Class::Neg, p)),
                )?;
            }
            let p_pos = self.model.p(Class::Pos);
            style::line(
                &mut c,
                &points(&self.w, &self.slope_pos[a]),
                BLACK,
                Dash::Dashed,
                &format!(
                    "∂R₊₁/∂w, p₊₁ = {p_pos}{}",
                    self.zero_note(adv, Class::Pos, p_pos)
                ),
            )?;
            c.draw_series(
                self.crossings
                    .iter()
                    .filter(|z| z.adversary == adv)
                    .map(|z| Circle::new((z.w, 0.0), 6, BLACK.filled())),
            )?;
            let at = match adv {
                Adversary::Paper => SeriesLabelPosition::UpperRight,
                Adversary::Full => SeriesLabelPosition::LowerRight,
            };
            style::legend(&mut c, at)?;
        }
        Ok(())
    }
}

fn adversary_name(a: Adversary) -> &'static str {
    match a {
        Adversary::Paper => "paper",
        Adversary::Full => "full",
    }
}

fn class_name(y: Class) -> &'static str {
    match y {
        Class::Pos => "+1",
        Class::Neg => "-1",
    }
}
