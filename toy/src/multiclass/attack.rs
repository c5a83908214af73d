//! ℓ∞ attacks on the linear softmax model: the exact worst case (robust correctness in closed
//! form) and PGD with per-sample budgets (as `cw_attack_pgd` and `cw_trades_loss` in
//! `PKU-ML/CFA:attack.py`), plus FAT's early-stopped PGD (`fat_loss` there, the CFA-repo
//! variant).
//!
//! Features are real-valued, so there is no clipping to [0, 1]: the feasible set is the box
//! ‖δ‖∞ ≤ ε_i.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::model::{Linear, argmax, softmax};
use crate::error::{Bound, Result, check, require};

/// Worst-case margins of a linear model at budget ε: entry j ≠ y is
///
/// m_j = (w_y − w_j)·x + b_y − b_j − ε·‖w_y − w_j‖₁,
///
/// and entry y is +∞.
///
/// **Proof that m_j is the exact minimum.** The margin of class y over class j at x + δ is
/// g_j(δ) = (w_y − w_j)·(x + δ) + b_y − b_j, which is linear in δ. Over the box ‖δ‖∞ ≤ ε the
/// coordinates of δ are independent, so min_δ (w_y − w_j)·δ = Σ_d min_{|δ_d| ≤ ε} (w_y − w_j)_d·δ_d
/// = −ε·Σ_d |(w_y − w_j)_d| = −ε‖w_y − w_j‖₁, attained at the vertex δ = −ε·sign(w_y − w_j).
///
/// **Robust correctness.** x is classified y for every δ in the box iff for every δ and every
/// j ≠ y, g_j(δ) > 0, iff (swapping the two "for all") for every j ≠ y, min_δ g_j(δ) > 0, iff
/// min_j m_j > 0. Ties (m_j = 0) count as errors, as with argmax ties going against y.
pub fn worst_case_margins(model: &Linear, x: &[f64], y: usize, epsilon: f64) -> Result<Vec<f64>> {
    Certifier::new(model).margins(model, x, y, epsilon)
}

/// The pairwise norms ‖w_y − w_j‖₁ of one model, computed once for many certifications.
#[derive(Debug, Clone, PartialEq)]
pub struct Certifier {
    n_classes: usize,
    l1: Vec<f64>,
}

impl Certifier {
    pub fn new(model: &Linear) -> Self {
        let k = model.n_classes();
        let l1 = (0..k * k)
            .map(|i| {
                model
                    .weight(i / k)
                    .iter()
                    .zip(model.weight(i % k))
                    .map(|(a, b)| (a - b).abs())
                    .sum()
            })
            .collect();
        Self { n_classes: k, l1 }
    }

    /// [`worst_case_margins`] of `model` (the model this certifier was built from).
    pub fn margins(&self, model: &Linear, x: &[f64], y: usize, epsilon: f64) -> Result<Vec<f64>> {
        model.check_input(x)?;
        check_budget("epsilon", epsilon)?;
        check_label(model, y)?;
        if model.n_classes() != self.n_classes {
            return Err(crate::error::ToyError::LengthMismatch {
                what: "model classes",
                expected: self.n_classes,
                got: model.n_classes(),
            });
        }
        let z = model.logits(x);
        let k = self.n_classes;
        Ok((0..k)
            .map(|j| {
                if j == y {
                    f64::INFINITY
                } else {
                    z[y] - z[j] - epsilon * self.l1[y * k + j]
                }
            })
            .collect())
    }

    /// [`is_robustly_correct`] with the cached norms.
    pub fn is_robustly_correct(
        &self,
        model: &Linear,
        x: &[f64],
        y: usize,
        epsilon: f64,
    ) -> Result<bool> {
        Ok(self
            .margins(model, x, y, epsilon)?
            .into_iter()
            .fold(f64::INFINITY, f64::min)
            > 0.0)
    }
}

/// min_{j≠y} of [`worst_case_margins`]: positive iff x is robustly correct at budget ε.
pub fn robust_margin(model: &Linear, x: &[f64], y: usize, epsilon: f64) -> Result<f64> {
    Ok(worst_case_margins(model, x, y, epsilon)?
        .into_iter()
        .fold(f64::INFINITY, f64::min))
}

/// Is x classified y for **every** ‖δ‖∞ ≤ ε? (Exact; see [`worst_case_margins`].)
pub fn is_robustly_correct(model: &Linear, x: &[f64], y: usize, epsilon: f64) -> Result<bool> {
    Ok(robust_margin(model, x, y, epsilon)? > 0.0)
}

/// The exact worst-case perturbation δ* = −ε·sign(w_y − w_{j*}), j* the minimising class of
/// [`worst_case_margins`]. x + δ* is misclassified whenever any point of the box is.
pub fn worst_case_perturbation(
    model: &Linear,
    x: &[f64],
    y: usize,
    epsilon: f64,
) -> Result<Vec<f64>> {
    let m = worst_case_margins(model, x, y, epsilon)?;
    let j = argmax(&m.iter().map(|v| -v).collect::<Vec<_>>());
    Ok(model
        .weight(y)
        .iter()
        .zip(model.weight(j))
        .map(|(a, b)| -epsilon * sign(a - b))
        .collect())
}

/// Validates the inputs shared by [`pgd`] and [`fat_pgd`].
fn check_attack(
    model: &Linear,
    x: &[f64],
    y: usize,
    epsilon: f64,
    config: &PgdConfig,
) -> Result<()> {
    model.check_input(x)?;
    check_label(model, y)?;
    check_budget("epsilon", epsilon)?;
    config.validate("attack.step_size")
}

/// PGD settings: number of steps and the step size α (not scaled per class, as in
/// `PKU-ML/CFA:attack.py`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PgdConfig {
    pub steps: usize,
    pub step_size: f64,
}

impl PgdConfig {
    pub fn validate(&self, name: &'static str) -> Result<()> {
        check_budget(name, self.step_size)?;
        Ok(())
    }
}

/// The loss PGD ascends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttackLoss {
    /// CE(f(x'), y), uniform start in [−ε_i, ε_i] (Madry; `cw_attack_pgd` in the CFA code).
    CrossEntropy,
    /// KL(p(x) ‖ p(x')), start x + 0.001·N(0, I) (TRADES, `yaodongyu/TRADES:trades.py`).
    TradesKl,
}

/// ℓ∞ PGD on one sample with its own budget `epsilon` (= ε_{y_i}, CFA eq. (6)): the start and the
/// projection use `epsilon`, the step size is not scaled. Each step is
/// x' ← Π_{‖x'−x‖∞≤ε}(x' + α·sign(∇_{x'} L)), with sign(0) = 0 as in `torch.sign`.
pub fn pgd(
    model: &Linear,
    x: &[f64],
    y: usize,
    epsilon: f64,
    config: &PgdConfig,
    loss: AttackLoss,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f64>> {
    check_attack(model, x, y, epsilon, config)?;
    let mut adv = start(x, epsilon, loss, rng);
    let p_clean = softmax(&model.logits(x));
    for _ in 0..config.steps {
        step(
            model,
            x,
            &mut adv,
            y,
            &p_clean,
            epsilon,
            config.step_size,
            loss,
        );
    }
    Ok(adv)
}

/// FAT's early-stopped PGD (Zhang et al. 2020; **CFA-repo variant**, `fat_loss` in
/// `PKU-ML/CFA:attack.py`): each sample gets a budget `control = τ`; before each of at most
/// `steps` CE steps, a sample whose budget is 0 is frozen (whatever its prediction; the CFA
/// repo's rule), a misclassified sample has its budget decremented and steps on, a correct
/// sample steps on. Uniform start, per-sample ε, no ω noise. Returns the friendly example.
pub fn fat_pgd(
    model: &Linear,
    x: &[f64],
    y: usize,
    epsilon: f64,
    config: &PgdConfig,
    tau: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f64>> {
    check_attack(model, x, y, epsilon, config)?;
    let loss = AttackLoss::CrossEntropy;
    let mut adv = start(x, epsilon, loss, rng);
    let mut control = tau;
    for _ in 0..config.steps {
        if control == 0 {
            break;
        }
        if model.predict(&adv) != y {
            control -= 1;
        }
        step(model, x, &mut adv, y, &[], epsilon, config.step_size, loss);
    }
    Ok(adv)
}

fn start(x: &[f64], epsilon: f64, loss: AttackLoss, rng: &mut ChaCha8Rng) -> Vec<f64> {
    match loss {
        AttackLoss::CrossEntropy => x
            .iter()
            .map(|v| {
                if epsilon > 0.0 {
                    v + rng.random_range(-epsilon..=epsilon)
                } else {
                    *v
                }
            })
            .collect(),
        AttackLoss::TradesKl => x
            .iter()
            .map(|v| {
                let n: f64 = StandardNormal.sample(rng);
                v + 0.001 * n
            })
            .collect(),
    }
}

/// One ascent step followed by the projection onto the box around `x`.
#[allow(clippy::too_many_arguments)]
fn step(
    model: &Linear,
    x: &[f64],
    adv: &mut [f64],
    y: usize,
    p_clean: &[f64],
    epsilon: f64,
    step_size: f64,
    loss: AttackLoss,
) {
    // ∂CE/∂z' = q − e_y and ∂KL(p‖q)/∂z' = q − p (see [`super::model::kl_divergence`]).
    let mut g_logits = softmax(&model.logits(adv));
    match loss {
        AttackLoss::CrossEntropy => g_logits[y] -= 1.0,
        AttackLoss::TradesKl => g_logits.iter_mut().zip(p_clean).for_each(|(q, p)| *q -= p),
    }
    let g = model.input_grad(&g_logits);
    for ((a, xi), gi) in adv.iter_mut().zip(x).zip(&g) {
        *a = project(*a + step_size * sign(*gi), *xi, epsilon);
    }
}

/// Π onto [x − ε, x + ε] for one coordinate.
pub fn project(value: f64, center: f64, epsilon: f64) -> f64 {
    value.clamp(center - epsilon, center + epsilon)
}

/// sign with sign(0) = 0 (`torch.sign`).
fn sign(v: f64) -> f64 {
    if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    }
}

fn check_budget(name: &'static str, v: f64) -> Result<f64> {
    check(name, v, Bound::NonNegative)
}

fn check_label(model: &Linear, y: usize) -> Result<()> {
    require(
        "y",
        y as f64,
        y < model.n_classes(),
        "a label in 0..n_classes",
    )?;
    Ok(())
}
