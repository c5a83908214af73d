//! CFA's class-wise calibrated margin (CCM, CFA eq. (6)) on CFA's own binary model: toy
//! adversarial training where each class is perturbed with its own budget
//! ε_y = (λ₁ + t_y)·ε, t_y being the class's train robust accuracy of the previous epoch
//! (CFA §4.1, Algorithm 1), next to the same training with one budget for both classes.
//!
//! An "epoch" refits w exactly ([`super::fit::maximise_accuracy`] on the class-average
//! empirical robust accuracy, each class perturbed with its budget) and then measures t_y on the
//! same perturbed training samples at the fitted w. The run is therefore the fixed-point
//! iteration of CCM. Two baselines share the samples: one budget ε for both classes, and one
//! budget equal to the mean of CCM's final budgets. Each epoch also reports the population accuracies of the fitted w (closed
//! forms of `classwise-theory`): clean A_y(w) and robust R_y(w, ·) under the paper's adversary at
//! the training budget ε and at the paper's evaluation budget 2η.

use classwise_theory::calibration::cfa_class_epsilon;
use classwise_theory::eval::PerClass;
use classwise_theory::model::{Adversary, BinaryModel, Class};
use serde::Serialize;

use super::fit::{Condition, conditions, maximise_accuracy};
use super::sampler::Sampler;
use crate::error::{Bound, Result, check, require_count};

/// One epoch of [`ccm_run`].
#[derive(Clone, Debug, Serialize)]
pub struct CcmEpoch {
    pub epoch: usize,
    /// The budgets ε_y the epoch trained with.
    pub eps: PerClass<f64>,
    /// The fitted w: the midpoint of the leftmost maximising interval, or twice its lower end
    /// when the interval is unbounded (`w_unbounded`).
    pub w: f64,
    pub w_unbounded: bool,
    /// t_y: train robust accuracy of class y at w under its own budget.
    pub train_robust: PerClass<f64>,
    /// Population accuracies of the fitted w (closed forms).
    pub clean: PerClass<f64>,
    pub robust_at_eps: PerClass<f64>,
    pub robust_at_2eta: PerClass<f64>,
}

/// The output of `classwise toy ccm`: the CCM run and the uniform-budget baseline.
#[derive(Clone, Debug, Serialize)]
pub struct CcmReport {
    pub model: BinaryModel,
    pub eps: f64,
    pub lambda1: f64,
    pub samples_per_class: usize,
    pub seed: u64,
    pub ccm: Vec<CcmEpoch>,
    /// One budget ε for both classes (plain toy AT).
    pub uniform: Vec<CcmEpoch>,
    /// One budget for both classes equal to the mean of the last CCM epoch's budgets: it
    /// separates the effect of CCM's *class-wise* budgets from that of its larger or smaller
    /// average budget (λ₁ + t_y exceeds 1 whenever t_y > 1 − λ₁).
    pub matched: CcmEpoch,
}

fn class_conditions(
    sampler: &Sampler,
    eps: PerClass<f64>,
    n: usize,
    seed: u64,
) -> PerClass<Vec<Condition>> {
    PerClass {
        pos: conditions(sampler, Class::Pos, eps.pos, Adversary::Paper, n, seed),
        neg: conditions(sampler, Class::Neg, eps.neg, Adversary::Paper, n, seed),
    }
}

fn satisfied(c: &[Condition], w: f64) -> f64 {
    c.iter().filter(|(a, b)| a * w + b > 0.0).count() as f64 / c.len() as f64
}

/// One epoch with budgets `eps`.
fn epoch(
    sampler: &Sampler,
    epoch: usize,
    eps: PerClass<f64>,
    base_eps: f64,
    n: usize,
    seed: u64,
) -> Result<CcmEpoch> {
    let m = *sampler.model();
    let c = class_conditions(sampler, eps, n, seed);
    let pooled: Vec<Condition> = c.pos.iter().chain(&c.neg).copied().collect();
    let fit = maximise_accuracy(&pooled)?;
    let (w, w_unbounded) = match fit.value() {
        Some(w) => (w, false),
        None => ((2.0 * fit.lower).max(1.0), true),
    };
    let per = |f: &dyn Fn(Class) -> classwise_theory::Result<f64>| -> Result<PerClass<f64>> {
        Ok(PerClass {
            pos: f(Class::Pos)?,
            neg: f(Class::Neg)?,
        })
    };
    Ok(CcmEpoch {
        epoch,
        eps,
        w,
        w_unbounded,
        train_robust: PerClass {
            pos: satisfied(&c.pos, w),
            neg: satisfied(&c.neg, w),
        },
        clean: per(&|y| m.clean_accuracy(y, w))?,
        robust_at_eps: per(&|y| m.robust_accuracy(y, w, base_eps, Adversary::Paper))?,
        robust_at_2eta: per(&|y| m.robust_accuracy(y, w, 2.0 * m.eta(), Adversary::Paper))?,
    })
}

/// Runs `epochs` epochs of CCM (budgets from the previous epoch's t_y, ε for both classes in
/// epoch 0) and of the uniform baseline on the same `n` samples per class.
pub fn ccm_run(
    model: BinaryModel,
    eps: f64,
    lambda1: f64,
    epochs: usize,
    n: usize,
    seed: u64,
) -> Result<CcmReport> {
    check("eps", eps, Bound::NonNegative)?;
    check("lambda1", lambda1, Bound::NonNegative)?;
    require_count("epochs", epochs, 1)?;
    require_count("samples", n, 1)?;
    let sampler = Sampler::new(model);
    let uniform_eps = PerClass { pos: eps, neg: eps };
    // The uniform run has no state: every epoch refits the same problem.
    let fixed = epoch(&sampler, 0, uniform_eps, eps, n, seed)?;
    let uniform = (0..epochs)
        .map(|e| CcmEpoch {
            epoch: e,
            ..fixed.clone()
        })
        .collect();
    let mut ccm: Vec<CcmEpoch> = Vec::with_capacity(epochs);
    for e in 0..epochs {
        let budgets = match ccm.last() {
            None => uniform_eps,
            Some(prev) => {
                let t = [prev.train_robust.pos, prev.train_robust.neg];
                let k = cfa_class_epsilon(&t, lambda1, eps)?;
                PerClass {
                    pos: k[0],
                    neg: k[1],
                }
            }
        };
        ccm.push(epoch(&sampler, e, budgets, eps, n, seed)?);
    }
    let last = ccm.last().map_or(eps, |e| 0.5 * (e.eps.pos + e.eps.neg));
    let matched = epoch(
        &sampler,
        epochs - 1,
        PerClass {
            pos: last,
            neg: last,
        },
        eps,
        n,
        seed,
    )?;
    Ok(CcmReport {
        matched,
        model,
        eps,
        lambda1,
        samples_per_class: n,
        seed,
        ccm,
        uniform,
    })
}
