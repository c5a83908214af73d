//! The trainer's error type.

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

    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),

    #[error("cannot serialise {what}: {source}")]
    Json {
        what: &'static str,
        source: serde_json::Error,
    },
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
