//! Class-wise evaluation: clean and **exact** robust accuracy of the linear model (no attack
//! needed, see [`super::attack::worst_case_margins`]), and WAT's validation costs.

use classwise_theory::metrics::{
    ClassAccuracy, ClassErrors, class_accuracy_from_flags, class_errors,
};
use rand::rngs::ChaCha8Rng;

use super::attack::{AttackLoss, Certifier, PgdConfig, pgd};
use super::data::Dataset;
use super::model::{Linear, cross_entropy, kl_divergence};
use crate::error::Result;

/// Per-sample flags and class-wise accuracies of one model on one data set at budget ε.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassEval {
    pub clean_flags: Vec<bool>,
    pub robust_flags: Vec<bool>,
    pub clean: ClassAccuracy,
    pub robust: ClassAccuracy,
}

impl ClassEval {
    /// FRL/BAT standard, boundary and robust errors (BAT Table 1).
    pub fn errors(&self, labels: &[usize]) -> Result<ClassErrors> {
        Ok(class_errors(
            &self.clean_flags,
            &self.robust_flags,
            labels,
            self.clean.n_classes(),
        )?)
    }
}

/// Clean accuracy and exact ℓ∞ robust accuracy at `epsilon`, per class.
pub fn evaluate(model: &Linear, data: &Dataset, epsilon: f64) -> Result<ClassEval> {
    let clean_flags: Vec<bool> = (0..data.len())
        .map(|i| model.predict(data.row(i)) == data.y[i])
        .collect();
    let certifier = Certifier::new(model);
    let robust_flags = (0..data.len())
        .map(|i| certifier.is_robustly_correct(model, data.row(i), data.y[i], epsilon))
        .collect::<Result<Vec<bool>>>()?;
    Ok(ClassEval {
        clean: class_accuracy_from_flags(&clean_flags, &data.y, data.n_classes)?,
        robust: class_accuracy_from_flags(&robust_flags, &data.y, data.n_classes)?,
        clean_flags,
        robust_flags,
    })
}

/// Per-class sums of the clean CE and of KL(p(x) ‖ p(x')) under the TRADES KL-PGD attack at
/// `epsilon` (the ingredients of WAT's validation cost, `validate` in
/// `boqili/WAT:worst_class_adversarial_train.py`).
pub fn trades_loss_sums(
    model: &Linear,
    data: &Dataset,
    epsilon: f64,
    attack: &PgdConfig,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut ce = vec![0.0; data.n_classes];
    let mut kl = vec![0.0; data.n_classes];
    for i in 0..data.len() {
        let (x, y) = (data.row(i), data.y[i]);
        let adv = pgd(model, x, y, epsilon, attack, AttackLoss::TradesKl, rng)?;
        let z = model.logits(x);
        ce[y] += cross_entropy(&z, y).value;
        // Rounding can make a KL of identical distributions slightly negative.
        kl[y] += kl_divergence(&z, &model.logits(&adv)).value.max(0.0);
    }
    Ok((ce, kl))
}
