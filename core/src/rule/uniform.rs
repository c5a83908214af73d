//! The baselines' rule: the same plan every epoch.

use super::{ClassRule, RuleContext};
use crate::error::Result;
use crate::plan::{ClassPlan, ClassStats};

/// ε, β and weight 1 for every class, every epoch.
pub struct Uniform {
    plan: ClassPlan,
}

impl Uniform {
    pub fn new(ctx: RuleContext) -> Self {
        Uniform {
            plan: ctx.uniform_plan(),
        }
    }
}

impl ClassRule for Uniform {
    fn name(&self) -> &'static str {
        "uniform"
    }

    fn plan(&mut self, _epoch: usize) -> Result<ClassPlan> {
        Ok(self.plan.clone())
    }

    fn observe(&mut self, _epoch: usize, _stats: &ClassStats) -> Result<()> {
        Ok(())
    }

    fn state(&self) -> Result<serde_json::Value> {
        Ok(serde_json::Value::Null)
    }

    fn restore(&mut self, _state: &serde_json::Value) -> Result<()> {
        Ok(())
    }
}
