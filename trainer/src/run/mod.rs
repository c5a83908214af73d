//! Runs: `classwise train --config FILE.toml [--out DIR] [--resume] [--force]`.
//!
//! A run directory holds
//! * `config.toml`: the resolved configuration (every default written out);
//! * `env.json`: one entry per session (git SHA, crate, tch and libtorch versions, device,
//!   threads, seed);
//! * `split.json`: the validation split and the train/val/test indices actually used;
//! * `init.json`: with `[train] init_from`, the run or file the weights came from and their
//!   fingerprint;
//! * `metrics.jsonl`: one flushed JSON line per epoch
//!   ([`EpochRecord`](classwise_core::record::EpochRecord), versioned by
//!   [`METRICS_SCHEMA`](classwise_core::record::METRICS_SCHEMA), which the figures read back);
//! * `checkpoints/e<epoch>/{model,optimizer,ema,fawa}.safetensors`, the selection candidates
//!   `checkpoints/candidates/<track>-e<epoch>.safetensors`, and after the run
//!   `checkpoints/best.safetensors` (and `best-ema`, `best-fawa`), all written atomically;
//!   `state.json` (written last, atomically) names the checkpoint a resume starts from and holds
//!   the rule's, the averages' and the selection's state, so a crash at any point leaves a
//!   consistent run;
//! * `report.json` and `report.md`: the class-wise evaluation of the last model;
//!   `report-ema`, `report-fawa` for the averages; `report-best*` for the selected models and
//!   `selection.json` naming the strategy and the epochs it chose.
//!
//! The loop is the shared training driver ([`classwise_core::driver`]): this module's
//! [`backend`] trains an epoch over the batch loader (t_k counted on the fly), measures on
//! validation what the rule and the hooks need (or `eval.every` asks), writes the epoch's
//! record with the test evaluation, and the checkpoint and `state.json`. The hooks, in order:
//! the final report, the raw model's selection and the averages ([`tracks`]: the averages
//! decide after validation, CFA Algorithm 1, and are evaluated and selected in turn), the
//! metrics line, checkpoint pruning and `selection.json` ([`hooks`]). Each hook adds its fields
//! to `state.json` and returns what may be deleted once it is written. [`start`] finds where a
//! run starts and restores its weights, so that a resume is no special case of the loop.
//! [`dir`] holds the files and the state, [`data`] the splits, [`seeds`] the random streams,
//! [`log`] the metrics lines, [`report`] the report files.

//! Every random stream is derived from (seed, epoch, step) ([`seeds`]): a resumed run needs no
//! generator state and, on the CPU, ends bit-identical to an uninterrupted one.

mod backend;
pub mod config;
pub mod data;
pub mod dir;
mod hooks;
pub mod log;
pub mod progress;
mod report;
pub mod seeds;
mod source;
mod start;
mod tracks;

use std::path::{Path, PathBuf};

use classwise_core::average::Averaging;
use classwise_core::driver::{Driver, DynHook, Outcome, Stop, boxed};
use classwise_core::select::Selector;

pub use crate::attack::Eps;
pub use config::{BestSplit, DeviceChoice, RunConfig};
pub use dir::{BuildInfo, MidEpoch, RunDir, RunProgress, RunState};
pub use log::split_record;
pub use seeds::report_seed;

use crate::error::Result;
use crate::eval::Report;
use backend::Trainer;
use hooks::{CheckpointPruner, FinalReport, MetricsSink};
use tracks::{AveragedTrack, SelectionTrack, Tracks};

/// How `train` treats an existing run directory.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Continue the run in the directory.
    pub resume: bool,
    /// Resume even if the configuration changed.
    pub force: bool,
    /// Print a line per epoch to stderr.
    pub verbose: bool,
    /// Stop after this many completed epochs, as if the process were killed there (for tests of
    /// resume and for splitting a long run into sessions); no report is written.
    pub stop_after: Option<usize>,
    /// Stop before batch `step` of 0-based epoch `epoch`, `(epoch, step)`, as a signal arriving
    /// there would (the driver's [`Stop`]): the run writes its mid-epoch checkpoint and returns
    /// (for tests of mid-epoch resume).
    pub interrupt_at: Option<(usize, usize)>,
    /// The data root to search when the config names none (`--data-dir`); `None` searches
    /// [`crate::paths::data_roots`] (`CLASSWISE_DATA_DIR`, else the set-up cache, else
    /// `/usr/share/datasets`).
    pub data_dir: Option<PathBuf>,
    /// The code the binary was built from, for `env.json`.
    pub build: BuildInfo,
    /// Diagnostic mode ([`crate::diagnose`]): every batch checked, the first non-finite
    /// operation named.
    pub diagnose: bool,
}

/// The result of [`train`].
pub struct RunSummary {
    pub dir: RunDir,
    /// The final report; `None` when the run stopped early (`stop_after`).
    pub report: Option<Report>,
    pub completed_epochs: usize,
    /// Set when a signal (or [`TrainOptions::interrupt_at`]) stopped the run inside an epoch;
    /// its mid-epoch checkpoint is in the run directory.
    pub interrupted: Option<MidEpoch>,
}

/// Trains (or resumes) the run of `config` in `out`.
pub fn train(config: &RunConfig, out: &Path, opts: TrainOptions) -> Result<RunSummary> {
    config.validate()?;
    crate::diagnose::set_enabled(opts.diagnose);
    let dir = RunDir(out.to_path_buf());
    let device = config.device.device()?;
    configure_device(config, device)?;
    let resume = start::Resume::find(&dir, config, &opts)?;
    start::prepare(&dir, config, &opts, device, &resume)?;
    let begin = resume.start();
    let mut trainer = start::trainer(config, &opts, dir, device, resume)?;
    let k = trainer.data.train.num_classes();
    let mut driver = Driver {
        rule: config.rule.build(config.rule_context(k))?,
        hooks: hooks(config, &trainer.dir)?,
        epochs: config.epochs,
        stop_after: opts.stop_after,
        stop: Stop {
            at: opts.interrupt_at,
        },
    };
    // Hold libtorch's process-global generator from here to the report, so that no other thread
    // draws from it between a reseed and its use; it is reseeded before every batch.
    let outcome = crate::seed::seeded(config.seed as i64, || driver.run(&mut trainer, begin))?;
    let completed_epochs = match outcome {
        Outcome::Completed => config.epochs,
        Outcome::Stopped { completed_epochs } => completed_epochs,
        Outcome::Interrupted { epoch } => epoch,
    };
    Ok(RunSummary {
        dir: trainer.dir,
        report: trainer.report,
        completed_epochs,
        interrupted: trainer.interrupted,
    })
}

/// The hooks of a run: the final report, the tracks (the raw model's selection and the
/// averages with theirs), the metrics line, the pruning of older checkpoints. The driver's
/// phases order what they do: the tracks' parts are in the record before the metrics line is
/// written, and `selection.json` is written by the backend after every hook finished.
fn hooks<'a>(config: &RunConfig, dir: &RunDir) -> Result<Vec<Box<dyn DynHook<Trainer<'a>>>>> {
    let checkpoints = dir.0.join("checkpoints");
    let selector = || Selector::new(config.select, config.epochs);
    let averages = (config.ema.map(Averaging::Ema).into_iter())
        .chain(config.fawa.map(Averaging::Fawa))
        .map(|a| AveragedTrack::new(a, selector()?, checkpoints.clone()))
        .collect::<Result<Vec<_>>>()?;
    let raw = SelectionTrack::new("raw", selector()?, checkpoints);
    let every = config.checkpoint.every;
    Ok(vec![
        boxed(FinalReport),
        boxed(Tracks { raw, averages }),
        boxed(MetricsSink),
        boxed(CheckpointPruner { every }),
    ])
}

/// Checks that `device` computes in the run's precision (warning that bf16 is slow on the CPU)
/// and sets cuDNN's autotuner on CUDA, before anything is written.
fn configure_device(config: &RunConfig, device: tch::Device) -> Result<()> {
    crate::model::precision::check(config.precision, device)?;
    if config.precision != crate::model::Precision::Fp32 && !device.is_cuda() {
        eprintln!(
            "warning: precision = \"{}\" on the CPU: forward passes are emulated in bf16 and \
             usually slower than fp32 unless the processor has bf16 instructions",
            config.precision
        );
    }
    if device.is_cuda() {
        tch::Cuda::cudnn_set_benchmark(config.cudnn_benchmark);
    }
    Ok(())
}
