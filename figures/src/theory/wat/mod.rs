//! Panels of the WAT bounds: Hedge (Theorem 1) and the worst-class Rademacher bound (Theorem 2).

pub mod hedge;
pub mod thm2;

use std::path::Path;

use crate::error::Result;
use crate::render::{Rendered, render};

pub use hedge::HedgePanels;
pub use thm2::{MonteCarlo, Thm2Panels};

/// Renders every figure of this module into `dir`: `wat-hedge`, then `wat-thm2`.
pub fn render_all(dir: &Path) -> Result<Vec<Rendered>> {
    Ok(vec![
        render(&HedgePanels::new()?, dir)?,
        render(&Thm2Panels::new()?, dir)?,
    ])
}

/// Size of the 2×2 panel figures.
pub const PANELS: (u32, u32) = (1600, 1200);

/// `n` integers from `1` to `max` spaced evenly in log scale (duplicates removed, both ends
/// included).
fn int_log_grid(max: usize, n: usize) -> Vec<usize> {
    let top = (max.max(1) as f64).ln();
    let mut out: Vec<usize> = (0..n.max(2))
        .map(|i| (top * i as f64 / (n.max(2) - 1) as f64).exp().round() as usize)
        .map(|v| v.clamp(1, max.max(1)))
        .collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_log_grid() {
        let g = int_log_grid(1000, 7);
        assert_eq!(g.first(), Some(&1));
        assert_eq!(g.last(), Some(&1000));
        assert!(g.windows(2).all(|w| w[0] < w[1]));
    }
}
