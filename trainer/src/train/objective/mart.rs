//! MART (Wang et al., ICLR 2020; `YisenWang/MART:mart.py`): per sample
//!
//! ```text
//! natural_weight[y]·[CE(f(x'), y) − log(1.0001 − p'_ŷ + 1e-12)]
//!   + boundary_weight[y]·β_y·KL(p ‖ p')·(1.0000001 − p_y)
//! ```
//!
//! with p = softmax f(x), p' = softmax f(x'), ŷ the most likely wrong class under attack, the
//! KL taken with log(p' + 1e-12), and x' from CE-PGD (10 × 0.007 from x + 0.001·N(0, I) in the
//! paper's CIFAR-10 setting) in eval mode at budget ε_y.

use classwise_core::rule::Base;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::{Objective, StepContext, StepOutput, absolute_step, adversarial, ce, kl_log};
use crate::attack::{Attack, Pgd};
use crate::error::Result;
use crate::model::Classifier;

/// MART.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mart {
    pub attack: Pgd,
}

/// MART's per-sample loss from clean and adversarial logits (`beta` per sample).
pub(crate) fn mart_per_sample(
    z: &Tensor,
    z_adv: &Tensor,
    y: &Tensor,
    beta: &Tensor,
    natural_weight: &Tensor,
    boundary_weight: &Tensor,
) -> Tensor {
    let p_adv = z_adv.softmax(-1, Kind::Float);
    // ŷ: the largest adversarial probability among the wrong classes.
    let wrong = p_adv.scatter_value(1, &y.unsqueeze(1), f64::NEG_INFINITY);
    let y_hat = wrong.argmax(-1, false).unsqueeze(1);
    let p_hat = p_adv.gather(1, &y_hat, false).squeeze_dim(1);
    let bce = ce(z_adv, y) - (-p_hat + 1.0001 + 1e-12).log();
    // KL(p(x) ‖ p(x') + 1e-12) as MART's code takes it, in log space ([`kl_log`]).
    let log_p = z.log_softmax(-1, Kind::Float);
    let kl = kl_log(&log_p, &(&p_adv + 1e-12).log());
    let p_y = log_p.exp().gather(1, &y.unsqueeze(1), false).squeeze_dim(1);
    natural_weight * bce + boundary_weight * beta * kl * (-p_y + 1.000_000_1)
}

impl Objective for Mart {
    fn name(&self) -> &'static str {
        "mart"
    }
    fn base(&self) -> Base {
        Base::adversarial("mart")
    }
    fn validate(&self) -> Result<()> {
        self.attack.validate()
    }
    fn describe(&self) -> String {
        format!("mart ({})", self.attack.describe())
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
        let per = mart_per_sample(
            &z,
            &z_adv,
            y,
            &ctx.plan.beta(y),
            &ctx.plan.natural_weight(y),
            &ctx.plan.boundary_weight(y),
        );
        Ok(StepOutput::new(per.mean(Kind::Float), &z_adv))
    }
}
