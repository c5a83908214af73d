//! The papers' class-wise figures, drawn from a [`Comparison`] of run directories, one module a
//! figure:
//!
//! * [`ClassBars`] (`class_bars`): robust accuracy per class of each method, with the worst class
//!   and the mean (CFA Fig. 6, WAT Fig. 2);
//! * [`Radar`] (`radar`): the same per-class robust accuracies on a radar chart (WAT Figs. 4-6);
//! * [`ErrorBars`] (`error_bars`): robust error per class split into standard and boundary error
//!   (BAT Fig. 5);
//! * [`Confusion`] (`confusion`): the confusion matrix under attack of each method,
//!   row-normalised (Tian et al. Fig. 2) or as misclassified counts (Tian et al. Fig. 4a), drawn
//!   with the heat-map panels of `matrix`, which the training confusion and the homing matrix
//!   share.
//!
//! This module holds what they share: the [`Selection`] of methods they draw and the legend
//! entries of the methods. The figures over the epochs are in [`epochs`](super::epochs), those
//! against a swept parameter in [`param`](super::param).

mod class_bars;
mod confusion;
mod error_bars;
pub(crate) mod matrix;
mod radar;

pub use class_bars::ClassBars;
pub use confusion::{Confusion, ConfusionKind};
pub use error_bars::ErrorBars;
pub(crate) use matrix::{MatrixCells, draw_matrix, push_matrices};
pub use radar::Radar;

use super::load::AttackKey;
use super::stats::{Comparison, Stats};
use crate::error::{Result, invalid};
use crate::legend::Entry;
use crate::style;

/// One method (group) of a figure: its name and statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Method {
    pub name: String,
    pub stats: Stats,
}

/// What the per-class figures show: every method (group) of a comparison evaluated as `model`
/// under `key`.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    pub model: String,
    pub key: AttackKey,
    pub class_names: Vec<String>,
    pub methods: Vec<Method>,
}

impl Selection {
    /// The methods of `c` in group order; an error when one lacks that evaluation.
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        let methods = c
            .groups
            .iter()
            .map(|g| {
                g.get(model, key)
                    .map(|s| Method {
                        name: g.name.clone(),
                        stats: s.clone(),
                    })
                    .ok_or_else(|| {
                        invalid(
                            format!("group {}", g.name),
                            format!("no `{model}` evaluation {}", key.describe()),
                            "the same evaluation in every group compared",
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Selection {
            model: model.to_owned(),
            key: key.clone(),
            class_names: c.class_names(),
            methods,
        })
    }

    /// Two lines under each class's group of bars: its index and its name.
    pub fn class_labels(&self) -> Vec<(String, String)> {
        self.class_names
            .iter()
            .enumerate()
            .map(|(c, n)| (c.to_string(), n.clone()))
            .collect()
    }
}

/// The legend of the methods: a box in each method's colour, named with its number of runs.
pub(crate) fn method_entries(methods: &[Method]) -> Vec<Entry> {
    methods
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Entry::boxed(
                style::color(i),
                format!(
                    "{} ({} run{})",
                    m.name,
                    m.stats.runs.len(),
                    plural(m.stats.runs.len())
                ),
            )
        })
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
