//! Madry et al.'s PGD-AT (CFA eqs. (1)-(2)): the mean of natural_weight[y_i]·CE(f(x'_i), y_i)
//! with x' from CE-PGD at budget ε_{y_i}.

use classwise_core::rule::Base;
use serde::{Deserialize, Serialize};
use tch::Tensor;

use super::{Objective, StepContext, StepOutput, absolute_step, adversarial, weighted_ce};
use crate::attack::{Attack, Pgd};
use crate::error::Result;
use crate::model::Classifier;

/// PGD-AT. `attack_train_mode` runs the attack with BN in train mode, as CFA's code does
/// (`PKU-ML/CFA:train.py`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PgdAt {
    pub attack: Pgd,
    #[serde(default)]
    pub attack_train_mode: bool,
}

impl Objective for PgdAt {
    fn name(&self) -> &'static str {
        "pgd-at"
    }
    fn base(&self) -> Base {
        Base::PGD_AT
    }
    fn validate(&self) -> Result<()> {
        self.attack.validate()
    }
    fn describe(&self) -> String {
        format!("pgd-at ({})", self.attack.describe())
    }

    fn attack_step(&self, eps: f64) -> f64 {
        absolute_step(self.attack.step, eps)
    }

    fn loss(
        &self,
        model: &dyn Classifier,
        x: &Tensor,
        y: &Tensor,
        ctx: StepContext<'_>,
    ) -> Result<StepOutput> {
        let x_adv = adversarial(model, x, y, ctx.plan, &self.attack, self.attack_train_mode)?;
        Ok(weighted_ce(model, &x_adv, y, ctx.plan))
    }
}
