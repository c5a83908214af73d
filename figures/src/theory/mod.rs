//! Figures of the closed forms: CFA's binary Gaussian model (Figure 1(b), Theorems 1-4) and the
//! WAT bounds. Every series comes from `classwise-theory`.

pub mod cfa;
pub mod fig1b;
pub mod wat;

use std::path::Path;

use classwise_theory::model::{BinaryModel, Class};

use crate::error::{Result, invalid};
use crate::render::{Rendered, render};
use crate::table::{Cell, Table};

pub use fig1b::Fig1b;

/// w*_y of `model` (CFA Theorem 3), or an error naming the class when A_y has no finite
/// maximiser (p_y ∉ (1/2, 1)).
pub fn w_star(model: &BinaryModel, y: Class) -> Result<f64> {
    let argmax = model.w_star(y);
    argmax.value().ok_or_else(|| {
        invalid(
            format!(
                "w*_{y:?} of the model (d = {}, σ = {})",
                model.d(),
                model.sigma()
            ),
            argmax.label(),
            "a finite maximiser of A_y (1/2 < p_y < 1)",
        )
    })
}

/// [w*₊₁, w*₋₁] of `model`.
pub fn w_stars(model: &BinaryModel) -> Result<[f64; 2]> {
    Ok([w_star(model, Class::Pos)?, w_star(model, Class::Neg)?])
}

/// The `markers` table of the w*_y lines: class, w_star.
pub fn w_star_table(w_star: &[f64; 2]) -> Table {
    let mut markers = Table::new("markers", &["class", "w_star"]);
    for (name, w) in ["+1", "-1"].iter().zip(w_star) {
        markers
            .push(vec![Cell::from(*name), Cell::from(*w)])
            .expect("two cells");
    }
    markers
}

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
