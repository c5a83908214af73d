//! Runs: `classwise train --config FILE.toml [--out DIR] [--resume] [--force]`.
//!
//! A run directory holds
//! * `config.toml`: the resolved configuration (every default written out);
//! * `env.json`: one entry per session (git SHA, crate, tch and libtorch versions, device,
//!   threads, seed);
//! * `split.json`: the validation split and the train/val/test indices actually used;
//! * `metrics.jsonl`: one flushed JSON line per epoch ([`EpochRecord`], versioned by
//!   [`METRICS_SCHEMA`](classwise_core::record::METRICS_SCHEMA), written by [`log`]);
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
//! the rule, FAWA or the selection need it, or `eval.every` asks → the rule observes → the
//! averages decide (after validation, CFA Algorithm 1) → test evaluations → selection offers →
//! metrics line → checkpoint and state. Each concern lives in its module: [`dir`] (files and
//! state), [`data`], [`seeds`], [`log`], [`tracks`] (averages and selection).
//!
//! Every random stream is derived from (seed, epoch, step) ([`seeds`]): a resumed run needs no
//! generator state and, on the CPU, ends bit-identical to an uninterrupted one.

pub mod config;
pub mod data;
pub mod dir;
pub mod log;
pub mod progress;
pub mod seeds;
mod tracks;

use std::path::{Path, PathBuf};
use std::time::Instant;

use classwise_core::average::Averaging;
use classwise_core::record::{EpochRecord, METRICS_SCHEMA, SplitRecord};
use classwise_core::select::{EpochScore, Selector};
use serde::Serialize;

pub use config::{BestSplit, DeviceChoice, Eps, RunConfig};
pub use data::{evaluate_on, head_per_class};
pub use dir::{Best, BuildInfo, RunDir, RunState};
pub use log::split_record;
pub use seeds::report_seed;

use crate::data::Dataset;
use crate::error::{IoContext, Result, invalid};
use crate::eval::{Evaluation, markdown};
use crate::io::write_json;
use crate::model::Model;
use crate::train::{ClassStats, Sgd, StepSettings, train_epoch};
use seeds::{EvalSplit, eval_seed, stream, torch_seed};
use tracks::{AveragedTrack, SelectionTrack, remove_files};

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

/// `selection.json`: the strategy and, per track, the epoch it chose.
#[derive(Serialize)]
struct SelectionFile {
    strategy: classwise_core::select::Selection,
    /// The split whose avg + worst robust accuracy scored the raw model (the averages are
    /// scored on the test subset, as `PKU-ML/CFA:train.py` does).
    split: &'static str,
    tracks: Vec<SelectedTrack>,
}

#[derive(Serialize)]
struct SelectedTrack {
    track: &'static str,
    /// The chosen epoch (0-based); `None` when the track had no candidate.
    epoch: Option<usize>,
    candidates: Vec<usize>,
    /// avg + worst-class robust accuracy of each candidate under the final attack, when the
    /// strategy compares them.
    final_scores: Vec<(usize, f64)>,
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
            check_resumable(&dir, config, &opts)?;
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
    dir::record_session(
        &dir.env(),
        dir::session(config, device, &opts, start_epoch),
        resume_state.is_some(),
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
    let mut sgd = Sgd::new(model.var_store(), config.optimizer)?;
    let mut rule = config.rule.build(config.rule_context(k))?;
    let mut averages: Vec<AveragedTrack> = config
        .ema
        .map(Averaging::Ema)
        .into_iter()
        .chain(config.fawa.map(Averaging::Fawa))
        .map(AveragedTrack::new)
        .collect::<Result<_>>()?;
    let mut selection: Vec<SelectionTrack> = std::iter::once("raw")
        .chain(averages.iter().map(AveragedTrack::name))
        .map(|name| {
            Ok(SelectionTrack {
                name,
                selector: Selector::new(config.select, config.epochs)?,
            })
        })
        .collect::<Result<_>>()?;
    let mut start = 0;
    if let Some(state) = &resume_state {
        let ck = dir.checkpoint(&state.checkpoint);
        model.load_weights(&ck.join("model.safetensors"))?;
        sgd.load(&ck.join("optimizer.safetensors"))?;
        for avg in &mut averages {
            let updates = match avg.name() {
                "ema" => state.ema_updates,
                _ => state.fawa_updates,
            };
            avg.restore(&ck, updates)?;
        }
        rule.restore(&state.rule)?;
        for track in &mut selection {
            if let Some(s) = state.selection.get(track.name) {
                track.selector = s.clone();
            }
        }
        start = state.completed_epochs;
        log::truncate_metrics(&dir.metrics(), start)?;
    } else {
        log::truncate_metrics(&dir.metrics(), 0)?;
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
    let best_split = match (config.checkpoint.best_split, &val_eval) {
        (BestSplit::Val, Some(_)) => "val",
        _ => "test",
    };
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
            let n_batches = order.len().div_ceil(config.batch_size);
            let progress = progress::Progress::new(
                format!("epoch {}/{}", epoch + 1, config.epochs),
                n_batches,
                config.batch_size,
                opts.verbose,
            );
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
                &model, &mut sgd, method, &plan, epoch, batch_iter, settings, device,
            )?;
            progress.finish();
            let train_seconds = t0.elapsed().as_secs_f64();
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
            let val_costs = match &val_eval {
                Some(v) if needs.val_costs => {
                    tch::manual_seed(eval_seed(config.seed, epoch, EvalSplit::Val));
                    Some(crate::eval::trades_costs(
                        &model,
                        data::batches(v, config.batch_size, device),
                        method,
                        config.train.eps.value,
                        config.train.beta,
                        k,
                        device,
                    )?)
                }
                _ => None,
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
            // The averages decide after validation (CFA Algorithm 1).
            let averaging = averages
                .iter_mut()
                .map(|a| a.after_epoch(epoch, val.as_ref().map(|v| v.robust.as_slice()), &model))
                .collect::<Result<Vec<_>>>()?;
            let test = if evaluate_now {
                Some(split_record(&eval_on(&model, &test_eval, EvalSplit::Test)?))
            } else {
                None
            };
            let mut averaged_tests = Vec::with_capacity(averages.len());
            for avg in &mut averages {
                let log = match avg.model(&model)? {
                    Some(m) if evaluate_now => {
                        Some(split_record(&eval_on(m, &test_eval, EvalSplit::Test)?))
                    }
                    _ => None,
                };
                averaged_tests.push((avg.name(), log));
            }
            let eval_seconds = t_eval.elapsed().as_secs_f64();
            let averaged_test = |name: &str| {
                averaged_tests
                    .iter()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, l)| l.clone())
            };
            let seconds = t0.elapsed().as_secs_f64();
            let log = EpochRecord {
                schema: METRICS_SCHEMA,
                epoch,
                rule: rule.name().to_owned(),
                lr,
                train_loss: stats.mean_loss,
                train_robust: stats.train_robust,
                plan,
                val,
                test,
                ema_test: averaged_test("ema"),
                fawa_test: averaged_test("fawa"),
                averaging,
                eps_warmup,
                seconds,
                train_seconds: Some(train_seconds),
                train_images_per_second: Some(data.train.len() as f64 / train_seconds.max(1e-9)),
                eval_seconds: Some(eval_seconds),
            };
            // Selection: the raw model scored on the best split, each average (its track follows
            // the raw one, in the order of `averages`) on the test subset.
            let candidates = dir.0.join("checkpoints");
            let raw_split = if best_split == "val" {
                &log.val
            } else {
                &log.test
            };
            let raw_score = EpochScore {
                avg_plus_worst: raw_split.as_ref().map(SplitRecord::score),
                val_costs: val_costs.clone(),
            };
            let (raw_track, averaged_tracks) = selection
                .split_first_mut()
                .ok_or_else(|| invalid("selection", "no track", "the raw model's track"))?;
            let mut dropped = raw_track.offer(&candidates, epoch, &raw_score, Some(&model))?;
            for ((track, avg), (_, test_log)) in averaged_tracks
                .iter_mut()
                .zip(&mut averages)
                .zip(&averaged_tests)
            {
                if let Some(score) = test_log.as_ref().map(SplitRecord::score) {
                    let score = EpochScore {
                        avg_plus_worst: Some(score),
                        val_costs: None,
                    };
                    dropped.extend(track.offer(&candidates, epoch, &score, avg.model(&model)?)?);
                }
            }
            log::append_metrics(&dir.metrics(), &log)?;
            let name = format!("e{epoch:04}");
            let ck = dir.checkpoint(&name);
            model.save(&ck.join("model.safetensors"))?;
            sgd.save(&ck.join("optimizer.safetensors"))?;
            for avg in &averages {
                if avg.weights.is_initialized() {
                    avg.weights.save(&avg.file(&ck))?;
                }
            }
            let updates = |name: &str| {
                averages
                    .iter()
                    .find(|a| a.name() == name)
                    .map_or(0, |a| a.averager.state.updates)
            };
            let state = RunState {
                completed_epochs: epoch + 1,
                checkpoint: name.clone(),
                ema_updates: updates("ema"),
                fawa_updates: updates("fawa"),
                rule: rule.state()?,
                selection: selection
                    .iter()
                    .map(|t| (t.name.to_string(), t.selector.clone()))
                    .collect(),
            };
            write_json(&dir.state(), "run state", &state)?;
            remove_files(&dropped)?;
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
                print_epoch(config, &log);
            }
        }
        let completed_epochs = end.max(start);
        // The raw track's best score so far (its selector keeps it).
        let best = selection[0].selector.best.map(|(epoch, score)| Best {
            epoch,
            score,
            split: best_split.into(),
        });
        if completed_epochs < config.epochs {
            return Ok(RunSummary {
                dir,
                report: None,
                best,
                completed_epochs,
            });
        }
        let final_eval = |m: &Model| -> Result<Evaluation> {
            tch::manual_seed(report_seed(config));
            evaluate_on(m, &data.test, config, device)
        };
        let report = final_eval(&model)?;
        write_report(&dir, "report", &report)?;
        for avg in &mut averages {
            let name = avg.name();
            if let Some(m) = avg.model(&model)? {
                write_report(&dir, &format!("report-{name}"), &final_eval(m)?)?;
            }
        }
        let mut selected = Vec::new();
        let mut scratch = model.try_clone()?;
        for track in &selection {
            let suffix = if track.name == "raw" {
                String::new()
            } else {
                format!("-{}", track.name)
            };
            let mut final_scores = Vec::new();
            let mut reports = Vec::new();
            if config.select.compares_candidates() {
                for &e in &track.selector.candidates {
                    scratch.load_weights(&track.candidate_file(&dir.0.join("checkpoints"), e))?;
                    let r = final_eval(&scratch)?;
                    final_scores.push((
                        e,
                        r.robust.overall.unwrap_or(r.robust.class_mean) + r.robust.worst.value,
                    ));
                    reports.push((e, r));
                }
            }
            let chosen = track.selector.choose(&final_scores);
            if let Some(e) = chosen {
                let file = track.candidate_file(&dir.0.join("checkpoints"), e);
                let best_file = dir.checkpoint(&format!("best{suffix}.safetensors"));
                std::fs::copy(&file, &best_file).at("copying", &file)?;
                let report = match reports.into_iter().find(|(re, _)| *re == e) {
                    Some((_, r)) => r,
                    None => {
                        scratch.load_weights(&file)?;
                        final_eval(&scratch)?
                    }
                };
                write_report(&dir, &format!("report-best{suffix}"), &report)?;
            }
            selected.push(SelectedTrack {
                track: track.name,
                epoch: chosen,
                candidates: track.selector.candidates.clone(),
                final_scores,
            });
        }
        write_json(
            &dir.0.join("selection.json"),
            "selection",
            &SelectionFile {
                strategy: config.select,
                split: best_split,
                tracks: selected,
            },
        )?;
        Ok(RunSummary {
            dir,
            report: Some(report),
            best,
            completed_epochs,
        })
    })
}

/// Writes `<stem>.json` and `<stem>.md`.
fn write_report(dir: &RunDir, stem: &str, report: &Evaluation) -> Result<()> {
    write_json(&dir.0.join(format!("{stem}.json")), "report", report)?;
    crate::io::write_atomic(
        &dir.0.join(format!("{stem}.md")),
        markdown(report).as_bytes(),
    )
}

/// The one-line summary of an epoch on stderr (`--verbose`).
fn print_epoch(config: &RunConfig, log: &EpochRecord) {
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
    let averaging: String = log
        .averaging
        .iter()
        .map(|a| format!(" {} {:?}", a.name, a.action))
        .collect();
    eprintln!(
        "epoch {}/{} lr {}{warmup} loss {:.4} train {:.1} s ({:.0} img/s) eval {:.1} s{summary}{averaging}",
        log.epoch + 1,
        config.epochs,
        log.lr,
        log.train_loss,
        log.train_seconds.unwrap_or(f64::NAN),
        log.train_images_per_second.unwrap_or(f64::NAN),
        log.eval_seconds.unwrap_or(f64::NAN)
    );
}
