//! The machinery behind `classwise theory verify`: every check is run on random parameter draws
//! within its hypotheses and on boundary cases, and tallied into one row of a report; every
//! erratum (C1-C9 for CFA, W1-W6 for WAT) is re-confirmed with its counterexample. The rows and
//! the tally the checks record into are in [`crate::tally`].

use std::fmt;

use serde::Serialize;

pub use crate::tally::{CheckReport, ErratumReport, Tally, rng_for};

/// Everything `verify` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub seed: u64,
    pub cases_per_check: usize,
    pub checks: Vec<CheckReport>,
    pub errata: Vec<ErratumReport>,
}

impl Report {
    /// True when every must-hold check passed on every case and every erratum was confirmed.
    pub fn ok(&self) -> bool {
        self.checks.iter().all(CheckReport::ok) && self.errata.iter().all(|e| e.confirmed)
    }
}

/// Runs every check with `cases` random draws each, from `seed`.
pub fn run(cases: usize, seed: u64) -> Report {
    let mut checks = Vec::new();
    let mut errata = Vec::new();
    crate::theorems::checks(cases, seed, &mut checks, &mut errata);
    crate::wat::checks(cases, seed, &mut checks, &mut errata);
    Report {
        seed,
        cases_per_check: cases,
        checks,
        errata,
    }
}

impl fmt::Display for Report {
    /// One row per check (its reference, cases, passes, worst margin and hypotheses), then each
    /// erratum with its counterexample. The closing tally line (with the time taken) is the
    /// caller's.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (id, reference, cases, passed) = ("id", "reference", "cases", "passed");
        let margin = "worst margin";
        writeln!(
            f,
            "{id:<4} {reference:<44} {cases:>6} {passed:>6} {margin:>12}  hypotheses"
        )?;
        for c in &self.checks {
            let mark = if c.ok() { "" } else { "  <-- FAILED" };
            writeln!(
                f,
                "{:<4} {:<44} {:>6} {:>6} {:>12.3e}  {}{mark}",
                c.id, c.reference, c.cases, c.passed, c.worst_margin, c.hypotheses
            )?;
        }
        writeln!(f, "\nerrata")?;
        for e in &self.errata {
            let status = if e.confirmed {
                "confirmed"
            } else {
                "NOT CONFIRMED"
            };
            writeln!(f, "{:<4} {status:<13} {}: {}", e.id, e.reference, e.claim)?;
            writeln!(f, "     {}", e.counterexample)?;
        }
        Ok(())
    }
}
