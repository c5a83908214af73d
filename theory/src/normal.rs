//! The standard normal distribution: Φ, its complement Φc = 1 - Φ, the density φ and ln Φ.
//!
//! Built on `libm::erfc` (about 1e-15 relative over the range that matters) rather than statrs,
//! whose `erf` in 0.19 is only ~1e-10 accurate (its interval constants have 10 significant
//! digits; statrs-dev/statrs#412 restores them upstream). Two refinements keep the far tails
//! accurate:
//! - the argument z/√2 is formed with a compensated product, and the rounding error δ of that
//!   product is corrected to first order (erfc amplifies a relative argument error by 2x²,
//!   ~1e-13 at |z| = 37 without the correction);
//! - ln Φ uses an asymptotic series below z = -30, where Φ itself underflows near z = -38.5.
//!
//! Accuracy against the committed mpmath table (`theory/reference/normal.csv`) is asserted in
//! `theory/tests/reference.rs` with the tolerances of [`crate::tol`].

/// 1/√2 split into a double and its rounding error: 1/√2 = HI + LO to ~1e-33.
const FRAC_1_SQRT_2_HI: f64 = std::f64::consts::FRAC_1_SQRT_2;
const FRAC_1_SQRT_2_LO: f64 = -4.833_646_656_726_457e-17;
/// 1/√(2π).
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
/// ln √(2π).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
/// 2/√π.
const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// erfc(z·s/√2) for s = ±1, with the rounding error of z/√2 corrected to first order.
fn erfc_scaled(z: f64, sign: f64) -> f64 {
    if z.is_infinite() {
        return libm::erfc(sign * z);
    }
    let x = sign * z * FRAC_1_SQRT_2_HI;
    // Exact error of the product plus the error of the constant: x_true = x + dx.
    let dx = sign * (z.mul_add(FRAC_1_SQRT_2_HI, -(z * FRAC_1_SQRT_2_HI)) + z * FRAC_1_SQRT_2_LO);
    // erfc'(x) = -(2/√π) e^{-x²}.
    libm::erfc(x) - dx * FRAC_2_SQRT_PI * (-x * x).exp()
}

/// Φ(z) = P(N(0,1) ≤ z) = ½ erfc(-z/√2).
///
/// # Formula
/// Φ(z) = ∫_{-∞}^{z} φ(t) dt.
///
/// ```
/// use classwise_theory::normal::cdf;
/// assert!((cdf(0.0) - 0.5).abs() < 1e-16);
/// assert!((cdf(1.96) - 0.975_002_104_851_780).abs() < 1e-15);
/// ```
pub fn cdf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    0.5 * erfc_scaled(z, -1.0)
}

/// Φc(z) = 1 - Φ(z) = Φ(-z) = ½ erfc(z/√2), accurate in the upper tail.
pub fn sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    0.5 * erfc_scaled(z, 1.0)
}

/// φ(z) = e^{-z²/2}/√(2π), with the rounding error of z² corrected to first order.
pub fn pdf(z: f64) -> f64 {
    if z.is_infinite() {
        return 0.0;
    }
    let zz = z * z;
    let err = z.mul_add(z, -zz);
    FRAC_1_SQRT_2PI * (-0.5 * zz).exp() * (1.0 - 0.5 * err)
}

/// ln Φ(z), finite for every finite z.
///
/// # Formula
/// - z > 0: ln(1 - Φc(z)) = ln1p(-Φc(z));
/// - -30 ≤ z ≤ 0: ln Φ(z);
/// - z < -30: the asymptotic (Mills ratio) series
///   ln Φ(z) = -z²/2 - ln(-z) - ln√(2π) + ln(1 + Σ_{k≥1} (-1)^k (2k-1)!! / z^{2k}),
///   whose truncation error after 10 terms is below 1e-25 there.
pub fn log_cdf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    if z > 0.0 {
        (-sf(z)).ln_1p()
    } else if z >= -30.0 {
        cdf(z).ln()
    } else if z == f64::NEG_INFINITY {
        f64::NEG_INFINITY
    } else {
        let inv2 = 1.0 / (z * z);
        let (mut term, mut sum) = (1.0, 0.0);
        for k in 1..=10 {
            term *= -((2 * k - 1) as f64) * inv2;
            sum += term;
        }
        -0.5 * z * z - (-z).ln() - LN_SQRT_2PI + sum.ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetry_and_limits() {
        for z in [-37.0, -8.0, -1.0, 0.0, 0.5, 3.0, 9.0] {
            assert_eq!(cdf(z), sf(-z));
        }
        assert_eq!(cdf(f64::INFINITY), 1.0);
        assert_eq!(cdf(f64::NEG_INFINITY), 0.0);
        assert!(cdf(f64::NAN).is_nan() && log_cdf(f64::NAN).is_nan() && pdf(f64::NAN).is_nan());
        assert_eq!(pdf(f64::INFINITY), 0.0);
        assert_eq!(log_cdf(f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert!(log_cdf(-1e6).is_finite());
    }

    #[test]
    fn log_cdf_branches_meet() {
        // Just below -30 the asymptotic series is used, just above it ln Φ directly; both are
        // accurate there, so the function must be continuous across the switch.
        let below = log_cdf(-30.0 - 1e-9);
        let direct = cdf(-30.0 - 1e-9).ln();
        assert!(
            (below - direct).abs() <= 1e-13 * direct.abs(),
            "{below} {direct}"
        );
        assert!(log_cdf(-30.0 - 1e-9) < log_cdf(-30.0));
    }
}
