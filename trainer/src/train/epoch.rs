//! One training epoch: for each batch, the objective's loss under the epoch's [`ClassPlan`],
//! backward, an SGD step; on the fly, the class-wise count of correctly classified training
//! inputs (CFA's t_k, as `PKU-ML/CFA:train.py` counts it: the adversarial examples trained on,
//! the logits of the loss forward, before the update; here with per-class denominators), the
//! confusion matrix of those inputs (BAT Fig. 3) and, for the early-stopped attacks, the steps
//! each class's examples took (BAT Fig. 2b).

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::objective::{DevicePlan, Objective, StepContext};
use super::optim::Sgd;
use super::plan::ClassPlan;
use crate::error::{Result, TrainerError};
use crate::model::Classifier;
use crate::profile;

/// What an epoch measured.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochStats {
    /// t_k per class (0 for a class with no sample).
    pub train_robust: Vec<f64>,
    /// Per-class counts behind `train_robust`.
    pub correct: Vec<u64>,
    pub total: Vec<u64>,
    /// Counts of (true class, predicted class) of the training inputs, rows true (BAT Fig. 3);
    /// `None` when the epoch resumed from a progress saved without them.
    pub confusion: Option<Vec<Vec<u64>>>,
    /// Per class: the mean number of ascent steps the training attack took, when the objective
    /// counts them (FAT, BAT; 0 for a class with no sample); `None` otherwise, or when the
    /// epoch resumed from a progress saved without them.
    pub attack_steps: Option<Vec<f64>>,
    /// Mean of the batch losses.
    pub mean_loss: f64,
    pub batches: usize,
}

/// What batch `i` of an epoch trains with: the learning rate, and a factor applied to every
/// class's ε of the plan (1 outside an ε warm-up).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepSettings {
    pub lr: f64,
    pub eps_scale: f64,
}

impl StepSettings {
    /// The same learning rate for every batch and the plan's ε as it is.
    pub fn constant(lr: f64) -> impl Fn(usize) -> StepSettings {
        move |_| StepSettings { lr, eps_scale: 1.0 }
    }
}

/// Trains 0-based epoch `epoch` over `batches` (images in [0, 1] and labels, on any device; moved to
/// `device`). A non-finite loss stops the epoch with an error naming the batch, before the
/// update, so the parameters stay those of the last good step.
#[allow(clippy::too_many_arguments)]
pub fn train_epoch(
    model: &dyn Classifier,
    optimizer: &mut Sgd,
    objective: &dyn Objective,
    plan: &ClassPlan,
    epoch: usize,
    batches: impl IntoIterator<Item = Result<(Tensor, Tensor)>>,
    settings: impl Fn(usize) -> StepSettings,
    device: Device,
) -> Result<EpochStats> {
    let start = EpochProgress::new(plan.n_classes());
    let go_on = |_| false;
    match train_epoch_from(
        model, optimizer, objective, plan, epoch, batches, settings, device, start, &go_on,
    )? {
        EpochOutcome::Complete(stats) => Ok(stats),
        EpochOutcome::Interrupted(_) => unreachable!("`stop` never asks to stop"),
    }
}

/// How far an epoch got: the next batch to train and what the batches before it measured. A run
/// interrupted mid-epoch saves it with the model and the optimiser, and resumes from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochProgress {
    /// The 0-based index of the next batch of the epoch.
    pub next_step: usize,
    /// Per-class counts of correctly classified training inputs so far (t_k's numerators).
    pub correct: Vec<u64>,
    /// Per-class counts of training inputs so far.
    pub total: Vec<u64>,
    /// Sum of the batch losses so far.
    pub loss_sum: f64,
    /// The confusion counts so far, row-major K × K (rows true classes); absent in progress
    /// saved before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confusion: Option<Vec<u64>>,
    /// Per class: the training attack's steps so far, when the objective counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<u64>>,
}

impl EpochProgress {
    /// The start of an epoch over `k` classes.
    pub fn new(k: usize) -> Self {
        EpochProgress {
            next_step: 0,
            correct: vec![0; k],
            total: vec![0; k],
            loss_sum: 0.0,
            confusion: Some(vec![0; k * k]),
            steps: None,
        }
    }
}

/// The end of [`train_epoch_from`]: the whole epoch, or the point where it was asked to stop.
#[derive(Clone, Debug, PartialEq)]
pub enum EpochOutcome {
    Complete(EpochStats),
    Interrupted(EpochProgress),
}

/// [`train_epoch`] from `start`: `batches` yields the epoch's batches from batch
/// `start.next_step` on, and the counts and loss sum carry on from `start`'s. Before each batch
/// `stop(step)` is asked whether to stop there; if it says so, the epoch returns its progress
/// (the parameters being those after batch `step − 1`).
#[allow(clippy::too_many_arguments)]
pub fn train_epoch_from(
    model: &dyn Classifier,
    optimizer: &mut Sgd,
    objective: &dyn Objective,
    plan: &ClassPlan,
    epoch: usize,
    batches: impl IntoIterator<Item = Result<(Tensor, Tensor)>>,
    settings: impl Fn(usize) -> StepSettings,
    device: Device,
    start: EpochProgress,
    stop: &dyn Fn(usize) -> bool,
) -> Result<EpochOutcome> {
    let k = plan.n_classes();
    let lengths = [
        ("correct", Some(start.correct.len()), k),
        ("total", Some(start.total.len()), k),
        ("confusion", start.confusion.as_ref().map(Vec::len), k * k),
        ("steps", start.steps.as_ref().map(Vec::len), k),
    ];
    for (field, len, expected) in lengths {
        if let Some(len) = len.filter(|&len| len != expected) {
            return Err(TrainerError::Invalid {
                field: format!("epoch progress.{field}"),
                value: format!("{len} counts"),
                expected: format!("{expected} counts for the {k} classes of the plan"),
            });
        }
    }
    // The plan's vectors go to the device once per epoch.
    let device_plan = DevicePlan::new(plan, device)?;
    // Per-class counts stay on the device; one copy to the host per epoch.
    let counts = |v: &[u64]| {
        Tensor::from_slice(&v.iter().map(|&c| c as i64).collect::<Vec<_>>()).to_device(device)
    };
    let mut correct = counts(&start.correct);
    let mut total = counts(&start.total);
    // A progress saved before the confusion counts existed: this epoch logs none, nor steps.
    let counted = start.confusion.is_some() || start.next_step == 0;
    let mut confusion = counts(&start.confusion.unwrap_or_else(|| vec![0; k * k]));
    let mut steps = start.steps.as_deref().map(counts);
    let first = start.next_step;
    let (mut loss_sum, mut n_batches) = (start.loss_sum, first);
    let mut batches = batches.into_iter();
    for i in first.. {
        if stop(i) {
            return Ok(EpochOutcome::Interrupted(EpochProgress {
                next_step: i,
                correct: host_counts(&correct)?,
                total: host_counts(&total)?,
                loss_sum,
                confusion: counted.then(|| host_counts(&confusion)).transpose()?,
                steps: steps.as_ref().map(host_counts).transpose()?,
            }));
        }
        let Some(batch) = profile::timed("data", || batches.next()) else {
            break;
        };
        let (x, y) = batch?;
        let (x, y) = (x.to_device(device), y.to_device(device));
        let step = settings(i);
        let scaled;
        let plan = if step.eps_scale == 1.0 {
            &device_plan
        } else {
            scaled = device_plan.with_eps_scale(step.eps_scale)?;
            &scaled
        };
        optimizer.zero_grad();
        let out = profile::timed("loss", || {
            objective.loss(model, &x, &y, StepContext { plan, epoch })
        })?;
        let loss = out.loss.double_value(&[]);
        if !loss.is_finite() {
            return Err(TrainerError::Invalid {
                field: "loss".into(),
                value: format!("{loss} at batch {i}"),
                expected: "a finite loss (lower the learning rate; the last good \
                           checkpoint is kept)"
                    .into(),
            });
        }
        profile::timed("backward", || out.loss.backward());
        profile::timed("optimizer", || optimizer.step(step.lr));
        let y = y.to_kind(Kind::Int64);
        let predicted = out.predicted.to_kind(Kind::Int64);
        total = total.f_index_add(0, &y, &y.ones_like())?;
        correct = correct.f_index_add(0, &y, &predicted.eq_tensor(&y).to_kind(Kind::Int64))?;
        let cell = &y * k as i64 + &predicted;
        confusion = confusion.f_index_add(0, &cell, &cell.ones_like())?;
        if let Some(taken) = &out.steps {
            let so_far = match steps.take() {
                Some(s) => s,
                None => counts(&vec![0; k]),
            };
            steps = Some(so_far.f_index_add(0, &y, &taken.to_kind(Kind::Int64))?);
        }
        loss_sum += loss;
        n_batches += 1;
    }
    let (correct, total) = (host_counts(&correct)?, host_counts(&total)?);
    let per_class = |sums: &[u64]| -> Vec<f64> {
        sums.iter()
            .zip(&total)
            .map(|(&c, &t)| if t > 0 { c as f64 / t as f64 } else { 0.0 })
            .collect()
    };
    let confusion = if counted {
        Some(
            host_counts(&confusion)?
                .chunks(k)
                .map(<[u64]>::to_vec)
                .collect(),
        )
    } else {
        None
    };
    let attack_steps = match (&steps, counted) {
        (Some(s), true) => Some(per_class(&host_counts(s)?)),
        _ => None,
    };
    Ok(EpochOutcome::Complete(EpochStats {
        train_robust: per_class(&correct),
        confusion,
        attack_steps,
        correct,
        total,
        mean_loss: if n_batches > 0 {
            loss_sum / n_batches as f64
        } else {
            0.0
        },
        batches: n_batches,
    }))
}

/// Per-class counts from the device.
fn host_counts(t: &Tensor) -> Result<Vec<u64>> {
    let v: Vec<i64> = Vec::try_from(&t.to_device(Device::Cpu))?;
    Ok(v.into_iter().map(|c| c.max(0) as u64).collect())
}
