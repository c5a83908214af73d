//! The crate's error type.

use classwise_core::CoreError;
use classwise_theory::TheoryError;
pub(crate) use classwise_theory::check::Bound;

/// Invalid input to a simulation. Each variant names the offending parameter and what was
/// expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToyError {
    #[error("parameter `{name}` = {value}: expected {expected}")]
    InvalidParameter {
        name: &'static str,
        value: f64,
        expected: &'static str,
    },

    #[error("`{what}` has length {got}, expected {expected}")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },

    /// A run stopped by a signal (or a test's stop point) before 0-based `epoch`; the toy
    /// keeps no checkpoint, so it is run again from the start.
    #[error(
        "the toy run was interrupted{} before epoch {}; it keeps no checkpoint: run it again",
        signal.as_ref().map(|s| format!(" by {s}")).unwrap_or_default(),
        epoch + 1
    )]
    Interrupted {
        epoch: usize,
        signal: Option<String>,
    },

    /// A file that could not be read or is not what it should be.
    #[error("{path}: {reason}")]
    File {
        path: std::path::PathBuf,
        reason: String,
    },

    #[error(transparent)]
    Theory(#[from] TheoryError),

    /// Invalid settings or observations of a class-wise rule or a weight average
    /// ([`classwise_core`]); the error names the field.
    #[error(transparent)]
    Core(#[from] CoreError),
}

pub type Result<T, E = ToyError> = std::result::Result<T, E>;

/// Checks `value` against one of the shared [`Bound`]s, naming the parameter on failure.
pub(crate) fn check(name: &'static str, value: f64, bound: Bound) -> Result<f64> {
    require(name, value, bound.holds(value), bound.expected())
}

/// Checks `value` against a predicate, naming the parameter on failure (NaN always fails).
pub(crate) fn require(
    name: &'static str,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<f64> {
    if ok && !value.is_nan() {
        Ok(value)
    } else {
        Err(ToyError::InvalidParameter {
            name,
            value,
            expected,
        })
    }
}

/// Checks that a count is at least `min`.
pub(crate) fn require_count(name: &'static str, value: usize, min: usize) -> Result<usize> {
    if value >= min {
        Ok(value)
    } else {
        Err(ToyError::InvalidParameter {
            name,
            value: value as f64,
            expected: if min == 1 { ">= 1" } else { ">= 2" },
        })
    }
}
