//! Batches prepared ahead of the step that uses them, as PyTorch's `DataLoader` with one worker
//! and `pin_memory=True`: a worker thread cuts each batch from the `u8` images and augments it
//! (random crop and flip, [`Augment::apply_to_bytes`]) in plain Rust, without libtorch, so
//! that it starts no second OpenMP team to compete with the training thread's for the cores.
//! The consuming thread wraps the bytes in a tensor, pins it (page-locked memory) when the
//! batch is bound for CUDA, starts a non-blocking copy to the device and converts the `u8`
//! batch to `f32` in [0, 1] there (4× less to copy). No batch waits for the host, and no copy
//! waits for the GPU's queue to drain (a copy from ordinary memory does).
//!
//! The worker holds the augmentation stream and draws for every batch in order, skipped ones
//! included, so what a batch contains does not depend on the prefetching: it is what
//! [`super::Dataset::batch`] followed by [`Augment::apply`] gives, bit for bit
//! (`trainer/tests/loader.rs`).

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use rand::rngs::ChaCha8Rng;
use tch::{Device, Kind, Tensor};

use super::augment::{Augment, Draw};
use super::dataset::{Dataset, HostSource, check_range};
use crate::error::{Result, TrainerError};

/// The worker's name in errors.
const WORKER: &str = "data loader";

/// Batches prepared ahead of the one in use: the worker stays at most this many batches ahead
/// (each is one `u8` batch in host memory).
pub const PREFETCH_DEPTH: usize = 2;

/// What the worker does to the batches of one pass over a data set.
pub struct LoaderPlan {
    /// The image indices of every step, in order.
    pub steps: Vec<Vec<i64>>,
    /// Steps before this one are not loaded (trained before an interruption); their
    /// augmentation is still drawn, so that the stream is where it was.
    pub skip: usize,
    pub augment: Augment,
    /// The augmentation stream (unused by an identity augmentation).
    pub rng: ChaCha8Rng,
}

impl LoaderPlan {
    /// Batches of `batch_size` in index order, without augmentation (evaluation).
    pub fn in_order(len: usize, batch_size: usize) -> Self {
        let all: Vec<i64> = (0..len as i64).collect();
        LoaderPlan {
            steps: all.chunks(batch_size.max(1)).map(<[i64]>::to_vec).collect(),
            skip: 0,
            augment: Augment::none(),
            rng: rand::SeedableRng::seed_from_u64(0),
        }
    }
}

/// One batch of a [`Loader`]: its step in the pass, the images (`f32`, B×C×H×W) and labels
/// (`i64`, B) on the loader's device.
pub struct LoadedBatch {
    pub step: usize,
    pub x: Tensor,
    pub y: Tensor,
}

/// A batch as the worker hands it over: its step, the augmented `u8` images (B×C×H×W
/// row-major) and the labels.
type HostBatch = Result<(usize, Vec<u8>, Vec<i64>)>;

/// An iterator over the batches of a [`LoaderPlan`], prepared by a worker thread.
pub struct Loader {
    rx: Option<Receiver<HostBatch>>,
    worker: Option<JoinHandle<()>>,
    device: Device,
    /// (C, H, W) of every image.
    shape: [usize; 3],
    /// Batches still to come: a worker that hangs up before is reported, not taken for the end.
    remaining: usize,
}

impl Loader {
    /// Starts the worker for `plan` over `source`, for batches bound to `device`.
    pub fn spawn(source: HostSource, plan: LoaderPlan, device: Device) -> Result<Loader> {
        let remaining = plan.steps.len().saturating_sub(plan.skip);
        let shape = source.image_shape();
        if !plan.augment.is_identity() {
            plan.augment.validate(shape[1], shape[2])?;
        }
        let (tx, rx) = sync_channel(PREFETCH_DEPTH);
        let worker = std::thread::Builder::new()
            .name("classwise-loader".into())
            .spawn(move || work(&source, plan, &tx))
            .map_err(|e| TrainerError::Worker {
                what: WORKER,
                reason: format!("could not start: {e}"),
            })?;
        Ok(Loader {
            rx: Some(rx),
            worker: Some(worker),
            device,
            shape,
            remaining,
        })
    }

    /// The worker hung up with batches still to come: it panicked.
    fn lost(&mut self) -> TrainerError {
        self.rx.take();
        let reason = match self.worker.take().map(JoinHandle::join) {
            Some(Err(panic)) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "it panicked".into()),
            _ => "it stopped early".into(),
        };
        TrainerError::Worker {
            what: WORKER,
            reason: format!("{reason} ({} batches were still to come)", self.remaining),
        }
    }
}

/// The worker's loop: every step of `plan` in order, sent until the consumer hangs up or a
/// batch fails (the error is sent and the worker ends).
fn work(source: &HostSource, mut plan: LoaderPlan, tx: &SyncSender<HostBatch>) {
    for (step, indices) in plan.steps.iter().enumerate() {
        let draws =
            (!plan.augment.is_identity()).then(|| plan.augment.draw(indices.len(), &mut plan.rng));
        if step < plan.skip {
            continue;
        }
        let batch = prepare(source, indices, &plan.augment, draws.as_deref());
        let failed = batch.is_err();
        if tx.send(batch.map(|(x, y)| (step, x, y))).is_err() || failed {
            return;
        }
    }
}

/// One batch on the host: the images at `indices`, augmented by `draws` (one per image) when
/// given, and their labels.
fn prepare(
    source: &HostSource,
    indices: &[i64],
    augment: &Augment,
    draws: Option<&[Draw]>,
) -> Result<(Vec<u8>, Vec<i64>)> {
    check_range(indices, source.len())?;
    let shape = source.image_shape();
    let mut bytes = Vec::with_capacity(indices.len() * shape.iter().product::<usize>());
    let mut labels = Vec::with_capacity(indices.len());
    for (k, &i) in indices.iter().enumerate() {
        let (image, label) = source.image(i as usize);
        match draws {
            Some(d) => augment.apply_to_bytes(image, shape, d[k], &mut bytes),
            None => bytes.extend_from_slice(image),
        }
        labels.push(label);
    }
    Ok((bytes, labels))
}

/// `t`, pinned when bound for CUDA, copied to `device` without waiting.
fn to_device(t: Tensor, device: Device) -> Result<Tensor> {
    let t = if device.is_cuda() {
        t.f_pin_memory(device)?
    } else {
        t
    };
    // From pinned memory the copy is asynchronous on the current stream, so the kernels that
    // read the batch are ordered after it; on the CPU this is the tensor itself.
    Ok(t.f_to_device_(device, t.kind(), true, false)?)
}

impl Iterator for Loader {
    type Item = Result<LoadedBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let Ok(received) = self.rx.as_ref()?.recv() else {
            return Some(Err(self.lost()));
        };
        self.remaining -= 1;
        let device = self.device;
        let [c, h, w] = self.shape.map(|d| d as i64);
        Some(received.and_then(|(step, bytes, labels)| {
            let b = labels.len() as i64;
            let x = Tensor::f_from_data_size(&bytes, &[b, c, h, w], Kind::Uint8)?;
            let x = to_device(x, device)?
                .f_to_kind(Kind::Float)?
                .f_div_scalar(255.0)?;
            let y = to_device(Tensor::f_from_slice(&labels)?, device)?;
            Ok(LoadedBatch { step, x, y })
        }))
    }
}

impl Drop for Loader {
    /// Hangs up first, so that a worker blocked on a full queue ends, then waits for it.
    fn drop(&mut self) {
        self.rx.take();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// Batches of `data` in index order, prepared ahead by a [`Loader`].
pub(crate) fn batches(
    data: &Dataset,
    batch_size: usize,
    device: Device,
) -> Result<impl Iterator<Item = Result<(Tensor, Tensor)>> + use<>> {
    let plan = LoaderPlan::in_order(data.len(), batch_size);
    let loader = Loader::spawn(data.host_source(), plan, device)?;
    Ok(loader.map(|batch| batch.map(|b| (b.x, b.y))))
}
