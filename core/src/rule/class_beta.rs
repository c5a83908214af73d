//! A fixed trade-off β per class: Tian et al. (KDD 2021), eq. (5), train TRADES with the
//! per-sample loss CE_i + β_{y_i}·KL_i, where β is a K-vector (their experiment lowers β of class
//! 5, dog, from 6 to 0.5 and moves robustness from dog to cat, §5.2).

use serde::{Deserialize, Serialize};

use super::{ClassRule, RuleContext};
use crate::error::{Result, invalid, same_len};
use crate::plan::{ClassPlan, ClassStats};

/// The class-β settings (`[rule] kind = "class-beta"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassBetaSettings {
    /// β_k for every class k, in class order (replaces `train.beta`).
    pub beta: Vec<f64>,
}

/// The class-β rule: the same plan every epoch, with β_k from the settings.
pub struct ClassBeta {
    plan: ClassPlan,
}

impl ClassBeta {
    pub fn new(s: &ClassBetaSettings, ctx: RuleContext) -> Result<Self> {
        ctx.require_beta("rule.kind", "class-beta")?;
        same_len("rule.beta", ctx.n_classes, s.beta.len())?;
        if let Some(b) = s.beta.iter().find(|b| !(b.is_finite() && **b >= 0.0)) {
            return Err(invalid("rule.beta", b, "finite values >= 0"));
        }
        Ok(ClassBeta {
            plan: ClassPlan {
                beta: s.beta.clone(),
                ..ctx.uniform_plan()
            },
        })
    }
}

impl ClassRule for ClassBeta {
    fn name(&self) -> &'static str {
        "class-beta"
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
