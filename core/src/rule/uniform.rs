//! Rules whose plan is the same every epoch: the baselines' uniform plan, and a fixed class-wise
//! plan ([`super::class_beta`]).

use super::{ClassRule, RuleContext};
use crate::error::Result;
use crate::plan::{ClassPlan, ClassStats};

/// The same plan every epoch; observes nothing and has no state.
pub struct Fixed {
    name: &'static str,
    plan: ClassPlan,
}

impl Fixed {
    /// A rule named `name` that plans `plan` every epoch.
    pub fn new(name: &'static str, plan: ClassPlan) -> Self {
        Fixed { name, plan }
    }
}

/// The baselines' rule: ε, β and weight 1 for every class, every epoch.
pub fn uniform(ctx: RuleContext) -> Fixed {
    Fixed::new("uniform", ctx.uniform_plan())
}

impl ClassRule for Fixed {
    fn name(&self) -> &'static str {
        self.name
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
