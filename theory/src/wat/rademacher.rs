//! Empirical Rademacher complexity (Bartlett-Mendelson 2002, as defined in WAT before
//! Theorem 2: `R_S(H) = (1/n) E_σ sup_{h∈H} Σ_i σ_i h(z_i)`), estimated by Monte Carlo over sign
//! vectors drawn from a seeded ChaCha8 generator, exactly by enumeration for small n, and for
//! norm-bounded linear classes via the dual norm.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use crate::error::{Result, TheoryError, require};

/// Largest sample size [`finite_class_exact`] enumerates (2^20 sign vectors).
pub const MAX_EXACT_SAMPLES: usize = 20;

/// A Monte Carlo estimate: the mean over `draws` sign vectors and its standard error
/// (sample standard deviation / √draws).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McEstimate {
    pub mean: f64,
    pub std_error: f64,
    pub draws: usize,
}

impl McEstimate {
    /// Mean and standard error of `samples` (at least 2 values).
    fn from_samples(samples: &[f64]) -> Result<Self> {
        let draws = samples.len();
        if draws < 2 {
            return Err(TheoryError::LengthMismatch {
                what: "Monte Carlo draws (>= 2)",
                expected: 2,
                got: draws,
            });
        }
        let nf = draws as f64;
        let mean = samples.iter().sum::<f64>() / nf;
        let var = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (nf - 1.0);
        Ok(McEstimate {
            mean,
            std_error: (var / nf).sqrt(),
            draws,
        })
    }
}

/// The dual exponent q of p ∈ [1, ∞] (`1/p + 1/q = 1`; p = 1 ↦ ∞, p = ∞ ↦ 1).
pub fn dual_exponent(p: f64) -> Result<f64> {
    require("p", p, p >= 1.0, "p in [1, inf]")?;
    Ok(if p == 1.0 {
        f64::INFINITY
    } else if p.is_infinite() {
        1.0
    } else {
        p / (p - 1.0)
    })
}

/// The ℓ_p norm, p ∈ [1, ∞] (p = ∞ is the max norm).
pub fn lp_norm(x: &[f64], p: f64) -> Result<f64> {
    require("p", p, p >= 1.0, "p in [1, inf]")?;
    for &v in x {
        require("vector entry", v, v.is_finite(), "a finite number")?;
    }
    Ok(if p.is_infinite() {
        x.iter().fold(0.0, |m, v| f64::max(m, v.abs()))
    } else if p == 1.0 {
        x.iter().map(|v| v.abs()).sum()
    } else if p == 2.0 {
        x.iter().map(|v| v * v).sum::<f64>().sqrt()
    } else {
        // Scale by the largest entry so that |v|^p never overflows.
        let m = x.iter().fold(0.0, |m, v| f64::max(m, v.abs()));
        if m == 0.0 {
            0.0
        } else {
            m * x
                .iter()
                .map(|v| (v.abs() / m).powf(p))
                .sum::<f64>()
                .powf(1.0 / p)
        }
    })
}

/// Draws a uniform sign vector σ ∈ {-1, +1}^n (one random bit per sign).
fn draw_signs(rng: &mut ChaCha8Rng, out: &mut [f64]) {
    for chunk in out.chunks_mut(64) {
        let bits: u64 = rng.random();
        for (i, s) in chunk.iter_mut().enumerate() {
            *s = if (bits >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
    }
}

/// Validates a matrix `values[h][i]`: non-empty, rectangular, finite. Returns (H, n).
fn validate_matrix(values: &[Vec<f64>], what: &'static str) -> Result<(usize, usize)> {
    let first = values.first().ok_or(TheoryError::Empty { what })?;
    let n = first.len();
    if n == 0 {
        return Err(TheoryError::Empty { what });
    }
    for row in values {
        if row.len() != n {
            return Err(TheoryError::LengthMismatch {
                what,
                expected: n,
                got: row.len(),
            });
        }
        for &v in row {
            require(what, v, v.is_finite(), "a finite number")?;
        }
    }
    Ok((values.len(), n))
}

/// `(1/n) max_h Σ_i σ_i v_{h,i}` for one sign vector.
fn finite_sup(values: &[Vec<f64>], signs: &[f64]) -> f64 {
    let n = signs.len() as f64;
    values
        .iter()
        .map(|row| row.iter().zip(signs).map(|(v, s)| v * s).sum::<f64>())
        .fold(f64::NEG_INFINITY, f64::max)
        / n
}

/// Monte Carlo estimate of the empirical Rademacher complexity of a finite class,
/// `R_S(H) = (1/n) E_σ max_h Σ_i σ_i v_{h,i}`, where `values[h][i]` is hypothesis h's value
/// (e.g. its loss) on sample i. `draws ≥ 2` sign vectors from `rng`.
pub fn finite_class_mc(
    values: &[Vec<f64>],
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Result<McEstimate> {
    let (_, n) = validate_matrix(values, "hypothesis values")?;
    let mut signs = vec![0.0; n];
    let mut samples = Vec::with_capacity(draws);
    for _ in 0..draws {
        draw_signs(rng, &mut signs);
        samples.push(finite_sup(values, &signs));
    }
    McEstimate::from_samples(&samples)
}

/// The empirical Rademacher complexity of a finite class, exactly, by enumerating all 2^n sign
/// vectors (n ≤ [`MAX_EXACT_SAMPLES`]).
pub fn finite_class_exact(values: &[Vec<f64>]) -> Result<f64> {
    let (_, n) = validate_matrix(values, "hypothesis values")?;
    if n > MAX_EXACT_SAMPLES {
        return Err(TheoryError::LengthMismatch {
            what: "samples for exact enumeration (at most 20)",
            expected: MAX_EXACT_SAMPLES,
            got: n,
        });
    }
    let mut signs = vec![0.0; n];
    let total = 1usize << n;
    let mut sum = 0.0;
    for mask in 0..total {
        for (i, s) in signs.iter_mut().enumerate() {
            *s = if (mask >> i) & 1 == 1 { 1.0 } else { -1.0 };
        }
        sum += finite_sup(values, &signs);
    }
    Ok(sum / total as f64)
}

/// Monte Carlo estimate of `E_σ ‖Σ_i σ_i x_i‖_q` (unnormalised), the quantity inside WAT
/// Theorem 3's `U` and YRB Lemma 3. `points` are the x_i (all of the same dimension d ≥ 1).
pub fn expected_signed_sum_norm(
    points: &[Vec<f64>],
    q: f64,
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Result<McEstimate> {
    let (n, d) = validate_matrix(points, "points")?;
    require("q", q, q >= 1.0, "q in [1, inf]")?;
    let mut signs = vec![0.0; n];
    let mut sum = vec![0.0; d];
    let mut samples = Vec::with_capacity(draws);
    for _ in 0..draws {
        draw_signs(rng, &mut signs);
        sum.iter_mut().for_each(|s| *s = 0.0);
        for (x, s) in points.iter().zip(&signs) {
            for (acc, v) in sum.iter_mut().zip(x) {
                *acc += s * v;
            }
        }
        samples.push(lp_norm(&sum, q)?);
    }
    McEstimate::from_samples(&samples)
}

/// Monte Carlo estimate of the empirical Rademacher complexity of the linear class
/// `{x ↦ ⟨w, x⟩ : ‖w‖_p ≤ radius}` on `points`. The supremum is closed-form by duality:
/// `sup_{‖w‖_p ≤ W} (1/n) Σ_i σ_i ⟨w, x_i⟩ = (W/n) ‖Σ_i σ_i x_i‖_q`, 1/p + 1/q = 1.
pub fn linear_class_mc(
    points: &[Vec<f64>],
    p: f64,
    radius: f64,
    draws: usize,
    rng: &mut ChaCha8Rng,
) -> Result<McEstimate> {
    let q = dual_exponent(p)?;
    require(
        "radius",
        radius,
        radius >= 0.0 && radius.is_finite(),
        "a finite radius >= 0",
    )?;
    let n = points.len() as f64;
    let est = expected_signed_sum_norm(points, q, draws, rng)?;
    let scale = radius / n;
    Ok(McEstimate {
        mean: est.mean * scale,
        std_error: est.std_error * scale,
        draws: est.draws,
    })
}
