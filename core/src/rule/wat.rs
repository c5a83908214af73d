//! WAT (Li et al., AAAI 2023): Hedge over the K class losses and the average loss on the
//! validation costs (WAT eq. (12) and Algorithm 1, or the normalisation of
//! `boqili/WAT:worst_class_adversarial_train.py`), updated once per epoch.

use classwise_theory::calibration::{
    WatNormalization, wat_sample_weight, wat_weights_from_history,
};
use serde::{Deserialize, Serialize};

use super::{ClassRule, RuleContext, parse_state, to_state};
use crate::error::{Bound, CoreError, Result, check, same_len};
use crate::plan::{ClassPlan, ClassStats, Needs};

/// WAT's settings (`[rule] kind = "wat"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatSettings {
    /// Hedge step η (0.1 in WAT's main results; WAT Table 3 sweeps 0.01, 0.05, 0.1, 0.5).
    pub eta: f64,
    /// `code` (the default: initial weights 1, then K·softmax, the average-loss decision adding
    /// w_K to every sample) or `paper` (WAT eq. (11)-(12): initial weights 1/(K+1), softmax,
    /// class losses as class means).
    #[serde(default)]
    pub normalization: WatNormalization,
    /// How the per-sample weights are scaled.
    #[serde(default)]
    pub loss_scale: WatLossScale,
}

impl WatSettings {
    /// η with the reference code's normalisation and the class-mean-one loss scale.
    pub fn new(eta: f64) -> Self {
        WatSettings {
            eta,
            normalization: WatNormalization::Code,
            loss_scale: WatLossScale::ClassMeanOne,
        }
    }
}

/// How WAT's per-sample weights s_y are scaled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatLossScale {
    /// Rescaled to class-mean 1, so that the loss scale (and so the effective learning rate)
    /// is the base method's whatever η and the normalisation.
    #[default]
    ClassMeanOne,
    /// As the normalisation writes them: with `code` the first epoch is 2× TRADES, as in the
    /// reference code; with `paper` it is exactly TRADES.
    AsWritten,
}

/// The WAT rule. Sample i is weighted by s_{y_i} ([`wat_sample_weight`]: w_{y_i} + w_K with the
/// code's normalisation, K·w_{y_i} + w_K with the paper's), on both TRADES terms, scaled by
/// [`WatLossScale`]. With uniform weights and the class-mean-one scale this rule is exactly
/// the base method.
pub struct Wat {
    ctx: RuleContext,
    settings: WatSettings,
    state: WatState,
}

/// Unknown fields are refused: another rule's state must not restore as an empty one.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WatState {
    /// The validation cost vectors observed so far, one per epoch.
    history: Vec<Vec<f64>>,
}

/// What the metrics line shows of WAT's state.
#[derive(Serialize)]
struct WatSnapshot<'a> {
    /// The K + 1 Hedge weights of the next epoch (the average-loss decision last).
    weights: Vec<f64>,
    /// The last validation costs (K class costs, then the average).
    last_costs: Option<&'a [f64]>,
}

impl Wat {
    pub fn new(s: WatSettings, ctx: RuleContext) -> Result<Self> {
        check("rule.eta", s.eta, Bound::NonNegative)?;
        ctx.require_trades(
            "wat",
            "WAT's decisions and validation costs are TRADES losses (WAT §4)",
        )?;
        Ok(Wat {
            ctx,
            settings: s,
            state: WatState::default(),
        })
    }

    fn weights(&self) -> Result<Vec<f64>> {
        Ok(wat_weights_from_history(
            &self.state.history,
            self.ctx.n_classes,
            self.settings.eta,
            self.settings.normalization,
        )?)
    }
}

impl ClassRule for Wat {
    fn name(&self) -> &'static str {
        "wat"
    }

    fn plan(&mut self, _epoch: usize) -> Result<ClassPlan> {
        let k = self.ctx.n_classes;
        let w = self.weights()?;
        let s = (0..k)
            .map(|y| wat_sample_weight(&w, y, self.settings.normalization))
            .collect::<std::result::Result<Vec<f64>, _>>()?;
        let s = match self.settings.loss_scale {
            WatLossScale::AsWritten => s,
            WatLossScale::ClassMeanOne => {
                let mean = s.iter().sum::<f64>() / k as f64;
                s.iter().map(|v| v / mean).collect()
            }
        };
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

    fn snapshot(&self) -> Result<serde_json::Value> {
        to_state(
            "wat",
            &WatSnapshot {
                weights: self.weights()?,
                last_costs: self.state.history.last().map(Vec::as_slice),
            },
        )
    }
}
