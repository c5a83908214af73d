//! WAT Theorem 1 (Hedge, no-regret bound) in four panels (WAT eqs. (12)-(13) and Lemma 1):
//! (a) Hedge's K+1 weights of WAT eq. (12) on a WAT-like loss sequence; (b) both sides of
//! Theorem 1 (eq. (13)) and the corrected forms (T1a)/(T1b) on its first T rounds; (c) the
//! constant-sequence counterexample, where assumption (A) fails and the excess LHS − RHS is
//! ≈ (n−1)/(2nT); (d) the Lemma-1 oscillation, where Hedge's slack drifts like −ηT/8 and the
//! linear multiplicative-weights update stays positive.

use classwise_theory::verify::rng_for;
use classwise_theory::wat::constant_sequence;
use classwise_theory::wat::no_regret::{Theorem1Report, lemma1_oscillation, play_hedge};
use classwise_theory::wat::sequences::{SequenceKind, generate};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{PANELS, int_log_grid};
use crate::error::Result;
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

/// Classes K of the WAT-like sequence (K+1 = 5 decisions: the average loss and 4 classes).
pub const CLASSES: usize = 4;
/// Rounds (epochs) T of the WAT-like sequence.
pub const ROUNDS: usize = 1000;
/// Hedge step η of panels (a)-(b).
pub const ETA: f64 = 0.1;
/// Seed of the WAT-like sequence (stream `wat-hedge` of `verify::rng_for`).
pub const SEED: u64 = 0;
/// Points of the log-spaced T grid of panel (b).
pub const BOUND_POINTS: usize = 80;
/// Numbers of decisions n = K+1 of the constant sequences of panel (c).
pub const CONSTANT_DECISIONS: [usize; 4] = [2, 3, 5, 11];
/// η of panels (c) and (d) (that of the check H5 examples: η = 0.5).
pub const CONSTANT_ETA: f64 = 0.5;
/// Largest T of panel (c).
pub const CONSTANT_ROUNDS: usize = 10_000;
/// Points of the log-spaced T grid of panel (c) (before dropping T with LHS ≤ RHS).
pub const CONSTANT_POINTS: usize = 40;
/// η of panel (d).
pub const OSCILLATION_ETA: f64 = 0.5;
/// Largest T of panel (d) (the slack at T = 10⁴ is also computed independently: −610.9).
pub const OSCILLATION_ROUNDS: usize = 10_000;
/// Step of the T grid of panel (d) (plus T = 1 and T = 50, the point of check H5).
pub const OSCILLATION_STEP: usize = 500;

const AXES: [[&str; 2]; 4] = [
    ["round t (epoch)", "weight wₖᵗ  /  loss Lₖ(fₜ)"],
    ["T (rounds, log scale)", "loss: LHS and bounds of Theorem 1"],
    [
        "T (rounds, log scale)",
        "excess  maxₖ minₜ Lₖ − RHS  (log scale)",
    ],
    ["T (rounds)", "slack of Lemma 1 (gain, comparator k = 0)"],
];

/// One constant sequence of panel (c): L₀ ≡ 1, L₁..L_K ≡ 0 with n = K+1 decisions.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstantCurve {
    /// n = K+1.
    pub decisions: usize,
    /// The T with LHS > RHS (Theorem 1 violated), from a log grid of 1..=10⁴.
    pub rounds: Vec<f64>,
    /// `max_k min_t L_k − RHS` of Theorem 1 (eq. (13)).
    pub excess: Vec<f64>,
    /// The large-T approximation (n−1)/(2nT).
    pub approx: Vec<f64>,
}

/// The data of the four Hedge panels.
#[derive(Clone, Debug, PartialEq)]
pub struct HedgePanels {
    /// η of panels (a)-(b).
    pub eta: f64,
    /// (a) T × (K+1) losses: L₀ the class average, L₁..L_K training-curve-like classes.
    pub losses: Vec<Vec<f64>>,
    /// (a) The weights wᵗ of WAT eq. (12), t = 1..T.
    pub weights: Vec<Vec<f64>>,
    /// (b) T of the first-T-rounds prefixes.
    pub bound_rounds: Vec<f64>,
    /// (b) `max_k min_t L_k` (LHS of eq. (13)).
    pub lhs: Vec<f64>,
    /// (b) `(1/T)ΣΣ w L + ln(K+1)/(ηT)` (RHS of eq. (13)).
    pub rhs: Vec<f64>,
    /// (b) (T1a): RHS/(1−η).
    pub t1a: Vec<f64>,
    /// (b) (T1b): RHS + η/8.
    pub t1b: Vec<f64>,
    /// (b) Assumption (A) holds on the prefix.
    pub assumption_a: Vec<bool>,
    /// (c) η of the constant sequences.
    pub constant_eta: f64,
    /// (c) One curve per n.
    pub constant: Vec<ConstantCurve>,
    /// (d) η of the oscillation.
    pub oscillation_eta: f64,
    /// (d) T.
    pub oscillation_rounds: Vec<f64>,
    /// (d) Hedge's slack (negative: Lemma 1 as printed fails).
    pub hedge_slack: Vec<f64>,
    /// (d) The linear update's slack.
    pub linear_slack: Vec<f64>,
    /// (d) The drift −ηT/8.
    pub drift: Vec<f64>,
}

/// The WAT-like sequence: K training-curve-like class losses (`SequenceKind::TrainingCurve`)
/// and, as decision 0, their average (WAT's L₀ is the average validation loss). `eta` is
/// passed on to `sequences::generate`, which only uses it for its adaptive kind.
pub fn wat_like_sequence(
    classes: usize,
    rounds: usize,
    eta: f64,
    seed: u64,
) -> Result<Vec<Vec<f64>>> {
    let mut rng = rng_for(seed, "wat-hedge");
    let per_class = generate(SequenceKind::TrainingCurve, classes, rounds, eta, &mut rng)?;
    Ok(per_class
        .into_iter()
        .map(|row| {
            let mean = row.iter().sum::<f64>() / row.len() as f64;
            std::iter::once(mean).chain(row).collect()
        })
        .collect())
}

/// The constant sequence with n decisions: L₀ ≡ 1, the others ≡ 0 (for n = 2 it is
/// `wat::constant_sequence`).
pub fn constant_rows(decisions: usize, rounds: usize) -> Vec<Vec<f64>> {
    if decisions == 2 {
        return constant_sequence(rounds);
    }
    let mut row = vec![0.0; decisions];
    if let Some(first) = row.first_mut() {
        *first = 1.0;
    }
    vec![row; rounds]
}

impl HedgePanels {
    /// The panels with the module's constants.
    pub fn new() -> Result<Self> {
        let losses = wat_like_sequence(CLASSES, ROUNDS, ETA, SEED)?;
        let weights = play_hedge(&losses, ETA)?.weights;

        let bound_rounds = int_log_grid(ROUNDS, BOUND_POINTS);
        let reports = bound_rounds
            .iter()
            .map(|&t| Theorem1Report::evaluate(&losses[..t], ETA))
            .collect::<classwise_theory::Result<Vec<_>>>()?;
        let pick = |f: fn(&Theorem1Report) -> f64| reports.iter().map(f).collect::<Vec<_>>();

        let mut constant = Vec::new();
        for n in CONSTANT_DECISIONS {
            let mut curve = ConstantCurve {
                decisions: n,
                rounds: Vec::new(),
                excess: Vec::new(),
                approx: Vec::new(),
            };
            for t in int_log_grid(CONSTANT_ROUNDS, CONSTANT_POINTS) {
                let r = Theorem1Report::evaluate(&constant_rows(n, t), CONSTANT_ETA)?;
                let excess = r.max_min - r.rhs;
                if excess > 0.0 {
                    let (nf, tf) = (n as f64, t as f64);
                    curve.rounds.push(tf);
                    curve.excess.push(excess);
                    curve.approx.push((nf - 1.0) / (2.0 * nf * tf));
                }
            }
            constant.push(curve);
        }

        let oscillation: Vec<usize> = [1, 50]
            .into_iter()
            .chain((1..=OSCILLATION_ROUNDS / OSCILLATION_STEP).map(|j| j * OSCILLATION_STEP))
            .collect();
        let slacks = oscillation
            .iter()
            .map(|&t| lemma1_oscillation(OSCILLATION_ETA, t))
            .collect::<classwise_theory::Result<Vec<_>>>()?;

        Ok(HedgePanels {
            eta: ETA,
            losses,
            weights,
            bound_rounds: bound_rounds.iter().map(|&t| t as f64).collect(),
            lhs: pick(|r| r.max_min),
            rhs: pick(|r| r.rhs),
            t1a: pick(|r| r.t1a_rhs),
            t1b: pick(|r| r.t1b_rhs),
            assumption_a: reports.iter().map(|r| r.assumption_a).collect(),
            constant_eta: CONSTANT_ETA,
            constant,
            oscillation_eta: OSCILLATION_ETA,
            oscillation_rounds: oscillation.iter().map(|&t| t as f64).collect(),
            hedge_slack: slacks.iter().map(|s| s.hedge_slack).collect(),
            linear_slack: slacks.iter().map(|s| s.linear_slack).collect(),
            drift: oscillation
                .iter()
                .map(|&t| -OSCILLATION_ETA * t as f64 / 8.0)
                .collect(),
        })
    }

    /// K+1.
    fn decisions(&self) -> usize {
        self.losses.first().map_or(0, Vec::len)
    }

    fn decision_name(k: usize) -> String {
        if k == 0 {
            "k = 0 (average)".into()
        } else {
            format!("k = {k} (class {k})")
        }
    }

    fn decision_color(k: usize) -> RGBColor {
        if k == 0 {
            style::PALETTE[0]
        } else {
            style::color(k - 1)
        }
    }

    fn panel_a<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let rounds = self.weights.len() as f64;
        let mut chart = style::chart(
            area,
            &format!(
                "(a) Hedge weights on a WAT-like sequence (K = {}, η = {})",
                self.decisions() - 1,
                self.eta
            ),
            0.0..rounds,
            0.0..1.0,
        )?;
        let [x, y] = AXES[0];
        style::mesh_with(&mut chart, x, y, &style::tick_plain, &style::tick_plain)?;
        for k in 0..self.decisions() {
            let color = Self::decision_color(k);
            let loss: Vec<(f64, f64)> = self
                .losses
                .iter()
                .enumerate()
                .map(|(t, row)| ((t + 1) as f64, row[k]))
                .collect();
            chart.draw_series(LineSeries::new(loss, color.mix(0.45).stroke_width(1)))?;
        }
        for k in 0..self.decisions() {
            let w: Vec<(f64, f64)> = self
                .weights
                .iter()
                .enumerate()
                .map(|(t, row)| ((t + 1) as f64, row[k]))
                .collect();
            style::line(
                &mut chart,
                &w,
                Self::decision_color(k),
                Dash::Solid,
                &format!("w{}: {}", sub(k), Self::decision_name(k)),
            )?;
        }
        let thin = style::REFERENCE.stroke_width(1);
        chart
            .draw_series(LineSeries::new(Vec::<(f64, f64)>::new(), thin))?
            .label("thin: the losses Lₖ(fₜ)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 36, y)], thin));
        style::legend(&mut chart, SeriesLabelPosition::UpperRight)
    }

    fn panel_b<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let x_max = self.bound_rounds.last().copied().unwrap_or(1.0);
        let y = 0.0..1.6;
        let mut chart = style::frame(
            area,
            &format!(
                "(b) Theorem 1 on the first T rounds of (a) (η = {})",
                self.eta
            ),
            (1.0..x_max).log_scale(),
            y.clone(),
        )?;
        let [xd, yd] = AXES[1];
        style::mesh_with(&mut chart, xd, yd, &style::tick_log, &style::tick_plain)?;
        // Shade the T where assumption (A) fails.
        let t = &self.bound_rounds;
        let edge = |i: usize| -> f64 {
            if i == 0 {
                t[0]
            } else if i >= t.len() {
                x_max
            } else {
                (t[i - 1] * t[i]).sqrt()
            }
        };
        let mut i = 0;
        let mut first = true;
        while i < t.len() {
            if self.assumption_a[i] {
                i += 1;
                continue;
            }
            let j = (i..t.len())
                .find(|&j| self.assumption_a[j])
                .unwrap_or(t.len());
            let rect = Rectangle::new(
                [(edge(i), y.end), (edge(j), y.start)],
                RGBColor(0, 0, 0).mix(0.07).filled(),
            );
            let anno = chart.draw_series(std::iter::once(rect))?;
            if first {
                anno.label("assumption (A) fails").legend(|(x, y)| {
                    Rectangle::new(
                        [(x, y - 8), (x + 36, y + 8)],
                        RGBColor(0, 0, 0).mix(0.15).filled(),
                    )
                });
                first = false;
            }
            i = j;
        }
        let pts =
            |v: &[f64]| -> Vec<(f64, f64)> { t.iter().copied().zip(v.iter().copied()).collect() };
        let series: [(&[f64], RGBColor, Dash, &str); 4] = [
            (
                &self.rhs,
                style::POS,
                Dash::Solid,
                "RHS of Theorem 1: (1/T)ΣΣ wL + ln(K+1)/(ηT)",
            ),
            (&self.t1a, style::color(0), Dash::Dashed, "(T1a): RHS/(1−η)"),
            (&self.t1b, style::color(2), Dash::Dotted, "(T1b): RHS + η/8"),
            (
                &self.lhs,
                style::PALETTE[0],
                Dash::Solid,
                "LHS: maxₖ minₜ Lₖ",
            ),
        ];
        for (v, color, dash, label) in series {
            style::clipped_line(&mut chart, &pts(v), &y, true, color, dash, label)?;
        }
        style::legend(&mut chart, SeriesLabelPosition::LowerLeft)
    }

    fn panel_c<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let mut chart = style::frame(
            area,
            &format!(
                "(c) L₀ ≡ 1, other Lₖ ≡ 0: (A) and Theorem 1 fail (η = {})",
                self.constant_eta
            ),
            (1.0..CONSTANT_ROUNDS as f64).log_scale(),
            (1e-5..0.3).log_scale(),
        )?;
        let [xd, yd] = AXES[2];
        style::mesh_with(&mut chart, xd, yd, &style::tick_log, &style::tick_log)?;
        for (i, c) in self.constant.iter().enumerate() {
            let color = style::color(i);
            let pts = |v: &[f64]| -> Vec<(f64, f64)> {
                c.rounds.iter().copied().zip(v.iter().copied()).collect()
            };
            style::line(
                &mut chart,
                &pts(&c.excess),
                color,
                Dash::Solid,
                &format!("n = K+1 = {}: measured", c.decisions),
            )?;
        }
        // The approximations on top, so that their agreement with the measurement shows.
        for (i, c) in self.constant.iter().enumerate() {
            let pts: Vec<(f64, f64)> = c
                .rounds
                .iter()
                .copied()
                .zip(c.approx.iter().copied())
                .collect();
            style::line(&mut chart, &pts, style::color(i), Dash::Dashed, "")?;
        }
        style::line(
            &mut chart,
            &[],
            style::REFERENCE,
            Dash::Dashed,
            "dashed: (n−1)/(2nT)",
        )?;
        style::legend(&mut chart, SeriesLabelPosition::UpperRight)
    }

    fn panel_d<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let x_max = self.oscillation_rounds.last().copied().unwrap_or(1.0);
        let y_min = self.drift.last().copied().unwrap_or(-1.0) * 1.08;
        let mut chart = style::chart(
            area,
            &format!(
                "(d) Lemma-1 oscillation: C₀ ≡ 0, C₁ = ±1 (η = {})",
                self.oscillation_eta
            ),
            0.0..x_max,
            y_min..(-0.08 * y_min),
        )?;
        let [xd, yd] = AXES[3];
        style::mesh_with(&mut chart, xd, yd, &style::tick_plain, &style::tick_plain)?;
        let pts = |v: &[f64]| -> Vec<(f64, f64)> {
            self.oscillation_rounds
                .iter()
                .copied()
                .zip(v.iter().copied())
                .collect()
        };
        style::line(
            &mut chart,
            &[(0.0, 0.0), (x_max, 0.0)],
            style::REFERENCE,
            Dash::Dotted,
            "Lemma 1 as printed: slack ≥ 0",
        )?;
        style::line(
            &mut chart,
            &pts(&self.drift),
            style::PALETTE[0],
            Dash::Dashed,
            "−ηT/8",
        )?;
        style::line(
            &mut chart,
            &pts(&self.hedge_slack),
            style::NEG,
            Dash::Solid,
            "Hedge (exponential weights)",
        )?;
        style::line(
            &mut chart,
            &pts(&self.linear_slack),
            style::POS,
            Dash::Solid,
            &format!(
                "linear MW w ← w(1+ηC): {:+.3} at T = {}",
                self.linear_slack.last().copied().unwrap_or(f64::NAN),
                x_max
            ),
        )?;
        style::legend(&mut chart, SeriesLabelPosition::LowerLeft)
    }
}

/// The subscript of decision k.
fn sub(k: usize) -> String {
    const DIGITS: [char; 10] = ['₀', '₁', '₂', '₃', '₄', '₅', '₆', '₇', '₈', '₉'];
    k.to_string()
        .chars()
        .map(|c| DIGITS[c as usize - '0' as usize])
        .collect()
}

impl Figure for HedgePanels {
    fn id(&self) -> &'static str {
        "wat-hedge"
    }

    fn title(&self) -> String {
        "WAT Theorem 1: Hedge over the K+1 losses, its bound and two counterexamples".into()
    }

    fn reproduces(&self) -> &'static str {
        "WAT Theorem 1 (eq. (12), (13)), its assumption (A) and Lemma 1"
    }

    fn look_at(&self) -> &'static str {
        "Hedge moves weight to the class with the largest loss (a); the bound holds on the \
         training-like run (b), but constant losses break it by ≈ (n−1)/(2nT) because (A) fails \
         (c), and Hedge's Lemma-1 slack falls like −ηT/8 while the linear update stays positive \
         (d)."
    }

    fn size(&self) -> (u32, u32) {
        PANELS
    }

    fn tables(&self) -> Vec<Table> {
        let n = self.decisions();
        let mut header: Vec<String> = vec!["t".into()];
        header.extend((0..n).map(|k| format!("L_{k}")));
        header.extend((0..n).map(|k| format!("w_{k}")));
        let header_ref: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut weights = Table::new("weights", &header_ref);
        for (t, (l, w)) in self.losses.iter().zip(&self.weights).enumerate() {
            let mut row = vec![Cell::from(t + 1)];
            row.extend(l.iter().map(|&v| Cell::from(v)));
            row.extend(w.iter().map(|&v| Cell::from(v)));
            weights.push(row).expect("1 + 2(K+1) cells");
        }

        let a: Vec<f64> = self
            .assumption_a
            .iter()
            .map(|&b| f64::from(u8::from(b)))
            .collect();
        let bound = Table::columns(
            "bound",
            &[
                ("T", &self.bound_rounds),
                ("lhs_max_min", &self.lhs),
                ("rhs", &self.rhs),
                ("t1a", &self.t1a),
                ("t1b", &self.t1b),
                ("assumption_a", &a),
            ],
        )
        .expect("equal lengths by construction");

        let mut constant = Table::new("constant", &["n", "T", "excess", "approx"]);
        for c in &self.constant {
            for i in 0..c.rounds.len() {
                constant
                    .push(vec![
                        Cell::from(c.decisions),
                        Cell::from(c.rounds[i]),
                        Cell::from(c.excess[i]),
                        Cell::from(c.approx[i]),
                    ])
                    .expect("four cells");
            }
        }

        let oscillation = Table::columns(
            "oscillation",
            &[
                ("T", &self.oscillation_rounds),
                ("hedge_slack", &self.hedge_slack),
                ("linear_slack", &self.linear_slack),
                ("minus_eta_T_over_8", &self.drift),
            ],
        )
        .expect("equal lengths by construction");
        vec![weights, bound, constant, oscillation]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.iter().flatten().map(|s| (*s).to_owned()).collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((2, 2));
        self.panel_a(&panels[0])?;
        self.panel_b(&panels[1])?;
        self.panel_c(&panels[2])?;
        self.panel_d(&panels[3])
    }
}
