//! WAT (Li & Liu, AAAI 2023): Hedge over the K+1 decisions and the paper's bounds (Theorems 1-3).
//!
//! * [`hedge`]: Hedge in gains form (eq. (12)) and the linear MW update of Lemma 1.
//! * [`no_regret`]: Theorem 1, ineq. (18), the corrected forms (T1a)/(T1b), the Lemma-1
//!   oscillation.
//! * [`sequences`]: loss sequences that exercise Theorem 1.
//! * [`rademacher`]: empirical Rademacher complexity estimators.
//! * [`generalization`]: Theorems 2 and 3, as printed and with the union bound.
//! * [`counterexample`]: the exact failure probability of Theorem 2 as printed (erratum W4).

mod checks;
pub mod counterexample;
pub mod generalization;
pub mod hedge;
pub mod monte_carlo;
pub mod no_regret;
pub mod rademacher;
pub mod sequences;

pub use checks::{constant_sequence, w1_sequence};

use crate::tally::{CheckReport, ErratumReport};

/// Adds the WAT checks (H1-H6, G1-G4) and errata (W1-W6) to the verify report: `cases`
/// random draws per random check, from the streams `tally::rng_for(seed, id)`.
pub fn checks(
    cases: usize,
    seed: u64,
    out: &mut Vec<CheckReport>,
    errata: &mut Vec<ErratumReport>,
) {
    checks::run(cases, seed, out, errata);
}

/// A confidence level δ ∈ (0, 1) of WAT Theorems 2-3.
pub(crate) fn check_delta(delta: f64) -> crate::Result<f64> {
    crate::error::require("delta", delta, delta > 0.0 && delta < 1.0, "δ in (0, 1)")
}
