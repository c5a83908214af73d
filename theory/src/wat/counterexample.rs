//! The exact counterexample to WAT Theorem 2 as printed (erratum W4): K classes,
//! `F = {f_1..f_K}`, f_j has robust loss 1 on a subset of mass r of class j and 0 elsewhere,
//! n samples per class, B = 1. With `m_k ~ Bin(n, r)` iid the number of class-k samples in
//! that subset, `R_{S_k}(ℓ̃_F) = g(m_k)/n` with `g(m) = E|σ_1+…+σ_m|/2`, and the bound
//! `R_wc(f_j) = r ≤ m_j/n + 2 max_k g(m_k)/n + dev` fails for some j iff
//! `min_j m_j < n r - 2 g(max_k m_k) - n·dev`. Its probability follows exactly from the joint
//! law of the minimum and maximum of K iid binomials, computed in log space so that K up to
//! 10^20 works.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use crate::error::{Result, TheoryError, require};

/// `ln C(n, k)` via the log-gamma function.
fn ln_choose(n: u32, k: u32) -> f64 {
    let (n, k) = (f64::from(n), f64::from(k));
    libm::lgamma(n + 1.0) - libm::lgamma(k + 1.0) - libm::lgamma(n - k + 1.0)
}

/// `g(m) = E|σ_1+…+σ_m| / 2` for iid Rademacher σ_i (= `E max(0, σ_1+…+σ_m)`), the empirical
/// Rademacher complexity times n of the class `{0, h}` when h is 1 on m of the n samples.
/// Closed form `E|S_m| = m C(m-1, ⌊(m-1)/2⌋) / 2^{m-1}`, evaluated in log space.
pub fn half_abs_rademacher_sum(m: u32) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let ln_e = f64::from(m).ln() + ln_choose(m - 1, (m - 1) / 2)
        - f64::from(m - 1) * std::f64::consts::LN_2;
    0.5 * ln_e.exp()
}

/// `ln P(Bin(n, r) = k)`.
fn ln_binomial_pmf(n: u32, k: u32, r: f64) -> f64 {
    let log_r = if k == 0 { 0.0 } else { f64::from(k) * r.ln() };
    let log_1mr = if k == n {
        0.0
    } else {
        f64::from(n - k) * (-r).ln_1p()
    };
    ln_choose(n, k) + log_r + log_1mr
}

/// The Bin(n, r) law with its lower and upper tails, each summed from its small end.
struct Binomial {
    pmf: Vec<f64>,
    /// `lower[a] = P(X ≤ a)`.
    lower: Vec<f64>,
    /// `upper[b] = P(X > b)`.
    upper: Vec<f64>,
}

impl Binomial {
    fn new(n: u32, r: f64) -> Self {
        let pmf: Vec<f64> = (0..=n).map(|k| ln_binomial_pmf(n, k, r).exp()).collect();
        let mut lower = Vec::with_capacity(pmf.len());
        let mut acc = 0.0;
        for p in &pmf {
            acc += p;
            lower.push(acc);
        }
        let mut upper = vec![0.0; pmf.len()];
        let mut acc = 0.0;
        for b in (0..pmf.len()).rev() {
            upper[b] = acc;
            acc += pmf[b];
        }
        Binomial { pmf, lower, upper }
    }

    /// `P(X ≤ a)` for a ≥ -1 (0 at a = -1).
    fn cdf(&self, a: i64) -> f64 {
        usize::try_from(a).map_or(0.0, |a| self.lower.get(a).copied().unwrap_or(1.0))
    }

    /// `P(a < X ≤ b)^K` = `exp(K ln P(a < X ≤ b))`, with `ln1p` when the mass is close to 1.
    fn interval_pow(&self, a: i64, b: i64, k: f64) -> f64 {
        if a >= b || b < 0 {
            return 0.0;
        }
        let bu = usize::try_from(b).unwrap_or(0).min(self.pmf.len() - 1);
        let outside = self.cdf(a) + self.upper[bu];
        let ln_mass = if outside < 0.5 {
            (-outside).ln_1p()
        } else {
            let mass = self.lower[bu] - self.cdf(a);
            if mass <= 0.0 {
                return 0.0;
            }
            mass.ln()
        };
        (k * ln_mass).exp()
    }

    /// `P(max_k X_k = b, min_k X_k ≤ a)` for K iid copies (inclusion-exclusion on the box
    /// `{a < X_k ≤ b}`).
    fn max_eq_min_le(&self, b: i64, a: i64, k: f64) -> f64 {
        if a < 0 {
            return 0.0;
        }
        let a = a.min(b);
        let max_eq = self.interval_pow(-1, b, k) - self.interval_pow(-1, b - 1, k);
        let max_eq_min_gt = self.interval_pow(a, b, k) - self.interval_pow(a, b - 1, k);
        max_eq - max_eq_min_gt
    }
}

/// Validates the construction's parameters: K ≥ 1 an integer (as f64, since K reaches 10^20),
/// n ≥ 1, r ∈ (0, 1), deviation finite.
fn validate(classes: f64, per_class: u32, r: f64, deviation: f64) -> Result<()> {
    require(
        "classes",
        classes,
        classes >= 1.0 && classes.is_finite() && classes.fract() == 0.0,
        "an integer K >= 1",
    )?;
    if per_class == 0 {
        return Err(TheoryError::Empty {
            what: "samples per class",
        });
    }
    require("r", r, r > 0.0 && r < 1.0, "r in (0, 1)")?;
    require(
        "deviation",
        deviation,
        deviation.is_finite(),
        "a finite deviation",
    )?;
    Ok(())
}

/// The deviation term `3B√(K log(2/δ)/(2|S|))` of WAT Theorem 2 as printed, with B = 1 and
/// |S| = K n: `3√(ln(2/δ)/(2n))`.
pub fn stated_deviation(per_class: u32, delta: f64) -> Result<f64> {
    super::check_delta(delta)?;
    if per_class == 0 {
        return Err(TheoryError::Empty {
            what: "samples per class",
        });
    }
    Ok(3.0 * ((2.0 / delta).ln() / (2.0 * f64::from(per_class))).sqrt())
}

/// The union-bound deviation term (erratum W4), `3√(ln(2K/δ)/(2n))` with B = 1, |S| = K n.
pub fn union_deviation(classes: f64, per_class: u32, delta: f64) -> Result<f64> {
    super::check_delta(delta)?;
    validate(classes, per_class, 0.5, 0.0)?;
    let log_term = std::f64::consts::LN_2 + classes.ln() - delta.ln();
    Ok(3.0 * (log_term / (2.0 * f64::from(per_class))).sqrt())
}

/// Exact probability that the bound `r ≤ m_j/n + 2 max_k g(m_k)/n + deviation` fails for some
/// f_j in the construction of the module docs, i.e.
/// `P(min_j m_j < n r - 2 g(max_k m_k) - n·deviation)`
/// for K iid `m_k ~ Bin(n, r)`, from the order statistics:
/// `Σ_b P(max = b, min ≤ a*(b))` with `P(a < X_k ≤ b ∀k) = P(a < X ≤ b)^K`.
pub fn failure_probability(classes: f64, per_class: u32, r: f64, deviation: f64) -> Result<f64> {
    validate(classes, per_class, r, deviation)?;
    let bin = Binomial::new(per_class, r);
    let nf = f64::from(per_class);
    let mut total = 0.0;
    for b in 0..=per_class {
        let threshold = nf * r - 2.0 * half_abs_rademacher_sum(b) - nf * deviation;
        // Largest integer strictly below the threshold.
        let a_star = threshold.ceil() - 1.0;
        if a_star < 0.0 {
            continue;
        }
        let a = a_star.min(nf) as i64;
        total += bin.max_eq_min_le(i64::from(b), a, classes);
    }
    Ok(total.clamp(0.0, 1.0))
}

/// [`failure_probability`] with the stated deviation (`log(2/δ)`, WAT Theorem 2 as printed).
pub fn stated_failure_probability(classes: f64, per_class: u32, r: f64, delta: f64) -> Result<f64> {
    failure_probability(classes, per_class, r, stated_deviation(per_class, delta)?)
}

/// [`failure_probability`] with the union-bound deviation (`log(2K/δ)`, erratum W4).
pub fn union_failure_probability(classes: f64, per_class: u32, r: f64, delta: f64) -> Result<f64> {
    failure_probability(
        classes,
        per_class,
        r,
        union_deviation(classes, per_class, delta)?,
    )
}

/// Direct simulation of the same event: draws every class's n Bernoulli(r) membership bits,
/// evaluates for each f_j the printed bound's two sides (`R_wc(f_j) = r`,
/// `R̂_wc(f_j) = m_j/n`, `max_k R_{S_k} = max_k g(m_k)/n`) and counts the trials where some f_j
/// violates it. Returns the failure frequency over `trials ≥ 1`.
pub fn simulate_failure_rate(
    classes: usize,
    per_class: u32,
    r: f64,
    deviation: f64,
    trials: usize,
    rng: &mut ChaCha8Rng,
) -> Result<f64> {
    if classes == 0 {
        return Err(TheoryError::Empty { what: "classes" });
    }
    validate(classes as f64, per_class, r, deviation)?;
    if trials == 0 {
        return Err(TheoryError::Empty { what: "trials" });
    }
    let nf = f64::from(per_class);
    let mut failures = 0usize;
    let mut counts = vec![0u32; classes];
    for _ in 0..trials {
        for c in counts.iter_mut() {
            *c = (0..per_class).filter(|_| rng.random::<f64>() < r).count() as u32;
        }
        let complexity = counts
            .iter()
            .map(|&m| half_abs_rademacher_sum(m) / nf)
            .fold(0.0, f64::max);
        let fails = counts
            .iter()
            .any(|&m| r > f64::from(m) / nf + 2.0 * complexity + deviation);
        if fails {
            failures += 1;
        }
    }
    Ok(failures as f64 / trials as f64)
}

/// Per-class miss rate of an exact one-sided Clopper-Pearson upper (1-δ) bound for Bin(n, r):
/// the bound u(m) (solving `P_u(X ≤ m) = δ`) falls below r iff `P_r(X ≤ m) < δ`, so
/// `q = max{P_r(X ≤ m) : P_r(X ≤ m) < δ}` (the "max of K bounds" example of erratum W4).
pub fn clopper_pearson_miss_rate(per_class: u32, r: f64, delta: f64) -> Result<f64> {
    validate(1.0, per_class, r, 0.0)?;
    super::check_delta(delta)?;
    let bin = Binomial::new(per_class, r);
    Ok(bin
        .lower
        .iter()
        .copied()
        .filter(|&c| c < delta)
        .fold(0.0, f64::max))
}

/// `1 - (1 - q)^K`: the probability that at least one of K independent per-class statements,
/// each missing with probability q, misses (computed as `-expm1(K ln1p(-q))`).
pub fn any_of_k_fails(q: f64, classes: f64) -> Result<f64> {
    require("q", q, (0.0..=1.0).contains(&q), "q in [0, 1]")?;
    require(
        "classes",
        classes,
        classes >= 1.0 && classes.is_finite(),
        "K >= 1",
    )?;
    Ok(-(classes * (-q).ln_1p()).exp_m1())
}
