//! The confusion matrix under attack of every method, the mean over each method's seeds: row
//! normalised (Tian et al. Fig. 2) or the misclassified counts (Tian et al. Fig. 4a).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::Selection;
use super::matrix::{MatrixCells, draw_matrix, push_matrices};
use crate::compare::load::AttackKey;
use crate::compare::stats::Comparison;
use crate::error::{Result, invalid};
use crate::render::Figure;
use crate::style::DrawResult;
use crate::table::{Cell, Table};

/// Which matrix of the reports a [`Confusion`] figure draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfusionKind {
    /// The confusion matrix under attack, each row normalised (Tian et al. Fig. 2).
    RowNormalised,
    /// The confusion counts under attack with the diagonal hidden (Tian et al. Fig. 4a, the
    /// "misclassified confusion matrix").
    Misclassified,
}

/// A confusion matrix under attack of every method, the mean over each method's seeds: row
/// normalised (Tian et al. Fig. 2) or the misclassified counts (Tian et al. Fig. 4a).
#[derive(Clone, Debug, PartialEq)]
pub struct Confusion {
    pub kind: ConfusionKind,
    pub model: String,
    pub key: AttackKey,
    pub class_names: Vec<String>,
    /// (method, matrix): fractions of the row, or counts.
    pub methods: Vec<(String, Vec<Vec<f64>>)>,
}

impl Confusion {
    /// Fails when a method's reports have no confusion counts.
    pub fn new(c: &Comparison, model: &str, key: &AttackKey, kind: ConfusionKind) -> Result<Self> {
        let selection = Selection::new(c, model, key)?;
        let methods = selection
            .methods
            .into_iter()
            .map(|m| {
                let matrix = match kind {
                    ConfusionKind::RowNormalised => m.stats.confusion,
                    ConfusionKind::Misclassified => m.stats.misclassified,
                };
                match matrix {
                    Some(matrix) => Ok((m.name, matrix)),
                    None => Err(invalid(
                        format!("group {}", m.name),
                        format!("`{model}` {} without confusion counts", key.describe()),
                        "reports with confusion_under_attack (written by `classwise train` and \
                         `classwise eval`)",
                    )),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Confusion {
            kind,
            model: selection.model,
            key: selection.key,
            class_names: selection.class_names,
            methods,
        })
    }

    fn cells(&self) -> MatrixCells {
        match self.kind {
            ConfusionKind::RowNormalised => MatrixCells::FRACTIONS,
            ConfusionKind::Misclassified => MatrixCells::counts(
                self.methods
                    .iter()
                    .flat_map(|(_, m)| m.iter().flatten().copied()),
            ),
        }
    }
}

const CONFUSION_AXES: [&str; 2] = ["predicted class under attack", "true class"];

impl Figure for Confusion {
    fn id(&self) -> &'static str {
        match self.kind {
            ConfusionKind::RowNormalised => "compare-confusion",
            ConfusionKind::Misclassified => "compare-misclassified",
        }
    }

    fn title(&self) -> String {
        match self.kind {
            ConfusionKind::RowNormalised => format!(
                "Confusion matrix under attack, rows normalised (model `{}`)",
                self.model
            ),
            ConfusionKind::Misclassified => format!(
                "Misclassified adversarial examples by true and predicted class (model `{}`)",
                self.model
            ),
        }
    }

    fn reproduces(&self) -> &'static str {
        match self.kind {
            ConfusionKind::RowNormalised => {
                "Tian et al. Fig. 2: the robust confusion matrix (rows: true classes, columns: \
                 predictions on the adversarial examples, percent of the row)"
            }
            ConfusionKind::Misclassified => {
                "Tian et al. Fig. 4a: the misclassified confusion matrix (counts of adversarial \
                 examples per true and predicted class, the diagonal hidden)"
            }
        }
    }

    fn look_at(&self) -> &'static str {
        match self.kind {
            ConfusionKind::RowNormalised => {
                "The off-diagonal cells that stay dark for every method: the pairs of similar \
                 classes (e.g. shirt, T-shirt and pullover in Fashion-MNIST, cat and dog in \
                 CIFAR-10) that attacks push into each other."
            }
            ConfusionKind::Misclassified => {
                "The few dark cells that hold most errors of a row: a weak class loses its \
                 examples to one or two confound classes (Tian: cat to dog), which is what a \
                 class-wise fix can target."
            }
        }
    }

    fn size(&self) -> (u32, u32) {
        let n = self.methods.len().max(1) as u32;
        (60 + 620 * n, 820)
    }

    fn tables(&self) -> Vec<Table> {
        let value = match self.kind {
            ConfusionKind::RowNormalised => "fraction",
            ConfusionKind::Misclassified => "count",
        };
        let mut t = Table::new("", &["method", "true", "predicted", value]);
        for (name, m) in &self.methods {
            push_matrices(&mut t, &[Cell::from(name.as_str())], &[m]);
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        CONFUSION_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((1, self.methods.len().max(1)));
        let cells = self.cells();
        for (panel, (name, m)) in panels.iter().zip(&self.methods) {
            let caption = format!("{name} — {}", self.key.attack);
            draw_matrix(panel, &caption, m, cells, CONFUSION_AXES)?;
        }
        Ok(())
    }
}
