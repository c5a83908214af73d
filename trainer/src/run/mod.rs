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
//! The loop, per epoch: the rule's plan → training (t_k counted on the fly) → validation when
//! the rule, FAWA or the selection need it, or `eval.every` asks → the rule observes → the test
//! evaluation → the hooks ([`hooks`]): the raw model's selection, the averages (which decide
//! after validation, CFA Algorithm 1, and are evaluated and selected in turn), the metrics line
//! → checkpoint and `state.json`, each hook adding its part → the hooks clean up (dropped
//! candidates, older checkpoints). After the last epoch the hooks write the reports and the
//! selected models. Each concern lives in its module: [`dir`] (files and state), [`data`],
//! [`seeds`], [`log`], [`hooks`] (the hook trait, the metrics sink, checkpoint pruning) and
//! [`tracks`] (averages and selection).

//! Every random stream is derived from (seed, epoch, step) ([`seeds`]): a resumed run needs no
//! generator state and, on the CPU, ends bit-identical to an uninterrupted one.

pub mod config;
pub mod data;
pub mod dir;
mod hooks;
pub mod log;
pub mod progress;
pub mod seeds;
mod tracks;

use std::path::{Path, PathBuf};
use std::time::Instant;

use classwise_core::average::Averaging;
use classwise_core::record::{EpochRecord, METRICS_SCHEMA};
use classwise_core::select::Selector;
use serde::Serialize;

pub use config::{BestSplit, DeviceChoice, Eps, RunConfig};
pub use data::{evaluate_on, evaluate_with, head_per_class, head_per_class_indices};
pub use dir::{Best, BuildInfo, MidEpoch, RunDir, RunProgress, RunState};
pub use log::split_record;
pub use seeds::report_seed;

use crate::data::{Dataset, LoadedBatch, Loader, LoaderPlan};
use crate::error::{IoContext, Result, invalid};
use crate::eval::{Evaluation, markdown};
use crate::io::write_json;
use crate::model::Model;
use crate::train::{ClassStats, EpochOutcome, EpochProgress, Sgd, StepSettings, train_epoch_from};
use hooks::{CheckpointPruner, EpochEnd, Hook, MetricsSink, RunEnd, SelectedTrack};
use seeds::{EvalSplit, eval_seed, stream, torch_seed};
use tracks::{AveragedTrack, Averages, RawSelection, SelectionTrack};

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
    /// there would ([`crate::interrupt`]): the run writes its mid-epoch checkpoint and returns
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
    pub report: Option<Evaluation>,
    pub best: Option<Best>,
    pub completed_epochs: usize,
    /// Set when a signal (or [`TrainOptions::interrupt_at`]) stopped the run inside an epoch;
    /// its mid-epoch checkpoint is in the run directory.
    pub interrupted: Option<MidEpoch>,
}

/// `selection.json`: the strategy and, per track, the epoch it chose.
#[derive(Serialize)]
struct SelectionFile {
    strategy: classwise_core::select::Selection,
    /// The split whose avg + worst robust accuracy scored the raw model (the averages are
    /// scored on the test subset, as `PKU-ML/CFA:train.py` does).
    split: &'static str,
    tracks: Vec<SelectedTrack>,
}

/// Reads the saved configuration of a run being resumed and checks it matches.
fn check_resumable(dir: &RunDir, config: &RunConfig, opts: &TrainOptions) -> Result<()> {
    if !dir.config().exists() {
        return Ok(());
    }
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
    Ok(())
}

/// Trains (or resumes) the run of `config` in `out`.
pub fn train(config: &RunConfig, out: &Path, opts: TrainOptions) -> Result<RunSummary> {
    config.validate()?;
    crate::diagnose::set_enabled(opts.diagnose);
    let dir = RunDir(out.to_path_buf());
    let device = config.device.device()?;
    configure_device(config, device)?;
    let existing = dir.state().exists() || dir.interrupted().exists();
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
            check_resumable(&dir, config, &opts)?;
            if dir.state().exists() {
                Some(RunState::load(&dir.state())?)
            } else if existing {
                None
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
    let start_epoch = resume_state.as_ref().map_or(0, |s| s.completed_epochs);
    // A mid-epoch checkpoint of the epoch the resume starts with; one of an earlier epoch (a
    // crash after the epoch's checkpoint, before the record was removed) is superseded.
    let mut mid = match opts.resume && dir.interrupted().exists() {
        true => Some(MidEpoch::load(&dir.interrupted())?).filter(|m| m.epoch == start_epoch),
        false => None,
    };
    let fresh = resume_state.is_none() && mid.is_none();
    // The starting weights of a fresh run must exist before anything is written.
    if let (true, Some(init)) = (fresh, &config.train.init_from)
        && !init.path.exists()
    {
        return Err(invalid(
            "train.init_from.path",
            init.path.display(),
            "a run directory or a model .safetensors file (no such file or directory)",
        ));
    }
    std::fs::create_dir_all(out).at("creating", out)?;
    crate::io::write_atomic(&dir.config(), config.to_toml()?.as_bytes())?;
    let start_step = mid.as_ref().map_or(0, |m| m.progress.next_step);
    dir::record_session(
        &dir.env(),
        dir::session(config, device, &opts, start_epoch, start_step),
        !fresh,
    )?;
    let data = data::load_data(config, &dir, opts.data_dir.as_deref())?;
    let k = data.train.num_classes();
    if config.model.num_classes != k {
        return Err(invalid(
            "model.num_classes",
            config.model.num_classes,
            format!("{k}, the number of classes of the data"),
        ));
    }
    let mut model = Model::new(&config.model, device, config.seed as i64)?;
    model.set_memory_format(config.memory_format)?;
    model.set_precision(config.precision)?;
    let mut sgd = Sgd::new(model.var_store(), config.optimizer)?;
    let mut rule = config.rule.build(config.rule_context(k))?;
    let checkpoints = dir.0.join("checkpoints");
    let selector = || Selector::new(config.select, config.epochs);
    let best_split = match (config.checkpoint.best_split, &data.val) {
        (BestSplit::Val, Some(_)) => "val",
        _ => "test",
    };
    // The hooks, in the order they see every epoch: the raw model's selection, the averages
    // (which fill in their part of the record), the metrics line (which writes the record),
    // and the pruning of older checkpoints.
    let averages = config
        .ema
        .map(Averaging::Ema)
        .into_iter()
        .chain(config.fawa.map(Averaging::Fawa))
        .map(|a| AveragedTrack::new(a, selector()?, checkpoints.clone()))
        .collect::<Result<Vec<_>>>()?;
    let mut hooks: Vec<Box<dyn Hook>> = vec![
        Box::new(RawSelection {
            track: SelectionTrack::new("raw", selector()?, checkpoints.clone()),
            split: best_split,
        }),
        Box::new(Averages(averages)),
        Box::new(MetricsSink {
            path: dir.metrics(),
            epochs: config.epochs,
            verbose: opts.verbose,
        }),
        Box::new(CheckpointPruner {
            dir: dir.clone(),
            every: config.checkpoint.every,
        }),
    ];
    if let (true, Some(init)) = (fresh, &config.train.init_from) {
        let record = load_init(&mut model, init, device)?;
        write_json(&dir.0.join("init.json"), "initial weights", &record)?;
    }
    let mut start = 0;
    // The raw track's best score so far (its selector keeps it), from the last state written.
    let mut best = None;
    if let Some(state) = &resume_state {
        let ck = dir.checkpoint(&state.checkpoint);
        model.load_weights(&ck.join("model.safetensors"))?;
        sgd.load(&ck.join("optimizer.safetensors"))?;
        for hook in &mut hooks {
            hook.restore(&ck, state)?;
        }
        rule.restore(&state.rule)?;
        start = state.completed_epochs;
        best = state.raw_best(best_split);
        log::truncate_metrics(&dir.metrics(), start)?;
    } else {
        log::truncate_metrics(&dir.metrics(), 0)?;
    }
    if let Some(m) = &mid {
        // The epoch in progress: the weights and the optimiser after its last trained batch, and
        // the rule as the epoch began.
        let ck = dir.checkpoint(&m.checkpoint);
        model.load_weights(&ck.join("model.safetensors"))?;
        sgd.load(&ck.join("optimizer.safetensors"))?;
        rule.restore(&m.rule)?;
        start = m.epoch;
    }
    let val_eval = data
        .val
        .as_ref()
        .map(|v| head_per_class(v, config.eval.val_per_class))
        .transpose()?;
    let test_eval = head_per_class(&data.test, config.eval.test_per_class)?;
    let method = &config.train.method;
    let end = opts
        .stop_after
        .map_or(config.epochs, |n| n.min(config.epochs));
    // Hold libtorch's process-global generator from here to the report, so that no other thread
    // draws from it between a reseed and its use; it is reseeded before every batch.
    crate::seed::seeded(config.seed as i64, || -> Result<RunSummary> {
        // A rule that decides the first epoch from the initial model (FRL) observes it once, at
        // the start of a fresh run; a resumed run restored that decision with the rule's state.
        let initial = rule.needs_initial();
        if fresh && initial.any() {
            let val = val_eval.as_ref().ok_or_else(|| {
                invalid(
                    "data.split",
                    "none",
                    format!(
                        "a validation split: the `{}` rule measures on it",
                        rule.name()
                    ),
                )
            })?;
            tch::manual_seed(seeds::initial_seed(config.seed));
            let e = evaluate_on(&model, val, config, device)?;
            let v = split_record(&e);
            rule.observe_initial(&ClassStats {
                train_robust: Vec::new(),
                val_clean: Some(v.clean),
                val_robust: Some(v.robust),
                val_errors: Some(e.errors),
                val_costs: None,
            })?;
        }
        for epoch in start..end {
            let t0 = Instant::now();
            let lr = config.schedule.lr(epoch);
            // Where the epoch starts: batch 0, or where an interrupted session stopped.
            let (progress_at_start, seconds_before) = match mid.take() {
                Some(m) => (m.progress, m.train_seconds),
                None => (EpochProgress::new(k), 0.0),
            };
            let rule_at_start = rule.state()?;
            let plan = rule.plan(epoch)?;
            let mut order: Vec<i64> = (0..data.train.len() as i64).collect();
            rand::seq::SliceRandom::shuffle(
                order.as_mut_slice(),
                &mut stream(config.seed, 1, epoch),
            );
            let seed = config.seed;
            let n_batches = order.len().div_ceil(config.batch_size);
            let skip = progress_at_start.next_step;
            let progress = progress::Progress::new(
                format!("epoch {}/{}", epoch + 1, config.epochs),
                n_batches,
                config.batch_size,
                opts.verbose,
            );
            let loader = Loader::spawn(
                data.train.host_source(),
                LoaderPlan {
                    steps: order
                        .chunks(config.batch_size)
                        .map(<[i64]>::to_vec)
                        .collect(),
                    skip,
                    augment: config.data.augment,
                    rng: stream(config.seed, 2, epoch),
                },
                device,
            )?;
            let batch_iter = loader.map(|batch| {
                batch.map(|LoadedBatch { step, x, y }| {
                    // Requesting batch `step` means batch `step − 1` was trained.
                    if step > skip {
                        progress.tick(step - 1);
                    }
                    tch::manual_seed(torch_seed(seed, epoch, step));
                    (x, y)
                })
            });
            let scale = |step| config.train.eps_scale(epoch, step, n_batches);
            let settings = |step| StepSettings {
                lr,
                eps_scale: scale(step),
            };
            let stop = |step: usize| {
                crate::interrupt::requested() || opts.interrupt_at == Some((epoch, step))
            };
            let outcome = train_epoch_from(
                &model,
                &mut sgd,
                method,
                &plan,
                epoch,
                batch_iter,
                settings,
                device,
                progress_at_start,
                &stop,
            )?;
            progress.finish();
            let train_seconds = seconds_before + t0.elapsed().as_secs_f64();
            let stats = match outcome {
                EpochOutcome::Complete(stats) => stats,
                EpochOutcome::Interrupted(p) => {
                    let record = save_mid_epoch(
                        &dir,
                        &model,
                        &sgd,
                        MidEpoch {
                            epoch,
                            checkpoint: MidEpoch::name(epoch, p.next_step),
                            progress: p,
                            rule: rule_at_start,
                            train_seconds,
                            signal: crate::interrupt::signal_name().map(str::to_owned),
                        },
                    )?;
                    return Ok(RunSummary {
                        dir,
                        report: None,
                        best,
                        completed_epochs: epoch,
                        interrupted: Some(record),
                    });
                }
            };
            let eps_warmup =
                (scale(0) < 1.0).then(|| [scale(0), scale(n_batches.saturating_sub(1))]);

            // Validation: when the rule, FAWA or the selection need it, or on schedule.
            let t_eval = Instant::now();
            let last = epoch + 1 == config.epochs;
            let evaluate_now = last || (epoch + 1) % config.eval.every == 0;
            let needs = rule.needs(epoch).or(config.needs());
            let eval_on = |m: &Model, d: &Dataset, split: EvalSplit| -> Result<Evaluation> {
                tch::manual_seed(eval_seed(config.seed, epoch, split));
                evaluate_on(m, d, config, device)
            };
            let val_evaluation = match &val_eval {
                Some(v) if evaluate_now || needs.val_accuracy || needs.val_errors => {
                    Some(eval_on(&model, v, EvalSplit::Val)?)
                }
                _ => None,
            };
            // WAT's K + 1 validation costs of a model (the raw one here, an average's in its
            // selection); `None` without a validation split.
            let costs_of = |m: &Model| -> Result<Option<Vec<f64>>> {
                let Some(v) = &val_eval else {
                    return Ok(None);
                };
                tch::manual_seed(eval_seed(config.seed, epoch, EvalSplit::Val));
                crate::eval::trades_costs(
                    m,
                    data::batches(v, config.eval_batch_size(device), device)?,
                    method,
                    config.train.eps.value,
                    config.train.beta,
                    k,
                    device,
                )
                .map(Some)
            };
            let val_costs = if needs.val_costs {
                costs_of(&model)?
            } else {
                None
            };
            let val = val_evaluation.as_ref().map(split_record);
            rule.observe(
                epoch,
                &ClassStats {
                    train_robust: stats.train_robust.clone(),
                    val_clean: val.as_ref().map(|v| v.clean.clone()),
                    val_robust: val.as_ref().map(|v| v.robust.clone()),
                    val_errors: val_evaluation.as_ref().map(|e| e.errors.clone()),
                    val_costs: val_costs.clone(),
                },
            )?;
            let test = if evaluate_now {
                Some(split_record(&eval_on(&model, &test_eval, EvalSplit::Test)?))
            } else {
                None
            };
            let mut record = EpochRecord {
                schema: METRICS_SCHEMA,
                epoch,
                rule: rule.name().to_owned(),
                lr,
                train_loss: stats.mean_loss,
                train_robust: stats.train_robust,
                train_attack_steps: stats.attack_steps,
                train_confusion: stats.confusion.filter(|_| config.train.log_confusion),
                plan,
                rule_state: Some(rule.snapshot()?).filter(|v| !v.is_null()),
                val,
                test,
                ema_test: None,
                fawa_test: None,
                averaging: Vec::new(),
                eps_warmup,
                seconds: 0.0,
                train_seconds: Some(train_seconds),
                train_images_per_second: Some(data.train.len() as f64 / train_seconds.max(1e-9)),
                eval_seconds: None,
            };
            let eval_test = |m: &Model| eval_on(m, &test_eval, EvalSplit::Test);
            let mut end = EpochEnd {
                epoch,
                evaluate_now,
                model: &model,
                record: &mut record,
                val_costs: val_costs.as_deref(),
                val_costs_of: &costs_of,
                eval_test: &eval_test,
                started: t0,
                eval_started: t_eval,
            };
            for hook in &mut hooks {
                hook.after_epoch(&mut end)?;
            }
            let name = format!("e{epoch:04}");
            let ck = dir.checkpoint(&name);
            model.save(&ck.join("model.safetensors"))?;
            sgd.save(&ck.join("optimizer.safetensors"))?;
            let mut state = RunState {
                completed_epochs: epoch + 1,
                checkpoint: name,
                ema_updates: 0,
                fawa_updates: 0,
                rule: rule.state()?,
                selection: Default::default(),
            };
            for hook in &hooks {
                hook.save(&ck, &mut state)?;
            }
            write_json(&dir.state(), "run state", &state)?;
            dir.remove_mid_epoch()?;
            best = state.raw_best(best_split);
            for hook in &mut hooks {
                hook.after_checkpoint(epoch)?;
            }
        }
        let completed_epochs = end.max(start);
        if completed_epochs < config.epochs {
            return Ok(RunSummary {
                dir,
                report: None,
                best,
                completed_epochs,
                interrupted: None,
            });
        }
        let final_eval = |m: &Model| -> Result<Evaluation> {
            tch::manual_seed(report_seed(config));
            evaluate_on(m, &data.test, config, device)
        };
        let report = final_eval(&model)?;
        write_report(&dir, "report", &report)?;
        let mut scratch = model.try_clone()?;
        let mut run_end = RunEnd {
            dir: &dir,
            model: &model,
            scratch: &mut scratch,
            final_eval: &final_eval,
            selected: Vec::new(),
        };
        for hook in &mut hooks {
            hook.finish(&mut run_end)?;
        }
        write_json(
            &dir.0.join("selection.json"),
            "selection",
            &SelectionFile {
                strategy: config.select,
                split: best_split,
                tracks: run_end.selected,
            },
        )?;
        Ok(RunSummary {
            dir,
            report: Some(report),
            best,
            completed_epochs,
            interrupted: None,
        })
    })
}

/// Writes a mid-epoch checkpoint: the model and the optimiser into a directory of their own, then
/// `interrupted.json` naming it (atomically), then removes older mid-epoch directories; a crash
/// at any point leaves the previous record and its files intact.
fn save_mid_epoch(dir: &RunDir, model: &Model, sgd: &Sgd, record: MidEpoch) -> Result<MidEpoch> {
    let ck = dir.checkpoint(&record.checkpoint);
    model.save(&ck.join("model.safetensors"))?;
    sgd.save(&ck.join("optimizer.safetensors"))?;
    write_json(&dir.interrupted(), "mid-epoch checkpoint record", &record)?;
    dir.remove_mid_epoch_dirs(Some(&record.checkpoint))?;
    Ok(record)
}

/// `init.json`: the weights a run started from.
#[derive(Serialize)]
struct InitRecord {
    /// `[train] init_from` as configured.
    #[serde(flatten)]
    from: config::InitFrom,
    /// The model file read (`None` for `ema`, assembled from the last checkpoint).
    file: Option<PathBuf>,
    /// [`Model::fingerprint`] of the loaded weights.
    fingerprint: String,
}

/// Loads `[train] init_from` into `model`; the source must be a model of the same spec.
fn load_init(
    model: &mut Model,
    init: &config::InitFrom,
    device: tch::Device,
) -> Result<InitRecord> {
    let file = if init.path.is_dir() {
        let run = RunDir(init.path.clone());
        let source = run.load_model(&init.checkpoint, device).map_err(|e| {
            invalid(
                "train.init_from",
                init.path.display(),
                format!(
                    "a run directory with a `{}` checkpoint ({e})",
                    init.checkpoint
                ),
            )
        })?;
        if source.spec() != model.spec() {
            return Err(invalid(
                "train.init_from",
                init.path.display(),
                format!(
                    "a run of the same model: it holds {}, this run trains {}",
                    source.spec().describe(),
                    model.spec().describe()
                ),
            ));
        }
        model.load_state(&source.state())?;
        (init.checkpoint != "ema")
            .then(|| run.weights(&init.checkpoint))
            .transpose()?
    } else {
        model.load_weights(&init.path)?;
        Some(init.path.clone())
    };
    Ok(InitRecord {
        from: init.clone(),
        file,
        fingerprint: model.fingerprint()?,
    })
}

/// Checks that `device` computes in the run's precision (warning that bf16 is slow on the CPU)
/// and sets cuDNN's autotuner on CUDA, before anything is written.
fn configure_device(config: &RunConfig, device: tch::Device) -> Result<()> {
    config.precision.check(device)?;
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

/// Writes `<stem>.json`, `<stem>.md` and `predictions/<stem>.json`.
fn write_report(dir: &RunDir, stem: &str, report: &Evaluation) -> Result<()> {
    let json = dir.0.join(format!("{stem}.json"));
    write_json(&json, "report", report)?;
    report.write_predictions(&json)?;
    crate::io::write_atomic(
        &dir.0.join(format!("{stem}.md")),
        markdown(report).as_bytes(),
    )
}

/// How a selected model (`report-best*`) was chosen.
#[derive(Serialize)]
struct SelectionNote {
    /// The strategy (`[select] kind`).
    strategy: &'static str,
    /// `raw`, `ema` or `fawa`.
    track: &'static str,
    /// The chosen epoch, 0-based as in `metrics.jsonl` and `selection.json`.
    epoch: usize,
    epochs: usize,
}

/// Writes the report of a selected model: `<stem>.json` with a `selection` field naming the
/// strategy and the epoch, `<stem>.md` opening with the same in a sentence, and
/// `predictions/<stem>.json`.
fn write_selected_report(
    dir: &RunDir,
    stem: &str,
    report: &Evaluation,
    note: SelectionNote,
) -> Result<()> {
    #[derive(Serialize)]
    struct Selected<'a> {
        selection: SelectionNote,
        #[serde(flatten)]
        report: &'a Evaluation,
    }
    let sentence = format!(
        "Selected model: the `{}` track at epoch {} of {} (0-based index {}), chosen by the \
         `{}` strategy (`selection.json` lists the candidates).\n\n",
        note.track,
        note.epoch + 1,
        note.epochs,
        note.epoch,
        note.strategy
    );
    let json = dir.0.join(format!("{stem}.json"));
    write_json(
        &json,
        "report",
        &Selected {
            selection: note,
            report,
        },
    )?;
    report.write_predictions(&json)?;
    crate::io::write_atomic(
        &dir.0.join(format!("{stem}.md")),
        (sentence + &markdown(report)).as_bytes(),
    )
}
