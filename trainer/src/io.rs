//! The trainer's files that survive a crash, written through [`classwise_core::io::write_atomic`].

use std::path::Path;

use crate::error::{Result, TrainerError};

/// Writes `bytes` to `path` atomically ([`classwise_core::io::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(classwise_core::io::write_atomic(path, bytes)?)
}

/// Pretty JSON of `value`, written atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, what: &'static str, value: &T) -> Result<()> {
    let mut text =
        serde_json::to_vec_pretty(value).map_err(|source| TrainerError::Json { what, source })?;
    text.push(b'\n');
    write_atomic(path, &text)
}
