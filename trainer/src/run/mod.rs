//! Runs: `classwise train --config FILE.toml [--out DIR] [--resume] [--force]`.
//!
//! A run directory holds
//! * `config.toml`: the resolved configuration (every default written out);
//! * `env.json`: git SHA, crate, tch and libtorch versions, device, threads, seed;
//! * `split.json`: the validation split and the train/val/test indices actually used;
//! * `metrics.jsonl`: one flushed JSON line per epoch;
//! * `checkpoints/e<epoch>/{model,optimizer,ema}.safetensors` and `checkpoints/best.safetensors`,
//!   all written atomically; `state.json` (written last, atomically) names the checkpoint a
//!   resume starts from, so a crash at any point leaves a consistent run;
//! * `report.json` and `report.md`: the class-wise evaluation of the final model, and
//!   `report-ema.{json,md}` for its weight average when `[ema]` is set.
//!
//! Every random stream is derived from (seed, epoch, step): the data order and augmentation from
//! ChaCha8 streams, libtorch's generator (attack starts) reseeded before every batch. A resumed
//! run therefore needs no generator state and, on the CPU, ends bit-identical to an
//! uninterrupted one.

pub mod config;
pub mod progress;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use classwise_theory::calibration::ema_action;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

pub use config::{BestSplit, DeviceChoice, Eps, RunConfig};

use crate::data::{self, Dataset, Part, Split};
use crate::error::{IoContext, Result, TrainerError, invalid};
use crate::eval::{Evaluation, evaluate, markdown};
use crate::io::write_json;
use crate::model::Model;
use crate::train::{
    ClassPlan, ClassRule, ClassStats, Sgd, StepSettings, Uniform, WeightAverage, train_epoch,
};

/// `model` with the averaged weights of `ema`, kept in `slot` (built on first use).
fn averaged_model<'a>(
    slot: &'a mut Option<Model>,
    model: &Model,
    ema: &WeightAverage,
) -> Result<&'a Model> {
    let averaged = match slot {
        Some(m) => m,
        None => slot.insert(model.try_clone()?),
    };
    averaged.load_state(&ema.state())?;
    Ok(averaged)
}

/// The files of a run directory.
#[derive(Clone, Debug)]
pub struct RunDir(pub PathBuf);

impl RunDir {
    pub fn config(&self) -> PathBuf {
        self.0.join("config.toml")
    }
    pub fn env(&self) -> PathBuf {
        self.0.join("env.json")
    }
    pub fn split(&self) -> PathBuf {
        self.0.join("split.json")
    }
    pub fn metrics(&self) -> PathBuf {
        self.0.join("metrics.jsonl")
    }
    pub fn state(&self) -> PathBuf {
        self.0.join("state.json")
    }
    pub fn checkpoint(&self, name: &str) -> PathBuf {
        self.0.join("checkpoints").join(name)
    }
    pub fn best(&self) -> PathBuf {
        self.checkpoint("best.safetensors")
    }
    /// The model weights of a named checkpoint: `last`, `best`, or a path.
    pub fn weights(&self, which: &str) -> Result<PathBuf> {
        match which {
            "best" => Ok(self.best()),
            "last" => {
                let state = RunState::load(&self.state())?;
                Ok(self.checkpoint(&state.checkpoint).join("model.safetensors"))
            }
            path if Path::new(path).is_file() => Ok(PathBuf::from(path)),
            other => Err(invalid(
                "--checkpoint",
                other,
                "best, last, ema, or the path of a model file (no such file)",
            )),
        }
    }

    /// The model of a named checkpoint: `last`, `best`, `ema` (the weight average of the last
    /// epoch, as CFA's EMA) or a path to model weights.
    pub fn load_model(&self, which: &str, device: Device) -> Result<Model> {
        if which != "ema" {
            return Model::load(&self.weights(which)?, device);
        }
        let state = RunState::load(&self.state())?;
        let ck = self.checkpoint(&state.checkpoint);
        let average = ck.join("ema.safetensors");
        if state.ema_updates == 0 || !average.exists() {
            return Err(invalid(
                "--checkpoint",
                "ema",
                format!(
                    "a run with weight averaging ({} holds none; set [ema] in the config)",
                    ck.display()
                ),
            ));
        }
        let mut model = Model::load(&ck.join("model.safetensors"), device)?;
        model.load_state(&WeightAverage::load(&average, state.ema_updates)?.state())?;
        Ok(model)
    }
}

/// The best checkpoint so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Best {
    pub epoch: usize,
    /// avg + worst-class robust accuracy.
    pub score: f64,
    pub split: String,
}

/// `state.json`: what a resume needs besides the checkpoint files.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunState {
    pub completed_epochs: usize,
    /// Directory under `checkpoints/` holding the last epoch's files.
    pub checkpoint: String,
    pub best: Option<Best>,
    pub ema_updates: usize,
    pub rule: serde_json::Value,
}

impl RunState {
    fn load(path: &Path) -> Result<RunState> {
        let text = std::fs::read_to_string(path).at("reading", path)?;
        serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
            path: path.to_path_buf(),
            offset: None,
            reason: format!("not a run state: {e}"),
        })
    }
}

/// Class-wise accuracies of one split at one epoch.
#[derive(Clone, Debug, Serialize)]
pub struct SplitLog {
    pub clean: Vec<f64>,
    pub robust: Vec<f64>,
    pub clean_avg: f64,
    pub robust_avg: f64,
    pub robust_worst: f64,
    pub robust_worst_class: usize,
    pub robust_cv: f64,
    pub robust_mcd: f64,
}

impl SplitLog {
    fn of(e: &Evaluation) -> Self {
        let avg =
            |s: &classwise_theory::metrics::ClassAccuracySummary| s.overall.unwrap_or(s.class_mean);
        SplitLog {
            clean: e.clean.per_class.clone(),
            robust: e.robust.per_class.clone(),
            clean_avg: avg(&e.clean),
            robust_avg: avg(&e.robust),
            robust_worst: e.robust.worst.value,
            robust_worst_class: e.robust.worst.class,
            robust_cv: e.robust.cv_fraction2,
            robust_mcd: e.robust.mcd,
        }
    }

    /// The checkpoint score: avg + worst-class robust accuracy (CFA §5.1, "Metrics").
    pub fn score(&self) -> f64 {
        self.robust_avg + self.robust_worst
    }
}

/// One line of `metrics.jsonl`.
#[derive(Clone, Debug, Serialize)]
pub struct EpochLog {
    pub epoch: usize,
    pub lr: f64,
    pub train_loss: f64,
    /// t_k (CFA §4.1).
    pub train_robust: Vec<f64>,
    pub plan: ClassPlan,
    pub val: Option<SplitLog>,
    pub test: Option<SplitLog>,
    /// The weight-averaged model (`[ema]`) on the test subset, as CFA's code logs it.
    pub ema_test: Option<SplitLog>,
    /// The ε warm-up factor of the epoch's first and last batch (`train.eps_warmup_epochs`),
    /// when it is below 1 in this epoch; the plan above holds the full ε.
    pub eps_warmup: Option<[f64; 2]>,
    /// Wall time of the whole epoch: training, evaluations and checkpoint.
    pub seconds: f64,
    /// Wall time of the training batches alone.
    pub train_seconds: f64,
    /// Training throughput: training images / `train_seconds`.
    pub train_images_per_second: f64,
    /// Wall time of this epoch's evaluations (validation, test and the averaged model).
    pub eval_seconds: f64,
}

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
    /// The data root to search when the config names none (`--data-dir`); `None` searches
    /// [`crate::paths::data_roots`] (`CLASSWISE_DATA_DIR`, else the set-up cache, else
    /// `/usr/share/datasets`).
    pub data_dir: Option<PathBuf>,
    /// The code the binary was built from, for `env.json`.
    pub build: BuildInfo,
}

/// The result of [`train`].
pub struct RunSummary {
    pub dir: RunDir,
    /// The final report; `None` when the run stopped early (`stop_after`).
    pub report: Option<Evaluation>,
    pub best: Option<Best>,
    pub completed_epochs: usize,
}

/// The data of a run after splitting and subsetting.
struct RunData {
    train: Dataset,
    val: Option<Dataset>,
    test: Dataset,
}

#[derive(Serialize)]
struct SplitFile<'a> {
    split: &'a Split,
    train: &'a [i64],
    val: &'a [i64],
    test: &'a [i64],
}

/// The first `n` indices of each class among `indices` (all of them when `n` is `None`).
fn first_per_class(labels: &[i64], indices: &[i64], n: Option<usize>, k: usize) -> Vec<i64> {
    let Some(n) = n else {
        return indices.to_vec();
    };
    let mut taken = vec![0usize; k];
    indices
        .iter()
        .copied()
        .filter(|&i| {
            let c = labels[i as usize] as usize;
            taken[c] += 1;
            taken[c] <= n
        })
        .collect()
}

fn load_data(config: &RunConfig, dir: &RunDir, data_dir: Option<&Path>) -> Result<RunData> {
    let full = data::load(&config.data.source, Part::Train, data_dir)?;
    let test_full = data::load(&config.data.source, Part::Test, data_dir)?;
    let k = full.num_classes();
    let split = Split::of_dataset(&full, &config.data.split)?;
    let labels = full.label_slice();
    let train = first_per_class(labels, &split.train, config.data.train_per_class, k);
    let all_test: Vec<i64> = (0..test_full.len() as i64).collect();
    let test = first_per_class(
        test_full.label_slice(),
        &all_test,
        config.data.test_per_class,
        k,
    );
    write_json(
        &dir.split(),
        "split",
        &SplitFile {
            split: &split,
            train: &train,
            val: &split.val,
            test: &test,
        },
    )?;
    Ok(RunData {
        train: full.subset(&train)?,
        val: (!split.val.is_empty())
            .then(|| full.subset(&split.val))
            .transpose()?,
        test: test_full.subset(&test)?,
    })
}

/// The first `n` per class of a whole data set (all of it when `n` is `None`).
pub fn head_per_class(d: &Dataset, n: Option<usize>) -> Result<Dataset> {
    let all: Vec<i64> = (0..d.len() as i64).collect();
    d.subset(&first_per_class(d.label_slice(), &all, n, d.num_classes()))
}

/// Batches of `data` in index order.
fn batches<'a>(
    data: &'a Dataset,
    batch_size: usize,
    device: Device,
) -> impl Iterator<Item = Result<(Tensor, Tensor)>> + 'a {
    let idx: Vec<i64> = (0..data.len() as i64).collect();
    let chunks: Vec<Vec<i64>> = idx.chunks(batch_size).map(<[i64]>::to_vec).collect();
    chunks.into_iter().map(move |c| data.batch(&c, device))
}

/// Evaluates `model` on `data` with the run's evaluation attack.
pub fn evaluate_on(
    model: &Model,
    data: &Dataset,
    config: &RunConfig,
    device: Device,
) -> Result<Evaluation> {
    evaluate(
        model,
        batches(data, config.batch_size, device),
        data.class_names(),
        &config.eval.attack,
        config.eval.eps.value,
        config.eval.robust_counting,
        device,
    )
}

/// Evaluated splits, for [`eval_seed`].
#[derive(Clone, Copy)]
enum EvalSplit {
    Test = 0,
    Val = 1,
}

/// libtorch's seed for an evaluation on `split` after `epoch` (0-based; `epochs` for the final
/// report). The raw and the averaged model get the same attack starts.
fn eval_seed(seed: u64, epoch: usize, split: EvalSplit) -> i64 {
    torch_seed(seed, epoch, usize::MAX - split as usize)
}

/// libtorch's seed for the final report: `classwise eval` of the last checkpoint with the run's
/// attack seeds with it and so reproduces `report.json`.
pub fn report_seed(config: &RunConfig) -> i64 {
    eval_seed(config.seed, config.epochs, EvalSplit::Test)
}

/// A 64-bit mix of (seed, epoch, step) for libtorch's generator.
fn torch_seed(seed: u64, epoch: usize, step: usize) -> i64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for v in [seed, epoch as u64, step as u64] {
        for b in v.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    (h >> 1) as i64
}

/// A ChaCha8 stream for (seed, purpose, epoch).
fn stream(seed: u64, purpose: u64, epoch: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((purpose << 48) | epoch as u64);
    rng
}

/// The code a binary was built from, recorded in `env.json` (the CLI fills it at build time).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The commit the binary was built from.
    pub git_sha: Option<String>,
    /// Whether tracked files differed from that commit when it was built.
    pub git_dirty: Option<bool>,
}

/// One session of a run (its first start or a resume), as `env.json` records it.
fn session(
    config: &RunConfig,
    device: Device,
    opts: &TrainOptions,
    start_epoch: usize,
) -> serde_json::Value {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    serde_json::json!({
        "start_epoch": start_epoch,
        "started_unix_seconds": started,
        "git_sha": opts.build.git_sha,
        "git_dirty": opts.build.git_dirty,
        "classwise_trainer": env!("CARGO_PKG_VERSION"),
        "tch": env!("CLASSWISE_TCH_VERSION"),
        "libtorch": crate::LIBTORCH_VERSION,
        "device": format!("{device:?}"),
        "threads": tch::get_num_threads(),
        "cpu_tuning": crate::runtime::current(),
        "data_dir": opts.data_dir,
        "seed": config.seed,
        "streams": "data order and augmentation: ChaCha8(seed) streams per epoch; libtorch \
                    generator reseeded per batch from (seed, epoch, step)",
    })
}

/// Writes `env.json`: `{"sessions": [...]}`, the first session followed by one entry per
/// resume. A file from before sessions were recorded (one flat object) becomes the first.
fn record_session(path: &Path, entry: serde_json::Value, resumed: bool) -> Result<()> {
    let mut sessions = Vec::new();
    if resumed && path.exists() {
        let text = std::fs::read_to_string(path).at("reading", path)?;
        let old: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
                path: path.to_path_buf(),
                offset: None,
                reason: format!("not a run environment: {e}"),
            })?;
        match old.get("sessions").and_then(|s| s.as_array()) {
            Some(list) => sessions.extend(list.iter().cloned()),
            None => sessions.push(old),
        }
    }
    sessions.push(entry);
    write_json(
        path,
        "environment",
        &serde_json::json!({ "sessions": sessions }),
    )
}

/// Whether a JSON value holds a null anywhere.
fn contains_null(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => a.iter().any(contains_null),
        serde_json::Value::Object(o) => o.values().any(contains_null),
        _ => false,
    }
}

/// Appends one line to `metrics.jsonl`, flushed and synced.
fn append_metrics(path: &Path, log: &EpochLog) -> Result<()> {
    // serde_json writes NaN and infinities as null; only `val`, `test` and `ema_test` (no
    // evaluation that epoch) and `eps_warmup` (no warm-up) may be null.
    let value = serde_json::to_value(log).map_err(|source| TrainerError::Json {
        what: "metrics line",
        source,
    })?;
    let bad = value.as_object().is_some_and(|o| {
        o.iter().any(|(k, v)| {
            !(v.is_null() && matches!(k.as_str(), "val" | "test" | "ema_test" | "eps_warmup"))
                && contains_null(v)
        })
    });
    if bad {
        return Err(invalid(
            "metrics",
            format!("epoch {}", log.epoch),
            "finite numbers (a NaN or infinity would be written as null)",
        ));
    }
    let line = value.to_string();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .at("opening", path)?;
    writeln!(f, "{line}").at("appending to", path)?;
    f.sync_all().at("syncing", path)
}

/// Keeps the first `epochs` lines of `metrics.jsonl` (a resume drops lines of unfinished epochs).
fn truncate_metrics(path: &Path, epochs: usize) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let text = std::fs::read_to_string(path).at("reading", path)?;
    let kept: String = text
        .lines()
        .take(epochs)
        .map(|l| format!("{l}\n"))
        .collect();
    crate::io::write_atomic(path, kept.as_bytes())
}

/// Trains (or resumes) the run of `config` in `out`.
pub fn train(config: &RunConfig, out: &Path, opts: TrainOptions) -> Result<RunSummary> {
    config.validate()?;
    let dir = RunDir(out.to_path_buf());
    let device = config.device.device()?;
    let existing = dir.state().exists();
    let resume_state = match (existing, opts.resume) {
        (true, false) => {
            return Err(invalid(
                "--out",
                out.display(),
                "a directory without a run (pass --resume to continue it)",
            ));
        }
        (_, true) => {
            // A run killed before its first checkpoint has a config.toml but no state.json: it
            // starts again from the beginning (its config must still match).
            if dir.config().exists() {
                let saved = std::fs::read_to_string(dir.config()).at("reading", dir.config())?;
                let saved = RunConfig::from_toml(&saved).map_err(|e| {
                    invalid(
                        "--resume",
                        dir.config().display(),
                        format!("the run's readable configuration ({e})"),
                    )
                })?;
                if saved != *config && !opts.force {
                    return Err(invalid(
                        "--config",
                        "a configuration that differs from the run's config.toml",
                        "the same configuration (pass --force to resume anyway)",
                    ));
                }
            }
            if existing {
                Some(RunState::load(&dir.state())?)
            } else {
                eprintln!(
                    "{} holds no completed epoch (no state.json): starting the run from the \
                     beginning",
                    out.display()
                );
                None
            }
        }
        (false, false) => None,
    };
    std::fs::create_dir_all(out).at("creating", out)?;
    crate::io::write_atomic(&dir.config(), config.to_toml()?.as_bytes())?;
    let start_epoch = resume_state.as_ref().map_or(0, |s| s.completed_epochs);
    record_session(
        &dir.env(),
        session(config, device, &opts, start_epoch),
        resume_state.is_some(),
    )?;
    let data = load_data(config, &dir, opts.data_dir.as_deref())?;
    let k = data.train.num_classes();
    if config.model.num_classes != k {
        return Err(invalid(
            "model.num_classes",
            config.model.num_classes,
            format!("{k}, the number of classes of the data"),
        ));
    }
    let mut model = Model::new(&config.model, device, config.seed as i64)?;
    let mut sgd = Sgd::new(model.var_store(), config.optimizer)?;
    let mut ema = WeightAverage::new();
    // The averaged weights are evaluated in a second model, built on first use.
    let mut ema_model: Option<Model> = None;
    let mut rule = Uniform(ClassPlan::uniform(
        k,
        config.train.eps.value,
        config.train.beta,
    ));
    let mut best = None;
    let mut start = 0;
    if let Some(state) = &resume_state {
        let ck = dir.checkpoint(&state.checkpoint);
        model.load_weights(&ck.join("model.safetensors"))?;
        sgd.load(&ck.join("optimizer.safetensors"))?;
        if config.ema.is_some() && state.ema_updates > 0 {
            ema = WeightAverage::load(&ck.join("ema.safetensors"), state.ema_updates)?;
        }
        rule.restore(&state.rule)?;
        best = state.best.clone();
        start = state.completed_epochs;
        truncate_metrics(&dir.metrics(), start)?;
    } else {
        truncate_metrics(&dir.metrics(), 0)?;
    }
    let val_eval = data
        .val
        .as_ref()
        .map(|v| head_per_class(v, config.eval.val_per_class))
        .transpose()?;
    let test_eval = head_per_class(&data.test, config.eval.test_per_class)?;
    let method = config.train.method;
    let end = opts
        .stop_after
        .map_or(config.epochs, |n| n.min(config.epochs));
    // Hold libtorch's process-global generator from here to the report, so that no other thread
    // draws from it between a reseed and its use; it is reseeded before every batch.
    crate::seed::seeded(config.seed as i64, || -> Result<RunSummary> {
        for epoch in start..end {
            let t0 = Instant::now();
            let lr = config.schedule.lr(epoch);
            let plan = rule.plan(epoch)?;
            let mut order: Vec<i64> = (0..data.train.len() as i64).collect();
            rand::seq::SliceRandom::shuffle(
                order.as_mut_slice(),
                &mut stream(config.seed, 1, epoch),
            );
            let mut aug = stream(config.seed, 2, epoch);
            let train_set = &data.train;
            let augment = config.data.augment;
            let seed = config.seed;
            let progress = progress::Progress::new(
                format!("epoch {}/{}", epoch + 1, config.epochs),
                order.len().div_ceil(config.batch_size),
                config.batch_size,
                opts.verbose,
            );
            let n_batches = order.len().div_ceil(config.batch_size);
            let batch_iter = order
                .chunks(config.batch_size)
                .enumerate()
                .map(|(step, idx)| {
                    // Requesting batch `step` means batch `step − 1` was trained.
                    if step > 0 {
                        progress.tick(step - 1);
                    }
                    let (x, y) = train_set.batch(idx, device)?;
                    let x = if augment.is_identity() {
                        x
                    } else {
                        augment.apply(&x, &mut aug)?
                    };
                    tch::manual_seed(torch_seed(seed, epoch, step));
                    Ok((x, y))
                });
            let scale = |step| config.train.eps_scale(epoch, step, n_batches);
            let settings = |step| StepSettings {
                lr,
                eps_scale: scale(step),
            };
            let stats = train_epoch(
                &model, &mut sgd, &method, &plan, batch_iter, settings, device,
            )?;
            progress.finish();
            let train_seconds = t0.elapsed().as_secs_f64();
            let eps_warmup =
                (scale(0) < 1.0).then(|| [scale(0), scale(n_batches.saturating_sub(1))]);
            if let Some(e) = config.ema {
                ema.apply(
                    ema_action(epoch, e.start_epoch, e.alpha)?,
                    model.var_store(),
                );
            }
            let t_eval = Instant::now();
            let last = epoch + 1 == config.epochs;
            let evaluate_now = last || (epoch + 1) % config.eval.every == 0;
            let log_of = |m: &Model, d: &Dataset, split: EvalSplit| -> Result<SplitLog> {
                tch::manual_seed(eval_seed(config.seed, epoch, split));
                Ok(SplitLog::of(&evaluate_on(m, d, config, device)?))
            };
            let val = match (&val_eval, evaluate_now) {
                (Some(v), true) => Some(log_of(&model, v, EvalSplit::Val)?),
                _ => None,
            };
            let test = if evaluate_now {
                Some(log_of(&model, &test_eval, EvalSplit::Test)?)
            } else {
                None
            };
            let ema_test = if evaluate_now && ema.is_initialized() {
                let averaged = averaged_model(&mut ema_model, &model, &ema)?;
                Some(log_of(averaged, &test_eval, EvalSplit::Test)?)
            } else {
                None
            };
            let eval_seconds = t_eval.elapsed().as_secs_f64();
            rule.observe(
                epoch,
                &ClassStats {
                    train_robust: stats.train_robust.clone(),
                    val_clean: val.as_ref().map(|v| v.clean.clone()).unwrap_or_default(),
                    val_robust: val.as_ref().map(|v| v.robust.clone()).unwrap_or_default(),
                    val_loss: Vec::new(),
                },
            )?;
            let seconds = t0.elapsed().as_secs_f64();
            let log = EpochLog {
                epoch,
                lr,
                train_loss: stats.mean_loss,
                train_robust: stats.train_robust,
                plan,
                val,
                test,
                ema_test,
                eps_warmup,
                seconds,
                train_seconds,
                train_images_per_second: data.train.len() as f64 / train_seconds.max(1e-9),
                eval_seconds,
            };
            // The best checkpoint, by avg + worst robust accuracy on the named split.
            let (split_name, scored) = match (config.checkpoint.best_split, &log.val) {
                (BestSplit::Val, Some(v)) => ("val", Some(v)),
                _ => ("test", log.test.as_ref()),
            };
            if let Some(s) = scored
                && best.as_ref().is_none_or(|b: &Best| s.score() > b.score)
            {
                model.save(&dir.best())?;
                best = Some(Best {
                    epoch,
                    score: s.score(),
                    split: split_name.into(),
                });
            }
            append_metrics(&dir.metrics(), &log)?;
            let name = format!("e{epoch:04}");
            let ck = dir.checkpoint(&name);
            model.save(&ck.join("model.safetensors"))?;
            sgd.save(&ck.join("optimizer.safetensors"))?;
            if ema.is_initialized() {
                ema.save(&ck.join("ema.safetensors"))?;
            }
            let state = RunState {
                completed_epochs: epoch + 1,
                checkpoint: name.clone(),
                best: best.clone(),
                ema_updates: ema.updates,
                rule: rule.state(),
            };
            write_json(&dir.state(), "run state", &state)?;
            // Drop the previous epoch's files unless the policy keeps them.
            if epoch > 0 {
                let prev = epoch - 1;
                let keep = config.checkpoint.every > 0 && (prev + 1) % config.checkpoint.every == 0;
                let old = dir.checkpoint(&format!("e{prev:04}"));
                if !keep && old.exists() {
                    std::fs::remove_dir_all(&old).at("removing", &old)?;
                }
            }
            if opts.verbose {
                let summary = log
                    .test
                    .as_ref()
                    .map(|t| {
                        format!(
                            " | test clean {:.2}% robust {:.2}% worst {:.2}% (class {})",
                            100.0 * t.clean_avg,
                            100.0 * t.robust_avg,
                            100.0 * t.robust_worst,
                            t.robust_worst_class
                        )
                    })
                    .unwrap_or_default();
                let warmup = log
                    .eps_warmup
                    .map(|[a, b]| format!(" eps x{a:.2}..{b:.2}"))
                    .unwrap_or_default();
                eprintln!(
                    "epoch {}/{} lr {lr}{warmup} loss {:.4} train {:.1} s ({:.0} img/s) eval \
                     {:.1} s{summary}",
                    epoch + 1,
                    config.epochs,
                    log.train_loss,
                    log.train_seconds,
                    log.train_images_per_second,
                    log.eval_seconds
                );
            }
        }
        let completed_epochs = end.max(start);
        if completed_epochs < config.epochs {
            return Ok(RunSummary {
                dir,
                report: None,
                best,
                completed_epochs,
            });
        }
        tch::manual_seed(report_seed(config));
        let report = evaluate_on(&model, &data.test, config, device)?;
        write_json(&dir.0.join("report.json"), "report", &report)?;
        crate::io::write_atomic(&dir.0.join("report.md"), markdown(&report).as_bytes())?;
        if ema.is_initialized() {
            let averaged = averaged_model(&mut ema_model, &model, &ema)?;
            tch::manual_seed(report_seed(config));
            let report = evaluate_on(averaged, &data.test, config, device)?;
            write_json(&dir.0.join("report-ema.json"), "report", &report)?;
            crate::io::write_atomic(&dir.0.join("report-ema.md"), markdown(&report).as_bytes())?;
        }
        Ok(RunSummary {
            dir,
            report: Some(report),
            best,
            completed_epochs,
        })
    })
}
