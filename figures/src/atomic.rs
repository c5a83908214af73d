//! Writing a file so that a reader never sees it half-written. Both the figures
//! ([`mod@crate::render`]) and their data tables ([`crate::table`]) write through it.

use std::path::Path;

use crate::error::{FigureError, Result};

/// Writes `bytes` to `path` atomically ([`classwise_core::io::write_atomic`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    classwise_core::io::write_atomic(path, bytes).map_err(|e| FigureError::Io {
        action: e.action,
        path: e.path,
        source: e.source,
    })
}
