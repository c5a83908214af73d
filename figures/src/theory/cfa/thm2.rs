//! CFA Theorem 2 (Sec. 2.3, App. B.3, eqs. (19)-(21); errata C1 and C6): (a) the optimum ŵ_ε of the
//! class-average robust accuracy against ε, with the asymptote ε = η and the full-adversary
//! optimum, which jumps to +∞; (b) a heat map of R̄(w, ε) with the ridge w = ŵ_ε.

use classwise_theory::model::{Adversary, Argmax, BinaryModel};
use classwise_theory::theorems::figure1_model;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{boundary, note, points, reference};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::Table;
use crate::theory::grid;

const X_DESC: &str = "training budget ε";
const Y_A: &str = "optimal w";
const Y_B: &str = "w";
const BAR: &str = "R_avg(w, ε) = ½(R₊₁ + R₋₁)";

/// Colour of the paper-adversary optimum ŵ_ε and of the full-adversary optimum.
const PAPER: RGBColor = RGBColor(0, 158, 115);
const FULL: RGBColor = RGBColor(213, 94, 0);

/// An optimum as a number: the maximiser, `inf` when the supremum is reached only as w → ∞,
/// 0 when only as w → 0⁺, NaN when R̄ is constant in w.
fn as_number(a: Argmax) -> f64 {
    match a {
        Argmax::At(w) => w,
        Argmax::PlusInfinity => f64::INFINITY,
        Argmax::ZeroPlus => 0.0,
        Argmax::Constant => f64::NAN,
    }
}

/// ŵ_ε and the full-adversary optimum on a grid of ε, and R̄ on a (ε, w) grid.
pub struct Thm2 {
    pub model: BinaryModel,
    /// The ε grid of panel (a), with the jump of the full optimum inserted.
    pub eps: Vec<f64>,
    /// ŵ_ε (`inf` for ε ≥ η, where R̄ increases in w: erratum C1).
    pub w_hat: Vec<f64>,
    /// The global optimum of R̄^full (`inf` where sign(x₁) alone is best).
    pub w_full: Vec<f64>,
    /// The first ε where the full optimum leaves a finite w for +∞, and the local maximum
    /// there (0.0786 and 1.80 at the Figure 1 setting, check T11), found by bisection on
    /// `w_hat_full`.
    pub jump: Option<(f64, f64)>,
    /// Heat map: cell centres in ε and w, R̄(w, ε) per cell (`heat[i][j]` at eps_c[i], w_c[j]).
    pub eps_c: Vec<f64>,
    pub w_c: Vec<f64>,
    pub heat: Vec<Vec<f64>>,
    /// Cell sizes in ε and w.
    pub cell: (f64, f64),
    /// Top of the w axis of both panels.
    pub w_max: f64,
}

impl Thm2 {
    /// Figure 1 parameters; ε ∈ [0, 0.5] (η = 0.4), w ∈ (0, 6].
    pub fn new() -> Result<Self> {
        Self::with(figure1_model(), 0.5, 6.0, 501, (100, 60))
    }

    /// Any model, ε ∈ [0, eps_max] on `n_eps` points (eps_max < 1), w ∈ (0, w_max], and a heat
    /// map of `cells` = (ε cells, w cells).
    pub fn with(
        model: BinaryModel,
        eps_max: f64,
        w_max: f64,
        n_eps: usize,
        cells: (usize, usize),
    ) -> Result<Self> {
        let base = grid(0.0, eps_max, n_eps);
        let finite_full =
            |e: f64| -> Result<bool> { Ok(matches!(model.w_hat_full(e)?.argmax, Argmax::At(_))) };
        let mut jump = None;
        for pair in base.windows(2) {
            if finite_full(pair[0])? && model.w_hat_full(pair[1])?.argmax == Argmax::PlusInfinity {
                let e = boundary(pair[0], pair[1], finite_full)?;
                let w = model.w_hat_full(e)?.local_max.unwrap_or(f64::NAN);
                jump = Some((e, w));
                break;
            }
        }
        let mut eps = base;
        if let Some((e, _)) = jump {
            let at = eps.partition_point(|&x| x < e);
            eps.insert(at, e);
        }
        let mut w_hat = Vec::with_capacity(eps.len());
        let mut w_full = Vec::with_capacity(eps.len());
        for &e in &eps {
            w_hat.push(as_number(model.w_hat(e)?));
            w_full.push(as_number(model.w_hat_full(e)?.argmax));
        }

        let cell = (eps_max / cells.0 as f64, w_max / cells.1 as f64);
        let eps_c: Vec<f64> = (0..cells.0).map(|i| (i as f64 + 0.5) * cell.0).collect();
        let w_c: Vec<f64> = (0..cells.1).map(|j| (j as f64 + 0.5) * cell.1).collect();
        let heat = eps_c
            .iter()
            .map(|&e| {
                w_c.iter()
                    .map(|&w| model.average_robust_accuracy(w, e, Adversary::Paper))
                    .collect::<classwise_theory::Result<Vec<_>>>()
            })
            .collect::<classwise_theory::Result<Vec<_>>>()?;
        Ok(Thm2 {
            model,
            eps,
            w_hat,
            w_full,
            jump,
            eps_c,
            w_c,
            heat,
            cell,
            w_max,
        })
    }

    /// The smallest and largest R̄ of the heat map (the colour scale).
    pub fn heat_range(&self) -> (f64, f64) {
        self.heat
            .iter()
            .flatten()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            })
    }

    fn eps_max(&self) -> f64 {
        self.eps[self.eps.len() - 1]
    }

    /// The height at which panel (a) draws "+∞".
    fn infinity_row(&self) -> f64 {
        self.w_max * 0.93
    }

    /// The finite part of the full optimum, ending at the jump.
    fn full_finite(&self) -> Vec<(f64, f64)> {
        let end = self.jump.map_or(f64::INFINITY, |j| j.0);
        let mut pts: Vec<(f64, f64)> = points(&self.eps, &self.w_full)
            .into_iter()
            .filter(|&(e, w)| w.is_finite() && e < end)
            .collect();
        pts.extend(self.jump);
        pts
    }
}

impl Figure for Thm2 {
    fn id(&self) -> &'static str {
        "cfa-thm2"
    }

    fn title(&self) -> String {
        format!(
            "CFA Theorem 2: a larger training budget ε enlarges the optimal w \
             (d = {}, η = {}, σ² = {:.1}, p = {}/{})",
            self.model.d(),
            self.model.eta(),
            self.model.sigma().powi(2),
            self.model.p(classwise_theory::model::Class::Pos),
            self.model.p(classwise_theory::model::Class::Neg)
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Theorem 2 (Sec. 2.3, App. B.3, eqs. (19)-(21)), errata C1 and C6"
    }

    fn look_at(&self) -> &'static str {
        "ŵ_ε rises from 0.93 and diverges at ε = η = 0.4, tracing the ridge of R̄(w, ε) in the \
         heat map; under the full ℓ∞ adversary the optimum instead jumps from w = 1.80 to +∞ \
         at ε ≈ 0.0786."
    }

    fn size(&self) -> (u32, u32) {
        (1800, 760)
    }

    fn tables(&self) -> Vec<Table> {
        let curves = Table::columns(
            "",
            &[
                ("eps", &self.eps),
                ("w_hat", &self.w_hat),
                ("w_hat_full", &self.w_full),
            ],
        )
        .expect("equal lengths by construction");
        let (mut e, mut w, mut r) = (Vec::new(), Vec::new(), Vec::new());
        for (i, row) in self.heat.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                e.push(self.eps_c[i]);
                w.push(self.w_c[j]);
                r.push(v);
            }
        }
        let heat = Table::columns("heatmap", &[("eps", &e), ("w", &w), ("R_bar", &r)])
            .expect("equal lengths by construction");
        let (je, jw): (Vec<f64>, Vec<f64>) = self.jump.into_iter().unzip();
        let jump = Table::columns("jump", &[("eps_jump", &je), ("w_local_max", &jw)])
            .expect("equal lengths by construction");
        vec![curves, heat, jump]
    }

    fn axis_labels(&self) -> Vec<String> {
        [X_DESC, Y_A, Y_B, BAR].map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (left, rest) = area.split_horizontally(830);
        let (middle, bar) = rest.split_horizontally(790);
        let eta = self.model.eta();
        let x = 0.0..self.eps_max();
        let ridge = style::clip_y(&points(&self.eps, &self.w_hat), 0.0, self.w_max, false);

        // (a) the optima against ε.
        let mut a = style::chart(
            &left,
            "(a) the w maximising R_avg(·, ε)",
            x.clone(),
            0.0..self.w_max,
        )?;
        style::mesh(&mut a, X_DESC, Y_A)?;
        reference(
            &mut a,
            vec![(eta, 0.0), (eta, self.w_max)],
            style::REFERENCE,
            true,
        )?;
        note(
            &mut a,
            "ε = η",
            (eta + 0.006, self.w_max * 0.06),
            style::REFERENCE,
        )?;
        for (k, piece) in ridge.iter().enumerate() {
            style::line(
                &mut a,
                piece,
                PAPER,
                Dash::Solid,
                if k == 0 {
                    "ŵ_ε, x₁ pinned (paper): → ∞ as ε → η"
                } else {
                    ""
                },
            )?;
        }
        style::line(
            &mut a,
            &self.full_finite(),
            FULL,
            Dash::Solid,
            "optimum under the full ℓ∞ adversary",
        )?;
        if let Some((e, w)) = self.jump {
            let top = self.infinity_row();
            reference(&mut a, vec![(e, w), (e, top)], FULL, true)?;
            a.draw_series(std::iter::once(
                EmptyElement::at((e, top)) + TriangleMarker::new((0, 0), 9, FULL.filled()),
            ))?;
            a.draw_series(std::iter::once(Circle::new((e, w), 6, FULL.filled())))?;
            a.draw_series(std::iter::once(PathElement::new(
                vec![(e, top), (self.eps_max(), top)],
                FULL.stroke_width(style::STROKE + 2),
            )))?;
            note(
                &mut a,
                &format!("+∞ for ε > {e:.4}"),
                (e + 0.012, top - self.w_max * 0.055),
                FULL,
            )?;
            note(
                &mut a,
                &format!("jump from w = {w:.2} to +∞"),
                (e + 0.008, w + self.w_max * 0.1),
                FULL,
            )?;
        }
        style::legend(&mut a, SeriesLabelPosition::Coordinate(180, 180))?;

        // (b) the heat map with the ridge.
        let (lo, hi) = self.heat_range();
        let mut b = style::chart(
            &middle,
            "(b) R_avg(w, ε), x₁ pinned, and its ridge",
            x,
            0.0..self.w_max,
        )?;
        b.draw_series(self.heat.iter().enumerate().flat_map(|(i, row)| {
            row.iter().enumerate().map(move |(j, &v)| {
                let (e, w) = (self.eps_c[i], self.w_c[j]);
                let (he, hw) = (self.cell.0 / 2.0, self.cell.1 / 2.0);
                Rectangle::new(
                    [(e - he, w - hw), (e + he, w + hw)],
                    ViridisRGB::get_color_normalized(v, lo, hi).filled(),
                )
            })
        }))?;
        style::mesh(&mut b, X_DESC, Y_B)?;
        for piece in &ridge {
            b.draw_series(std::iter::once(PathElement::new(
                piece.clone(),
                BLACK.stroke_width(style::STROKE + 4),
            )))?;
            b.draw_series(std::iter::once(PathElement::new(
                piece.clone(),
                WHITE.stroke_width(style::STROKE),
            )))?;
        }
        reference(&mut b, vec![(eta, 0.0), (eta, self.w_max)], WHITE, true)?;
        note(
            &mut b,
            "ridge w = ŵ_ε (the best w for each ε)",
            (0.01, self.w_max * 0.4),
            BLACK,
        )?;
        note(
            &mut b,
            "ε ≥ η: no ridge",
            (eta + 0.006, self.w_max * 0.06),
            WHITE,
        )?;

        // The colour bar.
        let mut c = ChartBuilder::on(&bar)
            .margin(18)
            .margin_right(20)
            .x_label_area_size(70)
            .y_label_area_size(95)
            .caption(" ", style::caption_font())
            .build_cartesian_2d(0.0..1.0, lo..hi)?;
        let n = 120;
        c.draw_series((0..n).map(|k| {
            let (v0, v1) = (
                lo + (hi - lo) * k as f64 / n as f64,
                lo + (hi - lo) * (k + 1) as f64 / n as f64,
            );
            Rectangle::new(
                [(0.0, v0), (1.0, v1)],
                ViridisRGB::get_color_normalized(0.5 * (v0 + v1), lo, hi).filled(),
            )
        }))?;
        c.configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .disable_x_axis()
            .y_desc(BAR)
            .axis_desc_style(style::label_font())
            .label_style(style::tick_font())
            .y_labels(8)
            .y_label_formatter(&|v| format!("{v:.2}"))
            .draw()?;
        Ok(())
    }
}
