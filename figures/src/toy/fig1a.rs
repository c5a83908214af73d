//! CFA Figure 1(a): a seeded sample of 100 points per class of the binary model with d = 1
//! (σ² = 0.6, η = 0.4, p₊₁ = 0.85, p₋₁ = 0.7; CFA App. A), which lie on the lines x₁ = ±1, with
//! the decision boundaries x₂ = −w·x₁ of f_w at w*₊₁ and w*₋₁ (CFA Theorem 3).

use classwise_theory::model::{BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use classwise_toy::binary::Sampler;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::Options;
use crate::error::{Result, invalid};
use crate::legend::{self, Entry, Shape};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

/// Points per class (CFA App. A).
pub const SAMPLES: usize = 100;
/// The x₁ range drawn.
const X1: std::ops::Range<f64> = -1.6..1.6;
/// Class +1 is drawn this far left of its line x₁ = ±1 and class −1 this far right, so the two
/// classes do not hide each other (the caption says so).
const OFFSET: f64 = 0.045;
const AXES: [&str; 2] = ["x₁ (robust feature)", "x₂ (non-robust feature)"];
const CLASSES: [Class; 2] = [Class::Pos, Class::Neg];
const COLORS: [RGBColor; 2] = [style::POS, style::NEG];
const SHAPES: [Shape; 2] = [Shape::Circle, Shape::Triangle];

/// The sample of Figure 1(a).
pub struct Fig1a {
    pub model: BinaryModel,
    pub seed: u64,
    /// Per class (0: y = +1, 1: y = −1): the points (x₁, x₂) in sampling order.
    pub points: [Vec<(f64, f64)>; 2],
    /// Per class: how many points have x₁ = y (the robust feature agrees with the label).
    pub agree: [usize; 2],
    /// w*_y (CFA Theorem 3 with the σ² factor): the boundary of f_w is x₂ = −w·x₁.
    pub w_star: [f64; 2],
}

impl Fig1a {
    /// The paper's setting, [`SAMPLES`] points per class from `options.seed` (the same with
    /// `quick`).
    pub fn new(options: &Options) -> Result<Self> {
        Self::with(figure1_model(), SAMPLES, options.seed)
    }

    /// Any model with d = 1 (two coordinates to draw).
    pub fn with(model: BinaryModel, n: usize, seed: u64) -> Result<Self> {
        if model.d() != 1 {
            return Err(invalid("d", model.d(), "1 (a scatter of (x₁, x₂))"));
        }
        let sampler = Sampler::new(model);
        let points = CLASSES.map(|y| {
            sampler
                .sample(y, n, seed)
                .rows()
                .map(|r| (r[0], r[1]))
                .collect::<Vec<_>>()
        });
        let agree = [0, 1].map(|i| {
            let y = if i == 0 { 1.0 } else { -1.0 };
            points[i].iter().filter(|p| p.0 == y).count()
        });
        Ok(Fig1a {
            model,
            seed,
            points,
            agree,
            w_star: crate::theory::w_stars(&model)?,
        })
    }

    fn n(&self) -> usize {
        self.points[0].len()
    }
}

impl Figure for Fig1a {
    fn id(&self) -> &'static str {
        "cfa-fig1a"
    }

    fn title(&self) -> String {
        format!(
            "CFA Figure 1(a): {} samples per class of the binary model (d = 1)",
            self.n()
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Figure 1(a) (section 2.3, App. A): a seeded sample of the toy distribution, eq. (5) \
         with σ² = 0.6"
    }

    fn look_at(&self) -> &'static str {
        "The hard class −1 (orange triangles) lands on the wrong line x₁ = +1 about twice as \
         often as the easy class +1 lands on x₁ = −1, and there its only hope is the noisy x₂; \
         the boundary at w*₋₁ gives x₂ more say than the one at w*₊₁."
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("", &["y", "x1", "x2"]);
        for (i, label) in [1.0, -1.0].into_iter().enumerate() {
            for &(x1, x2) in &self.points[i] {
                t.push(vec![Cell::from(label), Cell::from(x1), Cell::from(x2)])
                    .expect("three cells");
            }
        }
        let mut b = Table::new("boundaries", &["class", "w_star", "agree", "n"]);
        for (i, name) in ["+1", "-1"].into_iter().enumerate() {
            b.push(vec![
                Cell::from(name),
                Cell::from(self.w_star[i]),
                Cell::from(self.agree[i]),
                Cell::from(self.n()),
            ])
            .expect("four cells");
        }
        vec![t, b]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (plot, strip) = legend::split(area, 2);
        let m = &self.model;
        let y_range = style::padded(self.points.iter().flatten().map(|p| p.1), 0.06);
        let n = self.n();
        let mut chart = style::chart(
            &plot,
            &format!(
                "σ² = {:.1}, η = {}, seed {}: x₁ = y for {}/{n} points of class +1, {}/{n} of \
                 class −1",
                m.sigma().powi(2),
                m.eta(),
                self.seed,
                self.agree[0],
                self.agree[1],
            ),
            X1,
            y_range,
        )?;
        let [x_desc, y_desc] = AXES;
        style::mesh(&mut chart, x_desc, y_desc)?;
        // The boundaries first, so the points stay on top.
        for (i, dash) in [Dash::Dashed, Dash::Dotted].into_iter().enumerate() {
            let w = self.w_star[i];
            style::line(
                &mut chart,
                &[(X1.start, -w * X1.start), (X1.end, -w * X1.end)],
                COLORS[i],
                dash,
                "",
            )?;
        }
        for (i, side) in [-OFFSET, OFFSET].into_iter().enumerate() {
            let shifted: Vec<(f64, f64)> = self.points[i]
                .iter()
                .map(|&(x1, x2)| (x1 + side, x2))
                .collect();
            legend::markers(&mut chart, &shifted, SHAPES[i], COLORS[i], 0.75, true)?;
        }
        let rows = vec![
            vec![
                Entry::marker(
                    style::POS,
                    SHAPES[0],
                    true,
                    format!(
                        "y = +1 (easy, p₊₁ = {}), drawn left of x₁ = ±1",
                        m.p(Class::Pos)
                    ),
                ),
                Entry::marker(
                    style::NEG,
                    SHAPES[1],
                    true,
                    format!("y = −1 (hard, p₋₁ = {}), drawn right", m.p(Class::Neg)),
                ),
            ],
            vec![
                Entry::line(
                    style::POS,
                    Dash::Dashed,
                    format!("boundary x₂ = −w·x₁ of f_w at w*₊₁ = {:.3}", self.w_star[0]),
                ),
                Entry::line(
                    style::NEG,
                    Dash::Dotted,
                    format!("at w*₋₁ = {:.3}", self.w_star[1]),
                ),
            ],
        ];
        legend::draw_rows(&strip, &rows)
    }
}
