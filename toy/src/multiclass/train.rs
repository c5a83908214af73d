//! One training epoch: seeded shuffle, mini-batch SGD with momentum (PyTorch's `torch.optim.SGD`,
//! weight decay on every parameter, as in `PKU-ML/CFA:train.py`), the base loss weighted by the
//! epoch's class-wise plan ([`Base::term_weights`]), and the on-the-fly count of CFA's t_k (`PKU-ML/CFA:train.py`).

use classwise_core::ClassPlan;
use classwise_theory::metrics::ClassTally;
use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;

use super::attack::PgdConfig;
use super::data::Dataset;
use super::loss::Base;
use super::model::{Linear, argmax};
use crate::error::Result;

/// SGD with momentum: v ← μ·v + (g + λ·θ), θ ← θ − lr·v (torch.optim.SGD, dampening 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Sgd {
    pub momentum: f64,
    pub weight_decay: f64,
    velocity: Vec<f64>,
}

impl Sgd {
    pub fn new(n_params: usize, momentum: f64, weight_decay: f64) -> Self {
        Self {
            momentum,
            weight_decay,
            velocity: vec![0.0; n_params],
        }
    }

    /// One step with gradient `grad` (already averaged over the batch).
    pub fn step(&mut self, params: &mut [f64], grad: &[f64], lr: f64) {
        for ((p, v), g) in params.iter_mut().zip(&mut self.velocity).zip(grad) {
            *v = self.momentum * *v + g + self.weight_decay * *p;
            *p -= lr * *v;
        }
    }
}

/// What one epoch of training measured.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochStats {
    /// t_k: fraction of class k's training examples whose training input (x' for the
    /// adversarial bases, x for natural) was classified correctly by the logits of the loss
    /// forward, before the optimiser step.
    pub train_robust: Vec<f64>,
    /// Mean per-sample (weighted) loss over the epoch.
    pub mean_loss: f64,
}

/// The epoch's randomness: the shuffle and the attack starts.
pub struct EpochRng {
    pub shuffle: ChaCha8Rng,
    pub attack: ChaCha8Rng,
}

/// Trains `model` for one epoch on `data` (see the module docs).
#[allow(clippy::too_many_arguments)]
pub fn train_epoch(
    model: &mut Linear,
    sgd: &mut Sgd,
    data: &Dataset,
    base: &Base,
    plan: &ClassPlan,
    attack: &PgdConfig,
    batch_size: usize,
    lr: f64,
    rng: &mut EpochRng,
) -> Result<EpochStats> {
    plan.validate(data.n_classes)?;
    // The rule's step (FRL's remargin), else the attack's own.
    let attack = PgdConfig {
        step_size: plan.step_size.unwrap_or(attack.step_size),
        ..*attack
    };
    // (u_y, v_y) of every class.
    let weights: Vec<(f64, f64)> = (0..data.n_classes)
        .map(|y| base.term_weights(plan, y))
        .collect();
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.shuffle(&mut rng.shuffle);
    let mut tally = ClassTally::new(data.n_classes)?;
    let mut grad = vec![0.0; model.n_params()];
    let mut loss_sum = 0.0;
    for batch in order.chunks(batch_size.max(1)) {
        grad.iter_mut().for_each(|g| *g = 0.0);
        for &i in batch {
            let (x, y) = (data.row(i), data.y[i]);
            let x_adv = base.training_input(model, x, y, plan.eps[y], &attack, &mut rng.attack)?;
            let z = model.logits(x);
            let z_adv = model.logits(&x_adv);
            tally.add(y, argmax(&z_adv) == y)?;
            let (u, v) = weights[y];
            let l = base.sample_loss(&z, &z_adv, y, u, v);
            loss_sum += l.value;
            model.accumulate_param_grad(&l.grad_clean, x, &mut grad);
            model.accumulate_param_grad(&l.grad_adv, &x_adv, &mut grad);
        }
        let inv = 1.0 / batch.len() as f64;
        grad.iter_mut().for_each(|g| *g *= inv);
        sgd.step(model.params_mut(), &grad, lr);
    }
    let train_robust = tally
        .accuracies()
        .into_iter()
        .map(|a| a.unwrap_or(0.0))
        .collect();
    Ok(EpochStats {
        train_robust,
        mean_loss: loss_sum / data.len().max(1) as f64,
    })
}
