//! WAT Theorem 2 (worst-class Rademacher bound) in three panels (erratum W4, checks G2 and G3):
//! (a) the part-A Monte Carlo on the binary Gaussian model, where the uniform deviation
//! sup_f (R_wc − R̂_wc) stays far below both bound terms; (b) the "max of K per-class bounds"
//! failure rate 1 − (1 − q)^K of exact Clopper–Pearson bounds; (c) the exact counterexample,
//! whose failure probability exceeds δ for the bound as printed (log(2/δ)) once K is huge, while
//! the union-bound version (log(2K/δ), erratum W4) stays below 10⁻⁶.

use classwise_theory::verify::rng_for;
use classwise_theory::wat::counterexample::{
    any_of_k_fails, clopper_pearson_miss_rate, stated_failure_probability,
    union_failure_probability,
};
use classwise_theory::wat::generalization::{Confidence, theorem2_deviation};
use classwise_theory::wat::monte_carlo::{CLASSES, LOSS_BOUND, PartA, TermScales};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{PANELS, int_log_grid};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

/// The Monte Carlo settings of panel (a).
#[derive(Clone, Debug, PartialEq)]
pub struct MonteCarlo {
    /// Seed; samples per class n draw from the stream `wat-thm2-n<n>` of `verify::rng_for`.
    pub seed: u64,
    /// Samples per class n.
    pub sizes: Vec<usize>,
    /// Trials per n.
    pub trials: usize,
    /// Sign vectors per empirical Rademacher complexity.
    pub sign_draws: usize,
    /// δ of the deviation terms.
    pub delta: f64,
}

impl MonteCarlo {
    /// The figure's setting: n ∈ {10, 20, 50, 100, 200}, 20 trials each, 20 sign draws
    /// (the full part-A run uses 400: the estimate is unbiased, and 20 keep a debug build near
    /// 3 s),
    /// δ = 0.05.
    pub fn full() -> Self {
        MonteCarlo {
            seed: 0,
            sizes: vec![10, 20, 50, 100, 200],
            trials: 20,
            sign_draws: 20,
            delta: 0.05,
        }
    }
}

/// The Monte Carlo results at one n.
#[derive(Clone, Debug, PartialEq)]
pub struct McColumn {
    /// Samples per class.
    pub n: usize,
    /// Per trial: sup_f (R^rob_wc(f) − R̂^rob_wc(f)).
    pub sup_deviation: Vec<f64>,
    /// Per trial: 2B max_k R_{S_k}(ℓ̃_F) (B = 1).
    pub two_max_rademacher: Vec<f64>,
    /// Per trial: the smallest slack of the bound as printed (negative: violated).
    pub stated_slack: Vec<f64>,
    /// Per trial: the same with the union bound.
    pub union_slack: Vec<f64>,
    /// 3B√(K log(2/δ)/(2|S|)) with |S| = Kn.
    pub deviation_stated: f64,
    /// 3B√(K log(2K/δ)/(2|S|)).
    pub deviation_union: f64,
}

impl McColumn {
    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    /// Mean of the uniform deviation over the trials.
    pub fn mean_sup_deviation(&self) -> f64 {
        Self::mean(&self.sup_deviation)
    }

    /// Mean of 2·max_k R_{S_k}.
    pub fn mean_two_max_rademacher(&self) -> f64 {
        Self::mean(&self.two_max_rademacher)
    }

    /// Trials violating the printed (log 2/δ) and the union-bound (log 2K/δ) version.
    pub fn violations(&self) -> (usize, usize) {
        let count = |v: &[f64]| v.iter().filter(|&&s| s < 0.0).count();
        (count(&self.stated_slack), count(&self.union_slack))
    }

    /// Trials where 2·max_k R_{S_k} alone covers the uniform deviation.
    pub fn complexity_covered(&self) -> usize {
        self.sup_deviation
            .iter()
            .zip(&self.two_max_rademacher)
            .filter(|(d, r)| d <= r)
            .count()
    }
}

/// One setting (δ, r) of the exact counterexample with n = 500 (a case of check G2).
#[derive(Clone, Debug, PartialEq)]
pub struct Counterexample {
    pub delta: f64,
    pub r: f64,
    /// The K of that case of check G2.
    pub table_k: f64,
    /// P(stated bound fails) at `table_k`.
    pub table_stated: f64,
    /// P(union version fails) at `table_k`.
    pub table_union: f64,
    /// P(stated bound fails) on the log₁₀K grid.
    pub stated: Vec<f64>,
    /// P(union version fails) on the grid.
    pub union: Vec<f64>,
}

/// Samples per class of the counterexample (as in check G2).
pub const COUNTEREXAMPLE_N: u32 = 500;
/// (δ, r, K) of the cases of check G2 (the first K exactly as in the theory checks).
pub const COUNTEREXAMPLE_ROWS: [(f64, f64, f64); 4] = [
    (0.9, 0.45, 10_566_370.0),
    (0.5, 0.55, 5.33e9),
    (0.1, 0.50, 9.50e16),
    (0.05, 0.55, 1.11e20),
];
/// The log₁₀K grid: 0 to 21 in steps of 0.1.
pub const LOG10_K_MAX: f64 = 21.0;
const LOG10_K_POINTS: usize = 211;

/// (n, r, δ) of the Clopper–Pearson panel (q = 0.0402, computed independently).
pub const CP_SETTING: (u32, f64, f64) = (50, 0.3, 0.05);
/// Largest K of the Clopper–Pearson panel.
pub const CP_MAX_K: usize = 1000;
/// The K with independently computed failure rates (0.079, 0.337, 0.984).
pub const CP_MARKERS: [usize; 3] = [2, 10, 100];

/// The y axis of panel (a) and both axes of panels (b) and (c); the x axis of (a) lists the n
/// of the Monte Carlo ([`Thm2Panels::axes`]).
const Y_A: &str = "risk gap, bound terms  (log scale)";
const AXES_B: [&str; 2] = [
    "K (number of classes, log scale)",
    "P(max of K per-class bounds fails)",
];
const AXES_C: [&str; 2] = [
    "log₁₀ K  (K = number of classes)",
    "P(the bound fails for some f ∈ F)",
];

/// The data of the three Theorem 2 panels.
#[derive(Clone, Debug, PartialEq)]
pub struct Thm2Panels {
    pub monte_carlo: MonteCarlo,
    /// (a) One column per n.
    pub columns: Vec<McColumn>,
    /// (c) The log₁₀K grid.
    pub log10_k: Vec<f64>,
    /// (c) One curve pair per table row.
    pub counterexamples: Vec<Counterexample>,
    /// (b) Per-class miss rate q of the (1−δ) Clopper–Pearson bound.
    pub cp_q: f64,
    /// (b) K grid.
    pub cp_k: Vec<f64>,
    /// (b) 1 − (1 − q)^K.
    pub cp_fail: Vec<f64>,
    /// (b) The same with per-class level δ/K (Bonferroni): stays ≤ δ.
    pub cp_fail_bonferroni: Vec<f64>,
    /// (b) 1 − (1 − q)^K at [`CP_MARKERS`].
    pub cp_markers: Vec<f64>,
}

impl Thm2Panels {
    /// The full figure ([`MonteCarlo::full`]).
    pub fn new() -> Result<Self> {
        Self::with(MonteCarlo::full())
    }

    /// The panels with Monte Carlo settings `mc` (the exact panels do not depend on them).
    pub fn with(mc: MonteCarlo) -> Result<Self> {
        let columns = mc
            .sizes
            .iter()
            .map(|&n| monte_carlo_column(&mc, n))
            .collect::<Result<Vec<_>>>()?;

        let log10_k = super::super::grid(0.0, LOG10_K_MAX, LOG10_K_POINTS);
        let mut counterexamples = Vec::new();
        for (delta, r, table_k) in COUNTEREXAMPLE_ROWS {
            let mut stated = Vec::with_capacity(log10_k.len());
            let mut union = Vec::with_capacity(log10_k.len());
            for &x in &log10_k {
                let k = 10f64.powf(x).round();
                stated.push(stated_failure_probability(k, COUNTEREXAMPLE_N, r, delta)?);
                union.push(union_failure_probability(k, COUNTEREXAMPLE_N, r, delta)?);
            }
            counterexamples.push(Counterexample {
                delta,
                r,
                table_k,
                table_stated: stated_failure_probability(table_k, COUNTEREXAMPLE_N, r, delta)?,
                table_union: union_failure_probability(table_k, COUNTEREXAMPLE_N, r, delta)?,
                stated,
                union,
            });
        }

        let (n, r, delta) = CP_SETTING;
        let cp_q = clopper_pearson_miss_rate(n, r, delta)?;
        let ks = int_log_grid(CP_MAX_K, 80);
        let mut cp_fail = Vec::with_capacity(ks.len());
        let mut cp_fail_bonferroni = Vec::with_capacity(ks.len());
        for &k in &ks {
            let kf = k as f64;
            cp_fail.push(any_of_k_fails(cp_q, kf)?);
            let q_k = clopper_pearson_miss_rate(n, r, delta / kf)?;
            cp_fail_bonferroni.push(any_of_k_fails(q_k, kf)?);
        }
        let cp_markers = CP_MARKERS
            .iter()
            .map(|&k| any_of_k_fails(cp_q, k as f64))
            .collect::<classwise_theory::Result<Vec<_>>>()?;
        Ok(Thm2Panels {
            monte_carlo: mc,
            columns,
            log10_k,
            counterexamples,
            cp_q,
            cp_k: ks.iter().map(|&k| k as f64).collect(),
            cp_fail,
            cp_fail_bonferroni,
            cp_markers,
        })
    }

    /// Every panel's axis descriptions, as drawn: (a) x, (a) y, (b) x, (b) y, (c) x, (c) y.
    pub fn axes(&self) -> [String; 6] {
        let sizes: Vec<String> = self
            .monte_carlo
            .sizes
            .iter()
            .map(ToString::to_string)
            .collect();
        [
            format!("n (samples per class: {}; log scale)", sizes.join(", ")),
            Y_A.into(),
            AXES_B[0].into(),
            AXES_B[1].into(),
            AXES_C[0].into(),
            AXES_C[1].into(),
        ]
    }

    fn panel_a<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let n_min = self.columns.first().map_or(1.0, |c| c.n as f64);
        let n_max = self.columns.last().map_or(10.0, |c| c.n as f64);
        let mc = &self.monte_carlo;
        let y = 0.001..3.0;
        let mut chart = style::frame(
            area,
            &format!(
                "(a) part A: K = 2, 288 linear classifiers, δ = {}",
                mc.delta
            ),
            (n_min / 1.3..n_max * 1.3).log_scale(),
            y.clone().log_scale(),
        )?;
        let axes = self.axes();
        style::mesh_with(
            &mut chart,
            &axes[0],
            &axes[1],
            &style::tick_log,
            &style::tick_log,
        )?;
        let line = |f: &dyn Fn(&McColumn) -> f64| -> Vec<(f64, f64)> {
            self.columns.iter().map(|c| (c.n as f64, f(c))).collect()
        };
        let dev_color = style::NEG;
        let rad_color = style::POS;
        let dots = |offset: f64, v: fn(&McColumn) -> &Vec<f64>, color: RGBColor| {
            self.columns
                .iter()
                .flat_map(move |c| v(c).iter().map(move |&d| (c.n as f64 * offset, d)))
                .filter(|p| p.1 >= y.start)
                .map(move |p| Circle::new(p, 4, color.mix(0.45).filled()))
                .collect::<Vec<_>>()
        };
        chart.draw_series(dots(0.95, |c| &c.sup_deviation, dev_color))?;
        chart.draw_series(dots(1.05, |c| &c.two_max_rademacher, rad_color))?;
        let (stated, union) = self.columns.iter().fold((0, 0), |(s, u), c| {
            let (a, b) = c.violations();
            (s + a, u + b)
        });
        let total = self.columns.len() * mc.trials;
        let sup_label = format!(
            "sup_f [R_wc(f) − R_wc(f; S)]: {} trials per n, mean",
            mc.trials
        );
        let rad_label = format!("2·maxₖ R_Sₖ ({} sign draws): trials, mean", mc.sign_draws);
        let series: [Series<'_>; 5] = [
            (
                &|c| c.mean_sup_deviation(),
                dev_color,
                Dash::Solid,
                &sup_label,
            ),
            (
                &|c| c.mean_two_max_rademacher(),
                rad_color,
                Dash::Solid,
                &rad_label,
            ),
            (
                &|c| c.deviation_stated,
                style::color(0),
                Dash::Dashed,
                "3√(log(2/δ)/(2n)): as printed",
            ),
            (
                &|c| c.deviation_union,
                style::color(2),
                Dash::Dotted,
                "3√(log(2K/δ)/(2n)): union bound (W4)",
            ),
            (
                &|c| c.mean_two_max_rademacher() + c.deviation_stated,
                style::PALETTE[0],
                Dash::Solid,
                "violation threshold: sum of both terms",
            ),
        ];
        for (f, color, dash, label) in series {
            style::line(&mut chart, &line(f), color, dash, label)?;
        }
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label(format!(
                "violations: {stated}/{total} as printed, {union}/{total} with the union bound"
            ))
            .legend(|(x, y)| EmptyElement::at((x, y)));
        style::legend(&mut chart, SeriesLabelPosition::LowerLeft)
    }

    fn panel_b<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (n, r, delta) = CP_SETTING;
        let mut chart = style::frame(
            area,
            &format!("(b) max of K exact per-class bounds (n = {n}, r = {r})"),
            (1.0..CP_MAX_K as f64).log_scale(),
            0.0..1.0,
        )?;
        let [xd, yd] = AXES_B;
        style::mesh_with(&mut chart, xd, yd, &style::tick_log, &style::tick_plain)?;
        let pts = |v: &[f64]| -> Vec<(f64, f64)> {
            self.cp_k.iter().copied().zip(v.iter().copied()).collect()
        };
        style::line(
            &mut chart,
            &[(1.0, delta), (CP_MAX_K as f64, delta)],
            style::REFERENCE,
            Dash::Dotted,
            &format!("δ = {delta}"),
        )?;
        style::line(
            &mut chart,
            &pts(&self.cp_fail),
            style::NEG,
            Dash::Solid,
            &format!("per class at level δ: 1 − (1 − q)ᴷ, q = {:.4}", self.cp_q),
        )?;
        style::line(
            &mut chart,
            &pts(&self.cp_fail_bonferroni),
            style::POS,
            Dash::Solid,
            "per class at level δ/K (union bound)",
        )?;
        for (&k, &p) in CP_MARKERS.iter().zip(&self.cp_markers) {
            let x = k as f64;
            chart.draw_series(std::iter::once(Circle::new((x, p), 6, style::NEG.filled())))?;
            // Below-right of a point on the rising curve, above-left near the δ line.
            let (at, anchor) = if p < 0.1 {
                ((x / 1.12, p + 0.015), Pos::new(HPos::Right, VPos::Bottom))
            } else {
                ((x * 1.12, p - 0.015), Pos::new(HPos::Left, VPos::Top))
            };
            chart.draw_series(std::iter::once(Text::new(
                format!("K = {k}: {p:.3}"),
                at,
                style::legend_font().pos(anchor),
            )))?;
        }
        style::legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }

    fn panel_c<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let mut chart = style::chart(
            area,
            &format!(
                "(c) exact counterexample to Theorem 2 as printed: F = {{f₁, …, f_K}}, \
                 n = {COUNTEREXAMPLE_N} samples per class, B = 1"
            ),
            0.0..LOG10_K_MAX,
            0.0..1.0,
        )?;
        let [xd, yd] = AXES_C;
        style::mesh_with(&mut chart, xd, yd, &style::tick_plain, &style::tick_plain)?;
        let pts = |v: &[f64]| -> Vec<(f64, f64)> {
            self.log10_k
                .iter()
                .copied()
                .zip(v.iter().copied())
                .collect()
        };
        for (i, c) in self.counterexamples.iter().enumerate() {
            let color = style::color(i);
            let x = c.table_k.log10();
            style::line(
                &mut chart,
                &[(x - 1.2, c.delta), (x + 1.2, c.delta)],
                color,
                Dash::Dashed,
                "",
            )?;
            style::line(&mut chart, &pts(&c.union), color, Dash::Dotted, "")?;
            style::line(
                &mut chart,
                &pts(&c.stated),
                color,
                Dash::Solid,
                &format!("δ = {}, r = {}", c.delta, c.r),
            )?;
        }
        for c in &self.counterexamples {
            chart.draw_series(std::iter::once(Circle::new(
                (c.table_k.log10(), c.table_stated),
                7,
                style::PALETTE[0].stroke_width(2),
            )))?;
        }
        style::line(
            &mut chart,
            &[],
            style::REFERENCE,
            Dash::Solid,
            "as printed, log(2/δ)",
        )?;
        style::line(
            &mut chart,
            &[],
            style::REFERENCE,
            Dash::Dotted,
            "union bound, log(2K/δ): below 10⁻⁶ for every K",
        )?;
        style::line(
            &mut chart,
            &[],
            style::REFERENCE,
            Dash::Dashed,
            "the level δ",
        )?;
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())?
            .label("K of check G2 (P > δ)")
            .legend(|(x, y)| Circle::new((x + 18, y), 7, style::PALETTE[0].stroke_width(2)));
        // The empty stretch between the δ = 0.5 and δ = 0.1 curves.
        let (px, py) = chart.backend_coord(&(10.8, 0.95));
        let (rx, ry) = chart.plotting_area().get_pixel_range();
        style::legend(
            &mut chart,
            SeriesLabelPosition::Coordinate(px - rx.start, py - ry.start),
        )
    }
}

/// A line of panel (a): its value per n, colour, dash and legend entry.
type Series<'s> = (&'s dyn Fn(&McColumn) -> f64, RGBColor, Dash, &'s str);

/// Runs the part-A trials at n samples per class on the stream `wat-thm2-n<n>`.
pub fn monte_carlo_column(mc: &MonteCarlo, n: usize) -> Result<McColumn> {
    let model = PartA::spec()?;
    let mut rng = rng_for(mc.seed, &format!("wat-thm2-n{n}"));
    let mut column = McColumn {
        n,
        sup_deviation: Vec::with_capacity(mc.trials),
        two_max_rademacher: Vec::with_capacity(mc.trials),
        stated_slack: Vec::with_capacity(mc.trials),
        union_slack: Vec::with_capacity(mc.trials),
        deviation_stated: theorem2_deviation(
            LOSS_BOUND,
            CLASSES,
            CLASSES * n,
            mc.delta,
            Confidence::Stated,
        )?,
        deviation_union: theorem2_deviation(
            LOSS_BOUND,
            CLASSES,
            CLASSES * n,
            mc.delta,
            Confidence::UnionBound,
        )?,
    };
    for _ in 0..mc.trials {
        let t = model.trial(n, &[mc.delta], mc.sign_draws, TermScales::THEOREM, &mut rng)?;
        column.sup_deviation.push(t.uniform_deviation);
        column
            .two_max_rademacher
            .push(2.0 * LOSS_BOUND * t.max_class_rademacher);
        let slack = t.slacks.first().copied();
        column
            .stated_slack
            .push(slack.map_or(f64::NAN, |s| s.stated));
        column.union_slack.push(slack.map_or(f64::NAN, |s| s.union));
    }
    Ok(column)
}

impl Figure for Thm2Panels {
    fn id(&self) -> &'static str {
        "wat-thm2"
    }

    fn title(&self) -> String {
        "WAT Theorem 2: the worst-class Rademacher bound and its missing union bound".into()
    }

    fn reproduces(&self) -> &'static str {
        "WAT Theorem 2 and erratum W4: part-A Monte Carlo, the exact counterexample and the \
         Clopper–Pearson max of K bounds"
    }

    fn look_at(&self) -> &'static str {
        "On a small model the bound is never violated and the deviation sits far below both \
         terms (a), yet as printed (log(2/δ)) it fails with probability above δ once K is \
         astronomically large (c, circles at the K of check G2), and a max over K per-class \
         exact bounds already fails with probability 0.34 at K = 10 (b)."
    }

    fn size(&self) -> (u32, u32) {
        PANELS
    }

    fn tables(&self) -> Vec<Table> {
        let mut trials = Table::new(
            "mc-trials",
            &[
                "n",
                "trial",
                "sup_deviation",
                "two_max_rademacher",
                "stated_slack",
                "union_slack",
            ],
        );
        let mut summary = Table::new(
            "mc",
            &[
                "n",
                "mean_sup_deviation",
                "mean_two_max_rademacher",
                "deviation_stated",
                "deviation_union",
                "mean_violation_threshold_stated",
                "stated_violations",
                "union_violations",
                "complexity_covered",
            ],
        );
        for c in &self.columns {
            for i in 0..c.sup_deviation.len() {
                trials
                    .push(vec![
                        Cell::from(c.n),
                        Cell::from(i),
                        Cell::from(c.sup_deviation[i]),
                        Cell::from(c.two_max_rademacher[i]),
                        Cell::from(c.stated_slack[i]),
                        Cell::from(c.union_slack[i]),
                    ])
                    .expect("six cells");
            }
            let (s, u) = c.violations();
            summary
                .push(vec![
                    Cell::from(c.n),
                    Cell::from(c.mean_sup_deviation()),
                    Cell::from(c.mean_two_max_rademacher()),
                    Cell::from(c.deviation_stated),
                    Cell::from(c.deviation_union),
                    Cell::from(c.mean_two_max_rademacher() + c.deviation_stated),
                    Cell::from(s),
                    Cell::from(u),
                    Cell::from(c.complexity_covered()),
                ])
                .expect("nine cells");
        }

        let names: Vec<(String, String)> = self
            .counterexamples
            .iter()
            .map(|c| {
                (
                    format!("stated_delta{}_r{}", c.delta, c.r),
                    format!("union_delta{}_r{}", c.delta, c.r),
                )
            })
            .collect();
        let mut columns: Vec<(&str, &[f64])> = vec![("log10_K", &self.log10_k)];
        for (c, (s, u)) in self.counterexamples.iter().zip(&names) {
            columns.push((s, &c.stated));
            columns.push((u, &c.union));
        }
        let curves = Table::columns("counterexample", &columns).expect("equal lengths");
        let mut rows = Table::new(
            "counterexample-table",
            &["delta", "r", "n", "K", "p_stated", "p_union"],
        );
        for c in &self.counterexamples {
            rows.push(vec![
                Cell::from(c.delta),
                Cell::from(c.r),
                Cell::from(f64::from(COUNTEREXAMPLE_N)),
                Cell::from(c.table_k),
                Cell::from(c.table_stated),
                Cell::from(c.table_union),
            ])
            .expect("six cells");
        }

        let cp = Table::columns(
            "clopper-pearson",
            &[
                ("K", &self.cp_k),
                ("fail_level_delta", &self.cp_fail),
                ("fail_level_delta_over_K", &self.cp_fail_bonferroni),
            ],
        )
        .expect("equal lengths");
        let mut markers = Table::new("clopper-pearson-markers", &["K", "q", "fail"]);
        for (&k, &p) in CP_MARKERS.iter().zip(&self.cp_markers) {
            markers
                .push(vec![Cell::from(k), Cell::from(self.cp_q), Cell::from(p)])
                .expect("three cells");
        }
        vec![trials, summary, curves, rows, cp, markers]
    }

    fn axis_labels(&self) -> Vec<String> {
        self.axes().to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (top, bottom) = area.split_vertically(area.dim_in_pixel().1 / 2);
        let upper = top.split_evenly((1, 2));
        self.panel_a(&upper[0])?;
        self.panel_b(&upper[1])?;
        self.panel_c(&bottom)
    }
}
