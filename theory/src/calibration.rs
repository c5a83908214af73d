//! Class-wise calibration rules shared by the toy simulator and the trainer: CFA (CFA §4,
//! Algorithm 1), WAT (WAT Algorithm 1), FRL (Xu et al. 2021, `hannxu123/fair_robust`) and CSL
//! (Benz et al. 2020, a WAT baseline).
//!
//! Every function is pure and validates its input into [`TheoryError`]; none panics. Class
//! vectors are indexed by class `0..K`. Each rule cites the paper equation it implements and,
//! where the reference code differs from the paper, says which one is followed.

use serde::{Deserialize, Serialize};

use crate::check::Bound;
use crate::error::{Result, TheoryError, check, require};

// ---------------------------------------------------------------------------------------------
// Validation helpers
// ---------------------------------------------------------------------------------------------

fn non_empty(what: &'static str, len: usize) -> Result<()> {
    if len == 0 {
        Err(TheoryError::Empty { what })
    } else {
        Ok(())
    }
}

fn same_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(TheoryError::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}

fn all_finite(name: &'static str, values: &[f64]) -> Result<()> {
    non_empty(name, values.len())?;
    values
        .iter()
        .try_for_each(|&v| check(name, v, Bound::Finite).map(|_| ()))
}

// ---------------------------------------------------------------------------------------------
// CFA (Wei et al., CVPR 2023)
// ---------------------------------------------------------------------------------------------

/// CFA eq. (6), class-wise calibrated margin (CCM): ε_k = (λ₁ + t_k)·ε.
///
/// `train_robust[k]` = t_k ∈ [0, 1] is class k's train robust accuracy of the previous epoch
/// (counted on the fly on that epoch's adversarial training examples, as `PKU-ML/CFA:train.py`
/// does, but with per-class denominators). There is **no clipping** in the paper or the
/// reference code: for λ₁ = 0.5, ε_k ∈ [0.5ε, 1.5ε]. Paper values: λ₁ = 0.5 (AT), 0.3 (TRADES),
/// 0.7 (FAT).
pub fn cfa_class_epsilon(train_robust: &[f64], lambda1: f64, epsilon: f64) -> Result<Vec<f64>> {
    check("lambda1", lambda1, Bound::NonNegative)?;
    check("epsilon", epsilon, Bound::NonNegative)?;
    non_empty("train_robust", train_robust.len())?;
    train_robust
        .iter()
        .map(|&t| Ok((lambda1 + check("train_robust", t, Bound::Unit)?) * epsilon))
        .collect()
}

/// CFA eq. (7), class-wise calibrated regularization (CCR): β_k = (λ₂ + t_k)·β.
///
/// Algorithm 1 of the paper prints "β_y ← (λ₂ + t_k)·ε"; that is a typo (erratum C9 of
/// `classwise theory verify`): eq. (7) and `PKU-ML/CFA:train.py` multiply by β. This function
/// follows eq. (7). Paper values: β = 6, λ₂ = 0.5.
pub fn cfa_class_beta(train_robust: &[f64], lambda2: f64, beta: f64) -> Result<Vec<f64>> {
    check("lambda2", lambda2, Bound::NonNegative)?;
    check("beta", beta, Bound::NonNegative)?;
    non_empty("train_robust", train_robust.len())?;
    train_robust
        .iter()
        .map(|&t| Ok((lambda2 + check("train_robust", t, Bound::Unit)?) * beta))
        .collect()
}

/// CFA eq. (8) mixing weight: the per-sample loss [CE + β_y·KL]/(1 + β_y) equals
/// (1 − b_y)·CE + b_y·KL with b_y = β_y/(1 + β_y), the form the reference code stores.
pub fn cfa_ccr_weight(beta_k: f64) -> Result<f64> {
    check("beta_k", beta_k, Bound::NonNegative)?;
    Ok(beta_k / (1.0 + beta_k))
}

/// [`cfa_ccr_weight`] applied to every class.
pub fn cfa_ccr_weights(betas: &[f64]) -> Result<Vec<f64>> {
    non_empty("betas", betas.len())?;
    betas.iter().map(|&b| cfa_ccr_weight(b)).collect()
}

/// The reference code's t_k (`CW_log.result`): K·correct_k / N, i.e. correct_k divided by N/K.
/// It equals correct_k / total_k only on class-balanced data (4,900 images per class in CFA's
/// split) and can exceed 1 otherwise. Provided for bit-parity checks only; use per-class
/// denominators ([`crate::metrics::ClassTally`]) otherwise (`CW_log` in `PKU-ML/CFA:train.py`).
pub fn cfa_train_robust_reference_code(correct: &[u64], n_samples: u64) -> Result<Vec<f64>> {
    non_empty("correct", correct.len())?;
    if n_samples == 0 {
        return Err(TheoryError::Empty { what: "n_samples" });
    }
    let k = correct.len() as f64;
    Ok(correct
        .iter()
        .map(|&c| k * c as f64 / n_samples as f64)
        .collect())
}

/// CFA hyper-parameters for one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CfaConfig {
    /// Base budget ε (8/255 on CIFAR-10).
    pub epsilon: f64,
    /// Base TRADES β (6).
    pub beta: f64,
    /// Base perturbation budget λ₁ of eq. (6).
    pub lambda1: f64,
    /// λ₂ of eq. (7).
    pub lambda2: f64,
    /// First 0-based epoch at which calibration applies (reference code `--begin`, default 10;
    /// the paper has no warm-up, i.e. 0; see `PKU-ML/CFA:train.py`).
    pub begin: usize,
    /// Apply CCM (eq. 6).
    pub ccm: bool,
    /// Apply CCR (eq. 7); only meaningful for TRADES.
    pub ccr: bool,
}

impl CfaConfig {
    /// "TRADES + CFA" as in CFA Tables 1–2: ε = 8/255, β = 6, λ₁ = 0.3, λ₂ = 0.5, CCM + CCR,
    /// with the reference code's warm-up of 10 epochs.
    pub fn trades_reference() -> Self {
        Self {
            epsilon: 8.0 / 255.0,
            beta: 6.0,
            lambda1: 0.3,
            lambda2: 0.5,
            begin: 10,
            ccm: true,
            ccr: true,
        }
    }

    /// "AT + CFA": CCM with λ₁ = 0.5, no CCR, warm-up 10 epochs.
    pub fn at_reference() -> Self {
        Self {
            lambda1: 0.5,
            ccr: false,
            ..Self::trades_reference()
        }
    }
}

/// The per-class training configuration of one epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CfaClassConfig {
    /// ε_k (eq. 6), or ε for every class before `begin` / without CCM.
    pub epsilon: Vec<f64>,
    /// β_k (eq. 7), or β for every class before `begin` / without CCR.
    pub beta: Vec<f64>,
    /// b_k = β_k/(1 + β_k) (eq. 8); 6/7 for every class for vanilla TRADES in the reference code.
    pub ccr_weight: Vec<f64>,
    /// Whether the class-wise calibration was applied this epoch.
    pub calibrated: bool,
}

/// The ε_k, β_k and b_k of 0-based epoch `epoch` (the epoch loop of `PKU-ML/CFA:train.py`).
///
/// Calibration applies when `epoch ≥ config.begin` and `epoch > 0`; it then needs
/// `prev_train_robust` (t_k from epoch − 1, length `n_classes`), and its absence is an error.
/// Otherwise every class gets ε, β and β/(1 + β), and `prev_train_robust` is ignored.
pub fn cfa_epoch_config(
    config: &CfaConfig,
    epoch: usize,
    n_classes: usize,
    prev_train_robust: Option<&[f64]>,
) -> Result<CfaClassConfig> {
    non_empty("n_classes", n_classes)?;
    check("epsilon", config.epsilon, Bound::NonNegative)?;
    check("beta", config.beta, Bound::NonNegative)?;
    check("lambda1", config.lambda1, Bound::NonNegative)?;
    check("lambda2", config.lambda2, Bound::NonNegative)?;
    let calibrate = epoch >= config.begin && epoch > 0 && (config.ccm || config.ccr);
    let uniform_eps = vec![config.epsilon; n_classes];
    let uniform_beta = vec![config.beta; n_classes];
    let (epsilon, beta) = if calibrate {
        let t = prev_train_robust.ok_or(TheoryError::Empty {
            what: "prev_train_robust",
        })?;
        same_len("prev_train_robust", n_classes, t.len())?;
        let eps = if config.ccm {
            cfa_class_epsilon(t, config.lambda1, config.epsilon)?
        } else {
            uniform_eps
        };
        let beta = if config.ccr {
            cfa_class_beta(t, config.lambda2, config.beta)?
        } else {
            uniform_beta
        };
        (eps, beta)
    } else {
        (uniform_eps, uniform_beta)
    };
    let ccr_weight = cfa_ccr_weights(&beta)?;
    Ok(CfaClassConfig {
        epsilon,
        beta,
        ccr_weight,
        calibrated: calibrate,
    })
}

/// How the FAWA threshold is compared (CFA §4.3 and Algorithm 1 differ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FawaComparison {
    /// R_min ≥ δ: Algorithm 1 and the reference code.
    #[default]
    AtLeast,
    /// R_min > δ: the text of Sec. 4.3 ("higher than δ").
    Above,
}

/// FAWA hyper-parameters (CFA Sec. 4.3, Algorithm 1; `PKU-ML/CFA:train.py`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FawaConfig {
    /// Decay α of θ̄ ← α·θ̄ + (1 − α)·θ.
    pub alpha: f64,
    /// Fairness threshold δ on the worst-class validation robust accuracy (fraction).
    pub delta: f64,
    /// First 0-based epoch at which averaging may happen.
    pub start_epoch: usize,
    pub comparison: FawaComparison,
}

impl FawaConfig {
    /// Paper (Sec. 5.1): α = 0.85, δ = 0.2, averaging from epoch 50, "≥" as in Algorithm 1.
    /// These are the recommended settings.
    pub fn paper() -> Self {
        Self {
            alpha: 0.85,
            delta: 0.2,
            start_epoch: 50,
            comparison: FawaComparison::AtLeast,
        }
    }

    /// Reference code defaults: decay 0.88, threshold 0.24, no epoch gate.
    pub fn reference_code() -> Self {
        Self {
            alpha: 0.88,
            delta: 0.24,
            start_epoch: 0,
            comparison: FawaComparison::AtLeast,
        }
    }
}

/// CFA Algorithm 1's FAWA gate: is a checkpoint with worst-class validation robust accuracy
/// `worst_val_robust` = min_y R_y(f_θ, D_valid) admitted to the average? (`≥ δ` or `> δ`.)
///
/// For the Tiny-ImageNet variant (App. C.1) pass the mean of the worst 20% classes instead
/// ([`crate::metrics::ClassAccuracy::worst_fraction_mean`]).
pub fn fawa_accepts(worst_val_robust: f64, delta: f64, comparison: FawaComparison) -> Result<bool> {
    check("worst_val_robust", worst_val_robust, Bound::Unit)?;
    check("delta", delta, Bound::Unit)?;
    Ok(match comparison {
        FawaComparison::AtLeast => worst_val_robust >= delta,
        FawaComparison::Above => worst_val_robust > delta,
    })
}

/// What to do with a weight-averaged model after an epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum AverageAction {
    /// Leave θ̄ unchanged.
    Keep,
    /// θ̄ ← θ (first acceptance).
    Copy,
    /// θ̄ ← α·θ̄ + (1 − α)·θ.
    Average { alpha: f64 },
}

impl AverageAction {
    /// Applies the action to a flat parameter vector (all state, BN statistics included, as
    /// `weight_average` in `PKU-ML/CFA:utils.py` averages the whole state dict). Integer buffers
    /// should be copied or skipped by the caller.
    pub fn apply(&self, averaged: &[f64], current: &[f64]) -> Result<Vec<f64>> {
        same_len("current", averaged.len(), current.len())?;
        match *self {
            AverageAction::Keep => Ok(averaged.to_vec()),
            AverageAction::Copy => Ok(current.to_vec()),
            AverageAction::Average { alpha } => weight_average(averaged, current, alpha),
        }
    }
}

/// θ̄ ← α·θ̄ + (1 − α)·θ, elementwise (CFA Algorithm 1, FAWA/EMA update), α ∈ [0, 1].
pub fn weight_average(averaged: &[f64], current: &[f64], alpha: f64) -> Result<Vec<f64>> {
    check("alpha", alpha, Bound::Unit)?;
    same_len("current", averaged.len(), current.len())?;
    Ok(averaged
        .iter()
        .zip(current)
        .map(|(a, c)| alpha * a + (1.0 - alpha) * c)
        .collect())
}

/// FAWA decision for 0-based `epoch` (CFA §4.3): before `start_epoch` or when the gate rejects,
/// [`AverageAction::Keep`]; the first accepted checkpoint is copied
/// ([`AverageAction::Copy`], as in the reference code — Algorithm 1 instead starts θ̄ at θ₀);
/// later accepted ones are averaged. `initialized` says whether a checkpoint was accepted before.
pub fn fawa_action(
    config: &FawaConfig,
    epoch: usize,
    worst_val_robust: f64,
    initialized: bool,
) -> Result<AverageAction> {
    check("alpha", config.alpha, Bound::Unit)?;
    let accepted = fawa_accepts(worst_val_robust, config.delta, config.comparison)?;
    Ok(if epoch < config.start_epoch || !accepted {
        AverageAction::Keep
    } else if !initialized {
        AverageAction::Copy
    } else {
        AverageAction::Average {
            alpha: config.alpha,
        }
    })
}

/// Plain EMA decision (no gate): copy at `start_epoch` (0 in the reference code), average after,
/// keep before.
pub fn ema_action(epoch: usize, start_epoch: usize, alpha: f64) -> Result<AverageAction> {
    check("alpha", alpha, Bound::Unit)?;
    Ok(match epoch.cmp(&start_epoch) {
        std::cmp::Ordering::Less => AverageAction::Keep,
        std::cmp::Ordering::Equal => AverageAction::Copy,
        std::cmp::Ordering::Greater => AverageAction::Average { alpha },
    })
}

// ---------------------------------------------------------------------------------------------
// WAT (Li et al., AAAI 2023)
// ---------------------------------------------------------------------------------------------

/// How WAT's K + 1 decision weights are scaled (WAT eq. (12) and Algorithm 1 versus
/// `boqili/WAT:worst_class_adversarial_train.py`).
///
/// In both conventions the **average-loss decision is the last entry (index K)**, as in the
/// reference code; the paper indexes it as k = 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatNormalization {
    /// Reference code: initial weights all 1; afterwards w = K·softmax(η·Σc), summing to K.
    #[default]
    Code,
    /// Paper eq. (12) / Algorithm 1: initial weights 1/(K+1); afterwards softmax, summing to 1.
    Paper,
}

/// WAT initial weights for `n_classes` = K classes (K + 1 entries).
pub fn wat_initial_weights(n_classes: usize, normalization: WatNormalization) -> Result<Vec<f64>> {
    non_empty("n_classes", n_classes)?;
    let w = match normalization {
        WatNormalization::Code => 1.0,
        WatNormalization::Paper => 1.0 / (n_classes as f64 + 1.0),
    };
    Ok(vec![w; n_classes + 1])
}

/// WAT eq. (12) (Hedge on gains): w_k ∝ exp(η·C_k), C_k = Σ_{s≤t} c_{s,k} the cumulative
/// validation cost of decision k (classes 0..K−1, average loss at index K).
///
/// The exponent's sign is **positive** (high-loss classes gain weight; the sign is lost in the
/// extracted WAT eq. (12); the reference code uses `+`). Computed as a max-subtracted softmax
/// so that η·C ≫ 88 does not overflow. The result sums to K
/// ([`WatNormalization::Code`]) or 1 ([`WatNormalization::Paper`]). η ≥ 0 (η = 0 gives uniform
/// weights). `cumulative_costs` needs K + 1 ≥ 2 entries.
pub fn wat_weights(
    cumulative_costs: &[f64],
    eta: f64,
    normalization: WatNormalization,
) -> Result<Vec<f64>> {
    check("eta", eta, Bound::NonNegative)?;
    all_finite("cumulative_costs", cumulative_costs)?;
    if cumulative_costs.len() < 2 {
        return Err(TheoryError::LengthMismatch {
            what: "cumulative_costs (K + 1 decisions, K >= 1)",
            expected: 2,
            got: cumulative_costs.len(),
        });
    }
    let scaled: Vec<f64> = cumulative_costs.iter().map(|c| eta * c).collect();
    // Finite inputs can still overflow when multiplied by eta.
    scaled
        .iter()
        .try_for_each(|&s| check("eta * cumulative_costs", s, Bound::Finite).map(|_| ()))?;
    let scale = match normalization {
        WatNormalization::Code => (cumulative_costs.len() - 1) as f64,
        WatNormalization::Paper => 1.0,
    };
    Ok(crate::wat::hedge::exp_weights(cumulative_costs, eta)
        .into_iter()
        .map(|w| scale * w)
        .collect())
}

/// Sums per-epoch validation cost vectors (each K + 1 long) into the cumulative cost Σ_{s≤t} c_s.
pub fn wat_cumulative_costs(history: &[Vec<f64>]) -> Result<Vec<f64>> {
    let first = history
        .first()
        .ok_or(TheoryError::Empty { what: "history" })?;
    let n = first.len();
    let mut acc = vec![0.0; n];
    for costs in history {
        same_len("history entry", n, costs.len())?;
        all_finite("history entry", costs)?;
        for (a, c) in acc.iter_mut().zip(costs) {
            *a += c;
        }
    }
    Ok(acc)
}

/// The weights used in epoch t + 1 after validating epochs 1..t (`history` = [c_1, …, c_t]);
/// the initial weights when `history` is empty (`n_classes` = K).
pub fn wat_weights_from_history(
    history: &[Vec<f64>],
    n_classes: usize,
    eta: f64,
    normalization: WatNormalization,
) -> Result<Vec<f64>> {
    check("eta", eta, Bound::NonNegative)?;
    if history.is_empty() {
        return wat_initial_weights(n_classes, normalization);
    }
    let cum = wat_cumulative_costs(history)?;
    same_len("history entry", n_classes + 1, cum.len())?;
    wat_weights(&cum, eta, normalization)
}

/// WAT's validation cost vector of one epoch (`validate` in
/// `boqili/WAT:worst_class_adversarial_train.py`), K + 1 entries:
///
/// c_k = (Σ_{i∈k} CE_i + β·Σ_{i∈k} KL_i)·K / divisor,  c_K = (Σ_i CE_i + β·Σ_i KL_i) / divisor,
///
/// with CE the clean cross-entropy and KL = KL(p(x) ‖ p(x')) under the TRADES attack. The code's
/// divisor is n_batches·batch_size (3072 for 3000 images); pass the number of validation images
/// for the exact class mean (on a balanced set c_k is then the mean TRADES loss of class k).
/// Costs are not normalised to [0, 1], although WAT Theorem 1 assumes that range.
pub fn wat_validation_costs(
    class_ce_sums: &[f64],
    class_kl_sums: &[f64],
    beta: f64,
    divisor: f64,
) -> Result<Vec<f64>> {
    non_empty("class_ce_sums", class_ce_sums.len())?;
    same_len("class_kl_sums", class_ce_sums.len(), class_kl_sums.len())?;
    check("beta", beta, Bound::NonNegative)?;
    check("divisor", divisor, Bound::Positive)?;
    for (&ce, &kl) in class_ce_sums.iter().zip(class_kl_sums) {
        check("class_ce_sums", ce, Bound::NonNegative)?;
        check("class_kl_sums", kl, Bound::NonNegative)?;
    }
    let k = class_ce_sums.len() as f64;
    let mut costs: Vec<f64> = class_ce_sums
        .iter()
        .zip(class_kl_sums)
        .map(|(ce, kl)| (ce + beta * kl) * k / divisor)
        .collect();
    let total = class_ce_sums.iter().sum::<f64>() + beta * class_kl_sums.iter().sum::<f64>();
    costs.push(total / divisor);
    Ok(costs)
}

/// Effective weight of a sample of class `class` in WAT's training loss, relative to the mean
/// loss (1/B)·Σ_i ℓ_i of a class-balanced batch of B samples:
///
/// * [`WatNormalization::Code`]: w_class + w_K. The reference code adds (1/B)·Σ_i w_{y_i}·ℓ_i to
///   w_K times the batch's mean TRADES loss (`train` in
///   `boqili/WAT:worst_class_adversarial_train.py`), so the average-loss decision adds uniform
///   mass; with its initial all-ones weights the first epoch is 2× TRADES.
/// * [`WatNormalization::Paper`]: K·w_class + w_K. WAT eq. (11) steps along Σ_{k=0}^{K} w_k·∇L_k
///   with L_k the mean training loss of class k; on a class-balanced batch a class holds B/K
///   samples, so L_k = (K/B)·Σ_{i∈k} ℓ_i. With the initial weights 1/(K+1) this is exactly
///   TRADES.
///
/// The two differ by more than a scale: relative to the class terms, the code weighs the
/// average-loss decision K times more than the paper does.
pub fn wat_sample_weight(
    weights: &[f64],
    class: usize,
    normalization: WatNormalization,
) -> Result<f64> {
    if weights.len() < 2 {
        return Err(TheoryError::LengthMismatch {
            what: "weights (K + 1 decisions, K >= 1)",
            expected: 2,
            got: weights.len(),
        });
    }
    let k = weights.len() - 1;
    if class >= k {
        return Err(TheoryError::Class {
            what: "class",
            class,
            n_classes: k,
            problem: "is out of range",
        });
    }
    Ok(match normalization {
        WatNormalization::Code => weights[class] + weights[k],
        WatNormalization::Paper => k as f64 * weights[class] + weights[k],
    })
}

/// WAT Algorithm 1's output rule (garbled as printed), read as
/// f = argmin_t max_{k∈\[K\]} L_k^val(f_t): the 0-based index of the epoch whose worst **class**
/// validation cost (entries 0..K−1; the average at index K is ignored) is smallest. Ties go to the
/// earliest epoch. Each entry needs K + 1 ≥ 2 values.
pub fn wat_select_iterate(history: &[Vec<f64>]) -> Result<usize> {
    let first = history
        .first()
        .ok_or(TheoryError::Empty { what: "history" })?;
    let n = first.len();
    if n < 2 {
        return Err(TheoryError::LengthMismatch {
            what: "history entry (K + 1 decisions, K >= 1)",
            expected: 2,
            got: n,
        });
    }
    let mut best = (0usize, f64::INFINITY);
    for (t, costs) in history.iter().enumerate() {
        same_len("history entry", n, costs.len())?;
        all_finite("history entry", costs)?;
        let worst = costs[..n - 1]
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        if worst < best.1 {
            best = (t, worst);
        }
    }
    Ok(best.0)
}

// ---------------------------------------------------------------------------------------------
// FRL (Xu et al., ICML 2021; `hannxu123/fair_robust`)
// ---------------------------------------------------------------------------------------------

/// FRL variant (Xu et al. 2021; `hannxu123/fair_robust`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FrlVariant {
    /// Reweight: λ₂ stays 0, so every ε-multiplier is clamp(e⁰) = 1.
    Reweight,
    /// Reweight + Remargin: λ₂ ← λ₂ + α₂·γ₁ drives per-class ε multipliers.
    ReweightRemargin,
}

/// FRL hyper-parameters (defaults of `hannxu123/fair_robust:frlrw.py` and `frlrmrw.py`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FrlConfig {
    pub variant: FrlVariant,
    /// τ₁, bound on R_nat(f,k) − R_nat(f).
    pub tau1: f64,
    /// τ₂, bound on R_bndy(f,k) − R_bndy(f).
    pub tau2: f64,
    /// α₁ (`rate1`), initial value.
    pub alpha1: f64,
    /// α₂ (`rate2`).
    pub alpha2: f64,
    /// `lim`: cap on Σλ₀ and Σλ₁.
    pub lim: f64,
    /// Upper clamp of the ε multiplier (2.5 in `utils_frl`, 3 in `utils_frl2`/RWRM).
    pub eps_multiplier_max: f64,
    /// α₁ is halved at every 1-based epoch that is a multiple of this (40).
    pub halve_every: usize,
}

impl FrlConfig {
    /// Code defaults for FRL-RW: τ = 0.1, α₁ = 0.05, lim = 0.5.
    pub fn reweight_code() -> Self {
        Self {
            variant: FrlVariant::Reweight,
            tau1: 0.1,
            tau2: 0.1,
            alpha1: 0.05,
            alpha2: 0.0,
            lim: 0.5,
            eps_multiplier_max: 2.5,
            halve_every: 40,
        }
    }

    /// Code defaults for FRL-RWRM: τ = 0.07, α₁ = 0.05, α₂ = 0.2, lim = 0.5, clamp at 3.
    pub fn reweight_remargin_code() -> Self {
        Self {
            variant: FrlVariant::ReweightRemargin,
            tau1: 0.07,
            tau2: 0.07,
            alpha1: 0.05,
            alpha2: 0.2,
            lim: 0.5,
            eps_multiplier_max: 3.0,
            halve_every: 40,
        }
    }
}

/// FRL Lagrange multipliers λ₀ (standard error), λ₁ (boundary error), λ₂ (remargin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrlMultipliers {
    pub lambda0: Vec<f64>,
    pub lambda1: Vec<f64>,
    pub lambda2: Vec<f64>,
}

impl FrlMultipliers {
    /// All zero (the code's `lmbda = torch.zeros(3K)`).
    pub fn zeros(n_classes: usize) -> Result<Self> {
        non_empty("n_classes", n_classes)?;
        Ok(Self {
            lambda0: vec![0.0; n_classes],
            lambda1: vec![0.0; n_classes],
            lambda2: vec![0.0; n_classes],
        })
    }

    pub fn n_classes(&self) -> usize {
        self.lambda0.len()
    }
}

/// FRL constraint violations (`frl_train` in `hannxu123/fair_robust:utils_frl.py`):
/// γ0_k = e_k − e − τ₁ and γ1_k = b_k − b − τ₂, from class-wise and overall standard error e and
/// boundary error b on the validation set ([`crate::metrics::class_errors`] gives them).
pub fn frl_violations(
    class_standard: &[f64],
    class_boundary: &[f64],
    overall_standard: f64,
    overall_boundary: f64,
    tau1: f64,
    tau2: f64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    non_empty("class_standard", class_standard.len())?;
    same_len("class_boundary", class_standard.len(), class_boundary.len())?;
    all_finite("class_standard", class_standard)?;
    all_finite("class_boundary", class_boundary)?;
    check("overall_standard", overall_standard, Bound::Finite)?;
    check("overall_boundary", overall_boundary, Bound::Finite)?;
    check("tau1", tau1, Bound::Finite)?;
    check("tau2", tau2, Bound::Finite)?;
    let g0 = class_standard
        .iter()
        .map(|e| e - overall_standard - tau1)
        .collect();
    let g1 = class_boundary
        .iter()
        .map(|b| b - overall_boundary - tau2)
        .collect();
    Ok((g0, g1))
}

/// FRL's `normalize_lambda` N(v): clamp at 0, then if Σv > lim rescale v to sum to lim.
pub fn frl_normalize(v: &[f64], lim: f64) -> Result<Vec<f64>> {
    all_finite("v", v)?;
    check("lim", lim, Bound::Positive)?;
    let clamped: Vec<f64> = v.iter().map(|x| x.max(0.0)).collect();
    let s: f64 = clamped.iter().sum();
    Ok(if s > lim {
        clamped.iter().map(|x| lim * x / s).collect()
    } else {
        clamped
    })
}

/// α₁ in force during 1-based epoch `epoch`: the code halves `rate1` before training every epoch
/// that is a multiple of `halve_every`, cumulatively, so α₁(e) = α₁ / 2^⌊e / halve_every⌋.
pub fn frl_rate1(alpha1: f64, epoch: usize, halve_every: usize) -> Result<f64> {
    check("alpha1", alpha1, Bound::NonNegative)?;
    if epoch == 0 {
        return Err(TheoryError::InvalidParameter {
            name: "epoch",
            value: 0.0,
            expected: "a 1-based epoch >= 1",
        });
    }
    if halve_every == 0 {
        return Err(TheoryError::InvalidParameter {
            name: "halve_every",
            value: 0.0,
            expected: ">= 1",
        });
    }
    let halvings = i32::try_from(epoch / halve_every).unwrap_or(i32::MAX);
    Ok(alpha1 * 0.5f64.powi(halvings))
}

/// FRL multiplier update (`frl_train` in `hannxu123/fair_robust:utils_frl.py`):
///
/// * λ₀ ← N(λ₀ + α₁·γ₀);
/// * λ₁ ← N(λ₁ + 2·α₁·γ₁) (the factor 2 is in the code only, not in the paper);
/// * RWRM: λ₂ ← λ₂ + α₂·γ₁, unclipped; RW: λ₂ unchanged (stays 0).
///
/// `alpha1` is the rate in force this epoch ([`frl_rate1`]). The code's
/// `clamp(γ, min = −1000)` is a no-op for errors in [0, 1] and is omitted.
pub fn frl_update(
    config: &FrlConfig,
    multipliers: &FrlMultipliers,
    gamma0: &[f64],
    gamma1: &[f64],
    alpha1: f64,
) -> Result<FrlMultipliers> {
    let k = multipliers.n_classes();
    non_empty("multipliers", k)?;
    same_len("lambda1", k, multipliers.lambda1.len())?;
    same_len("lambda2", k, multipliers.lambda2.len())?;
    same_len("gamma0", k, gamma0.len())?;
    same_len("gamma1", k, gamma1.len())?;
    all_finite("gamma0", gamma0)?;
    all_finite("gamma1", gamma1)?;
    all_finite("lambda2", &multipliers.lambda2)?;
    check("alpha1", alpha1, Bound::NonNegative)?;
    check("alpha2", config.alpha2, Bound::NonNegative)?;
    let l0: Vec<f64> = multipliers
        .lambda0
        .iter()
        .zip(gamma0)
        .map(|(l, g)| l + alpha1 * g)
        .collect();
    let l1: Vec<f64> = multipliers
        .lambda1
        .iter()
        .zip(gamma1)
        .map(|(l, g)| l + 2.0 * alpha1 * g)
        .collect();
    let lambda2 = match config.variant {
        FrlVariant::Reweight => multipliers.lambda2.clone(),
        FrlVariant::ReweightRemargin => multipliers
            .lambda2
            .iter()
            .zip(gamma1)
            .map(|(l, g)| l + config.alpha2 * g)
            .collect(),
    };
    Ok(FrlMultipliers {
        lambda0: frl_normalize(&l0, config.lim)?,
        lambda1: frl_normalize(&l1, config.lim)?,
        lambda2,
    })
}

/// FRL class weights from multipliers (`cost_sensitive` in `hannxu123/fair_robust:utils_frl.py`):
/// w_k = 1/K + λ_k − (1/K)·Σ_j λ_j. They sum to 1; with λ ≥ 0 and Σλ ≤ lim < 1 they are > 0.
pub fn frl_class_weights(lambda: &[f64]) -> Result<Vec<f64>> {
    all_finite("lambda", lambda)?;
    let k = lambda.len() as f64;
    let mean = lambda.iter().sum::<f64>() / k;
    Ok(lambda.iter().map(|l| 1.0 / k + l - mean).collect())
}

/// FRL ε multipliers m_k = clamp(exp(2·λ₂_k), 0.98, max) (`cost_sensitive`); per-sample budget
/// ε_i = ε·m_{y_i}. `max` is 2.5 (`utils_frl`) or 3 (`utils_frl2`, RWRM).
pub fn frl_eps_multipliers(lambda2: &[f64], max: f64) -> Result<Vec<f64>> {
    all_finite("lambda2", lambda2)?;
    require(
        "max",
        max,
        max.is_finite() && max >= 0.98,
        "finite and >= 0.98",
    )?;
    Ok(lambda2
        .iter()
        .map(|l| (2.0 * l).exp().clamp(0.98, max))
        .collect())
}

/// All FRL per-class quantities used for one training epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrlWeights {
    /// w0: weights of the natural (CE) term.
    pub natural: Vec<f64>,
    /// w1: weights of the boundary (KL) term.
    pub boundary: Vec<f64>,
    /// m: ε multipliers.
    pub eps_multiplier: Vec<f64>,
}

/// Turns multipliers into [`FrlWeights`] (as `cost_sensitive` in the FRL reference code).
pub fn frl_weights(config: &FrlConfig, multipliers: &FrlMultipliers) -> Result<FrlWeights> {
    Ok(FrlWeights {
        natural: frl_class_weights(&multipliers.lambda0)?,
        boundary: frl_class_weights(&multipliers.lambda1)?,
        eps_multiplier: frl_eps_multipliers(&multipliers.lambda2, config.eps_multiplier_max)?,
    })
}

// ---------------------------------------------------------------------------------------------
// CSL (Benz et al. 2020 as a WAT baseline) — [inferred] reconstruction
// ---------------------------------------------------------------------------------------------

/// **\[inferred\]** CSL update (this project's reconstruction; neither Benz et al. nor WAT
/// published code or a formula):
/// w_k ← max(0, w_k + γ·(r_k − r̄)), then rescaled to mean 1, with r_k the class validation robust
/// error and r̄ its class mean. Start from all-ones weights. Requires w_k ≥ 0 with Σw > 0,
/// r_k ∈ [0, 1] and γ ≥ 0. Because Σ(r_k − r̄) = 0 the pre-clip sum equals Σw > 0, so the
/// renormalisation is always defined.
pub fn csl_update(weights: &[f64], robust_errors: &[f64], gamma: f64) -> Result<Vec<f64>> {
    non_empty("weights", weights.len())?;
    same_len("robust_errors", weights.len(), robust_errors.len())?;
    check("gamma", gamma, Bound::NonNegative)?;
    for &w in weights {
        check("weights", w, Bound::NonNegative)?;
    }
    for &r in robust_errors {
        check("robust_errors", r, Bound::Unit)?;
    }
    let s: f64 = weights.iter().sum();
    require("sum of weights", s, s > 0.0, "> 0")?;
    let k = weights.len() as f64;
    let mean_r = robust_errors.iter().sum::<f64>() / k;
    let updated: Vec<f64> = weights
        .iter()
        .zip(robust_errors)
        .map(|(w, r)| (w + gamma * (r - mean_r)).max(0.0))
        .collect();
    let total: f64 = updated.iter().sum();
    require("sum of updated weights", total, total > 0.0, "> 0")?;
    Ok(updated.iter().map(|w| w * k / total).collect())
}
