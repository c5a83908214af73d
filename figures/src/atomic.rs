//! Writing a file so that a reader never sees it half-written. Both the figures
//! ([`mod@crate::render`]) and their data tables ([`crate::table`]) write through it.

use std::io::Write as _;
use std::path::Path;

use crate::error::{FigureError, Result};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so a
/// reader never sees a half-written file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let io = |action: &'static str| {
        move |source| FigureError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "figure".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(io("creating"))?;
    f.write_all(bytes).map_err(io("writing"))?;
    f.sync_all().map_err(io("syncing"))?;
    drop(f);
    std::fs::rename(&tmp, path).map_err(io("renaming into"))
}
