//! The error type of `classwise-figures`.

use std::path::PathBuf;

/// Everything that can go wrong while computing or drawing a figure.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    /// A closed form or a rule of `classwise-theory` refused its input.
    #[error(transparent)]
    Theory(#[from] classwise_theory::TheoryError),
    /// A simulation of `classwise-toy` refused its input.
    #[error(transparent)]
    Toy(#[from] classwise_toy::ToyError),
    /// A record of a run (report, metrics line) refused by `classwise-core`.
    #[error(transparent)]
    Core(#[from] classwise_core::CoreError),
    /// plotters failed while drawing `figure`.
    #[error("drawing {figure}: {message}")]
    Draw { figure: String, message: String },
    /// Reading or writing a file.
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Encoding a PNG or a CSV.
    #[error("encoding {what}: {message}")]
    Encode { what: String, message: String },
    /// A parameter outside its domain; names the parameter, its value and what was expected.
    #[error("{name} = {value}: expected {expected}")]
    Invalid {
        name: String,
        value: String,
        expected: String,
    },
}

/// `Result` with [`FigureError`].
pub type Result<T> = std::result::Result<T, FigureError>;

/// A [`FigureError::Invalid`].
pub fn invalid(
    name: impl Into<String>,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> FigureError {
    FigureError::Invalid {
        name: name.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}
