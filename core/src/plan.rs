//! What a class-wise rule decides before an epoch ([`ClassPlan`]) and what it observes after it
//! ([`ClassStats`], measured as [`Needs`] asks).

use classwise_theory::metrics::ClassErrors;
use serde::{Deserialize, Serialize};

use crate::error::{Bound, Result, check, same_len};

/// The per-class settings of one epoch. Sample i is trained with the entries of its class y_i.
///
/// The objective interprets them: the training attack uses budget ε_{y_i} (CFA eq. (6)) and,
/// when `step_size` is set, that absolute step instead of its own; TRADES-like objectives use
/// β_{y_i} with their scaling (CFA eq. (8): (CE + β_y·KL)/(1 + β_y), or CE + β_y·KL); the
/// objective's first term (the CE on x or x') is multiplied by `natural_weight[y_i]` and its
/// second term (the KL or boundary term, if any) by `boundary_weight[y_i]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassPlan {
    /// ε_k: the training attack's budget for class k.
    pub eps: Vec<f64>,
    /// β_k: the trade-off of class k (objectives without a β ignore it).
    pub beta: Vec<f64>,
    /// Weight of class k's natural / CE term.
    pub natural_weight: Vec<f64>,
    /// Weight of class k's robust / boundary term.
    pub boundary_weight: Vec<f64>,
    /// The training attack's absolute step size, when the rule changes it (FRL's remargin uses
    /// max_k ε_k / 4, `hannxu123/fair_robust:utils_frl2.py`); `None` (left out of the JSON)
    /// keeps the attack's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_size: Option<f64>,
}

impl ClassPlan {
    /// The same ε and β for `n_classes` classes, weights 1, the attack's own step.
    pub fn uniform(n_classes: usize, eps: f64, beta: f64) -> Self {
        ClassPlan {
            eps: vec![eps; n_classes],
            beta: vec![beta; n_classes],
            natural_weight: vec![1.0; n_classes],
            boundary_weight: vec![1.0; n_classes],
            step_size: None,
        }
    }

    pub fn n_classes(&self) -> usize {
        self.eps.len()
    }

    /// The plan with every ε_k multiplied by `factor` ∈ [0, 1] (an ε warm-up).
    pub fn with_eps_scale(&self, factor: f64) -> Result<Self> {
        check("eps_scale", factor, Bound::Unit)?;
        Ok(ClassPlan {
            eps: self.eps.iter().map(|e| e * factor).collect(),
            ..self.clone()
        })
    }

    /// [`ClassPlan::validate`] with K the length of the longest vector, so that a vector
    /// shorter than the others is the one named.
    pub fn validate_self(&self) -> Result<()> {
        let k = [
            self.eps.len(),
            self.beta.len(),
            self.natural_weight.len(),
            self.boundary_weight.len(),
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        self.validate(k)
    }

    /// Checks that every vector has one finite, non-negative value per class.
    pub fn validate(&self, n_classes: usize) -> Result<()> {
        for (name, v) in [
            ("eps", &self.eps),
            ("beta", &self.beta),
            ("natural_weight", &self.natural_weight),
            ("boundary_weight", &self.boundary_weight),
        ] {
            same_len(&format!("plan.{name}"), n_classes, v.len())?;
            for &x in v {
                check(&format!("plan.{name}"), x, Bound::NonNegative)?;
            }
        }
        if let Some(s) = self.step_size {
            check("plan.step_size", s, Bound::NonNegative)?;
        }
        Ok(())
    }
}

/// Which validation statistics a rule needs after an epoch (the training loop measures them in
/// that epoch, whatever its evaluation schedule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Needs {
    /// Class-wise validation clean and robust accuracy.
    pub val_accuracy: bool,
    /// Class-wise validation standard and boundary errors (FRL, BAT).
    pub val_errors: bool,
    /// WAT's K + 1 validation costs (class TRADES losses, then the average).
    pub val_costs: bool,
}

impl Needs {
    /// The union of two needs.
    pub fn or(self, other: Needs) -> Needs {
        Needs {
            val_accuracy: self.val_accuracy || other.val_accuracy,
            val_errors: self.val_errors || other.val_errors,
            val_costs: self.val_costs || other.val_costs,
        }
    }

    /// Whether anything on the validation set is needed.
    pub fn any(self) -> bool {
        self.val_accuracy || self.val_errors || self.val_costs
    }
}

/// What a rule observes after an epoch. Per-class vectors are indexed by class.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClassStats {
    /// t_k: the fraction of class k's training inputs of the epoch (the adversarial examples
    /// trained on) that the logits of the loss forward classified correctly, before the update
    /// (CFA §4.1; counted as `PKU-ML/CFA:train.py` does, with per-class denominators).
    pub train_robust: Vec<f64>,
    /// Class-wise validation clean accuracy, when measured.
    pub val_clean: Option<Vec<f64>>,
    /// Class-wise validation robust accuracy, when measured.
    pub val_robust: Option<Vec<f64>>,
    /// Class-wise validation standard, boundary and robust errors, when measured.
    pub val_errors: Option<ClassErrors>,
    /// WAT's K + 1 validation costs, when measured.
    pub val_costs: Option<Vec<f64>>,
}

/// How a TRADES-like objective scales its two terms for a class with trade-off β_k.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TradesScaling {
    /// CE + β·KL (the TRADES paper).
    Paper,
    /// (CE + β·KL)/(1 + β) (CFA eq. (8), and `trades_loss` in `PKU-ML/CFA:attack.py` even for
    /// vanilla TRADES).
    #[default]
    Reference,
}

impl TradesScaling {
    /// (a, b) with per-sample loss a·CE + b·KL: (1, β) or (1/(1 + β), β/(1 + β)).
    pub fn term_weights(self, beta: f64) -> (f64, f64) {
        match self {
            TradesScaling::Paper => (1.0, beta),
            TradesScaling::Reference => (1.0 / (1.0 + beta), beta / (1.0 + beta)),
        }
    }
}
