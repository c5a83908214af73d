//! The binary Gaussian model of CFA eq. (5), simulated coordinate by coordinate.
//!
//! * [`sampler`]: draws (y, x₁, x₂, …, x_{d+1}) in reproducible chunks.
//! * [`perturb`]: the classifier f_w and its exact ℓ∞ worst-case perturbation.
//! * [`simulate`]: empirical clean and robust accuracies with standard errors, next to the
//!   closed forms of `classwise-theory` and the z-score of each difference.
//! * [`ccm`]: CFA's class-wise budgets ε_y = (λ₁ + t_y)ε iterated on the binary model, next to
//!   one budget for both classes.
//! * [`fit`]: toy adversarial training: the empirical ŵ_ε by exact 1-D maximisation of the
//!   empirical accuracy, and a projected-gradient method on (w₁, w₂) with the logistic loss.
//!
//! Nothing here uses the closed forms to *produce* a simulated number: the closed forms only
//! appear next to the estimates for comparison, so the simulations are an independent check of
//! the theory (check T12, `toy/tests/binary.rs`).

pub mod ccm;
pub mod fit;
pub mod perturb;
pub mod sampler;
pub mod simulate;
mod table;

pub use ccm::{CcmEpoch, CcmReport, ccm_run};
pub use fit::{EmpiricalArgmax, FitReport, SurrogateFit, fit_report, maximise_accuracy};
pub use perturb::LinearClassifier;
pub use sampler::{Sampler, Samples};
pub use simulate::{Estimate, Point, Simulation, Step, Sweep, simulate, sweep};
pub use table::scatter_csv;

use classwise_theory::model::Class;

/// The label as ±1.
pub fn label(y: Class) -> f64 {
    match y {
        Class::Pos => 1.0,
        Class::Neg => -1.0,
    }
}

/// 0 for y = +1, 1 for y = -1 (stream ids, array indices).
pub fn class_index(y: Class) -> u64 {
    match y {
        Class::Pos => 0,
        Class::Neg => 1,
    }
}
