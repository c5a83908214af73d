//! The per-class state of a run: the seam where class-wise fairness methods are meant to plug
//! in.
//!
//! Before each epoch a [`ClassRule`] yields a [`ClassPlan`] — per-class budget ε_k, TRADES β_k
//! and loss weight w_k — and after the epoch it observes [`ClassStats`] (train robust accuracy
//! t_k counted on the fly, validation accuracies and losses).
//!
//! Only [`Uniform`], the rule of the plain baselines (the same plan every epoch), exists in the
//! trainer today; `classwise train` always uses it. The arithmetic of CFA's, WAT's and FRL's
//! rules is in `classwise_theory::calibration` and drives the multi-class toy
//! (`classwise_toy::multiclass::rule`), but no trainer rule is wired to it yet, and BAT's
//! objective does not exist in the trainer yet.

use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};

/// Per-class settings of one epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassPlan {
    /// ε_k: the training attack's budget for class k (sample i uses ε_{y_i}).
    pub eps: Vec<f64>,
    /// β_k: the TRADES trade-off for class k (ignored by other objectives).
    pub beta: Vec<f64>,
    /// w_k: the weight of class k's samples in the loss.
    pub weight: Vec<f64>,
}

impl ClassPlan {
    /// The same ε, β and weight 1 for `n_classes` classes.
    pub fn uniform(n_classes: usize, eps: f64, beta: f64) -> Self {
        ClassPlan {
            eps: vec![eps; n_classes],
            beta: vec![beta; n_classes],
            weight: vec![1.0; n_classes],
        }
    }

    /// The plan with every ε_k multiplied by `factor` ∈ [0, 1] (an ε warm-up).
    pub fn with_eps_scale(&self, factor: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&factor) {
            return Err(invalid("eps_scale", factor, "in [0, 1]"));
        }
        Ok(ClassPlan {
            eps: self.eps.iter().map(|e| e * factor).collect(),
            ..self.clone()
        })
    }

    pub fn n_classes(&self) -> usize {
        self.eps.len()
    }

    /// Checks lengths and values.
    pub fn validate(&self, n_classes: usize) -> Result<()> {
        for (name, v) in [
            ("eps", &self.eps),
            ("beta", &self.beta),
            ("weight", &self.weight),
        ] {
            if v.len() != n_classes {
                return Err(invalid(
                    format!("plan.{name}"),
                    format!("{} values", v.len()),
                    format!("{n_classes} (one per class)"),
                ));
            }
            if let Some(bad) = v.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
                return Err(invalid(format!("plan.{name}"), bad, "finite and >= 0"));
            }
        }
        Ok(())
    }
}

/// What a rule observes after an epoch. Per-class vectors are indexed by class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassStats {
    /// t_k: correct / total of class k's adversarial training examples, counted on the fly on
    /// the logits of the loss forward (as `PKU-ML/CFA:train.py`).
    pub train_robust: Vec<f64>,
    pub val_clean: Vec<f64>,
    pub val_robust: Vec<f64>,
    /// Per-class mean validation loss (e.g. WAT's TRADES cost), when measured.
    pub val_loss: Vec<f64>,
}

/// A per-class rule (see the module docs).
pub trait ClassRule {
    /// The plan of 0-based epoch `epoch`.
    fn plan(&mut self, epoch: usize) -> Result<ClassPlan>;
    /// Statistics of epoch `epoch`, after it ran.
    fn observe(&mut self, epoch: usize, stats: &ClassStats) -> Result<()>;
    /// The rule's state, for checkpoints (JSON).
    fn state(&self) -> serde_json::Value;
    /// Restores [`ClassRule::state`].
    fn restore(&mut self, state: &serde_json::Value) -> Result<()>;
}

/// The baselines: the same plan every epoch.
pub struct Uniform(pub ClassPlan);

impl ClassRule for Uniform {
    fn plan(&mut self, _epoch: usize) -> Result<ClassPlan> {
        Ok(self.0.clone())
    }

    fn observe(&mut self, _epoch: usize, _stats: &ClassStats) -> Result<()> {
        Ok(())
    }

    fn state(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    fn restore(&mut self, _state: &serde_json::Value) -> Result<()> {
        Ok(())
    }
}
