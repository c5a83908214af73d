//! Figures of the closed forms: CFA's binary Gaussian model (Figure 1(b), Theorems 1-4) and the
//! WAT bounds. Every series comes from `classwise-theory`.

pub mod cfa;
pub mod fig1b;
pub mod wat;

use std::path::Path;

use crate::error::Result;
use crate::render::{Rendered, render};

pub use fig1b::Fig1b;

/// `n` evenly spaced points from `a` to `b`, both included.
pub fn grid(a: f64, b: f64, n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![a],
        _ => (0..n)
            .map(|i| a + (b - a) * i as f64 / (n - 1) as f64)
            .collect(),
    }
}

/// Renders every theory figure into `dir`.
pub fn render_all(dir: &Path) -> Result<Vec<Rendered>> {
    let mut out = vec![render(&Fig1b::new()?, dir)?];
    out.extend(cfa::render_all(dir)?);
    out.extend(wat::render_all(dir)?);
    Ok(out)
}
