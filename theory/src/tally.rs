//! What every check of `classwise theory verify` records into: [`Tally`] accumulates one
//! property's outcome over its cases into a [`CheckReport`] row, [`ErratumReport`] re-states one
//! erratum, and [`rng_for`] gives each check its own random stream. It imports no check, so that
//! the checks ([`crate::theorems`], [`crate::wat`]) and [`crate::verify`], which runs them, both
//! build on it without importing each other.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use serde::Serialize;

/// One row of the verify table: a property checked over many cases.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Check id of the property, e.g. "T3", "H3".
    pub id: String,
    /// Paper reference, e.g. "CFA Theorem 3", "WAT Theorem 2".
    pub reference: String,
    /// The hypotheses the cases were drawn under.
    pub hypotheses: String,
    pub cases: usize,
    pub passed: usize,
    /// Smallest margin over the cases: how far the property was from failing (negative when it
    /// failed). Its unit depends on the check (a probability gap, a derivative, a bound's slack).
    pub worst_margin: f64,
    /// A check that must hold: if any case fails, `verify` exits with status 1.
    pub must_hold: bool,
}

impl CheckReport {
    pub fn ok(&self) -> bool {
        !self.must_hold || self.passed == self.cases
    }
}

/// One erratum (C1-C9 for CFA, W1-W6 for WAT), re-computed.
#[derive(Debug, Clone, Serialize)]
pub struct ErratumReport {
    /// Erratum id, e.g. "C1".
    pub id: String,
    /// Paper reference, e.g. "CFA Theorem 2".
    pub reference: String,
    /// What the paper states, in short.
    pub claim: String,
    /// Whether the counterexample (or the numbers that show the problem) was reproduced.
    pub confirmed: bool,
    /// The counterexample, with the numbers computed now.
    pub counterexample: String,
}

impl ErratumReport {
    pub fn new(
        id: &str,
        reference: &str,
        claim: &str,
        confirmed: bool,
        counterexample: String,
    ) -> Self {
        ErratumReport {
            id: id.to_string(),
            reference: reference.to_string(),
            claim: claim.to_string(),
            confirmed,
            counterexample,
        }
    }

    /// An erratum whose numbers could not be computed: reported as not confirmed.
    pub fn not_evaluated(id: &str, reference: &str, claim: &str) -> Self {
        Self::new(id, reference, claim, false, "evaluation failed".into())
    }
}

/// Accumulates one property's outcome over cases.
#[derive(Debug, Clone)]
pub struct Tally {
    report: CheckReport,
}

impl Tally {
    pub fn new(id: &str, reference: &str, hypotheses: &str) -> Self {
        Tally {
            report: CheckReport {
                id: id.to_string(),
                reference: reference.to_string(),
                hypotheses: hypotheses.to_string(),
                cases: 0,
                passed: 0,
                worst_margin: f64::INFINITY,
                must_hold: true,
            },
        }
    }

    /// Records one case: whether the property held, and its margin (NaN counts as a failure
    /// with margin -inf).
    pub fn record(&mut self, holds: bool, margin: f64) {
        let r = &mut self.report;
        r.cases += 1;
        let margin = if margin.is_nan() {
            f64::NEG_INFINITY
        } else {
            margin
        };
        if holds && margin > f64::NEG_INFINITY {
            r.passed += 1;
        }
        r.worst_margin = r.worst_margin.min(margin);
    }

    /// Records a case whose margin decides it: holds iff `margin >= 0`.
    pub fn record_margin(&mut self, margin: f64) {
        self.record(margin >= 0.0, margin);
    }

    pub fn finish(self) -> CheckReport {
        self.report
    }
}

/// The generator every check draws from: ChaCha8 (named, so streams never change under a rand
/// upgrade), one stream per check so that adding a check does not shift the others.
pub fn rng_for(seed: u64, check_id: &str) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let stream = check_id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    rng.set_stream(stream);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_counts_failures_and_nan() {
        let mut t = Tally::new("X", "ref", "h");
        t.record_margin(0.5);
        t.record_margin(-0.25);
        t.record(true, f64::NAN);
        let r = t.finish();
        assert_eq!((r.cases, r.passed), (3, 1));
        assert_eq!(r.worst_margin, f64::NEG_INFINITY);
        assert!(!r.ok());
    }

    #[test]
    fn streams_differ_per_check_and_repeat_per_seed() {
        use rand::RngExt;
        let a: u64 = rng_for(1, "T1").random();
        let b: u64 = rng_for(1, "T2").random();
        let c: u64 = rng_for(1, "T1").random();
        assert_ne!(a, b);
        assert_eq!(a, c);
    }
}
