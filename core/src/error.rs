//! The crate's error type.

use classwise_theory::TheoryError;
pub(crate) use classwise_theory::check::Bound;

/// Invalid settings or observations of a rule, an averaging or a selection strategy. Each
/// variant names the field and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    #[error("`{field}` = {value}: expected {expected}")]
    Invalid {
        field: String,
        value: String,
        expected: String,
    },

    #[error("`{what}` has length {got}, expected {expected}")]
    LengthMismatch {
        what: String,
        expected: usize,
        got: usize,
    },

    #[error("the rule `{rule}` needs {what} after epoch {epoch}, but it was not measured")]
    Missing {
        rule: &'static str,
        what: &'static str,
        epoch: usize,
    },

    #[error("the rule `{rule}` needs {what} before the first epoch, but it was not measured")]
    MissingInitial {
        rule: &'static str,
        what: &'static str,
    },

    /// A `metrics.jsonl` line that is not JSON, or does not match its schema (`None` when the
    /// schema could not be read).
    #[error(
        "not a metrics line{}: {message}",
        schema.map(|s| format!(" of schema {s}")).unwrap_or_default()
    )]
    Record {
        schema: Option<u32>,
        message: String,
    },

    /// A `metrics.jsonl` line of a schema this build cannot read (written by a newer
    /// classwise).
    #[error("metrics schema {schema} cannot be read by this build, which reads schemas {readable}")]
    UnsupportedSchema { schema: u32, readable: String },

    /// A record (a class-wise, AutoAttack or protocol report, `selection.json`, `state.json`,
    /// ...) that is not JSON or lacks a field: `kind` says what it should be.
    #[error("{what}: not {kind}: {message}")]
    File {
        what: String,
        kind: &'static str,
        message: String,
    },

    /// A run's `config.toml` that is not TOML or whose fields have the wrong type.
    #[error("{what}: not a run configuration written by `classwise train`: {message}")]
    Config { what: String, message: String },

    /// A signal handler that could not be installed ([`crate::interrupt`]).
    #[error("installing a handler for signal {signal}: {message}")]
    Signal { signal: i32, message: String },

    /// A file that could not be read.
    #[error("reading {path}: {message}")]
    Read { path: String, message: String },

    #[error(transparent)]
    Theory(#[from] TheoryError),
}

pub type Result<T, E = CoreError> = std::result::Result<T, E>;

/// A [`CoreError::Invalid`].
pub(crate) fn invalid(
    field: impl Into<String>,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> CoreError {
    CoreError::Invalid {
        field: field.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// `v` within one of the shared bounds ([`Bound`]), or an error naming `field`.
pub(crate) fn check(field: &str, v: f64, bound: Bound) -> Result<f64> {
    if bound.holds(v) {
        Ok(v)
    } else {
        Err(invalid(field, v, bound.expected()))
    }
}

/// `values.len() == expected`.
pub(crate) fn same_len(what: &str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(CoreError::LengthMismatch {
            what: what.to_string(),
            expected,
            got,
        })
    }
}
