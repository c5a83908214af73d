//! Natural training: the mean of natural_weight[y_i]·CE(f(x_i), y_i).

use classwise_core::rule::Base;
use tch::Tensor;

use super::{Objective, StepContext, StepOutput, prepare, weighted_ce};
use crate::error::Result;
use crate::model::Classifier;

/// Standard training on clean inputs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Natural;

impl Objective for Natural {
    fn name(&self) -> &'static str {
        "natural"
    }
    fn base(&self) -> Base {
        Base::NATURAL
    }
    fn describe(&self) -> String {
        "natural".into()
    }

    fn loss(
        &self,
        model: &dyn Classifier,
        x: &Tensor,
        y: &Tensor,
        ctx: StepContext<'_>,
    ) -> Result<StepOutput> {
        prepare(x, y, ctx.plan)?;
        Ok(weighted_ce(model, x, y, ctx.plan))
    }
}
