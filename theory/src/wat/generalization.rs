//! Right-hand sides of WAT Theorem 2 (worst-class Rademacher bound) and WAT Theorem 3
//! (multi-class linear classifiers), as printed (`log(2/δ)`) and with the union bound over the
//! K classes (`log(2K/δ)`, errata W4/W5; WAT appendix, proofs of Theorems 2 and 3).

use rand::rngs::ChaCha8Rng;

use super::rademacher::{McEstimate, dual_exponent, expected_signed_sum_norm, lp_norm};
use crate::error::{Result, TheoryError, require};

/// Which confidence term the bound uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    /// `log(2/δ)`, as printed in WAT Theorems 2 and 3 (not implied by the proof).
    Stated,
    /// `log(2K/δ)`, what the per-class lemma plus a union bound over K classes gives.
    UnionBound,
}

impl Confidence {
    /// `ln(2/δ)` or `ln(2K/δ)`.
    pub fn log_term(self, classes: usize, delta: f64) -> Result<f64> {
        super::check_delta(delta)?;
        if classes == 0 {
            return Err(TheoryError::Empty { what: "classes" });
        }
        Ok(match self {
            Confidence::Stated => (2.0 / delta).ln(),
            Confidence::UnionBound => (2.0 * classes as f64 / delta).ln(),
        })
    }
}

fn require_sample_size(classes: usize, sample_size: usize) -> Result<()> {
    if classes == 0 {
        return Err(TheoryError::Empty { what: "classes" });
    }
    if sample_size < classes {
        return Err(TheoryError::LengthMismatch {
            what: "sample size |S| (>= K, |S_k| = |S|/K)",
            expected: classes,
            got: sample_size,
        });
    }
    Ok(())
}

/// WAT Theorem 2's deviation term `3B √(K log(·)/(2|S|))`.
pub fn theorem2_deviation(
    b: f64,
    classes: usize,
    sample_size: usize,
    delta: f64,
    confidence: Confidence,
) -> Result<f64> {
    require("B", b, b > 0.0 && b.is_finite(), "a finite B > 0")?;
    require_sample_size(classes, sample_size)?;
    let log_term = confidence.log_term(classes, delta)?;
    Ok(3.0 * b * (classes as f64 * log_term / (2.0 * sample_size as f64)).sqrt())
}

/// The three terms of WAT Theorem 2's right-hand side and their sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theorem2Bound {
    /// `R̂^rob_wc(f)`.
    pub empirical: f64,
    /// `2B max_k R_{S_k}(ℓ̃_F)`.
    pub complexity: f64,
    /// `3B √(K log(·)/(2|S|))`.
    pub deviation: f64,
    /// The sum: the bound on `R^rob_wc(f)`.
    pub rhs: f64,
}

/// WAT Theorem 2: `R^rob_wc(f) ≤ R̂^rob_wc(f) + 2B max_k R_{S_k}(ℓ̃_F) + 3B√(K log(·)/(2|S|))`,
/// for a loss in [0, B]. `empirical_wc ∈ [0, B]` is `R̂^rob_wc(f)`, `max_class_rademacher ≥ 0`
/// is `max_k R_{S_k}(ℓ̃_F)`, `sample_size` is |S| (with |S_k| = |S|/K).
pub fn theorem2_rhs(
    empirical_wc: f64,
    max_class_rademacher: f64,
    b: f64,
    classes: usize,
    sample_size: usize,
    delta: f64,
    confidence: Confidence,
) -> Result<Theorem2Bound> {
    let deviation = theorem2_deviation(b, classes, sample_size, delta, confidence)?;
    require(
        "empirical worst-class risk",
        empirical_wc,
        (0.0..=b).contains(&empirical_wc),
        "a risk in [0, B]",
    )?;
    require(
        "max_k R_{S_k}",
        max_class_rademacher,
        max_class_rademacher >= 0.0 && max_class_rademacher.is_finite(),
        "a finite complexity >= 0",
    )?;
    let complexity = 2.0 * b * max_class_rademacher;
    Ok(Theorem2Bound {
        empirical: empirical_wc,
        complexity,
        deviation,
        rhs: empirical_wc + complexity + deviation,
    })
}

/// Validates a K × d weight matrix (rows `w_k`, K ≥ 2, d ≥ 1, finite). Returns (K, d).
fn validate_weights(weights: &[Vec<f64>]) -> Result<(usize, usize)> {
    if weights.len() < 2 {
        return Err(TheoryError::LengthMismatch {
            what: "classes (rows of W, K >= 2)",
            expected: 2,
            got: weights.len(),
        });
    }
    let d = weights[0].len();
    if d == 0 {
        return Err(TheoryError::Empty { what: "weight row" });
    }
    for row in weights {
        finite_vector(row, d, "weight row", "weight")?;
    }
    Ok((weights.len(), d))
}

/// An ℓ∞ budget ε: finite and ≥ 0.
fn check_epsilon(eps: f64) -> Result<f64> {
    require(
        "epsilon",
        eps,
        eps >= 0.0 && eps.is_finite(),
        "a finite epsilon >= 0",
    )
}

/// `x` has length `d` and finite entries.
fn finite_vector(x: &[f64], d: usize, what: &'static str, entry: &'static str) -> Result<()> {
    if x.len() != d {
        return Err(TheoryError::LengthMismatch {
            what,
            expected: d,
            got: x.len(),
        });
    }
    for &v in x {
        require(entry, v, v.is_finite(), "a finite number")?;
    }
    Ok(())
}

fn validate_point(x: &[f64], d: usize, y: usize, k: usize, eps: f64) -> Result<()> {
    finite_vector(x, d, "input x", "input entry")?;
    if y >= k {
        return Err(TheoryError::LengthMismatch {
            what: "label (must be < K)",
            expected: k,
            got: y,
        });
    }
    check_epsilon(eps)?;
    Ok(())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(u, v)| u * v).sum()
}

/// The ℓ∞-robust margin of WAT Theorem 3 in closed form:
/// `min_{x'∈B∞(x,ε)} M(Wx', y) = min_{y'≠y} [⟨w_y - w_{y'}, x⟩ - ε ‖w_y - w_{y'}‖_1]`.
pub fn robust_margin(weights: &[Vec<f64>], x: &[f64], y: usize, eps: f64) -> Result<f64> {
    let (k, d) = validate_weights(weights)?;
    validate_point(x, d, y, k, eps)?;
    let wy = &weights[y];
    Ok((0..k)
        .filter(|&j| j != y)
        .map(|j| {
            let diff: Vec<f64> = wy.iter().zip(&weights[j]).map(|(a, b)| a - b).collect();
            dot(&diff, x) - eps * diff.iter().map(|v| v.abs()).sum::<f64>()
        })
        .fold(f64::INFINITY, f64::min))
}

/// Largest dimension [`brute_force_robust_margin`] enumerates (2^16 vertices).
pub const MAX_BRUTE_FORCE_DIM: usize = 16;

/// The ℓ∞-robust margin by brute force: the margin `M(Wx', y) = ⟨w_y,x'⟩ - max_{y'≠y}⟨w_{y'},x'⟩`
/// is concave in x', so its minimum over the box `B∞(x, ε)` is attained at one of its 2^d
/// vertices, all of which are enumerated (d ≤ [`MAX_BRUTE_FORCE_DIM`]).
pub fn brute_force_robust_margin(
    weights: &[Vec<f64>],
    x: &[f64],
    y: usize,
    eps: f64,
) -> Result<f64> {
    let (k, d) = validate_weights(weights)?;
    validate_point(x, d, y, k, eps)?;
    if d > MAX_BRUTE_FORCE_DIM {
        return Err(TheoryError::LengthMismatch {
            what: "dimension for brute force (at most 16)",
            expected: MAX_BRUTE_FORCE_DIM,
            got: d,
        });
    }
    let mut vertex = vec![0.0; d];
    let mut best = f64::INFINITY;
    for mask in 0..(1usize << d) {
        for (i, v) in vertex.iter_mut().enumerate() {
            *v = if (mask >> i) & 1 == 1 {
                x[i] + eps
            } else {
                x[i] - eps
            };
        }
        let own = dot(&weights[y], &vertex);
        let other = (0..k)
            .filter(|&j| j != y)
            .map(|j| dot(&weights[j], &vertex))
            .fold(f64::NEG_INFINITY, f64::max);
        best = best.min(own - other);
    }
    Ok(best)
}

/// WAT Theorem 3's `E_i`, as printed:
/// `1(⟨w_{y_i}, x_i⟩ ≤ γ + max_{y'≠y_i} (⟨w_{y'}, x_i⟩ + ε‖w_{y'} - w_{y_i}‖_1))`.
pub fn margin_error(
    weights: &[Vec<f64>],
    x: &[f64],
    y: usize,
    eps: f64,
    gamma: f64,
) -> Result<bool> {
    let (k, d) = validate_weights(weights)?;
    validate_point(x, d, y, k, eps)?;
    require(
        "gamma",
        gamma,
        gamma > 0.0 && gamma.is_finite(),
        "gamma > 0",
    )?;
    let wy = &weights[y];
    let rival = (0..k)
        .filter(|&j| j != y)
        .map(|j| {
            let l1: f64 = weights[j].iter().zip(wy).map(|(a, b)| (a - b).abs()).sum();
            dot(&weights[j], x) + eps * l1
        })
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(dot(wy, x) <= gamma + rival)
}

/// WAT Theorem 3's constant term (eq. (25)):
/// `c = 2εWK² d^{1/q} / (γ√|S|) + 3√(K log(·)/(2|S|))`, with q the dual exponent of p.
#[allow(clippy::too_many_arguments)]
pub fn theorem3_c(
    eps: f64,
    w_bound: f64,
    classes: usize,
    dim: usize,
    p: f64,
    gamma: f64,
    sample_size: usize,
    delta: f64,
    confidence: Confidence,
) -> Result<f64> {
    check_epsilon(eps)?;
    require(
        "W",
        w_bound,
        w_bound > 0.0 && w_bound.is_finite(),
        "a finite W > 0",
    )?;
    require(
        "gamma",
        gamma,
        gamma > 0.0 && gamma.is_finite(),
        "gamma > 0",
    )?;
    if dim == 0 {
        return Err(TheoryError::Empty { what: "dimension" });
    }
    let q = dual_exponent(p)?;
    let deviation = theorem2_deviation(1.0, classes, sample_size, delta, confidence)?;
    let kf = classes as f64;
    let d_pow = (dim as f64).powf(1.0 / q);
    Ok(2.0 * eps * w_bound * kf * kf * d_pow / (gamma * (sample_size as f64).sqrt()) + deviation)
}

/// A sample and a classifier for WAT Theorem 3.
#[derive(Debug, Clone, Copy)]
pub struct LinearSetting<'a> {
    /// Rows w_k of W (K × d).
    pub weights: &'a [Vec<f64>],
    /// Inputs x_i (each of dimension d).
    pub inputs: &'a [Vec<f64>],
    /// Labels y_i ∈ 0..K; every class must have |S|/K samples.
    pub labels: &'a [usize],
    /// ℓ∞ radius ε ≥ 0.
    pub eps: f64,
    /// Ramp margin γ > 0.
    pub gamma: f64,
    /// Norm bound W with `max_k ‖w_k‖_p ≤ W`.
    pub w_bound: f64,
    /// p ∈ [1, ∞].
    pub p: f64,
    /// Confidence δ ∈ (0, 1).
    pub delta: f64,
}

/// Every term of WAT Theorem 3's right-hand side (and its corrected variants).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theorem3Bound {
    /// `(K/|S|) Σ_S E_i` (eq. (29)).
    pub empirical: f64,
    /// `max_k (1/|S_k|) Σ_{S_k} E_i`, the tighter worst-class term that eq. (29) bounds.
    pub worst_class_empirical: f64,
    /// `U = max_{y,k} E_σ ‖Σ_{S_k} σ_i x_i 1(y_i = y)‖_q` (only y = k is non-zero), by Monte
    /// Carlo; `u.mean` is the max over k of the per-class means, `u.std_error` that class's.
    pub u: McEstimate,
    /// `2WK³U/(γ|S|)`, as printed.
    pub complexity_k3: f64,
    /// `2WK²U/(γ|S|)`, valid since inside S_k only y = k contributes.
    pub complexity_k2: f64,
    /// c with `log(2/δ)` (as printed).
    pub c_stated: f64,
    /// c with `log(2K/δ)` (erratum W5).
    pub c_union: f64,
    /// As printed: `empirical + complexity_k3 + c_stated`.
    pub rhs_printed: f64,
    /// With the union bound: `empirical + complexity_k3 + c_union`.
    pub rhs_union: f64,
    /// Tighter and valid: `empirical + complexity_k2 + c_union`.
    pub rhs_union_k2: f64,
}

/// Evaluates WAT Theorem 3's right-hand side on `setting`, estimating U with `draws ≥ 2` sign
/// vectors per class from `rng`. Errors when the hypotheses fail (`‖Wᵀ‖_{p,∞} > W`, unequal
/// class sizes, bad labels or parameters).
pub fn theorem3(
    setting: &LinearSetting<'_>,
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Theorem3Bound> {
    let s = setting;
    let (k, d) = validate_weights(s.weights)?;
    let q = dual_exponent(s.p)?;
    require("W", s.w_bound, s.w_bound > 0.0, "W > 0")?;
    for w in s.weights {
        let norm = lp_norm(w, s.p)?;
        require(
            "max_k ||w_k||_p",
            norm,
            norm <= s.w_bound,
            "||W^T||_{p,inf} <= W",
        )?;
    }
    if s.inputs.len() != s.labels.len() {
        return Err(TheoryError::LengthMismatch {
            what: "labels",
            expected: s.inputs.len(),
            got: s.labels.len(),
        });
    }
    let n_total = s.inputs.len();
    if n_total == 0 || !n_total.is_multiple_of(k) {
        return Err(TheoryError::LengthMismatch {
            what: "sample size |S| (a positive multiple of K)",
            expected: k,
            got: n_total,
        });
    }
    let per_class = n_total / k;
    let mut by_class: Vec<Vec<Vec<f64>>> = vec![Vec::new(); k];
    let mut errors_by_class = vec![0usize; k];
    for (x, &y) in s.inputs.iter().zip(s.labels) {
        let e = margin_error(s.weights, x, y, s.eps, s.gamma)?;
        by_class
            .get_mut(y)
            .ok_or(TheoryError::LengthMismatch {
                what: "label (must be < K)",
                expected: k,
                got: y,
            })?
            .push(x.clone());
        if e {
            errors_by_class[y] += 1;
        }
    }
    for class in &by_class {
        if class.len() != per_class {
            return Err(TheoryError::LengthMismatch {
                what: "class sample count (|S_k| = |S|/K)",
                expected: per_class,
                got: class.len(),
            });
        }
    }
    let total_errors: usize = errors_by_class.iter().sum();
    let kf = k as f64;
    let sf = n_total as f64;
    let empirical = kf / sf * total_errors as f64;
    let worst_class_empirical =
        errors_by_class.iter().copied().max().unwrap_or(0) as f64 / per_class as f64;

    let mut u: Option<McEstimate> = None;
    for class in &by_class {
        let est = expected_signed_sum_norm(class, q, draws, rng)?;
        if u.is_none_or(|best| est.mean > best.mean) {
            u = Some(est);
        }
    }
    let u = u.ok_or(TheoryError::Empty { what: "classes" })?;
    let base = 2.0 * s.w_bound * u.mean / (s.gamma * sf);
    let complexity_k3 = base * kf * kf * kf;
    let complexity_k2 = base * kf * kf;
    let c = |conf| theorem3_c(s.eps, s.w_bound, k, d, s.p, s.gamma, n_total, s.delta, conf);
    let c_stated = c(Confidence::Stated)?;
    let c_union = c(Confidence::UnionBound)?;
    Ok(Theorem3Bound {
        empirical,
        worst_class_empirical,
        u,
        complexity_k3,
        complexity_k2,
        c_stated,
        c_union,
        rhs_printed: empirical + complexity_k3 + c_stated,
        rhs_union: empirical + complexity_k3 + c_union,
        rhs_union_k2: empirical + complexity_k2 + c_union,
    })
}
