//! CFA's class-wise calibration (Wei et al., CVPR 2023, §4.1-4.2): CCM (eq. (6)) and CCR (eqs.
//! (7)-(8)), driven by the previous epoch's train robust accuracy t_k, after `begin` warm-up
//! epochs (the epoch loop of `PKU-ML/CFA:train.py`). FAWA acts on the model, not on the loss:
//! it is in [`crate::average`].

use classwise_theory::calibration::{CfaConfig, cfa_epoch_config};
use serde::{Deserialize, Serialize};

use super::{ClassRule, RuleContext, parse_state, to_state};
use crate::error::{Bound, Result, check, same_len};
use crate::plan::{ClassPlan, ClassStats};

/// CFA's settings (`[rule] kind = "cfa"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CfaSettings {
    /// λ₁ of eq. (6), ε_k = (λ₁ + t_k)·ε: 0.5 for AT, 0.3 for TRADES, 0.7 for FAT (CFA §5.1).
    pub lambda1: f64,
    /// λ₂ of eq. (7), β_k = (λ₂ + t_k)·β: 0.5 (CFA §5.1).
    #[serde(default = "half")]
    pub lambda2: f64,
    /// The first 0-based calibrated epoch: the epochs before train with ε and β for every class
    /// (the reference code's `--begin`, 10 of 200 epochs; the paper has none, i.e. 0).
    pub begin: usize,
    /// Class-wise calibrated margin (eq. (6)).
    #[serde(default = "yes")]
    pub ccm: bool,
    /// Class-wise calibrated regularisation (eq. (7)); needs a TRADES objective.
    #[serde(default)]
    pub ccr: bool,
}

fn half() -> f64 {
    0.5
}

fn yes() -> bool {
    true
}

impl CfaSettings {
    /// CCM with λ₁ = `lambda1` (eq. (6)) from epoch `begin`, and CCR with λ₂ = 0.5 (eq. (7))
    /// when `ccr`.
    pub fn calibrated(lambda1: f64, begin: usize, ccr: bool) -> Self {
        CfaSettings {
            lambda1,
            lambda2: 0.5,
            begin,
            ccm: true,
            ccr,
        }
    }

    /// The paper's settings for a base with (TRADES) or without a β: λ₁ = 0.3 and CCR with
    /// λ₂ = 0.5 for TRADES, λ₁ = `lambda1` and CCM only otherwise (0.5 for AT, 0.7 for FAT).
    pub fn paper(lambda1: f64, trades: bool, begin: usize) -> Self {
        Self::calibrated(if trades { 0.3 } else { lambda1 }, begin, trades)
    }
}

/// The CFA rule (see the module docs).
pub struct Cfa {
    config: CfaConfig,
    n_classes: usize,
    uses_beta: bool,
    state: CfaState,
}

/// Unknown fields are refused: another rule's state must not restore as an empty one.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CfaState {
    /// t_k of the last observed epoch.
    prev_train_robust: Option<Vec<f64>>,
}

impl Cfa {
    pub fn new(s: CfaSettings, ctx: RuleContext) -> Result<Self> {
        check("rule.lambda1", s.lambda1, Bound::NonNegative)?;
        check("rule.lambda2", s.lambda2, Bound::NonNegative)?;
        if s.ccm {
            ctx.require_adversarial("cfa", "CCM's class budget ε_k (CFA eq. (6))")?;
        }
        if s.ccr {
            ctx.require_beta("rule.ccr", "true")?;
        }
        Ok(Cfa {
            config: CfaConfig {
                epsilon: ctx.eps,
                beta: ctx.beta.unwrap_or(0.0),
                lambda1: s.lambda1,
                lambda2: s.lambda2,
                begin: s.begin,
                ccm: s.ccm,
                ccr: s.ccr,
            },
            n_classes: ctx.n_classes,
            uses_beta: ctx.beta.is_some(),
            state: CfaState::default(),
        })
    }
}

impl ClassRule for Cfa {
    fn name(&self) -> &'static str {
        "cfa"
    }

    fn plan(&mut self, epoch: usize) -> Result<ClassPlan> {
        let c = cfa_epoch_config(
            &self.config,
            epoch,
            self.n_classes,
            self.state.prev_train_robust.as_deref(),
        )?;
        let ones = vec![1.0; self.n_classes];
        Ok(ClassPlan {
            eps: c.epsilon,
            beta: if self.uses_beta {
                c.beta
            } else {
                vec![0.0; self.n_classes]
            },
            natural_weight: ones.clone(),
            boundary_weight: ones,
            step_size: None,
        })
    }

    fn observe(&mut self, _epoch: usize, stats: &ClassStats) -> Result<()> {
        same_len("train_robust", self.n_classes, stats.train_robust.len())?;
        for &t in &stats.train_robust {
            check("train_robust", t, Bound::Unit)?;
        }
        self.state.prev_train_robust = Some(stats.train_robust.clone());
        Ok(())
    }

    fn state(&self) -> Result<serde_json::Value> {
        to_state("cfa", &self.state)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        self.state = parse_state("cfa", state)?;
        Ok(())
    }
}
