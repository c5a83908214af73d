//! SGD with momentum, weight decay and optional Nesterov, in PyTorch's form (`torch.optim.SGD`, as
//! every reference code uses it), with state that can be saved and restored (tch's optimiser cannot
//! export its momentum buffers, and a resumed run must continue bit-identically).
//!
//! For each trainable parameter θ with gradient g:
//!
//! ```text
//! d ← g + λ·θ                      (weight decay on every parameter, BN included)
//! b ← d            at the first step,  b ← μ·b + d  afterwards   (dampening 0)
//! d ← d + μ·b      (Nesterov)   or   d ← b
//! θ ← θ − lr·d
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::Tensor;
use tch::nn::VarStore;

use crate::error::{Bound, Result, TrainerError, check, invalid};
use crate::model::safetensors::{load_tensors, save_tensors};

/// SGD hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SgdConfig {
    pub momentum: f64,
    pub weight_decay: f64,
    #[serde(default)]
    pub nesterov: bool,
}

impl SgdConfig {
    pub fn validate(&self) -> Result<()> {
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(invalid("optimizer.momentum", self.momentum, "in [0, 1)"));
        }
        check(
            "optimizer.weight_decay",
            self.weight_decay,
            Bound::NonNegative,
        )?;
        if self.nesterov && self.momentum == 0.0 {
            return Err(invalid(
                "optimizer.nesterov",
                true,
                "momentum > 0 (Nesterov needs momentum)",
            ));
        }
        Ok(())
    }
}

/// The optimiser: the trainable parameters of a [`VarStore`] by name, and one momentum buffer
/// per parameter once it has received a gradient.
pub struct Sgd {
    config: SgdConfig,
    params: BTreeMap<String, Tensor>,
    buffers: BTreeMap<String, Tensor>,
}

impl Sgd {
    /// Tracks every variable of `vs` that requires a gradient (BN running statistics do not).
    pub fn new(vs: &VarStore, config: SgdConfig) -> Result<Self> {
        config.validate()?;
        let params = vs
            .variables()
            .into_iter()
            .filter(|(_, t)| t.requires_grad())
            .collect();
        Ok(Sgd {
            config,
            params,
            buffers: BTreeMap::new(),
        })
    }

    pub fn config(&self) -> &SgdConfig {
        &self.config
    }

    /// Names of the tracked parameters, sorted.
    pub fn parameter_names(&self) -> impl Iterator<Item = &str> {
        self.params.keys().map(String::as_str)
    }

    /// The tracked parameters by name, sorted.
    pub fn parameters(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.params.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// Clears every parameter gradient.
    pub fn zero_grad(&mut self) {
        for p in self.params.values_mut() {
            p.zero_grad();
        }
    }

    /// One update with learning rate `lr`; parameters without a gradient are skipped.
    pub fn step(&mut self, lr: f64) {
        let SgdConfig {
            momentum,
            weight_decay,
            nesterov,
        } = self.config;
        tch::no_grad(|| {
            for (name, p) in self.params.iter_mut() {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                let mut d = if weight_decay != 0.0 {
                    &g + &*p * weight_decay
                } else {
                    g.copy()
                };
                if momentum != 0.0 {
                    let buf = match self.buffers.get_mut(name) {
                        Some(b) => {
                            let _ = b.g_mul_scalar_(momentum).g_add_(&d);
                            b
                        }
                        None => self.buffers.entry(name.clone()).or_insert(d.copy()),
                    };
                    d = if nesterov {
                        d + &*buf * momentum
                    } else {
                        buf.copy()
                    };
                }
                let _ = p.g_sub_(&(d * lr));
            }
        });
    }

    /// The momentum buffers, by parameter name (for checkpoints).
    pub fn state(&self) -> Vec<(String, Tensor)> {
        self.buffers
            .iter()
            .map(|(n, b)| (n.clone(), b.shallow_clone()))
            .collect()
    }

    /// Saves the momentum buffers atomically as safetensors.
    pub fn save(&self, path: &Path) -> Result<()> {
        save_tensors(path, &self.state())
    }

    /// Restores buffers saved by [`Sgd::save`]; each must name a tracked parameter and have its
    /// shape.
    pub fn load(&mut self, path: &Path) -> Result<()> {
        let mut buffers = BTreeMap::new();
        for (name, t) in load_tensors(path)? {
            let p = self
                .params
                .get(&name)
                .ok_or_else(|| TrainerError::BadData {
                    path: path.to_path_buf(),
                    offset: None,
                    reason: format!("momentum buffer `{name}` names no parameter of the model"),
                })?;
            if t.size() != p.size() {
                return Err(TrainerError::BadData {
                    path: path.to_path_buf(),
                    offset: None,
                    reason: format!(
                        "momentum buffer `{name}` has shape {:?}, the parameter {:?}",
                        t.size(),
                        p.size()
                    ),
                });
            }
            buffers.insert(name, t.to_kind(p.kind()).to_device(p.device()));
        }
        self.buffers = buffers;
        Ok(())
    }
}
