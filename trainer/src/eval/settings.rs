//! How a model is evaluated, whatever trained it: the attack, ε, the robust counting, the batch
//! size, the seed and the paper's protocol; and a data set evaluated with them.

use tch::Device;

use super::protocol::ProtocolEntry;
use super::{Report, RobustCounting, evaluate};
use crate::attack::{Attack, Eps, Pgd};
use crate::data::{Dataset, batches};
use crate::error::Result;
use crate::model::Classifier;

/// The settings of a model's evaluation. A run takes them from its configuration's `[eval]`
/// section; another source of models from wherever it keeps them.
#[derive(Clone, Debug)]
pub struct EvalSettings {
    /// The attack of [`evaluate_on`] (the per-epoch evaluations, `classwise eval`'s default).
    pub attack: Pgd,
    pub eps: Eps,
    pub robust_counting: RobustCounting,
    /// Images per batch of [`evaluate_on`].
    pub batch_size: usize,
    /// libtorch's seed for the final evaluation (the attacks' random starts).
    pub seed: i64,
    /// The paper's final evaluation ([`super::protocol`]), empty when the source has none.
    pub protocol: Vec<ProtocolEntry>,
    /// Images per batch of the protocol's non-AutoAttack entries.
    pub protocol_batch_size: usize,
}

/// Evaluates `model` on `data` with the settings' attack.
pub fn evaluate_on(
    model: &dyn Classifier,
    data: &Dataset,
    settings: &EvalSettings,
    device: Device,
) -> Result<Report> {
    evaluate_with(model, data, settings, &settings.attack, device)
}

/// Evaluates `model` on `data` with `attack` at the settings' ε and robust counting.
pub fn evaluate_with(
    model: &dyn Classifier,
    data: &Dataset,
    settings: &EvalSettings,
    attack: &dyn Attack,
    device: Device,
) -> Result<Report> {
    evaluate(
        model,
        batches(data, settings.batch_size, device)?,
        data.class_names(),
        attack,
        settings.eps.value,
        settings.robust_counting,
        device,
    )
}
