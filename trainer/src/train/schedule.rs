//! Piecewise-constant learning-rate schedules (`lr_schedule` in `PKU-ML/CFA:train.py`,
//! `adjust_learning_rate` in `boqili/WAT:worst_class_adversarial_train.py`).
//!
//! A schedule is a base rate and a list of (first 0-based epoch, rate) pieces. The papers index
//! epochs differently; the constructors translate each paper's rule into 0-based pieces.

use serde::{Deserialize, Serialize};

use crate::error::{Bound, Result, check, invalid};

/// lr(e) = the rate of the last piece whose start ≤ e (0-based), else `base`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LrSchedule {
    pub base: f64,
    /// (first 0-based epoch, learning rate), in increasing epoch order.
    #[serde(default)]
    pub pieces: Vec<(usize, f64)>,
}

impl LrSchedule {
    pub fn constant(lr: f64) -> Self {
        LrSchedule {
            base: lr,
            pieces: Vec::new(),
        }
    }

    /// `base` divided by 10 at each of the 0-based epochs in `drops` (e.g. CFA's 200-epoch run:
    /// drops at 100 and 150, i.e. `e/200 ≥ 0.5` and `≥ 0.75`).
    pub fn step_decay(base: f64, drops: &[usize]) -> Self {
        LrSchedule {
            base,
            pieces: drops
                .iter()
                .enumerate()
                .map(|(i, &e)| (e, base * 0.1f64.powi(i as i32 + 1)))
                .collect(),
        }
    }

    /// WAT's rule over `epochs` 1-based epochs: 0.1, 0.01 from epoch 75, 0.001 from 90 and 1e-4
    /// from 100 ("≥ 100" fires on the last epoch of a 100-epoch run; `adjust_learning_rate` in
    /// `boqili/WAT:worst_class_adversarial_train.py`).
    pub fn wat(base: f64) -> Self {
        LrSchedule {
            base,
            pieces: vec![(74, base * 0.1), (89, base * 0.01), (99, base * 0.001)],
        }
    }

    pub fn validate(&self) -> Result<()> {
        check("schedule.base", self.base, Bound::NonNegative)?;
        for (i, &(e, lr)) in self.pieces.iter().enumerate() {
            check(format!("schedule.pieces[{i}].lr"), lr, Bound::NonNegative)?;
            if i > 0 && e <= self.pieces[i - 1].0 {
                return Err(invalid(
                    format!("schedule.pieces[{i}].epoch"),
                    e,
                    "epochs in increasing order",
                ));
            }
        }
        Ok(())
    }

    /// The rate of 0-based epoch `epoch`.
    pub fn lr(&self, epoch: usize) -> f64 {
        self.pieces
            .iter()
            .take_while(|(start, _)| *start <= epoch)
            .last()
            .map_or(self.base, |&(_, lr)| lr)
    }
}
