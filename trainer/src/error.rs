//! The trainer's error type.

pub use classwise_theory::check::Bound;
use std::path::PathBuf;

pub type Result<T, E = TrainerError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainerError {
    #[error("{context} {path}: {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "{path}: not a valid idx file: {reason} (expected the gzipped idx format of \
         (Fashion-)MNIST, as shipped by Debian's dataset-fashion-mnist)"
    )]
    BadIdx { path: PathBuf, reason: String },

    /// A data file in a known format with a problem at a known place.
    #[error("{path}{}: {reason}", offset.map(|o| format!(" at byte {o}")).unwrap_or_default())]
    BadData {
        path: PathBuf,
        offset: Option<u64>,
        reason: String,
    },

    /// An invalid value of a configuration field or argument, named by `field`.
    #[error("`{field}` = {value}: expected {expected}")]
    Invalid {
        field: String,
        value: String,
        expected: String,
    },

    /// An external program (Slurm's `sbatch`) failed.
    #[error("{command}: {reason}")]
    Command { command: String, reason: String },

    /// A worker thread could not start, or ended before its work was done (it panicked).
    #[error("the {what} thread: {reason}")]
    Worker { what: &'static str, reason: String },

    #[error(transparent)]
    Theory(#[from] classwise_theory::TheoryError),

    #[error(transparent)]
    Core(#[from] classwise_core::CoreError),

    /// A training step produced a NaN or an infinity.
    #[error("a non-finite value in epoch {epoch}, batch {batch} (0-based): {what}")]
    NonFinite {
        /// 1-based epoch.
        epoch: usize,
        /// 0-based batch of the epoch.
        batch: usize,
        what: String,
    },

    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),

    #[error("cannot serialise {what}: {source}")]
    Json {
        what: &'static str,
        source: serde_json::Error,
    },
}

impl TrainerError {
    /// The error with `section.` before the field name of a [`TrainerError::Invalid`] (e.g.
    /// `attack.steps` becomes `train.method.attack.steps`); other errors are unchanged.
    pub fn in_section(self, section: &str) -> Self {
        match self {
            TrainerError::Invalid {
                field,
                value,
                expected,
            } => TrainerError::Invalid {
                field: format!("{section}.{field}"),
                value,
                expected,
            },
            other => other,
        }
    }
}

/// `v` within one of the shared bounds ([`Bound`]), or an error naming `field`.
pub fn check(field: impl Into<String>, v: f64, bound: Bound) -> Result<f64> {
    if bound.holds(v) {
        Ok(v)
    } else {
        Err(invalid(field, v, bound.expected()))
    }
}

/// A [`TrainerError::BadData`] about the whole file at `path` (no byte offset).
pub fn bad_data(path: &std::path::Path, reason: impl Into<String>) -> TrainerError {
    TrainerError::BadData {
        path: path.to_path_buf(),
        offset: None,
        reason: reason.into(),
    }
}

/// An [`TrainerError::Invalid`] for `field`.
pub fn invalid(
    field: impl Into<String>,
    value: impl std::fmt::Display,
    expected: impl Into<String>,
) -> TrainerError {
    TrainerError::Invalid {
        field: field.into(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// Attaches an action and a path to an `io::Error`.
pub trait IoContext<T> {
    fn at(self, context: &'static str, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, context: &'static str, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|source| TrainerError::Io {
            context,
            path: path.into(),
            source,
        })
    }
}

impl From<classwise_core::io::WriteError> for TrainerError {
    fn from(e: classwise_core::io::WriteError) -> Self {
        TrainerError::Io {
            context: e.action,
            path: e.path,
            source: e.source,
        }
    }
}
