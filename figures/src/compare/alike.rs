//! Which evaluations may be averaged and compared: under one attack key, every run's report
//! must count robust images the same way, compute in the same precision and evaluate the same
//! number of test images per class. Otherwise `compare` refuses, naming two reports that
//! differ, instead of averaging unlike numbers.

use classwise_core::eval::{Precision, RobustCounting};
use classwise_core::record::Report;

use super::load::{AttackKey, RunResults};
use crate::error::{Result, invalid};

/// How one report was made, as far as comparability goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conditions {
    /// The counting its robust accuracy is read under ([`counting_of`]).
    pub counting: RobustCounting,
    pub precision: Precision,
    /// Test images per class.
    pub per_class: Vec<u64>,
}

/// The counting `report` is read under: `prefer` when the report has it (reports of attacks
/// that attack every image carry both countings), else the report's own.
pub fn counting_of(report: &Report, prefer: Option<RobustCounting>) -> RobustCounting {
    match prefer {
        Some(c) if report.robust_under(c).is_some() => c,
        _ => report.robust_counting,
    }
}

/// The conditions of `report` when robust accuracy is read as `prefer` asks.
pub fn conditions(report: &Report, prefer: Option<RobustCounting>) -> Conditions {
    Conditions {
        counting: counting_of(report, prefer),
        precision: report.precision,
        per_class: report.errors.totals.clone(),
    }
}

/// Checks that, key by key, every evaluation of every run (all models) has the conditions of
/// the first one found; the error names both files and what differs.
pub fn check(runs: &[RunResults], prefer: Option<RobustCounting>) -> Result<()> {
    let mut first: Vec<(&AttackKey, Conditions, String)> = Vec::new();
    for run in runs {
        for e in &run.evaluations {
            let here = conditions(&e.report, prefer);
            let file = run.input.dir.join(&e.file).display().to_string();
            match first.iter().find(|(k, _, _)| *k == &e.key) {
                None => first.push((&e.key, here, file)),
                Some((key, there, other)) => {
                    if let Some(what) = difference(there, &here) {
                        return Err(refusal(key, what, other, file));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The error for `file`, whose report under `key` differs from `other`'s in `what` (the
/// quantity, `other`'s value and `file`'s value).
fn refusal(
    key: &AttackKey,
    (what, theirs, ours): (&str, String, String),
    other: &str,
    file: String,
) -> crate::error::FigureError {
    let hint = match what {
        "robust counting" => {
            "; `--robust-counting` reads the reports that carry both countings one way"
        }
        _ => "",
    };
    invalid(
        file,
        format!("{what} {ours} under {}", key.describe()),
        format!(
            "{what} {theirs}, as {other}: reports that differ so cannot be averaged or \
             compared{hint}"
        ),
    )
}

/// What differs between two conditions, with the first's and the second's value; `None` when
/// they agree.
fn difference(a: &Conditions, b: &Conditions) -> Option<(&'static str, String, String)> {
    if a.counting != b.counting {
        Some((
            "robust counting",
            a.counting.to_string(),
            b.counting.to_string(),
        ))
    } else if a.precision != b.precision {
        Some((
            "precision",
            a.precision.to_string(),
            b.precision.to_string(),
        ))
    } else if a.per_class != b.per_class {
        let list = |v: &[u64]| format!("{v:?}");
        Some((
            "test images per class",
            list(&a.per_class),
            list(&b.per_class),
        ))
    } else {
        None
    }
}
