//! CSL, cost-sensitive learning (Benz et al. 2020), as WAT runs it for a baseline (WAT §5,
//! Tables 1-2: one hyper-parameter, 0.05 on CIFAR-10). Neither paper published the rule or
//! code; this is classwise's reconstruction ([`csl_update`]): class weights start at 1 and,
//! after each epoch, move by γ times the class's validation robust error minus the class mean,
//! clipped at 0 and rescaled to mean 1. They weigh both terms of the base loss.

use classwise_theory::calibration::csl_update;
use serde::{Deserialize, Serialize};

use super::{ClassRule, RuleContext, parse_state, to_state};
use crate::error::{Bound, CoreError, Result, check};
use crate::plan::{ClassPlan, ClassStats, Needs};

/// CSL's settings (`[rule] kind = "csl"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CslSettings {
    /// γ, the step of the weights (WAT's CSL parameter: 0.05 on CIFAR-10, best of 0.01-0.1 on
    /// CIFAR-100).
    pub gamma: f64,
}

/// The CSL rule (see the module docs).
pub struct Csl {
    ctx: RuleContext,
    gamma: f64,
    state: CslState,
}

/// Unknown fields are refused: another rule's state must not restore as this one.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CslState {
    /// The class weights of the next epoch (mean 1).
    weights: Vec<f64>,
}

impl Csl {
    pub fn new(s: CslSettings, ctx: RuleContext) -> Result<Self> {
        check("rule.gamma", s.gamma, Bound::NonNegative)?;
        ctx.require_adversarial("csl", "the validation robust error it reweights by")?;
        Ok(Csl {
            gamma: s.gamma,
            state: CslState {
                weights: vec![1.0; ctx.n_classes],
            },
            ctx,
        })
    }
}

impl ClassRule for Csl {
    fn name(&self) -> &'static str {
        "csl"
    }

    fn plan(&mut self, _epoch: usize) -> Result<ClassPlan> {
        Ok(ClassPlan {
            natural_weight: self.state.weights.clone(),
            boundary_weight: self.state.weights.clone(),
            ..self.ctx.uniform_plan()
        })
    }

    fn needs(&self, _epoch: usize) -> Needs {
        Needs {
            val_errors: true,
            ..Needs::default()
        }
    }

    fn observe(&mut self, epoch: usize, stats: &ClassStats) -> Result<()> {
        let e = stats.val_errors.as_ref().ok_or(CoreError::Missing {
            rule: "csl",
            what: "the validation robust errors",
            epoch,
        })?;
        self.state.weights = csl_update(&self.state.weights, &e.robust, self.gamma)?;
        Ok(())
    }

    fn state(&self) -> Result<serde_json::Value> {
        to_state("csl", &self.state)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        let s: CslState = parse_state("csl", state)?;
        crate::error::same_len(
            "csl rule state weights",
            self.ctx.n_classes,
            s.weights.len(),
        )?;
        self.state = s;
        Ok(())
    }
}
