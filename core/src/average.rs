//! Weight-averaging decisions (CFA §4.3, Algorithm 1; `PKU-ML/CFA:train.py`): the plain EMA
//! baseline and fairness-aware weight averaging (FAWA). An [`Averager`] decides, once per epoch
//! and after validation, whether the averaged model keeps its weights, copies the current ones
//! or averages them in ([`AverageAction`]); each backend applies the action to its own weights
//! (the whole state, BN statistics included, as `weight_average` in `PKU-ML/CFA:utils.py`).

use classwise_theory::calibration::{
    AverageAction, FawaComparison, FawaConfig, ema_action, fawa_action,
};
use classwise_theory::metrics::ClassAccuracy;
use serde::{Deserialize, Serialize};

use crate::error::{Bound, CoreError, Result, check, invalid};
use crate::plan::Needs;

/// The plain EMA (`[ema]`): θ̄ is a copy of θ at `start_epoch` and θ̄ ← α·θ̄ + (1 − α)·θ after
/// every later epoch. The paper: α = 0.85 from epoch 50 (CFA §5.1); the reference code: decay
/// 0.88 from epoch 0 (`PKU-ML/CFA:train.py`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmaSettings {
    pub alpha: f64,
    #[serde(default)]
    pub start_epoch: usize,
}

/// What FAWA compares with δ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum FawaGate {
    /// min_k of the class-wise validation robust accuracy (CFA Algorithm 1).
    #[default]
    WorstClass,
    /// The mean of the worst `fraction` of the classes (CFA App. C.1, Tiny-ImageNet: 0.2).
    WorstFraction { fraction: f64 },
}

/// FAWA (`[fawa]`): after validation, an epoch whose gate value reaches δ is copied into θ̄
/// (the first one) or averaged in with decay α; other epochs leave θ̄ unchanged. The paper:
/// α = 0.85, δ = 0.2, from epoch 50 (CFA §5.1); the reference code: 0.88, 0.24, from epoch 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FawaSettings {
    pub alpha: f64,
    /// The threshold δ on the gate's validation robust accuracy (a fraction).
    pub delta: f64,
    #[serde(default)]
    pub start_epoch: usize,
    /// `at-least` (R ≥ δ: Algorithm 1 and the code, the default) or `above` (R > δ: §4.3's text).
    #[serde(default)]
    pub comparison: FawaComparison,
    #[serde(default)]
    pub gate: FawaGate,
}

/// Which average.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Averaging {
    Ema(EmaSettings),
    Fawa(FawaSettings),
}

impl Averaging {
    /// Checks the settings; errors name `ema.<field>` or `fawa.<field>`.
    pub fn validate(&self) -> Result<()> {
        match self {
            Averaging::Ema(e) => check("ema.alpha", e.alpha, Bound::Unit).map(|_| ()),
            Averaging::Fawa(f) => {
                check("fawa.alpha", f.alpha, Bound::Unit)?;
                check("fawa.delta", f.delta, Bound::Unit)?;
                if let FawaGate::WorstFraction { fraction } = f.gate
                    && !(fraction > 0.0 && fraction <= 1.0)
                {
                    return Err(invalid("fawa.gate.fraction", fraction, "in (0, 1]"));
                }
                Ok(())
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Averaging::Ema(_) => "ema",
            Averaging::Fawa(_) => "fawa",
        }
    }

    /// What the decision after an epoch needs: FAWA the class-wise validation robust accuracy.
    pub fn needs(&self) -> Needs {
        Needs {
            val_accuracy: matches!(self, Averaging::Fawa(_)),
            ..Needs::default()
        }
    }
}

/// The averaging decisions of one run, with the state a checkpoint keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Averager {
    pub averaging: Averaging,
    pub state: AveragerState,
}

/// What an [`Averager`] remembers between epochs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AveragerState {
    /// Epochs that changed θ̄ (copies and averages); 0 while θ̄ holds nothing.
    pub updates: usize,
}

/// One epoch's decision, for the log.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AverageDecision {
    pub action: AverageAction,
    /// The gate's value (FAWA only).
    pub gate_value: Option<f64>,
}

impl Averager {
    pub fn new(averaging: Averaging) -> Result<Self> {
        averaging.validate()?;
        Ok(Averager {
            averaging,
            state: AveragerState::default(),
        })
    }

    /// Whether θ̄ holds weights.
    pub fn is_initialized(&self) -> bool {
        self.state.updates > 0
    }

    /// What the decision after an epoch needs ([`Averaging::needs`]).
    pub fn needs(&self) -> Needs {
        self.averaging.needs()
    }

    /// The action after 0-based `epoch`, given the class-wise validation robust accuracy of the
    /// current model in that epoch (needed by FAWA). Counts the update.
    pub fn decide(&mut self, epoch: usize, val_robust: Option<&[f64]>) -> Result<AverageDecision> {
        let (action, gate_value) = match self.averaging {
            Averaging::Ema(e) => (ema_action(epoch, e.start_epoch, e.alpha)?, None),
            Averaging::Fawa(f) => {
                let per_class = val_robust.ok_or(CoreError::Missing {
                    rule: "fawa",
                    what: "the class-wise validation robust accuracy",
                    epoch,
                })?;
                let acc = ClassAccuracy::from_values(per_class.to_vec())?;
                let value = match f.gate {
                    FawaGate::WorstClass => acc.worst().value,
                    FawaGate::WorstFraction { fraction } => acc.worst_fraction_mean(fraction)?,
                };
                let config = FawaConfig {
                    alpha: f.alpha,
                    delta: f.delta,
                    start_epoch: f.start_epoch,
                    comparison: f.comparison,
                };
                (
                    fawa_action(&config, epoch, value, self.is_initialized())?,
                    Some(value),
                )
            }
        };
        // An average of nothing (an EMA resumed without its weights) is a copy.
        let action = match action {
            AverageAction::Average { .. } if !self.is_initialized() => AverageAction::Copy,
            a => a,
        };
        if action != AverageAction::Keep {
            self.state.updates += 1;
        }
        Ok(AverageDecision { action, gate_value })
    }
}
