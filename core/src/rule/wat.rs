//! WAT (Li et al., AAAI 2023): Hedge over the K class losses and the average loss on the
//! validation costs (WAT eq. (12); the normalisation of
//! `boqili/WAT:worst_class_adversarial_train.py`), updated once per epoch.

use classwise_theory::calibration::{
    WatNormalization, wat_sample_weight, wat_weights_from_history,
};
use serde::{Deserialize, Serialize};

use super::{ClassRule, RuleContext, parse_state, to_state};
use crate::error::{CoreError, Result, non_negative, same_len};
use crate::plan::{ClassPlan, ClassStats, Needs};

/// WAT's settings (`[rule] kind = "wat"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatSettings {
    /// Hedge step η (0.1 in WAT's main results).
    pub eta: f64,
}

/// The WAT rule. Sample i is weighted by s_{y_i} = w_{y_i} + w_K ([`wat_sample_weight`]),
/// rescaled to class-mean 1 so that the loss scale (and hence the effective learning rate)
/// equals the base method's; the reference code's first epoch is 2× TRADES instead. With
/// uniform weights this rule is exactly the base method.
pub struct Wat {
    ctx: RuleContext,
    eta: f64,
    state: WatState,
}

/// Unknown fields are refused: another rule's state must not restore as an empty one.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WatState {
    /// The validation cost vectors observed so far, one per epoch.
    history: Vec<Vec<f64>>,
}

impl Wat {
    pub fn new(s: WatSettings, ctx: RuleContext) -> Result<Self> {
        non_negative("rule.eta", s.eta)?;
        Ok(Wat {
            ctx,
            eta: s.eta,
            state: WatState::default(),
        })
    }
}

impl ClassRule for Wat {
    fn name(&self) -> &'static str {
        "wat"
    }

    fn plan(&mut self, _epoch: usize) -> Result<ClassPlan> {
        let k = self.ctx.n_classes;
        let w = wat_weights_from_history(&self.state.history, k, self.eta, WatNormalization::Code)?;
        let s = (0..k)
            .map(|y| wat_sample_weight(&w, y))
            .collect::<std::result::Result<Vec<f64>, _>>()?;
        let mean = s.iter().sum::<f64>() / k as f64;
        let s: Vec<f64> = s.iter().map(|v| v / mean).collect();
        Ok(ClassPlan {
            natural_weight: s.clone(),
            boundary_weight: s,
            ..self.ctx.uniform_plan()
        })
    }

    fn needs(&self, _epoch: usize) -> Needs {
        Needs {
            val_costs: true,
            ..Needs::default()
        }
    }

    fn observe(&mut self, epoch: usize, stats: &ClassStats) -> Result<()> {
        let costs = stats.val_costs.as_ref().ok_or(CoreError::Missing {
            rule: "wat",
            what: "the validation costs",
            epoch,
        })?;
        same_len("val_costs", self.ctx.n_classes + 1, costs.len())?;
        self.state.history.push(costs.clone());
        Ok(())
    }

    fn state(&self) -> Result<serde_json::Value> {
        to_state("wat", &self.state)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        self.state = parse_state("wat", state)?;
        Ok(())
    }
}
