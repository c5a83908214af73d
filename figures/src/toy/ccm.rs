//! CFA Algorithm 1's class-wise calibrated margin (CCM, CFA eq. (6)) on CFA's binary model:
//! `classwise_toy::binary::ccm_run` refits w exactly every epoch with class-wise budgets
//! ε_y = (λ₁ + t_y)·ε, next to the same training with one budget ε ("uniform") and with one budget
//! equal to the mean of CCM's final budgets ("matched").

use classwise_theory::model::{BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use classwise_toy::binary::{CcmEpoch, CcmReport, ccm_run};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Options;
use crate::error::{Result, invalid};
use crate::legend::{self, Entry, Shape};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::Table;

/// Settings of the figure: base budget ε, λ₁ (CFA's value for AT), epochs, samples per class.
pub const EPS: f64 = 0.2;
pub const LAMBDA1: f64 = 0.5;
pub const EPOCHS: usize = 10;
pub const SAMPLES: usize = 1_000_000;
pub const QUICK_SAMPLES: usize = 20_000;

const X_DESC: &str = "epoch";
const AXES: [&str; 5] = [
    X_DESC,
    "training budget ε_y",
    "fitted w",
    "train robust accuracy t_y",
    "robust accuracy R_y(w, 2η)",
];
const COLORS: [RGBColor; 2] = [style::POS, style::NEG];
const SHAPES: [Shape; 2] = [Shape::Circle, Shape::Triangle];
/// The three runs: name and dash.
const RUNS: [(&str, Dash); 3] = [
    ("CCM", Dash::Solid),
    ("uniform", Dash::Dotted),
    ("matched", Dash::Dashed),
];

/// One run's series per epoch (index 0: y = +1, 1: y = −1).
#[derive(Clone, Debug, PartialEq)]
pub struct RunSeries {
    pub eps: [Vec<f64>; 2],
    pub w: Vec<f64>,
    /// Whether the maximising interval of w was unbounded (w is then twice its lower end).
    pub w_unbounded: Vec<bool>,
    pub train_robust: [Vec<f64>; 2],
    pub robust_at_2eta: [Vec<f64>; 2],
}

impl RunSeries {
    fn of(epochs: &[&CcmEpoch]) -> Self {
        let per = |f: &dyn Fn(&CcmEpoch) -> (f64, f64)| {
            let (a, b): (Vec<f64>, Vec<f64>) = epochs.iter().map(|e| f(e)).unzip();
            [a, b]
        };
        RunSeries {
            eps: per(&|e| (e.eps.pos, e.eps.neg)),
            w: epochs.iter().map(|e| e.w).collect(),
            w_unbounded: epochs.iter().map(|e| e.w_unbounded).collect(),
            train_robust: per(&|e| (e.train_robust.pos, e.train_robust.neg)),
            robust_at_2eta: per(&|e| (e.robust_at_2eta.pos, e.robust_at_2eta.neg)),
        }
    }
}

/// The CCM figure: three runs on the same samples.
pub struct CcmFigure {
    pub model: BinaryModel,
    pub eps: f64,
    pub lambda1: f64,
    pub samples_per_class: usize,
    pub seed: u64,
    pub epochs: Vec<f64>,
    /// CCM, uniform and matched runs (the two baselines are stateless: the same every epoch).
    pub runs: [RunSeries; 3],
    /// ŵ_ε of the uniform budget (CFA Theorem 2 closed form), for reference in panel (b).
    pub w_hat: f64,
}

impl CcmFigure {
    /// The Figure 1 model, ε = 0.2, λ₁ = 0.5, 10 epochs, [`SAMPLES`] per class
    /// ([`QUICK_SAMPLES`] when quick).
    pub fn new(options: &Options) -> Result<Self> {
        let n = if options.quick {
            QUICK_SAMPLES
        } else {
            SAMPLES
        };
        Self::with(figure1_model(), EPS, LAMBDA1, EPOCHS, n, options.seed)
    }

    /// Any setting of [`ccm_run`] with 0 ≤ ε < η (so that ŵ_ε is finite).
    pub fn with(
        model: BinaryModel,
        eps: f64,
        lambda1: f64,
        epochs: usize,
        n: usize,
        seed: u64,
    ) -> Result<Self> {
        let r: CcmReport = ccm_run(model, eps, lambda1, epochs, n, seed)?;
        let w_hat = model.w_hat(eps)?;
        let w_hat = w_hat
            .value()
            .ok_or_else(|| invalid("ŵ_ε", w_hat.label(), "finite (0 ≤ ε < η)"))?;
        let ccm: Vec<&CcmEpoch> = r.ccm.iter().collect();
        let uniform: Vec<&CcmEpoch> = r.uniform.iter().collect();
        let matched: Vec<&CcmEpoch> = vec![&r.matched; r.ccm.len()];
        Ok(CcmFigure {
            model,
            eps,
            lambda1,
            samples_per_class: n,
            seed,
            epochs: r.ccm.iter().map(|e| e.epoch as f64).collect(),
            runs: [
                RunSeries::of(&ccm),
                RunSeries::of(&uniform),
                RunSeries::of(&matched),
            ],
            w_hat,
        })
    }

    fn pts(&self, v: &[f64]) -> Vec<(f64, f64)> {
        self.epochs.iter().copied().zip(v.iter().copied()).collect()
    }
}

impl Figure for CcmFigure {
    fn id(&self) -> &'static str {
        "toy-ccm"
    }

    fn title(&self) -> String {
        format!(
            "CFA CCM on the binary model: ε_y = (λ₁ + t_y)·ε with λ₁ = {}, ε = {}",
            self.lambda1, self.eps
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Algorithm 1 with the calibrated margin of eq. (6) on the model of section 2.2, \
         against one uniform budget and one matched mean budget"
    }

    fn look_at(&self) -> &'static str {
        "CCM settles after one epoch with t_y ≈ p_y, so the hard class −1 gets the smaller \
         budget; the larger mean budget pushes w up, and panel (d) shows that the matched \
         uniform budget gives almost the same class-wise robustness as CCM."
    }

    fn tables(&self) -> Vec<Table> {
        let mut cols: Vec<(String, Vec<f64>)> = vec![("epoch".into(), self.epochs.clone())];
        for (run, (name, _)) in self.runs.iter().zip(RUNS) {
            let name = name.to_ascii_lowercase();
            for (c, class) in ["pos", "neg"].into_iter().enumerate() {
                cols.push((format!("{name}_eps_{class}"), run.eps[c].clone()));
            }
            cols.push((format!("{name}_w"), run.w.clone()));
            cols.push((
                format!("{name}_w_unbounded"),
                run.w_unbounded
                    .iter()
                    .map(|&b| f64::from(u8::from(b)))
                    .collect(),
            ));
            for (c, class) in ["pos", "neg"].into_iter().enumerate() {
                cols.push((format!("{name}_t_{class}"), run.train_robust[c].clone()));
            }
            for (c, class) in ["pos", "neg"].into_iter().enumerate() {
                cols.push((
                    format!("{name}_R2eta_{class}"),
                    run.robust_at_2eta[c].clone(),
                ));
            }
        }
        let refs: Vec<(&str, &[f64])> = cols
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        let main = Table::columns("", &refs).expect("equal lengths by construction");
        let reference = Table::columns(
            "reference",
            &[("eps", &[self.eps]), ("w_hat", &[self.w_hat])],
        )
        .expect("one row");
        vec![main, reference]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn size(&self) -> (u32, u32) {
        (1600, 1100)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (panels, strip) = legend::split(area, 1);
        let panels = panels.split_evenly((2, 2));
        let last = self.epochs.last().copied().unwrap_or(1.0);
        let x = -0.3..last + 0.3;
        let [x_desc, eps_desc, w_desc, t_desc, r_desc] = AXES;

        // Per-class panels (a), (c), (d): class colours, run dashes, CCM with markers.
        // With `shared_baselines`, the baselines' two classes share one value (one budget):
        // they are drawn once, in black.
        let per_class = |panel: usize,
                         caption: &str,
                         y_desc: &str,
                         shared_baselines: bool,
                         get: &dyn Fn(&RunSeries) -> &[Vec<f64>; 2]|
         -> DrawResult<(), DB> {
            let values = self
                .runs
                .iter()
                .flat_map(|r| get(r).iter().flatten().copied());
            let mut chart = style::chart(
                &panels[panel],
                caption,
                x.clone(),
                style::padded(values, 0.12),
            )?;
            style::mesh_with(
                &mut chart,
                x_desc,
                y_desc,
                &style::tick_whole,
                &style::tick_plain,
            )?;
            for (i, (r, (_, dash))) in self.runs.iter().zip(RUNS).enumerate().rev() {
                if shared_baselines && i > 0 {
                    style::line(&mut chart, &self.pts(&get(r)[0]), BLACK, dash, "")?;
                    continue;
                }
                for (series, color) in get(r).iter().zip(COLORS) {
                    style::line(&mut chart, &self.pts(series), color, dash, "")?;
                }
            }
            for c in 0..2 {
                let pts = self.pts(&get(&self.runs[0])[c]);
                legend::markers(&mut chart, &pts, SHAPES[c], COLORS[c], 1.0, true)?;
            }
            Ok(())
        };
        per_class(
            0,
            &format!(
                "(a) class-wise budgets ε_y = (λ₁ + t_y)·ε (ε = {})",
                self.eps
            ),
            eps_desc,
            true,
            &|r| &r.eps,
        )?;

        // (b) the fitted w of each run, with the closed-form ŵ_ε of the uniform budget.
        let ws = self.runs.iter().flat_map(|r| r.w.iter().copied());
        let mut b = style::chart(
            &panels[1],
            "(b) fitted w (exact maximiser of the train robust accuracy)",
            x.clone(),
            style::padded(ws.chain([self.w_hat]), 0.12),
        )?;
        style::mesh_with(
            &mut b,
            x_desc,
            w_desc,
            &style::tick_whole,
            &style::tick_plain,
        )?;
        b.draw_series(std::iter::once(PathElement::new(
            vec![(x.start, self.w_hat), (x.end, self.w_hat)],
            style::REFERENCE.mix(0.8).stroke_width(2),
        )))?;
        b.draw_series(std::iter::once(Text::new(
            format!(
                "closed-form ŵ_ε = {:.3} of the uniform ε (CFA Theorem 2)",
                self.w_hat
            ),
            // Right of the first epoch's jump, which crosses this line.
            (x.start + 0.25 * (x.end - x.start), self.w_hat),
            style::legend_font()
                .color(&style::REFERENCE)
                .pos(Pos::new(HPos::Left, VPos::Bottom)),
        )))?;
        for (r, (_, dash)) in self.runs.iter().zip(RUNS).rev() {
            style::line(&mut b, &self.pts(&r.w), RGBColor(0, 0, 0), dash, "")?;
        }
        legend::markers(
            &mut b,
            &self.pts(&self.runs[0].w),
            Shape::Square,
            RGBColor(0, 0, 0),
            1.0,
            true,
        )?;

        per_class(
            2,
            "(c) train robust accuracy t_y at the fitted w (sets the next ε_y)",
            t_desc,
            false,
            &|r| &r.train_robust,
        )?;
        per_class(
            3,
            &format!(
                "(d) population robust accuracy at ε = 2η = {} (closed form)",
                2.0 * self.model.eta()
            ),
            r_desc,
            false,
            &|r| &r.robust_at_2eta,
        )?;

        let m = &self.model;
        let row = vec![
            Entry::line_marker(
                style::POS,
                Dash::Solid,
                SHAPES[0],
                format!("y = +1 (p₊₁ = {})", m.p(Class::Pos)),
            ),
            Entry::line_marker(
                style::NEG,
                Dash::Solid,
                SHAPES[1],
                format!("y = −1 (p₋₁ = {})", m.p(Class::Neg)),
            ),
            Entry::line(RGBColor(0, 0, 0), Dash::Solid, "CCM, class-wise ε_y"),
            Entry::line(
                RGBColor(0, 0, 0),
                Dash::Dotted,
                format!("uniform ε = {}", self.eps),
            ),
            Entry::line(
                RGBColor(0, 0, 0),
                Dash::Dashed,
                format!(
                    "matched uniform ε = {:.4} (mean of CCM's final ε_y)",
                    self.runs[2].eps[0].first().copied().unwrap_or(f64::NAN)
                ),
            ),
        ];
        legend::draw_rows(&strip, &[row])
    }
}
