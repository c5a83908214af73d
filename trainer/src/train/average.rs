//! Per-epoch weight averaging of the **whole state**, BN running statistics included (CFA's EMA and
//! FAWA, CFA §4.3; `weight_average` in `PKU-ML/CFA:utils.py`). The decision — keep, copy or average
//! — comes from `classwise_theory::calibration` (`ema_action`, `fawa_action`); this module applies
//! it to tensors. Integer buffers are copied, never averaged.

use std::collections::BTreeMap;
use std::path::Path;

use classwise_theory::calibration::AverageAction;
use tch::nn::VarStore;
use tch::{Kind, Tensor};

use crate::error::{Result, TrainerError};
use crate::model::safetensors::{load_tensors, save_tensors};

/// An averaged copy of a model's state, by variable name.
#[derive(Default)]
pub struct WeightAverage {
    state: BTreeMap<String, Tensor>,
    /// Epochs that changed the average (copy or average).
    pub updates: usize,
}

fn is_float(k: Kind) -> bool {
    matches!(k, Kind::Float | Kind::Double | Kind::Half | Kind::BFloat16)
}

impl WeightAverage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the average holds a state yet.
    pub fn is_initialized(&self) -> bool {
        !self.state.is_empty()
    }

    /// Applies `action` with the current state of `vs`.
    pub fn apply(&mut self, action: AverageAction, vs: &VarStore) {
        let current = vs.variables();
        tch::no_grad(|| match action {
            AverageAction::Keep => {}
            AverageAction::Copy => {
                self.state = current.iter().map(|(n, t)| (n.clone(), t.copy())).collect();
                self.updates += 1;
            }
            AverageAction::Average { alpha } => {
                if !self.is_initialized() {
                    self.state = current.iter().map(|(n, t)| (n.clone(), t.copy())).collect();
                } else {
                    for (name, t) in &current {
                        match self.state.get_mut(name) {
                            Some(avg) if is_float(t.kind()) => {
                                let _ = avg.g_mul_scalar_(alpha).g_add_(&(t * (1.0 - alpha)));
                            }
                            _ => {
                                self.state.insert(name.clone(), t.copy());
                            }
                        }
                    }
                }
                self.updates += 1;
            }
        });
    }

    /// Copies the average into `vs` (e.g. to evaluate the averaged model).
    pub fn copy_into(&self, vs: &mut VarStore) -> Result<()> {
        let mut vars = vs.variables();
        tch::no_grad(|| {
            for (name, avg) in &self.state {
                let v = vars.get_mut(name).ok_or_else(|| TrainerError::Invalid {
                    field: "averaged state".into(),
                    value: name.clone(),
                    expected: "a variable of the model".into(),
                })?;
                v.copy_(avg);
            }
            Ok(())
        })
    }

    /// The averaged state by name.
    pub fn state(&self) -> Vec<(String, Tensor)> {
        self.state
            .iter()
            .map(|(n, t)| (n.clone(), t.shallow_clone()))
            .collect()
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        save_tensors(path, &self.state())
    }

    pub fn load(path: &Path, updates: usize) -> Result<Self> {
        Ok(WeightAverage {
            state: load_tensors(path)?.into_iter().collect(),
            updates,
        })
    }
}
