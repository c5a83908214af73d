//! WAT's validation costs: the per-class TRADES loss of a model on the validation split
//! (WAT §4, Algorithm 1: the costs its Hedge weights follow).

use tch::{Device, Kind, Tensor};

use super::perturb_uniform;
use crate::attack::Attack;
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// WAT's K + 1 validation costs of `model` (`validate` in
/// `boqili/WAT:worst_class_adversarial_train.py`): per class the mean TRADES loss
/// CE(f(x), y) + β·KL(p(x) ‖ p(x')) with x' from `attack` (the run's TRADES attack) at budget
/// `eps`, then
/// the average over all samples ([`classwise_theory::calibration::wat_validation_costs`] with
/// the number of images as divisor). Eval mode, no parameter gradients.
pub fn trades_costs(
    model: &dyn Classifier,
    batches: impl IntoIterator<Item = Result<(Tensor, Tensor)>>,
    attack: &dyn Attack,
    eps: f64,
    beta: f64,
    n_classes: usize,
    device: Device,
) -> Result<Vec<f64>> {
    let k = n_classes as i64;
    let mut ce_sums = Tensor::zeros([k], (Kind::Double, device));
    let mut kl_sums = Tensor::zeros([k], (Kind::Double, device));
    let mut n = 0usize;
    for batch in batches {
        let (x, y) = batch?;
        let (x, y) = (x.to_device(device), y.to_device(device));
        let x_adv = perturb_uniform(model, attack, &x, &y, eps)?;
        tch::no_grad(|| {
            let z = model.forward_t(&x, false);
            let z_adv = model.forward_t(&x_adv, false);
            let ce = crate::loss::ce(&z, &y).to_kind(Kind::Double);
            // KL ≥ 0, but computed in f32 from two nearly equal distributions it can come out
            // a few 1e-8 below zero; the validation costs need it non-negative.
            let kl = crate::loss::kl(&z, &z_adv)
                .to_kind(Kind::Double)
                .clamp_min(0.0);
            ce_sums = ce_sums.index_add(0, &y, &ce);
            kl_sums = kl_sums.index_add(0, &y, &kl);
        });
        n += x.size()[0] as usize;
    }
    if n == 0 {
        return Err(invalid("validation set", "0 images", "at least one image"));
    }
    let ce: Vec<f64> = Vec::try_from(&ce_sums.to_device(Device::Cpu))?;
    let kl: Vec<f64> = Vec::try_from(&kl_sums.to_device(Device::Cpu))?;
    Ok(classwise_theory::calibration::wat_validation_costs(
        &ce, &kl, beta, n as f64,
    )?)
}
