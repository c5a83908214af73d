//! Monte Carlo check of WAT Theorem 2 on a binary Gaussian model ("part A", an experiment of
//! this project; check G3 of `classwise theory verify`).
//!
//! Setup (part A):
//! * K = 2 classes y ∈ {+1, -1} (index 0 is y = +1, index 1 is y = -1), d = 2,
//!   `x | y ~ N(y·μ, σ_y² I)` with μ = (1, 0.5), σ₊₁ = 0.6, σ₋₁ = 1.2;
//! * F: the linear classifiers sign(⟨w, x⟩) with w = r (cos θ, sin θ) on a grid of
//!   [`SPEC_ANGLES`] = 72 angles θ = 2πj/72 (5° steps) times the [`SPEC_NORMS`] r ∈ {0.5, 1, 2, 4}:
//!   288 classifiers;
//! * the robust ramp loss `ℓ̃(w; x, y) = φ₁(y⟨w,x⟩ - ε‖w‖₁)`, ε = 0.1, B = 1, where
//!   φ₁(t) = 1 for t ≤ 0, 1 - t on (0, 1), 0 for t ≥ 1 (WAT eq. (15)'s φ_γ with γ = 1). φ₁ is
//!   non-increasing, so the ℓ∞ worst case of a linear classifier is the smallest margin over the
//!   box, `min_{‖δ‖∞≤ε} y⟨w, x+δ⟩ = y⟨w,x⟩ - ε‖w‖₁`;
//! * exact population class-wise robust risks from [`expected_ramp`];
//! * n samples per class (|S| = 2n) drawn from ChaCha8 with Box-Muller normals ([`rand`] 0.10
//!   has no normal distribution; `rand_distr` is not a dependency of this crate);
//! * `2B max_k R_{S_k}(ℓ̃_F)` estimated with [`finite_class_mc`] and the deviation term
//!   `3B√(K log(·)/(2|S|)) = 3√(log(·)/(2n))` of [`theorem2_rhs`], stated (`log 2/δ`) and with the
//!   union bound (`log 2K/δ`).
//!
//! A trial violates a version of WAT Theorem 2 when some f ∈ F has
//! `R^rob_wc(f) > R̂^rob_wc(f) + 2B max_k R_{S_k}(ℓ̃_F) + 3B√(K log(·)/(2|S|))`, i.e. when the
//! uniform deviation `sup_f (R_wc - R̂_wc)` exceeds the complexity plus deviation terms.

use std::f64::consts::TAU;

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use super::generalization::{Confidence, theorem2_rhs};
use super::rademacher::finite_class_mc;
use crate::error::{Result, TheoryError, require};
use crate::normal::{cdf, pdf};

/// K of part A.
pub const CLASSES: usize = 2;
/// μ of part A: `x | y ~ N(y·μ, σ_y² I)`.
pub const SPEC_MEAN: [f64; 2] = [1.0, 0.5];
/// (σ₊₁, σ₋₁) of part A.
pub const SPEC_SIGMA: [f64; 2] = [0.6, 1.2];
/// ℓ∞ radius ε of part A.
pub const SPEC_EPSILON: f64 = 0.1;
/// Number of angles of the classifier grid (θ = 2πj/72).
pub const SPEC_ANGLES: usize = 72;
/// Norms of the classifier grid: 72 × 4 = 288 classifiers.
pub const SPEC_NORMS: [f64; 4] = [0.5, 1.0, 2.0, 4.0];
/// Sign draws of the full part-A run for each empirical Rademacher complexity.
pub const SPEC_SIGN_DRAWS: usize = 400;
/// The loss bound B: φ₁ takes values in [0, 1].
pub const LOSS_BOUND: f64 = 1.0;

/// The ramp loss φ₁(t): 1 for t ≤ 0, 1 - t on (0, 1), 0 for t ≥ 1 (WAT eq. (15) with γ = 1).
/// NaN maps to NaN.
pub fn ramp(t: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    1.0 - t.clamp(0.0, 1.0)
}

/// ψ(z) = E[(z - Z)_+] = zΦ(z) + φ(z) for Z ~ N(0, 1).
fn psi(z: f64) -> f64 {
    z * cdf(z) + pdf(z)
}

/// `E[φ₁(T)]` for `T ~ N(m, s²)` in closed form (s = 0: the point mass, φ₁(m)).
///
/// # Derivation
/// φ₁(t) = ∫₀¹ 1(t ≤ u) du, so by Fubini `E φ₁(T) = ∫₀¹ Φ((u - m)/s) du`. With
/// z = (u - m)/s and `d/dz [zΦ(z) + φ(z)] = Φ(z)` (since φ'(z) = -zφ(z)):
///
/// ```text
/// E φ₁(T) = s [ψ(z₁) - ψ(z₀)],   ψ(z) = zΦ(z) + φ(z),   z₀ = -m/s,   z₁ = (1 - m)/s.
/// ```
///
/// Equivalently φ₁(t) = (1 - t)_+ - (-t)_+ and `E(a - T)_+ = s ψ((a - m)/s)`.
/// For m < 0 (z₀ > 0) the identity ψ(z) = z + ψ(-z) and s(z₁ - z₀) = 1 give the form
/// `1 + s [ψ(-z₁) - ψ(-z₀)]`, which avoids subtracting two large ψ values. Absolute error a few
/// ulp of max(1, s, |m|) (Φ and φ are accurate to ~1e-15); the result is clamped into [0, 1].
pub fn expected_ramp(m: f64, s: f64) -> Result<f64> {
    require("mean m", m, m.is_finite(), "a finite mean")?;
    require("std s", s, s >= 0.0 && s.is_finite(), "a finite std >= 0")?;
    if s == 0.0 {
        return Ok(ramp(m));
    }
    let z0 = -m / s;
    let z1 = (1.0 - m) / s;
    let r = if z0 > 0.0 {
        1.0 + s * (psi(-z1) - psi(-z0))
    } else {
        s * (psi(z1) - psi(z0))
    };
    Ok(r.clamp(0.0, 1.0))
}

/// The part-A model and classifier grid. [`Setup::spec`] is the standard part-A setting;
/// the fields may be changed to explore others (validated by [`PartA::new`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// μ: class y has mean y·μ.
    pub mean: [f64; 2],
    /// (σ₊₁, σ₋₁), both > 0.
    pub sigma: [f64; 2],
    /// ℓ∞ radius ε ≥ 0.
    pub eps: f64,
    /// Number of angles θ = 2πj/angles (≥ 1).
    pub angles: usize,
    /// Norms r > 0 of w = r(cos θ, sin θ) (non-empty).
    pub norms: Vec<f64>,
}

impl Setup {
    /// The standard part-A setting: 72 angles × 4 norms = 288 classifiers.
    pub fn spec() -> Self {
        Setup {
            mean: SPEC_MEAN,
            sigma: SPEC_SIGMA,
            eps: SPEC_EPSILON,
            angles: SPEC_ANGLES,
            norms: SPEC_NORMS.to_vec(),
        }
    }
}

/// Multipliers of the two bound terms (both 1 for WAT Theorem 2 itself; setting them to 0
/// shows that the check can fail).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TermScales {
    /// Multiplies `2B max_k R_{S_k}(ℓ̃_F)`.
    pub complexity: f64,
    /// Multiplies `3B√(K log(·)/(2|S|))`.
    pub deviation: f64,
}

impl TermScales {
    /// WAT Theorem 2 as printed: both multipliers 1.
    pub const THEOREM: TermScales = TermScales {
        complexity: 1.0,
        deviation: 1.0,
    };
}

impl Default for TermScales {
    fn default() -> Self {
        TermScales::THEOREM
    }
}

/// Slacks of one trial at one δ: `min_f [RHS(f) - R^rob_wc(f)]`, negative iff the version is
/// violated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeltaSlack {
    pub delta: f64,
    /// With `log(2/δ)` (as printed).
    pub stated: f64,
    /// With `log(2K/δ)` (union bound, erratum W4).
    pub union: f64,
}

impl DeltaSlack {
    /// Neither version violated.
    pub fn holds(&self) -> bool {
        self.stated >= 0.0 && self.union >= 0.0
    }
}

/// One Monte Carlo trial: a fresh sample of n per class.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// Samples per class.
    pub n: usize,
    /// `sup_f (R^rob_wc(f) - R̂^rob_wc(f))`.
    pub uniform_deviation: f64,
    /// `max_k R_{S_k}(ℓ̃_F)` (Monte Carlo estimate).
    pub max_class_rademacher: f64,
    /// One entry per requested δ, in order.
    pub slacks: Vec<DeltaSlack>,
}

impl Trial {
    /// The uniform deviation in units of √(1/(2n)) (the unit of the deviation term).
    pub fn deviation_units(&self) -> f64 {
        self.uniform_deviation * (2.0 * self.n as f64).sqrt()
    }
}

/// T trials at one (n, δ).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub delta: f64,
    pub trials: usize,
    /// Trials violating the stated version (`log 2/δ`).
    pub stated_violations: usize,
    /// Trials violating the union-bound version (`log 2K/δ`).
    pub union_violations: usize,
    /// Largest `sup_f (R_wc - R̂_wc)` over the trials, in units of √(1/(2n)).
    pub max_deviation_units: f64,
    /// The deviation term of the stated version in the same unit, `3B√(log(2/δ))` (5.76 at
    /// δ = 0.05): a violation needs at least this much uniform deviation.
    pub stated_threshold_units: f64,
    /// The same for the union version, `3B√(log(2K/δ))`.
    pub union_threshold_units: f64,
    /// Trials where `2B max_k R_{S_k}` alone covered the uniform deviation.
    pub complexity_covered: usize,
    /// Smallest stated slack over the trials.
    pub min_stated_slack: f64,
    /// Smallest union slack over the trials.
    pub min_union_slack: f64,
}

/// The part-A experiment: the classifier grid and its exact population risks.
#[derive(Debug, Clone)]
pub struct PartA {
    setup: Setup,
    classifiers: Vec<[f64; 2]>,
    /// Population robust risk per classifier and class (index 0: y = +1).
    population: Vec<[f64; 2]>,
}

fn dot(a: &[f64; 2], b: &[f64; 2]) -> f64 {
    a[0] * b[0] + a[1] * b[1]
}

/// The label y ∈ {+1, -1} of class index 0/1.
fn label(class: usize) -> f64 {
    if class == 0 { 1.0 } else { -1.0 }
}

/// Two independent N(0, 1) draws by Box-Muller: u₁ ∈ (0, 1], u₂ ∈ [0, 1),
/// `(√(-2 ln u₁) cos 2πu₂, √(-2 ln u₁) sin 2πu₂)`.
pub fn standard_normal_pair(rng: &mut ChaCha8Rng) -> (f64, f64) {
    let u1 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    let r = (-2.0 * u1.ln()).sqrt();
    let (s, c) = (TAU * u2).sin_cos();
    (r * c, r * s)
}

impl PartA {
    /// The standard part-A setting.
    pub fn spec() -> Result<Self> {
        PartA::new(Setup::spec())
    }

    /// Validates `setup`, builds the grid and computes the population risks.
    pub fn new(setup: Setup) -> Result<Self> {
        for &m in &setup.mean {
            require("mean entry", m, m.is_finite(), "a finite number")?;
        }
        for &s in &setup.sigma {
            require("sigma", s, s > 0.0 && s.is_finite(), "a finite sigma > 0")?;
        }
        require(
            "epsilon",
            setup.eps,
            setup.eps >= 0.0 && setup.eps.is_finite(),
            "a finite epsilon >= 0",
        )?;
        if setup.angles == 0 {
            return Err(TheoryError::Empty { what: "angles" });
        }
        if setup.norms.is_empty() {
            return Err(TheoryError::Empty { what: "norms" });
        }
        for &r in &setup.norms {
            require("norm", r, r > 0.0 && r.is_finite(), "a finite norm > 0")?;
        }
        let mut classifiers = Vec::with_capacity(setup.angles * setup.norms.len());
        for j in 0..setup.angles {
            let (s, c) = (TAU * j as f64 / setup.angles as f64).sin_cos();
            for &r in &setup.norms {
                classifiers.push([r * c, r * s]);
            }
        }
        let mut population = Vec::with_capacity(classifiers.len());
        for w in &classifiers {
            // y⟨w, x⟩ - ε‖w‖₁ with x = yμ + σ_y z: N(⟨w, μ⟩ - ε‖w‖₁, σ_y²‖w‖₂²).
            let m = dot(w, &setup.mean) - setup.eps * (w[0].abs() + w[1].abs());
            let norm2 = dot(w, w).sqrt();
            population.push([
                expected_ramp(m, setup.sigma[0] * norm2)?,
                expected_ramp(m, setup.sigma[1] * norm2)?,
            ]);
        }
        Ok(PartA {
            setup,
            classifiers,
            population,
        })
    }

    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The grid of weight vectors w (angle-major).
    pub fn classifiers(&self) -> &[[f64; 2]] {
        &self.classifiers
    }

    /// Exact population robust risks `R^rob_k(w) = E_{D_k} φ₁(y⟨w,x⟩ - ε‖w‖₁)`, per classifier
    /// and class (index 0: y = +1).
    pub fn population_risks(&self) -> &[[f64; 2]] {
        &self.population
    }

    /// The robust loss `φ₁(y⟨w,x⟩ - ε‖w‖₁)` of w on (x, class).
    pub fn robust_loss(&self, w: &[f64; 2], x: &[f64; 2], class: usize) -> f64 {
        ramp(label(class) * dot(w, x) - self.setup.eps * (w[0].abs() + w[1].abs()))
    }

    /// Draws n points of class `class` (0: y = +1, 1: y = -1).
    pub fn draw_class(
        &self,
        class: usize,
        n: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<[f64; 2]>> {
        if class >= CLASSES {
            return Err(TheoryError::Class {
                what: "part-A class",
                class,
                n_classes: CLASSES,
                problem: "does not exist",
            });
        }
        let y = label(class);
        let s = self.setup.sigma[class];
        let mu = self.setup.mean;
        Ok((0..n)
            .map(|_| {
                let (z1, z2) = standard_normal_pair(rng);
                [y * mu[0] + s * z1, y * mu[1] + s * z2]
            })
            .collect())
    }

    /// One trial: n samples per class, `sign_draws ≥ 2` sign vectors per class for
    /// `R_{S_k}(ℓ̃_F)`, and the slacks of both versions of WAT Theorem 2 at every δ of `deltas`
    /// (the same sample serves every δ).
    pub fn trial(
        &self,
        n: usize,
        deltas: &[f64],
        sign_draws: usize,
        scales: TermScales,
        rng: &mut ChaCha8Rng,
    ) -> Result<Trial> {
        if n == 0 {
            return Err(TheoryError::Empty {
                what: "samples per class",
            });
        }
        if deltas.is_empty() {
            return Err(TheoryError::Empty { what: "deltas" });
        }
        for (name, v) in [
            ("complexity scale", scales.complexity),
            ("deviation scale", scales.deviation),
        ] {
            require(name, v, v >= 0.0 && v.is_finite(), "a finite scale >= 0")?;
        }
        let h = self.classifiers.len();
        let nf = n as f64;
        let mut empirical = vec![[0.0f64; 2]; h];
        let mut max_rademacher = 0.0f64;
        for class in 0..CLASSES {
            let sample = self.draw_class(class, n, rng)?;
            let values: Vec<Vec<f64>> = self
                .classifiers
                .iter()
                .map(|w| {
                    sample
                        .iter()
                        .map(|x| self.robust_loss(w, x, class))
                        .collect()
                })
                .collect();
            for (emp, row) in empirical.iter_mut().zip(&values) {
                emp[class] = row.iter().sum::<f64>() / nf;
            }
            let est = finite_class_mc(&values, sign_draws, rng)?;
            max_rademacher = max_rademacher.max(est.mean);
        }
        let population_wc: Vec<f64> = self.population.iter().map(|r| r[0].max(r[1])).collect();
        let empirical_wc: Vec<f64> = empirical.iter().map(|r| r[0].max(r[1])).collect();
        let uniform_deviation = population_wc
            .iter()
            .zip(&empirical_wc)
            .map(|(p, e)| p - e)
            .fold(f64::NEG_INFINITY, f64::max);
        let sample_size = CLASSES * n;
        let mut slacks = Vec::with_capacity(deltas.len());
        for &delta in deltas {
            let mut slack = [f64::INFINITY; 2];
            for (i, confidence) in [Confidence::Stated, Confidence::UnionBound]
                .into_iter()
                .enumerate()
            {
                for (&p, &e) in population_wc.iter().zip(&empirical_wc) {
                    let b = theorem2_rhs(
                        e.clamp(0.0, LOSS_BOUND),
                        max_rademacher,
                        LOSS_BOUND,
                        CLASSES,
                        sample_size,
                        delta,
                        confidence,
                    )?;
                    let rhs = b.empirical
                        + scales.complexity * b.complexity
                        + scales.deviation * b.deviation;
                    slack[i] = slack[i].min(rhs - p);
                }
            }
            slacks.push(DeltaSlack {
                delta,
                stated: slack[0],
                union: slack[1],
            });
        }
        Ok(Trial {
            n,
            uniform_deviation,
            max_class_rademacher: max_rademacher,
            slacks,
        })
    }

    /// Runs `trials ≥ 1` trials of n samples per class and summarises them for every δ of
    /// `deltas` (the same trials serve every δ).
    pub fn run_deltas(
        &self,
        n: usize,
        deltas: &[f64],
        trials: usize,
        sign_draws: usize,
        scales: TermScales,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<Summary>> {
        if trials == 0 {
            return Err(TheoryError::Empty { what: "trials" });
        }
        let mut summaries = Vec::with_capacity(deltas.len());
        for &delta in deltas {
            let log_s = Confidence::Stated.log_term(CLASSES, delta)?;
            let log_u = Confidence::UnionBound.log_term(CLASSES, delta)?;
            summaries.push(Summary {
                n,
                delta,
                trials,
                stated_violations: 0,
                union_violations: 0,
                max_deviation_units: f64::NEG_INFINITY,
                stated_threshold_units: 3.0 * LOSS_BOUND * log_s.sqrt(),
                union_threshold_units: 3.0 * LOSS_BOUND * log_u.sqrt(),
                complexity_covered: 0,
                min_stated_slack: f64::INFINITY,
                min_union_slack: f64::INFINITY,
            });
        }
        for _ in 0..trials {
            let t = self.trial(n, deltas, sign_draws, scales, rng)?;
            let covered = t.uniform_deviation <= 2.0 * LOSS_BOUND * t.max_class_rademacher;
            for (s, d) in summaries.iter_mut().zip(&t.slacks) {
                s.stated_violations += usize::from(d.stated < 0.0);
                s.union_violations += usize::from(d.union < 0.0);
                s.max_deviation_units = s.max_deviation_units.max(t.deviation_units());
                s.complexity_covered += usize::from(covered);
                s.min_stated_slack = s.min_stated_slack.min(d.stated);
                s.min_union_slack = s.min_union_slack.min(d.union);
            }
        }
        Ok(summaries)
    }

    /// Runs `trials ≥ 1` trials at one (n, δ): violation counts of both versions and the
    /// largest uniform deviation in units of √(1/(2n)).
    pub fn run(
        &self,
        n: usize,
        delta: f64,
        trials: usize,
        sign_draws: usize,
        rng: &mut ChaCha8Rng,
    ) -> Result<Summary> {
        self.run_deltas(n, &[delta], trials, sign_draws, TermScales::THEOREM, rng)?
            .pop()
            .ok_or(TheoryError::Empty { what: "deltas" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_pieces() {
        assert_eq!(ramp(-1.0), 1.0);
        assert_eq!(ramp(0.0), 1.0);
        assert_eq!(ramp(0.25), 0.75);
        assert_eq!(ramp(1.0), 0.0);
        assert_eq!(ramp(3.0), 0.0);
        assert!(ramp(f64::NAN).is_nan());
    }

    #[test]
    fn expected_ramp_limits() {
        assert_eq!(expected_ramp(0.3, 0.0).unwrap(), 0.7);
        // Small s: close to the point mass; large |m|: 0 or 1.
        assert!((expected_ramp(0.5, 1e-9).unwrap() - 0.5).abs() < 1e-12);
        assert!(expected_ramp(40.0, 1.0).unwrap() < 1e-300);
        assert_eq!(expected_ramp(-40.0, 1.0).unwrap(), 1.0);
        // Symmetry: φ₁(t) + φ₁(1 - t) = 1, so E φ₁(N(m, s²)) + E φ₁(N(1 - m, s²)) = 1.
        for (m, s) in [(0.2, 0.7), (-1.5, 2.0), (3.0, 0.4)] {
            let a = expected_ramp(m, s).unwrap() + expected_ramp(1.0 - m, s).unwrap();
            assert!((a - 1.0).abs() < 1e-15, "{m} {s}: {a}");
        }
        assert!(expected_ramp(f64::NAN, 1.0).is_err());
        assert!(expected_ramp(0.0, -1.0).is_err());
    }

    #[test]
    fn grid_has_288_classifiers() {
        let a = PartA::spec().unwrap();
        assert_eq!(a.classifiers().len(), 288);
        assert_eq!(a.population_risks().len(), 288);
    }
}
