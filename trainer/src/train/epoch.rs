//! One training epoch: for each batch, the objective's loss under the epoch's [`ClassPlan`],
//! backward, an SGD step; on the fly, the class-wise count of correctly classified training
//! inputs (CFA's t_k, as `PKU-ML/CFA:train.py` counts it: the adversarial examples trained on,
//! the logits of the loss forward, before the update; here with per-class denominators), the
//! confusion matrix of those inputs (BAT Fig. 3) and, for the early-stopped attacks, the steps
//! each class's examples took (BAT Fig. 2b).

use tch::{Device, Kind, Tensor};

use super::objective::{DevicePlan, Objective, StepContext, StepOutput};
use super::optim::Sgd;
use super::plan::ClassPlan;
use crate::diagnose::Finding;
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

/// What batch `i` of an epoch trains with: the learning rate, a factor applied to every
/// class's ε of the plan (1 outside an ε warm-up), and whether a clean forward pass in train
/// mode follows the update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepSettings {
    pub lr: f64,
    pub eps_scale: f64,
    /// A forward pass of the clean batch in train mode after the update, without gradient, as
    /// `PKU-ML/CFA:train.py` makes to record the training clean accuracy: its only effects are
    /// BatchNorm's running statistics (which then lean to clean data) and a dropout draw.
    pub clean_forward_after_step: bool,
}

impl StepSettings {
    /// The same learning rate for every batch and the plan's ε as it is.
    pub fn constant(lr: f64) -> impl Fn(usize) -> StepSettings {
        move |_| StepSettings {
            lr,
            eps_scale: 1.0,
            clean_forward_after_step: false,
        }
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

/// How far an epoch got: a record of `classwise_core` ([`classwise_core::record::progress`]),
/// saved in `interrupted.json` by a run interrupted mid-epoch.
pub use classwise_core::record::EpochProgress;

/// The end of [`train_epoch_from`]: the whole epoch, or the point where it was asked to stop.
#[derive(Clone, Debug, PartialEq)]
pub enum EpochOutcome {
    Complete(EpochStats),
    Interrupted(EpochProgress),
}

/// How often (in batches) the epoch reads its device-side finiteness flag: the training path
/// synchronises with the device once per this many batches and at the epoch's end, not per batch.
pub const FINITE_CHECK_EVERY: usize = 25;

/// [`train_epoch`] from `start`: `batches` yields the epoch's batches from batch
/// `start.next_step` on, and the counts and loss sum carry on from `start`'s. Before each batch
/// `stop(step)` is asked whether to stop there; if it says so, the epoch returns its progress
/// (the parameters being those after batch `step − 1`).
///
/// Losses, counts and a "first non-finite batch" flag accumulate on the device; the flag is read
/// every [`FINITE_CHECK_EVERY`] batches, before an interruption and at the end, and a non-finite
/// loss fails the epoch naming its batch (the parameters are then not saved: the run keeps its
/// last good checkpoint). In diagnostic mode ([`crate::diagnose`]) every batch is checked before
/// its update, forward and backward, and the error names the first non-finite operation.
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
    check_progress(&start, k)?;
    // The plan's vectors go to the device once per epoch.
    let device_plan = DevicePlan::new(plan, device)?;
    let mut acc = Accumulators::new(&start, k, device);
    let diagnosing = crate::diagnose::enabled();
    let mut batches = batches.into_iter();
    for i in start.next_step.. {
        if stop(i) {
            acc.check_finite(epoch)?;
            return Ok(EpochOutcome::Interrupted(acc.progress(i)?));
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
        let ctx = StepContext { plan, epoch };
        let out = profile::timed("loss", || match diagnosing {
            false => objective.loss(model, &x, &y, ctx),
            true => diagnosed_loss(model, objective, &x, &y, ctx, (epoch, i)),
        })?;
        profile::timed("backward", || out.loss.backward());
        if let Some(finding) = diagnosing
            .then(|| crate::diagnose::parameter_gradients(optimizer.parameters()))
            .flatten()
        {
            return Err(non_finite(epoch, i, &finding.to_string()));
        }
        profile::timed("optimizer", || optimizer.step(step.lr));
        if step.clean_forward_after_step {
            tch::no_grad(|| drop(model.forward_t(&x, true)));
        }
        acc.add(&out, &y, i)?;
        if (i + 1) % FINITE_CHECK_EVERY == 0 {
            acc.check_finite(epoch)?;
        }
    }
    acc.check_finite(epoch)?;
    acc.finish()
}

/// The loss of one batch in diagnostic mode: recorded probe by probe, checked forward and
/// backward (one extra backward pass) before the caller's update.
fn diagnosed_loss(
    model: &dyn Classifier,
    objective: &dyn Objective,
    x: &Tensor,
    y: &Tensor,
    ctx: StepContext<'_>,
    (epoch, i): (usize, usize),
) -> Result<StepOutput> {
    let (out, trace) = crate::diagnose::record(|| objective.loss(model, x, y, ctx));
    let out = out?;
    let finding = match trace.forward() {
        None if !crate::diagnose::all_finite(&out.loss) => {
            Some(Finding::Forward { op: "loss".into() })
        }
        None => trace.backward(&out.loss)?,
        found => found,
    };
    match finding {
        Some(f) => Err(non_finite(epoch, i, &f.to_string())),
        None => Ok(out),
    }
}

/// The error of a non-finite value in 0-based batch `i` of 0-based epoch `epoch`.
fn non_finite(epoch: usize, i: usize, what: &str) -> TrainerError {
    TrainerError::NonFinite {
        epoch: epoch + 1,
        batch: i,
        what: what.to_string(),
    }
}

/// Checks that a saved progress has one count per class (and per cell).
fn check_progress(start: &EpochProgress, k: usize) -> Result<()> {
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
    Ok(())
}

/// What an epoch accumulates, on the training device: per-class counts, the confusion counts,
/// the attack's steps, the loss sum (f64, added in batch order as on the host) and the first
/// batch whose loss was not finite (−1: none).
struct Accumulators {
    k: usize,
    device: Device,
    correct: Tensor,
    total: Tensor,
    /// A progress saved before the confusion counts existed: this epoch logs none, nor steps.
    counted: bool,
    confusion: Tensor,
    steps: Option<Tensor>,
    loss_sum: Tensor,
    first_bad: Tensor,
    n_batches: usize,
}

impl Accumulators {
    fn new(start: &EpochProgress, k: usize, device: Device) -> Self {
        let counts = |v: &[u64]| device_counts(v, device);
        Accumulators {
            k,
            device,
            correct: counts(&start.correct),
            total: counts(&start.total),
            counted: start.confusion.is_some() || start.next_step == 0,
            confusion: counts(start.confusion.as_deref().unwrap_or(&vec![0; k * k])),
            steps: start.steps.as_deref().map(counts),
            loss_sum: Tensor::from(start.loss_sum).to_device(device),
            first_bad: Tensor::from(-1i64).to_device(device),
            n_batches: start.next_step,
        }
    }

    /// Marks batch `i` when its loss is not finite and no earlier batch was; no host sync.
    fn batch_loss(&mut self, loss: &Tensor, i: usize) {
        let bad = loss
            .detach()
            .isfinite()
            .logical_not()
            .logical_and(&self.first_bad.lt(0));
        // `full_like` fills on the device: no host-to-device copy per batch.
        let here = self.first_bad.full_like(i as i64);
        self.first_bad = here.where_self(&bad, &self.first_bad);
    }

    /// Adds batch `i`'s loss and counts.
    fn add(&mut self, out: &StepOutput, y: &Tensor, i: usize) -> Result<()> {
        let k = self.k as i64;
        self.batch_loss(&out.loss, i);
        self.loss_sum = &self.loss_sum + out.loss.detach().to_kind(Kind::Double);
        let y = y.to_kind(Kind::Int64);
        let predicted = out.predicted.to_kind(Kind::Int64);
        self.total = self.total.f_index_add(0, &y, &y.ones_like())?;
        let hit = predicted.eq_tensor(&y).to_kind(Kind::Int64);
        self.correct = self.correct.f_index_add(0, &y, &hit)?;
        let cell = &y * k + &predicted;
        self.confusion = self.confusion.f_index_add(0, &cell, &cell.ones_like())?;
        if let Some(taken) = &out.steps {
            let so_far = match self.steps.take() {
                Some(s) => s,
                None => device_counts(&vec![0; self.k], self.device),
            };
            self.steps = Some(so_far.f_index_add(0, &y, &taken.to_kind(Kind::Int64))?);
        }
        self.n_batches += 1;
        Ok(())
    }

    /// Reads the flag (one host sync): an error naming the first batch with a non-finite loss.
    fn check_finite(&self, epoch: usize) -> Result<()> {
        match self.first_bad.int64_value(&[]) {
            b if b < 0 => Ok(()),
            b => Err(non_finite(
                epoch,
                b as usize,
                "the loss is not finite (its inputs may have turned non-finite in the previous \
                 batch's backward; `classwise train --diagnose` names the operation; lower the \
                 learning rate or add a warm-up if it truly diverges)",
            )),
        }
    }

    /// The progress before batch `next_step`.
    fn progress(&self, next_step: usize) -> Result<EpochProgress> {
        Ok(EpochProgress {
            next_step,
            correct: host_counts(&self.correct)?,
            total: host_counts(&self.total)?,
            loss_sum: self.loss_sum.double_value(&[]),
            confusion: self
                .counted
                .then(|| host_counts(&self.confusion))
                .transpose()?,
            steps: self.steps.as_ref().map(host_counts).transpose()?,
        })
    }

    /// The epoch's statistics (one copy of each count to the host).
    fn finish(self) -> Result<EpochOutcome> {
        let (correct, total) = (host_counts(&self.correct)?, host_counts(&self.total)?);
        let per_class = |sums: &[u64]| -> Vec<f64> {
            sums.iter()
                .zip(&total)
                .map(|(&c, &t)| if t > 0 { c as f64 / t as f64 } else { 0.0 })
                .collect()
        };
        let confusion = match self.counted {
            true => Some(
                host_counts(&self.confusion)?
                    .chunks(self.k)
                    .map(<[u64]>::to_vec)
                    .collect(),
            ),
            false => None,
        };
        let attack_steps = match (&self.steps, self.counted) {
            (Some(s), true) => Some(per_class(&host_counts(s)?)),
            _ => None,
        };
        let n = self.n_batches;
        let mean_loss = if n > 0 {
            self.loss_sum.double_value(&[]) / n as f64
        } else {
            0.0
        };
        Ok(EpochOutcome::Complete(EpochStats {
            train_robust: per_class(&correct),
            confusion,
            attack_steps,
            correct,
            total,
            mean_loss,
            batches: n,
        }))
    }
}

/// Per-class counts on `device`.
fn device_counts(v: &[u64], device: Device) -> Tensor {
    Tensor::from_slice(&v.iter().map(|&c| c as i64).collect::<Vec<_>>()).to_device(device)
}

/// Per-class counts from the device.
fn host_counts(t: &Tensor) -> Result<Vec<u64>> {
    let v: Vec<i64> = Vec::try_from(&t.to_device(Device::Cpu))?;
    Ok(v.into_iter().map(|c| c.max(0) as u64).collect())
}
