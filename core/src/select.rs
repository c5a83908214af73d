//! Model selection: which epoch's model a run reports as its "best".
//!
//! A [`Selector`] sees every epoch of one model track (the raw model, its EMA or its FAWA
//! average) and says which epochs' weights must be kept as candidates; at the end
//! [`Selector::choose`] names the selected epoch, after a final comparison of the candidates
//! with the final attack when the strategy has one (CFA's).
//!
//! * [`Selection::Last`]: the last epoch;
//! * [`Selection::BestAvgWorst`]: the epoch with the highest avg + worst-class robust accuracy
//!   (CFA §5.1, "Metrics");
//! * [`Selection::Cfa`]: from epoch ≥ E/2, every epoch whose avg + worst score is within 0.02 of
//!   the best so far, and every one of the last 5 epochs, is a candidate; the candidates are
//!   compared with the final attack (`PKU-ML/CFA:train.py`, "save models");
//! * [`Selection::Wat`]: argmin over epochs of the largest class validation cost (WAT
//!   Algorithm 1's output rule, [`wat_select_iterate`]).

use classwise_theory::calibration::wat_select_iterate;
use serde::{Deserialize, Serialize};

use crate::error::{Bound, CoreError, Result, check};
use crate::plan::Needs;

/// A selection strategy (`[select]` with `kind = "last" | "best-avg-worst" | "cfa" | "wat"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Selection {
    Last,
    #[default]
    BestAvgWorst,
    Cfa {
        /// A candidate's score may be this far below the best so far (0.02 in the code).
        #[serde(default = "cfa_tolerance")]
        tolerance: f64,
        /// Candidates start at epoch ≥ `from_fraction`·E (0.5 in the code).
        #[serde(default = "cfa_from")]
        from_fraction: f64,
        /// The last this many epochs are always candidates (5 in the code).
        #[serde(default = "cfa_last")]
        last_epochs: usize,
    },
    Wat,
}

fn cfa_tolerance() -> f64 {
    0.02
}
fn cfa_from() -> f64 {
    0.5
}
fn cfa_last() -> usize {
    5
}

impl Selection {
    /// CFA's strategy with the reference code's constants.
    pub fn cfa() -> Self {
        Selection::Cfa {
            tolerance: cfa_tolerance(),
            from_fraction: cfa_from(),
            last_epochs: cfa_last(),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Selection::Last => "last",
            Selection::BestAvgWorst => "best-avg-worst",
            Selection::Cfa { .. } => "cfa",
            Selection::Wat => "wat",
        }
    }

    /// Checks the settings; errors name `select.<field>`.
    pub fn validate(&self) -> Result<()> {
        if let Selection::Cfa {
            tolerance,
            from_fraction,
            ..
        } = *self
        {
            check("select.tolerance", tolerance, Bound::NonNegative)?;
            check("select.from_fraction", from_fraction, Bound::Unit)?;
        }
        Ok(())
    }

    /// What the strategy needs measured every epoch: WAT the validation costs. (The other
    /// strategies use the avg + worst score of the split the run evaluates every epoch.)
    pub fn needs(&self) -> Needs {
        Needs {
            val_costs: matches!(self, Selection::Wat),
            ..Needs::default()
        }
    }

    /// Whether [`Selector::choose`] compares several candidates with the final attack.
    pub fn compares_candidates(&self) -> bool {
        matches!(self, Selection::Cfa { .. })
    }
}

/// What a [`Selector`] is shown after an epoch of its track.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpochScore {
    /// avg + worst-class robust accuracy on the selection split, when evaluated.
    pub avg_plus_worst: Option<f64>,
    /// The K + 1 validation costs, when measured (WAT).
    pub val_costs: Option<Vec<f64>>,
}

/// What to do with an epoch's weights.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Keep {
    /// Keep this epoch's weights as a candidate.
    pub keep: bool,
    /// Candidates that are no longer needed (their weights may be deleted).
    pub drop: Vec<usize>,
}

/// The state of one track's selection (checkpointed with the run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Selector {
    pub strategy: Selection,
    pub epochs: usize,
    /// Epochs whose weights are kept.
    pub candidates: Vec<usize>,
    /// The best score seen (BestAvgWorst, Cfa's threshold) with its epoch.
    pub best: Option<(usize, f64)>,
    /// Every epoch's validation costs (WAT).
    pub costs: Vec<Vec<f64>>,
}

impl Selector {
    pub fn new(strategy: Selection, epochs: usize) -> Result<Self> {
        strategy.validate()?;
        Ok(Selector {
            strategy,
            epochs,
            candidates: Vec::new(),
            best: None,
            costs: Vec::new(),
        })
    }

    /// Shows 0-based `epoch`; says whether to keep its weights and which candidates to drop.
    pub fn offer(&mut self, epoch: usize, score: &EpochScore) -> Result<Keep> {
        let replace = |this: &mut Selector| Keep {
            keep: true,
            drop: std::mem::replace(&mut this.candidates, vec![epoch]),
        };
        Ok(match self.strategy {
            Selection::Last => replace(self),
            Selection::BestAvgWorst => match score.avg_plus_worst {
                Some(s) if self.best.is_none_or(|(_, b)| s > b) => {
                    self.best = Some((epoch, s));
                    replace(self)
                }
                _ => Keep::default(),
            },
            Selection::Cfa {
                tolerance,
                from_fraction,
                last_epochs,
            } => {
                let from = epoch as f64 >= from_fraction * self.epochs as f64;
                let in_last = epoch + last_epochs >= self.epochs;
                let threshold = self.best.map_or(0.0, |(_, b)| b);
                match score.avg_plus_worst {
                    Some(s) if from && (s >= threshold - tolerance || in_last) => {
                        if s > threshold || self.best.is_none() {
                            self.best = Some((epoch, s.max(threshold)));
                        }
                        self.candidates.push(epoch);
                        Keep {
                            keep: true,
                            drop: Vec::new(),
                        }
                    }
                    _ => Keep::default(),
                }
            }
            Selection::Wat => {
                let costs = score.val_costs.clone().ok_or(CoreError::Missing {
                    rule: "wat selection",
                    what: "the validation costs",
                    epoch,
                })?;
                self.costs.push(costs);
                if wat_select_iterate(&self.costs)? == self.costs.len() - 1 {
                    replace(self)
                } else {
                    Keep::default()
                }
            }
        })
    }

    /// The selected epoch. `final_scores` holds (epoch, avg + worst under the final attack) of
    /// the candidates when [`Selection::compares_candidates`]; it is ignored otherwise. `None`
    /// when no epoch was a candidate (e.g. an averaged track that never started).
    pub fn choose(&self, final_scores: &[(usize, f64)]) -> Option<usize> {
        if self.strategy.compares_candidates() {
            // Highest final score; ties go to the later epoch.
            final_scores
                .iter()
                .filter(|(e, _)| self.candidates.contains(e))
                .fold(None, |best: Option<(usize, f64)>, &(e, s)| match best {
                    Some((_, b)) if b > s => best,
                    _ => Some((e, s)),
                })
                .map(|(e, _)| e)
        } else {
            self.candidates.last().copied()
        }
    }
}
