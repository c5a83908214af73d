//! AutoAttack's sanity checks (`fra31/auto-attack:autoattack/checks.py`) and this crate's
//! own: every adversarial example in the ε-ball and [0, 1], outputs that look like
//! probabilities, Square breaking points the white-box attacks did not, and the final flags
//! recomputed from the stored adversarial examples in another batch split.

use tch::{Device, Kind, Tensor};

use super::report::StepReport;
use super::state::State;
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// Slack of the ε-ball check (float rounding of x ± ε).
const BALL_TOL: f64 = 1e-6;
/// AutoAttack's threshold for the Square warning (`check_square_sr`: 0.2 points).
const SQUARE_TOL: f64 = 0.002;

/// Every adversarial example in the ε-ball around its image and in [0, 1].
pub(super) fn check_ball(adv: &Tensor, x: &Tensor, eps: f64, attack: &str) -> Result<()> {
    if adv.numel() == 0 {
        return Ok(());
    }
    let dist = (adv - x).abs().max().double_value(&[]);
    let (lo, hi) = (adv.min().double_value(&[]), adv.max().double_value(&[]));
    if !(dist <= eps + BALL_TOL && lo >= 0.0 && hi <= 1.0) {
        return Err(invalid(
            attack,
            format!("an adversarial batch with ‖δ‖∞ = {dist}, values in [{lo}, {hi}]"),
            format!("‖δ‖∞ <= eps = {eps} and values in [0, 1]"),
        ));
    }
    Ok(())
}

/// AutoAttack's `check_range_output`: outputs that look like probabilities, not logits.
pub(super) fn probability_check(model: &dyn Classifier, x: &Tensor) -> Option<String> {
    let z = tch::no_grad(|| model.forward_t(x, false));
    let (lo, hi) = (z.min().double_value(&[]), z.max().double_value(&[]));
    let sum_err = (z.sum_dim_intlist(-1, false, Kind::Float) - 1.0)
        .abs()
        .max()
        .double_value(&[]);
    (hi < 1.0 + 1e-5 && lo > -1e-5 && sum_err < 1e-5).then(|| {
        "the model's outputs look like probabilities; the attacks need logits (numerical \
         problems of the losses may then overestimate robustness)"
            .to_string()
    })
}

/// AutoAttack's `check_square_sr`: Square, a black-box attack, lowering the robust accuracy of
/// the white-box attacks by more than 0.2 points hints at gradient masking.
pub(super) fn square_check(finished: &[StepReport]) -> Option<String> {
    let sq = finished.iter().find(|s| s.attack == "square")?;
    if finished.len() < 2 {
        return None;
    }
    let others = finished
        .iter()
        .filter(|s| s.attack != "square")
        .map(|s| s.robust)
        .fold(f64::INFINITY, f64::min);
    (sq.robust < others - SQUARE_TOL).then(|| {
        format!(
            "Square lowered the robust accuracy of the white-box attacks by {:.2} points: \
             the gradient-based attacks may be masked; consider more Square queries or an \
             adaptive attack",
            100.0 * (others - sq.robust)
        )
    })
}

/// Recomputes every prediction on the stored adversarial examples with another batch
/// split and checks it gives the same flags (fra31/auto-attack#74).
///
/// `batch_size` is the attacks' batch size; the recheck takes half of it, plus one.
pub(super) fn recheck(
    model: &dyn Classifier,
    x_adv: &Tensor,
    state: &State,
    labels: &[i64],
    batch_size: usize,
    device: Device,
) -> Result<()> {
    let n = labels.len() as i64;
    let bs = (batch_size as i64 / 2).max(1) + 1;
    let mut mismatches = Vec::new();
    let mut start = 0;
    while start < n {
        let len = bs.min(n - start);
        let x = x_adv.narrow(0, start, len).to_device(device);
        let pred = tch::no_grad(|| model.forward_t(&x, false).argmax(-1, false));
        let pred: Vec<i64> = Vec::try_from(&pred.to_device(Device::Cpu))?;
        for (j, p) in pred.into_iter().enumerate() {
            let i = start as usize + j;
            let clean_ok = state.clean_pred[i] == labels[i];
            let robust_again = clean_ok && p == labels[i];
            if robust_again != state.robust[i] {
                mismatches.push(i);
            }
        }
        start += len;
    }
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(invalid(
            "model",
            format!(
                "{} samples (first: {:?}) whose robustness changes when the stored \
                 adversarial examples are re-evaluated",
                mismatches.len(),
                &mismatches[..mismatches.len().min(5)]
            ),
            "the same flags in any batch split (is the model deterministic and in eval mode?)",
        ))
    }
}
