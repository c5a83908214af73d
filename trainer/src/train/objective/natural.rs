//! Natural training: the mean of natural_weight[y_i]·CE(f(x_i), y_i).

use tch::nn::ModuleT;
use tch::{Kind, Tensor};

use super::{Objective, StepContext, StepOutput, ce, correct_of, per_sample, prepare};
use crate::error::Result;

/// Standard training on clean inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Natural;

impl Objective for Natural {
    fn describe(&self) -> String {
        "natural".into()
    }

    fn loss(
        &self,
        model: &dyn ModuleT,
        x: &Tensor,
        y: &Tensor,
        ctx: StepContext<'_>,
    ) -> Result<StepOutput> {
        prepare(x, y, ctx.plan)?;
        let z = model.forward_t(x, true);
        let w = per_sample(&ctx.plan.natural_weight, y);
        Ok(StepOutput {
            loss: (ce(&z, y) * w).mean(Kind::Float),
            correct: correct_of(&z, y),
        })
    }
}
