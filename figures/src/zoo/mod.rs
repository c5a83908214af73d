//! The figures of a class-wise leaderboard (`classwise zoo run`, [`Leaderboard`]): robust
//! accuracy by model and class as a heat map ([`ZooHeatmap`]), and each model's rank by
//! average robust accuracy against its rank by worst-class robust accuracy, with the two
//! accuracies themselves ([`ZooRanks`]); Tian et al. §4.3 (Table 1) compare defences the same
//! way, class by class.

mod heatmap;
mod ranks;

pub use heatmap::ZooHeatmap;
pub use ranks::ZooRanks;

use std::path::Path;

use classwise_core::record::Leaderboard;

use crate::error::Result;
use crate::render::{Rendered, render, write_index};

/// Renders both figures of `board` and their gallery into `dir`.
pub fn render_all(board: &Leaderboard, dir: &Path) -> Result<Vec<Rendered>> {
    let rendered = vec![
        render(&ZooHeatmap::new(board.clone()), dir)?,
        render(&ZooRanks::new(board.clone()), dir)?,
    ];
    let intro = format!(
        "{} models on {} at eps = {} ({}, {} test images each).",
        board.models.len(),
        board.dataset,
        board.eps_text,
        board.protocol,
        board.n_samples
    );
    write_index(dir, "Class-wise leaderboard", &intro, &rendered)?;
    Ok(rendered)
}
