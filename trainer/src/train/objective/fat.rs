//! Friendly adversarial training (FAT, Zhang et al. 2020): the mean of
//! natural_weight[y_i]·CE(f(x̃_i), y_i) on early-stopped PGD examples x̃ at budget ε_{y_i}.
//!
//! Both variants are configurations of [`EarlyStoppedPgd`]: Zhang et al.'s original (the
//! `original` rule, ω = 0.001 noise at every step, the attack in eval mode, and the dynamic τ
//! `tau_schedule = [[50, 1], [90, 2]]` (0-based) with τ = 0: 0 up to 1-based epoch 50, 1 up to
//! 90, 2 after, as `adjust_tau(epoch + 1)` in `zjfheart/Friendly-Adversarial-Training:FAT.py`)
//! and CFA's (`cfa-repo` rule, τ = 3, no ω, the attack in train mode, `PKU-ML/CFA:attack.py`).

use classwise_core::rule::Base;
use serde::{Deserialize, Serialize};
use tch::Tensor;

use super::{
    Objective, StepContext, StepOutput, absolute_step, planned_step, prepare, weighted_ce,
};
use crate::attack::{AttackInput, EarlyStoppedPgd};
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// FAT.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fat {
    /// The early-stopped attack; its `tau` is τ before the first entry of `tau_schedule`.
    pub attack: EarlyStoppedPgd,
    /// Dynamic τ: `[first_epoch, tau]` pairs (0-based epochs, increasing); from `first_epoch`
    /// on the attack uses that τ.
    #[serde(default)]
    pub tau_schedule: Vec<[usize; 2]>,
    /// Run the attack with BN in train mode (CFA's code) instead of eval mode (the original).
    #[serde(default)]
    pub attack_train_mode: bool,
}

impl Fat {
    /// τ in 0-based `epoch`.
    pub fn tau_at(&self, epoch: usize) -> usize {
        self.tau_schedule
            .iter()
            .rev()
            .find(|[from, _]| epoch >= *from)
            .map_or(self.attack.tau, |[_, tau]| *tau)
    }

    /// Checks the attack and the schedule; errors name the field.
    pub fn validate(&self) -> Result<()> {
        self.attack.validate()?;
        if self.tau_schedule.windows(2).any(|w| w[0][0] >= w[1][0]) {
            return Err(invalid(
                "tau_schedule",
                format!("{:?}", self.tau_schedule),
                "[first_epoch, tau] pairs with increasing epochs",
            ));
        }
        Ok(())
    }
}

impl Objective for Fat {
    fn name(&self) -> &'static str {
        "fat"
    }
    fn base(&self) -> Base {
        Base::FAT
    }
    fn validate(&self) -> Result<()> {
        Fat::validate(self)
    }
    fn describe(&self) -> String {
        let schedule = if self.tau_schedule.is_empty() {
            String::new()
        } else {
            format!(" tau schedule {:?}", self.tau_schedule)
        };
        format!(
            "fat ({}{schedule})",
            crate::attack::Attack::describe(&self.attack)
        )
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
        let eps = prepare(x, y, ctx.plan)?;
        let attack = EarlyStoppedPgd {
            step: planned_step(self.attack.step, ctx.plan),
            tau: self.tau_at(ctx.epoch),
            ..self.attack
        };
        let input = AttackInput {
            x,
            y,
            eps: &eps,
            train: self.attack_train_mode,
        };
        let run = attack.run(model, &input)?;
        Ok(StepOutput {
            steps: Some(run.steps_taken),
            ..weighted_ce(model, &run.x_adv, y, ctx.plan)
        })
    }
}
