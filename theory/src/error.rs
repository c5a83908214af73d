//! The crate's error type.

/// Invalid input to a theory function. Each variant names the offending parameter and what was
/// expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TheoryError {
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

    #[error("`{what}` is empty")]
    Empty { what: &'static str },

    #[error("`{what}`: class {class} (of {n_classes}) {problem}")]
    Class {
        what: &'static str,
        class: usize,
        n_classes: usize,
        problem: &'static str,
    },
}

pub type Result<T, E = TheoryError> = std::result::Result<T, E>;

/// Checks `value` against one of the shared [`Bound`](crate::check::Bound)s, naming the
/// parameter on failure.
pub(crate) fn check(name: &'static str, value: f64, bound: crate::check::Bound) -> Result<f64> {
    require(name, value, bound.holds(value), bound.expected())
}

/// Checks `value` against a predicate, naming the parameter on failure (also rejects NaN, since
/// every predicate used here is false for NaN).
pub(crate) fn require(
    name: &'static str,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<f64> {
    if ok && !value.is_nan() {
        Ok(value)
    } else {
        Err(TheoryError::InvalidParameter {
            name,
            value,
            expected,
        })
    }
}
