//! TRADES (Zhang et al. 2019; CFA eq. (3)) with class-wise β (CFA eqs. (7)-(8)): per sample
//! natural_weight[y]·a(β_y)·CE(f(x), y) + boundary_weight[y]·b(β_y)·KL(p(x) ‖ p(x')), with
//! (a, b) = (1, β) or (1/(1 + β), β/(1 + β)) ([`TradesScaling`]) and x' from the KL attack in
//! eval mode at budget ε_y. The clean distribution is not detached (as in
//! `yaodongyu/TRADES:trades.py`); `second_clean_forward` takes it from its own forward pass, as
//! there.

use classwise_core::rule::Base;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::{
    Objective, StepContext, StepOutput, TradesScaling, absolute_step, adversarial, ce, kl,
};
use crate::attack::{Attack, Pgd};
use crate::error::Result;
use crate::model::Classifier;

/// TRADES.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trades {
    pub attack: Pgd,
    pub scaling: TradesScaling,
    /// Take the KL's clean distribution from a second clean forward pass in train mode, after
    /// the adversarial one, as the reference codes do (`yaodongyu/TRADES:trades.py`,
    /// `hannxu123/fair_robust:utils_frl.py`, `PKU-ML/CFA:attack.py` in TRADES mode): BatchNorm's
    /// running statistics then see the clean batch twice per step, and dropout draws another
    /// mask for the target. Off: the CE's clean forward serves both (the same values without
    /// BatchNorm updates or dropout).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub second_clean_forward: bool,
}

/// (a(β_y), b(β_y)) per sample.
pub(crate) fn term_weights(scaling: TradesScaling, beta: &Tensor) -> (Tensor, Tensor) {
    match scaling {
        TradesScaling::Paper => (beta.ones_like(), beta.shallow_clone()),
        TradesScaling::Reference => {
            let d = beta + 1.0;
            (d.reciprocal(), beta / d)
        }
    }
}

impl Objective for Trades {
    fn name(&self) -> &'static str {
        "trades"
    }
    fn base(&self) -> Base {
        Base::TRADES
    }
    fn validate(&self) -> Result<()> {
        self.attack.validate()
    }
    fn describe(&self) -> String {
        format!("trades {:?} ({})", self.scaling, self.attack.describe())
    }

    fn uses_beta(&self) -> bool {
        true
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
        let x_adv = adversarial(model, x, y, ctx.plan, &self.attack, false)?;
        let z = model.forward_t(x, true);
        let z_adv = model.forward_t(&x_adv, true);
        let target = match self.second_clean_forward {
            true => model.forward_t(x, true),
            false => z.shallow_clone(),
        };
        let (a, b) = term_weights(self.scaling, &ctx.plan.beta(y));
        let u = a * ctx.plan.natural_weight(y);
        let v = b * ctx.plan.boundary_weight(y);
        let per_sample_loss = u * ce(&z, y) + v * kl(&target, &z_adv);
        Ok(StepOutput::new(per_sample_loss.mean(Kind::Float), &z_adv))
    }
}
