//! A model's whole state as named tensors: parameters **and** BatchNorm running statistics (as
//! `weight_average` in `PKU-ML/CFA:utils.py` averages them), for checkpoints and for EMA/FAWA
//! weight averaging.
//!
//! tch's BatchNorm keeps `running_mean` and `running_var` (f32) and no `num_batches_tracked`
//! counter (its momentum is fixed), so every tensor of a model's state is floating-point.
//! Weight averaging itself is `crate::train::WeightAverage` (it copies, rather than averages,
//! any non-floating entry: averaging an integer buffer such as `num_batches_tracked` is
//! meaningless).

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use tch::{Kind, Tensor};

use super::Model;
use crate::error::{Result, invalid};

/// The first difference between a model's state and a given set of named tensors.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// The model has `name`; the given state does not.
    Missing { name: String },
    /// The given state has `name`; the model does not.
    Unexpected { name: String },
    /// Both have `name` with different shapes.
    Shape {
        name: String,
        expected: Vec<i64>,
        found: Vec<i64>,
    },
    /// Both have `name` with different kinds.
    Kind {
        name: String,
        expected: Kind,
        found: Kind,
    },
}

impl Mismatch {
    /// The tensor the mismatch is about.
    pub fn name(&self) -> &str {
        match self {
            Mismatch::Missing { name }
            | Mismatch::Unexpected { name }
            | Mismatch::Shape { name, .. }
            | Mismatch::Kind { name, .. } => name,
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Missing { name } => write!(f, "parameter `{name}` is missing"),
            Mismatch::Unexpected { name } => {
                write!(f, "parameter `{name}` does not exist in this model")
            }
            Mismatch::Shape {
                name,
                expected,
                found,
            } => write!(
                f,
                "parameter `{name}` has shape {found:?}, the model expects {expected:?}"
            ),
            Mismatch::Kind {
                name,
                expected,
                found,
            } => write!(
                f,
                "parameter `{name}` has kind {found:?}, the model expects {expected:?}"
            ),
        }
    }
}

/// PyTorch's BatchNorm counter, absent from tch models and ignored when present in a given
/// state (reference checkpoints converted from a PyTorch `state_dict`).
fn is_ignored_buffer(name: &str) -> bool {
    name.ends_with(".num_batches_tracked") || name == "num_batches_tracked"
}

impl Model {
    /// All variables (shallow: sharing storage with the model), sorted by name.
    fn variables_sorted(&self) -> Vec<(String, Tensor)> {
        let mut vars: Vec<_> = self.var_store().variables().into_iter().collect();
        vars.sort_by(|a, b| a.0.cmp(&b.0));
        vars
    }

    /// The trainable parameters with their names, sorted by name (shallow: they share storage
    /// with the model and require gradients). For optimisers that keep per-parameter state
    /// by name (momentum buffers in checkpoints).
    pub fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let trainable: HashSet<usize> = self
            .trainable_variables()
            .iter()
            .map(|t| t.data_ptr() as usize)
            .collect();
        self.variables_sorted()
            .into_iter()
            .filter(|(_, t)| trainable.contains(&(t.data_ptr() as usize)))
            .collect()
    }

    /// The names and shapes of the whole state, sorted by name.
    pub fn state_shapes(&self) -> Vec<(String, Vec<i64>)> {
        self.variables_sorted()
            .into_iter()
            .map(|(name, t)| (name, t.size()))
            .collect()
    }

    /// A copy of the whole state (parameters and BN running statistics), sorted by name,
    /// detached from autograd and sharing no storage with the model.
    pub fn state(&self) -> Vec<(String, Tensor)> {
        self.variables_sorted()
            .into_iter()
            .map(|(name, t)| (name, t.detach().copy()))
            .collect()
    }

    /// SHA-256 (hex) of the whole state: names, kinds, shapes and values in name order. Two
    /// models with the same fingerprint compute the same function; a resumed evaluation checks
    /// it so that it never mixes two models' results.
    pub fn fingerprint(&self) -> Result<String> {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for (name, t) in self.variables_sorted() {
            h.update(name.as_bytes());
            h.update(format!("{:?}{:?}", t.kind(), t.size()).as_bytes());
            let t = t.detach().to_device(tch::Device::Cpu).contiguous();
            let mut bytes = vec![0u8; t.numel() * t.kind().elt_size_in_bytes()];
            t.f_copy_data_u8(&mut bytes, t.numel())?;
            h.update(&bytes);
        }
        Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The first difference between this model's state and `given` (by name order: missing
    /// or mis-shaped entries of the model first, then entries the model lacks), or `None` if
    /// names, shapes and kinds all agree. `num_batches_tracked` entries of `given` are ignored.
    pub fn state_mismatch(&self, given: &[(String, Tensor)]) -> Option<Mismatch> {
        let given: BTreeMap<&str, &Tensor> = given
            .iter()
            .filter(|(name, _)| !is_ignored_buffer(name))
            .map(|(name, t)| (name.as_str(), t))
            .collect();
        let ours = self.variables_sorted();
        for (name, t) in &ours {
            let Some(g) = given.get(name.as_str()) else {
                return Some(Mismatch::Missing { name: name.clone() });
            };
            if g.size() != t.size() {
                return Some(Mismatch::Shape {
                    name: name.clone(),
                    expected: t.size(),
                    found: g.size(),
                });
            }
            if g.kind() != t.kind() {
                return Some(Mismatch::Kind {
                    name: name.clone(),
                    expected: t.kind(),
                    found: g.kind(),
                });
            }
        }
        let known: HashSet<&str> = ours.iter().map(|(n, _)| n.as_str()).collect();
        given
            .keys()
            .find(|name| !known.contains(*name))
            .map(|name| Mismatch::Unexpected {
                name: (*name).to_owned(),
            })
    }

    /// Overwrites the whole state with `state` (e.g. from [`Model::state`] or a checkpoint).
    /// Names, shapes and kinds must match exactly (`num_batches_tracked` entries are ignored);
    /// otherwise nothing is changed and the error names the first mismatching parameter.
    pub fn load_state(&mut self, state: &[(String, Tensor)]) -> Result<()> {
        if let Some(m) = self.state_mismatch(state) {
            return Err(invalid(
                format!("state.{}", m.name()),
                m.to_string(),
                format!("the state of a {}", self.spec().describe()),
            ));
        }
        let given: BTreeMap<&str, &Tensor> = state.iter().map(|(n, t)| (n.as_str(), t)).collect();
        tch::no_grad(|| -> Result<()> {
            for (name, mut var) in self.variables_sorted() {
                if let Some(src) = given.get(name.as_str()) {
                    var.f_copy_(src)?;
                }
            }
            Ok(())
        })
    }

    /// Copies the whole state of `other` (same spec) into this model.
    pub fn copy_state_from(&mut self, other: &Model) -> Result<()> {
        self.require_same_spec(other)?;
        self.load_state(&other.variables_sorted())
    }

    /// A copy of this model (same spec, device and state) that shares no storage with it.
    /// Draws nothing from libtorch's generator.
    pub fn try_clone(&self) -> Result<Model> {
        let mut copy = Model::build(self.spec(), self.device(), false);
        copy.set_memory_format(self.memory_format())?;
        copy.precision = self.precision();
        copy.load_state(&self.variables_sorted())?;
        Ok(copy)
    }

    fn require_same_spec(&self, other: &Model) -> Result<()> {
        if self.spec() == other.spec() {
            Ok(())
        } else {
            Err(invalid(
                "model",
                other.spec().describe(),
                format!("a model with the same spec ({})", self.spec().describe()),
            ))
        }
    }
}
