//! What a toy run reports: its per-epoch history and the class-wise tables of its final,
//! averaged and selected models.

use classwise_core::ClassPlan;
use classwise_theory::calibration::AverageAction;
use classwise_theory::metrics::ClassAccuracySummary;
use serde::Serialize;

use super::config::RunConfig;

/// Class-wise clean and exact robust accuracy (at the plain ε) of one model on the test set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelReport {
    pub clean: ClassAccuracySummary,
    pub robust: ClassAccuracySummary,
    /// Flat parameters ([`Linear::to_flat`](super::model::Linear::to_flat)).
    pub params: Vec<f64>,
}

impl ModelReport {
    /// Average robust accuracy (over all test samples).
    pub fn robust_avg(&self) -> f64 {
        self.robust.overall.unwrap_or(self.robust.class_mean)
    }

    /// Worst-class robust accuracy.
    pub fn robust_worst(&self) -> f64 {
        self.robust.worst.value
    }

    /// Average clean accuracy.
    pub fn clean_avg(&self) -> f64 {
        self.clean.overall.unwrap_or(self.clean.class_mean)
    }

    /// Worst-class clean accuracy.
    pub fn clean_worst(&self) -> f64 {
        self.clean.worst.value
    }
}

/// WAT Algorithm 1's selected iterate (argmin over epochs of the worst-class validation cost).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectedReport {
    pub epoch: usize,
    pub model: ModelReport,
}

/// One epoch of a run. Per-class vectors are indexed by class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochRecord {
    pub epoch: usize,
    pub lr: f64,
    /// The class-wise plan in force this epoch (ε_k, β_k, class weights of the two loss terms,
    /// the rule's step size if any); [`Base::term_weights`](super::loss::Base::term_weights) gives the loss's weights.
    pub plan: ClassPlan,
    pub train_loss: f64,
    /// t_k counted on the fly on this epoch's training inputs (as in `PKU-ML/CFA:train.py`).
    pub train_robust: Vec<f64>,
    pub val_clean: Vec<f64>,
    pub val_robust: Vec<f64>,
    /// min_k validation robust accuracy (the FAWA gate's input).
    pub val_worst_robust: f64,
    /// WAT's validation cost vector (K class costs, then the average).
    pub val_costs: Vec<f64>,
    pub test_clean: Vec<f64>,
    pub test_robust: Vec<f64>,
    /// What FAWA did after this epoch (`None` when FAWA is off).
    pub fawa: Option<AverageAction>,
}

/// The result of [`run`](super::run::run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub config: RunConfig,
    /// `"<rule>/<base>"`, e.g. `"cfa/trades"`.
    pub label: String,
    pub history: Vec<EpochRecord>,
    /// The last iterate.
    pub final_model: ModelReport,
    /// The FAWA model; `None` when FAWA is off or no epoch passed the gate.
    pub fawa: Option<ModelReport>,
    /// Epochs admitted by the FAWA gate.
    pub fawa_accepted: usize,
    /// The plain EMA model (`None` when off).
    pub ema: Option<ModelReport>,
    /// The iterate WAT's selection rule picks (reported for every method).
    pub selected: SelectedReport,
}

impl RunReport {
    /// ε_k per epoch (rows: epochs, columns: classes), e.g. for the CCM trajectory figure.
    pub fn epsilon_trajectory(&self) -> Vec<Vec<f64>> {
        self.history.iter().map(|r| r.plan.eps.clone()).collect()
    }

    /// β_k per epoch (TRADES base), `None` otherwise.
    pub fn beta_trajectory(&self) -> Option<Vec<Vec<f64>>> {
        self.config.base.trades_beta()?;
        Some(self.history.iter().map(|r| r.plan.beta.clone()).collect())
    }
}
