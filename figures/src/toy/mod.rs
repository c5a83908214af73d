//! Figures from simulations of `classwise-toy`: CFA Figure 1(a), Monte Carlo against closed
//! forms, CFA's CCM on the binary model, and the multi-class toy (theory spec §8 items 1, 8, 11;
//! issue 5).

use std::path::Path;

use crate::error::Result;
use crate::render::Rendered;

/// Settings of the toy figures.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Seed of every random stream.
    pub seed: u64,
    /// Smaller samples and fewer epochs (for tests); the figures keep their layout.
    pub quick: bool,
}

/// Renders every toy figure into `dir`.
pub fn render_all(dir: &Path, options: &Options) -> Result<Vec<Rendered>> {
    let _ = (dir, options);
    Ok(Vec::new())
}
