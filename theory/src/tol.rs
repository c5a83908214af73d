//! Numerical tolerances of the crate's tests and checks, each with its reason (the statrs
//! `prec` pattern). "rel" means |a - b| ≤ tol · max(|a|, |b|), see [`rel_diff`].

/// |a - b| / max(|a|, |b|), and 0 when both are 0: the relative difference every "rel"
/// tolerance below is compared with.
pub fn rel_diff(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs());
    if scale == 0.0 {
        0.0
    } else {
        (a - b).abs() / scale
    }
}

/// Φ, Φc, φ against mpmath for |z| ≤ 37: libm's erfc is good to a few ulp and the argument
/// roundings are corrected (see `normal`); measured worst 3.8e-16 over the committed table.
pub const NORMAL_REL: f64 = 1e-14;

/// ln Φ against mpmath, every z (the asymptotic branch is accurate to ~1e-16 relative).
pub const LOG_CDF_REL: f64 = 1e-13;

/// Closed forms of the binary model against the committed mpmath table (check T0): a plain
/// f64 implementation reaches ~1e-14; 1e-12 leaves room for the σ√d and logit roundings.
pub const MODEL_REL: f64 = 1e-12;

/// Identities between closed forms that differ only by rounding (checks T1, T10): a few ulp of
/// probabilities ≤ 1.
pub const IDENTITY_ABS: f64 = 1e-14;

/// A difference of two probabilities ≤ 1 whose true value is at or below f64 resolution (checks
/// T7-T9 near p₋₁ = 1/2 or far along w): each side carries a few ulp of rounding, so the computed
/// difference may come out a few ε below 0. Below this size a sign is not resolvable.
pub const PROB_DIFF_ABS: f64 = 8.0 * f64::EPSILON;

/// Fixed regression values, computed independently (mpmath) to ~15 digits (checks T8, T9, T11,
/// H5).
pub const SPEC_VALUE_REL: f64 = 1e-10;

/// Numerical derivative at an argmax, relative to the derivative's natural scale max φ/s
/// (checks T3/T5): central differences with h ~ 1e-5 leave ~1e-10.
pub const ARGMAX_DERIV_REL: f64 = 1e-8;

/// Value comparisons at an argmax against nearby points (check T3): the argmax must not be
/// beaten by more than rounding.
pub const ARGMAX_VALUE_SLACK: f64 = 1e-15;

// ----- WAT (checks H1-H6, G1-G4) -----

/// H1 (weights): rel 1e-12; the softmax with max-subtraction loses a few ulp of `η G ≤ 250`.
pub const H1_TOL: f64 = 1e-12;
/// H2 (ineq. (18), Hoeffding form): 1e-9 relative to the sums (T ≤ 500 terms).
pub const H2_TOL: f64 = 1e-9;
/// H3/H4 (Theorem 1, (T1a), (T1b)): 1e-12 relative to the per-round RHS.
pub const H34_TOL: f64 = 1e-12;
/// H5 regression values: rel 1e-10.
pub const H5_TOL: f64 = 1e-10;
/// H6 regression values: rel 1e-12.
pub const H6_TOL: f64 = 1e-12;
/// G1: rel 1e-14 between two evaluation orders of the same closed form.
pub const G1_TOL: f64 = 1e-14;
/// G4: rel 1e-12 on c.
pub const G4_TOL: f64 = 1e-12;
/// Half a unit of the 5th decimal: the independently computed P(stated fails) = 0.90366 has 5
/// decimals.
pub const G2_EXACT_TOL: f64 = 5e-6;
/// Table rows whose K is printed to 3 significant digits: rel change of K up to 5e-3 moves P
/// by at most a few 1e-4.
pub const G2_TABLE_TOL: f64 = 5e-4;
/// |z| bound for the simulation/formula agreement (a 4-sigma band).
pub const G2_Z: f64 = 4.0;
/// G3 (part A): the closed form of E φ₁(N(m, s²)) against composite Simpson quadrature with the
/// kinks as breakpoints. The closed form is good to a few 1e-16; Simpson with
/// h ≤ 2e-3 leaves ≲ 1e-13; 1e-11 covers both.
pub const G3_RAMP_QUADRATURE_ABS: f64 = 1e-11;
/// G3 (part A): |z| bound for the empirical class risk of a large sample against the exact
/// population risk (a 5-sigma band; a check of the Box-Muller sampling, not of a closed form).
pub const G3_SAMPLING_Z: f64 = 5.0;
