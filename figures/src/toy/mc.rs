//! Monte Carlo against the closed forms (check T12): empirical A_y, R_y (x₁ pinned, CFA App. B.1)
//! and R^full_y (full ℓ∞ adversary, CFA definition (4)) of f_w at several w, from
//! `classwise_toy::binary::sweep` (N samples per class, exact worst-case perturbations), with ±2
//! standard-error bars, on the closed-form curves of `classwise-theory` (CFA eqs. (13)-(16) and the
//! full-adversary form of `classwise_theory::model`), at the Figure 1 setting and ε = 2η.

use classwise_theory::model::{Adversary, BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use classwise_toy::binary::{Estimate, Sweep, sweep};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::Options;
use crate::error::Result;
use crate::legend::{self, Entry, Shape};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};
use crate::theory::grid;

/// Samples per class of the full figure and of the quick one.
pub const SAMPLES: usize = 1_000_000;
pub const QUICK_SAMPLES: usize = 20_000;
/// The w of the Monte Carlo points (check T11's table holds 0.1, 0.5, 1, 2 and 3).
pub const WS: [f64; 7] = [0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0];

const X_DESC: &str = "w   (f_w(x) = sign(x₁ + x₂/w))";
const AXES: [&str; 3] = [X_DESC, "accuracy", "Monte Carlo estimate − closed form"];
const CLASSES: [Class; 2] = [Class::Pos, Class::Neg];
const COLORS: [RGBColor; 2] = [style::POS, style::NEG];
/// The three accuracies: legend name, CSV name, line dash, marker.
const QUANTITIES: [(&str, &str, Dash, Shape); 3] = [
    ("clean A_y", "clean", Dash::Dotted, Shape::Circle),
    (
        "robust R_y, x₁ pinned (paper)",
        "robust_paper",
        Dash::Solid,
        Shape::Square,
    ),
    (
        "robust R_y, full ℓ∞ adversary",
        "robust_full",
        Dash::Dashed,
        Shape::Triangle,
    ),
];
/// Horizontal spacing of the six series in panel (b), in units of w.
const SPREAD: f64 = 0.045;

/// Estimates and closed forms of the Monte Carlo panel.
pub struct McVsClosed {
    pub model: BinaryModel,
    pub eps: f64,
    pub samples_per_class: u64,
    pub seed: u64,
    /// The w of the estimates.
    pub w: Vec<f64>,
    /// `[quantity][class][i]`: quantity 0 clean, 1 robust (paper), 2 robust (full); class 0
    /// y = +1, 1 y = −1; i indexes `w`.
    pub estimates: [[Vec<Estimate>; 2]; 3],
    /// The closed forms at the same w and their z-scores (from the sweep).
    pub closed_form: [[Vec<f64>; 2]; 3],
    pub z: [[Vec<f64>; 2]; 3],
    /// The closed-form curves on a fine grid of w.
    pub grid: Vec<f64>,
    pub curves: [[Vec<f64>; 2]; 3],
}

impl McVsClosed {
    /// The Figure 1 model at ε = 2η = 0.8, [`SAMPLES`] per class ([`QUICK_SAMPLES`] when quick).
    pub fn new(options: &Options) -> Result<Self> {
        let model = figure1_model();
        let n = if options.quick {
            QUICK_SAMPLES
        } else {
            SAMPLES
        };
        Self::with(model, 2.0 * model.eta(), &WS, n, options.seed)
    }

    /// Any model, budget, w > 0, sample size and seed.
    pub fn with(model: BinaryModel, eps: f64, ws: &[f64], n: usize, seed: u64) -> Result<Self> {
        let s: Sweep = sweep(model, ws, eps, n, seed)?;
        let pick = |f: &dyn Fn(&classwise_toy::binary::Point, usize, usize) -> f64| {
            [0, 1, 2].map(|q| [0, 1].map(|c| s.points.iter().map(|p| f(p, q, c)).collect()))
        };
        let estimates = [0, 1, 2].map(|q| {
            [0, 1].map(|c| {
                s.points
                    .iter()
                    .map(|p| {
                        let a = [
                            &p.estimates.clean,
                            &p.estimates.robust_paper,
                            &p.estimates.robust_full,
                        ][q];
                        if c == 0 { a.pos } else { a.neg }
                    })
                    .collect()
            })
        });
        let closed_form = pick(&|p, q, c| {
            let a = [
                &p.closed_form.clean,
                &p.closed_form.robust_paper,
                &p.closed_form.robust_full,
            ][q];
            if c == 0 { a.pos } else { a.neg }
        });
        let z = pick(&|p, q, c| {
            let a = [&p.z.clean, &p.z.robust_paper, &p.z.robust_full][q];
            if c == 0 { a.pos } else { a.neg }
        });
        let x_max = ws.iter().copied().fold(0.0, f64::max);
        let grid = grid(0.01, x_max, 300);
        let mut curves: [[Vec<f64>; 2]; 3] = Default::default();
        for (q, per_class) in curves.iter_mut().enumerate() {
            for (c, curve) in per_class.iter_mut().enumerate() {
                let y = CLASSES[c];
                *curve = grid
                    .iter()
                    .map(|&w| match q {
                        0 => model.clean_accuracy(y, w),
                        1 => model.robust_accuracy(y, w, eps, Adversary::Paper),
                        _ => model.robust_accuracy(y, w, eps, Adversary::Full),
                    })
                    .collect::<classwise_theory::Result<Vec<f64>>>()?;
            }
        }
        Ok(McVsClosed {
            model,
            eps,
            samples_per_class: s.samples_per_class,
            seed,
            w: ws.to_vec(),
            estimates,
            closed_form,
            z,
            grid,
            curves,
        })
    }

    /// The largest |z| over every point.
    pub fn max_abs_z(&self) -> f64 {
        self.z
            .iter()
            .flatten()
            .flatten()
            .fold(0.0, |m: f64, v| m.max(v.abs()))
    }

    fn n_label(&self) -> String {
        power_of_ten(self.samples_per_class)
    }
}

/// `n` as 10ᵏ when it is a power of ten ≥ 100, with thin spaces between thousands otherwise.
fn power_of_ten(n: u64) -> String {
    const SUP: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let s = n.to_string();
    if n >= 100 && s[1..].bytes().all(|b| b == b'0') && s.starts_with('1') {
        let k = s.len() - 1;
        let exp: String = k
            .to_string()
            .bytes()
            .map(|b| SUP[(b - b'0') as usize])
            .collect();
        return format!("10{exp}");
    }
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(ch);
    }
    out
}

impl Figure for McVsClosed {
    fn id(&self) -> &'static str {
        "toy-mc-vs-closed"
    }

    fn title(&self) -> String {
        format!(
            "Monte Carlo against the closed forms: class-wise accuracies of f_w (ε = {}, N = {} per class)",
            self.eps,
            self.n_label()
        )
    }

    fn reproduces(&self) -> &'static str {
        "Check T12: simulated CFA eq. (5) data with exact ℓ∞ worst \
         cases against the closed forms of CFA eqs. (13)-(16) and the full-adversary R^full_y"
    }

    fn look_at(&self) -> &'static str {
        "Every estimate sits on its closed-form curve (left); on the right every difference \
         is within about two standard errors of 0 for both adversaries (all w share one sample, \
         so neighbouring differences move together), and the full-adversary curves lie far \
         below the paper's."
    }

    fn tables(&self) -> Vec<Table> {
        let mut points = Table::new(
            "points",
            &[
                "w",
                "quantity",
                "class",
                "estimate",
                "se",
                "closed_form",
                "z",
            ],
        );
        for (q, quantity) in QUANTITIES.iter().enumerate() {
            for (c, class) in ["+1", "-1"].into_iter().enumerate() {
                for (i, &w) in self.w.iter().enumerate() {
                    let e = self.estimates[q][c][i];
                    points
                        .push(vec![
                            Cell::from(w),
                            Cell::from(quantity.1),
                            Cell::from(class),
                            Cell::from(e.mean),
                            Cell::from(e.se),
                            Cell::from(self.closed_form[q][c][i]),
                            Cell::from(self.z[q][c][i]),
                        ])
                        .expect("seven cells");
                }
            }
        }
        let c = &self.curves;
        let curves = Table::columns(
            "curves",
            &[
                ("w", &self.grid),
                ("A_pos", &c[0][0]),
                ("A_neg", &c[0][1]),
                ("R_pos", &c[1][0]),
                ("R_neg", &c[1][1]),
                ("R_full_pos", &c[2][0]),
                ("R_full_neg", &c[2][1]),
            ],
        )
        .expect("equal lengths by construction");
        vec![points, curves]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn size(&self) -> (u32, u32) {
        (1600, 800)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (panels, strip) = legend::split(area, 1);
        let panels = panels.split_evenly((1, 2));
        let [x_desc, acc_desc, diff_desc] = AXES;
        let x_max = self.grid.last().copied().unwrap_or(3.0) + 0.15;
        let m = &self.model;

        // (a) The estimates on the curves.
        let mut a = style::chart(
            &panels[0],
            &format!(
                "(a) estimates on the curves (d = {}, σ² = {:.1}, η = {})",
                m.d(),
                m.sigma().powi(2),
                m.eta(),
            ),
            0.0..x_max,
            0.0..1.0,
        )?;
        style::mesh(&mut a, x_desc, acc_desc)?;
        for (q, quantity) in QUANTITIES.iter().enumerate() {
            for (curve, color) in self.curves[q].iter().zip(COLORS) {
                let pts: Vec<(f64, f64)> = self
                    .grid
                    .iter()
                    .copied()
                    .zip(curve.iter().copied())
                    .collect();
                style::line(&mut a, &pts, color, quantity.2, "")?;
            }
        }
        for (q, quantity) in QUANTITIES.iter().enumerate() {
            for (est, &color) in self.estimates[q].iter().zip(&COLORS) {
                let bars: Vec<(f64, f64, f64)> = self
                    .w
                    .iter()
                    .zip(est)
                    .map(|(&w, e)| (w, e.mean - 2.0 * e.se, e.mean + 2.0 * e.se))
                    .collect();
                legend::error_bars(&mut a, &bars, color)?;
                let pts: Vec<(f64, f64)> = self
                    .w
                    .iter()
                    .copied()
                    .zip(est.iter().map(|e| e.mean))
                    .collect();
                legend::markers(&mut a, &pts, quantity.3, color, 1.0, true)?;
            }
        }

        // (b) Differences with ±2 s.e. bars, the six series side by side around each w.
        let diffs = |q: usize, c: usize| {
            self.estimates[q][c]
                .iter()
                .zip(&self.closed_form[q][c])
                .map(|(e, cf)| (e.mean - cf, e.se))
                .collect::<Vec<_>>()
        };
        let reach = (0..3)
            .flat_map(|q| (0..2).map(move |c| (q, c)))
            .flat_map(|(q, c)| diffs(q, c))
            .map(|(d, se)| d.abs() + 2.0 * se)
            .fold(0.0, f64::max);
        let half = style::padded([-reach, reach], 0.15).end;
        let mut b = style::chart(
            &panels[1],
            &format!(
                "(b) estimate − closed form, ±2 s.e. (N = {})",
                self.n_label()
            ),
            -0.15..x_max,
            -half..half,
        )?;
        style::mesh(&mut b, x_desc, diff_desc)?;
        b.draw_series(std::iter::once(PathElement::new(
            vec![(-0.15, 0.0), (x_max, 0.0)],
            style::REFERENCE.stroke_width(2),
        )))?;
        for (q, quantity) in QUANTITIES.iter().enumerate() {
            for (c, &color) in COLORS.iter().enumerate() {
                let shift = (2.0 * q as f64 + c as f64 - 2.5) * SPREAD;
                let d = diffs(q, c);
                let bars: Vec<(f64, f64, f64)> = self
                    .w
                    .iter()
                    .zip(&d)
                    .map(|(&w, &(m, se))| (w + shift, m - 2.0 * se, m + 2.0 * se))
                    .collect();
                legend::error_bars(&mut b, &bars, color)?;
                let pts: Vec<(f64, f64)> = self
                    .w
                    .iter()
                    .zip(&d)
                    .map(|(&w, &(m, _))| (w + shift, m))
                    .collect();
                legend::markers(&mut b, &pts, quantity.3, color, 1.0, true)?;
            }
        }

        let mut row = vec![
            Entry::line(
                style::POS,
                Dash::Solid,
                format!("y = +1 (p₊₁ = {})", m.p(Class::Pos)),
            ),
            Entry::line(
                style::NEG,
                Dash::Solid,
                format!("y = −1 (p₋₁ = {})", m.p(Class::Neg)),
            ),
        ];
        row.extend(QUANTITIES.iter().map(|(name, _, dash, shape)| {
            Entry::line_marker(RGBColor(0, 0, 0), *dash, *shape, *name)
        }));
        legend::draw_rows(&strip, &[row])
    }
}
