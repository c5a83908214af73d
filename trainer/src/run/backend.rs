//! The trainer as a backend of the shared training driver ([`classwise_core::driver`]): one
//! epoch of SGD over the batch loader, the validation measurements the rule and the hooks ask
//! for, the epoch's `metrics.jsonl` record, and the checkpoint files and `state.json`.

use std::time::Instant;

use classwise_core::driver::{Backend, Cleanup, DriverState, EpochStart, Measurement};
use classwise_core::record::{
    AveragingRecord, EpochRecord, METRICS_SCHEMA, MID_EPOCH_SCHEMA, SELECTION_SCHEMA, STATE_SCHEMA,
    SelectedTrack, SelectionRecord, SplitRecord,
};
use classwise_core::{ClassPlan, ClassRule, ClassStats, Needs};
use tch::Device;

use super::config::RunConfig;
use super::data::RunData;
use super::dir::{MidEpoch, RunDir, RunState};
use super::log::split_record;
use super::seeds::{EvalSplit, eval_seed, stream, torch_seed};
use super::{TrainOptions, progress};
use crate::data::{Dataset, LoadedBatch, Loader, LoaderPlan};
use crate::error::{IoContext, Result, TrainerError, invalid};
use crate::eval::{EvalSettings, Report, evaluate_on};
use crate::io::write_json;
use crate::model::Model;
use crate::train::{
    EpochOutcome, EpochProgress, EpochStats, Method, Objective, Sgd, StepSettings, train_epoch_from,
};

/// A run's model, optimiser, data and directory, and what an epoch carries from one driver step
/// to the next.
pub(crate) struct Trainer<'a> {
    pub config: &'a RunConfig,
    pub opts: &'a TrainOptions,
    pub dir: RunDir,
    pub device: Device,
    /// How the run evaluates its models ([`RunConfig::eval_settings`]).
    pub settings: EvalSettings,
    pub data: RunData,
    /// The per-epoch validation and test subsets (`eval.val_per_class`, `eval.test_per_class`).
    pub val_eval: Option<Dataset>,
    pub test_eval: Dataset,
    pub model: Model,
    pub sgd: Sgd,
    /// `val` or `test`: the split scoring the raw model's selection.
    pub best_split: &'static str,
    /// The checkpoint directory a resume restores the hooks from.
    pub resumed_checkpoint: Option<std::path::PathBuf>,
    /// The progress of the epoch a resume starts inside (taken by its first epoch).
    pub mid: Option<MidEpoch>,
    /// Set when an epoch stopped inside: its mid-epoch checkpoint record.
    pub interrupted: Option<MidEpoch>,
    /// The epoch being run: its timings and whether it is evaluated on the test subset.
    pub clock: EpochClock,
    /// The final report, handed over by its hook when the run completes.
    pub report: Option<Report>,
}

/// A hook's part of an epoch's `metrics.jsonl` line.
pub(crate) enum RecordPart {
    /// A weight average's decision after the epoch.
    Averaging(AveragingRecord),
    /// A weight average (`ema`, `fawa`) evaluated on the test subset.
    AverageTest(&'static str, SplitRecord),
}

/// What a hook hands over when the run completes.
pub(crate) enum Finished {
    /// The last model's report (`report.json`).
    Report(Box<Report>),
    /// A track's choice, for `selection.json`.
    Selected(SelectedTrack),
}

/// When the epoch started and its evaluations started, and whether it evaluates the test subset
/// (`eval.every`, the last epoch).
#[derive(Clone, Copy)]
pub(crate) struct EpochClock {
    pub started: Instant,
    pub eval_started: Instant,
    pub evaluate_now: bool,
}

/// An epoch's measurements: the statistics the rule observes and the validation accuracies
/// the record logs (`None` when the epoch was not evaluated on validation).
pub(crate) struct Measured {
    stats: ClassStats,
    val: Option<SplitRecord>,
}

impl Measurement for Measured {
    fn stats(&self) -> &ClassStats {
        &self.stats
    }
}

/// An epoch's training as the record needs it.
pub(crate) struct Trained {
    stats: EpochStats,
    lr: f64,
    train_seconds: f64,
    /// The ε factor of the first and the last batch, during an ε warm-up.
    eps_warmup: Option<[f64; 2]>,
}

impl<'a> Trainer<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &'a RunConfig,
        opts: &'a TrainOptions,
        dir: RunDir,
        device: Device,
        data: RunData,
        model: Model,
        sgd: Sgd,
        mid: Option<MidEpoch>,
    ) -> Result<Self> {
        let val_eval = (data.val.as_ref())
            .map(|v| v.head_per_class(config.eval.val_per_class))
            .transpose()?;
        let test_eval = data.test.head_per_class(config.eval.test_per_class)?;
        let best_split = match (config.checkpoint.best_split, &data.val) {
            (super::BestSplit::Val, Some(_)) => "val",
            _ => "test",
        };
        let now = Instant::now();
        Ok(Trainer {
            config,
            opts,
            dir,
            device,
            settings: config.eval_settings(device),
            data,
            val_eval,
            test_eval,
            model,
            sgd,
            best_split,
            resumed_checkpoint: None,
            mid,
            interrupted: None,
            clock: EpochClock {
                started: now,
                eval_started: now,
                evaluate_now: false,
            },
            report: None,
        })
    }

    /// Evaluates `model` on the per-epoch subset of `split` after `epoch`, libtorch reseeded as
    /// for every model of that epoch.
    pub fn eval_split(&self, model: &Model, epoch: usize, split: EvalSplit) -> Result<Report> {
        let data = match (split, &self.val_eval) {
            (EvalSplit::Test, _) => &self.test_eval,
            (EvalSplit::Val, Some(v)) => v,
            (EvalSplit::Val, None) => {
                return Err(invalid(
                    "data.split",
                    "none",
                    "a validation split to evaluate on",
                ));
            }
        };
        tch::manual_seed(eval_seed(self.config.seed, epoch, split));
        evaluate_on(model, data, &self.settings, self.device)
    }

    /// WAT's K + 1 validation costs of `model` after `epoch`; `None` without a validation split.
    pub fn val_costs(&self, model: &Model, epoch: usize) -> Result<Option<Vec<f64>>> {
        let Some(v) = &self.val_eval else {
            return Ok(None);
        };
        let config = self.config;
        let Method::Trades(trades) = &config.train.method else {
            return Err(invalid(
                "train.method",
                Objective::name(&config.train.method),
                "trades (WAT's validation costs use the TRADES attack and loss)",
            ));
        };
        tch::manual_seed(eval_seed(config.seed, epoch, EvalSplit::Val));
        crate::eval::trades_costs(
            model,
            crate::data::batches(v, self.settings.batch_size, self.device)?,
            &trades.attack,
            config.train.eps.value,
            config.train.beta,
            self.data.train.num_classes(),
            self.device,
        )
        .map(Some)
    }

    /// The final evaluation of `model`: the whole test set, the run's attack, reseeded as
    /// `classwise eval` does.
    pub fn final_eval(&self, model: &Model) -> Result<Report> {
        tch::manual_seed(self.settings.seed);
        evaluate_on(model, &self.data.test, &self.settings, self.device)
    }

    /// The loader of `epoch`'s batches from batch `skip` on, in the epoch's shuffled order.
    fn loader(&self, epoch: usize, skip: usize) -> Result<(Loader, usize)> {
        let config = self.config;
        let mut order: Vec<i64> = (0..self.data.train.len() as i64).collect();
        rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut stream(config.seed, 1, epoch));
        let steps: Vec<Vec<i64>> = order
            .chunks(config.batch_size)
            .map(<[i64]>::to_vec)
            .collect();
        let n_batches = steps.len();
        let plan = LoaderPlan {
            steps,
            skip,
            augment: config.data.augment,
            rng: stream(config.seed, 2, epoch),
        };
        let loader = Loader::spawn(self.data.train.host_source(), plan, self.device)?;
        Ok((loader, n_batches))
    }

    /// Writes the model and the optimiser into the checkpoint directory `name`.
    fn save_weights(&self, name: &str) -> Result<()> {
        let ck = self.dir.checkpoint(name);
        self.model.save(&ck.join("model.safetensors"))?;
        self.sgd.save(&ck.join("optimizer.safetensors"))
    }

    /// Saves the mid-epoch checkpoint of an epoch stopped inside (model and optimiser in their
    /// own directory, then `interrupted.json`, then older mid-epoch directories removed).
    fn save_mid_epoch(&mut self, record: MidEpoch) -> Result<()> {
        self.save_weights(&record.checkpoint)?;
        write_json(
            &self.dir.interrupted(),
            "mid-epoch checkpoint record",
            &record,
        )?;
        self.dir.remove_mid_epoch_dirs(Some(&record.checkpoint))?;
        self.interrupted = Some(record);
        Ok(())
    }
}

impl Backend for Trainer<'_> {
    type Error = TrainerError;
    type Trained = Trained;
    type Measured = Measured;
    type Record = EpochRecord;
    type Part = RecordPart;
    type Output = Finished;

    fn train_epoch(&mut self, start: &EpochStart<'_>) -> Result<Option<Trained>> {
        let (config, epoch) = (self.config, start.epoch);
        let t0 = Instant::now();
        let lr = config.schedule.lr(epoch);
        // Where the epoch starts: batch 0, or where an interrupted session stopped.
        let (at_start, seconds_before) = match self.mid.take() {
            Some(m) => (m.progress, m.train_seconds),
            None => (EpochProgress::new(self.data.train.num_classes()), 0.0),
        };
        let skip = at_start.next_step;
        let (loader, n_batches) = self.loader(epoch, skip)?;
        let label = format!("epoch {}/{}", epoch + 1, config.epochs);
        let progress =
            progress::Progress::new(label, n_batches, config.batch_size, self.opts.verbose);
        let batch_iter = loader.map(|batch| {
            batch.map(|LoadedBatch { step, x, y }| {
                // Requesting batch `step` means batch `step − 1` was trained.
                if step > skip {
                    progress.tick(step - 1);
                }
                tch::manual_seed(torch_seed(config.seed, epoch, step));
                (x, y)
            })
        });
        let scale = |step| config.train.eps_scale(epoch, step, n_batches);
        let settings = |step| StepSettings {
            lr,
            eps_scale: scale(step),
            clean_forward_after_step: config.train.clean_forward_after_step,
        };
        let stop = |step: usize| start.stop_before(step);
        let outcome = train_epoch_from(
            &self.model,
            &mut self.sgd,
            &config.train.method,
            start.plan,
            epoch,
            batch_iter,
            settings,
            self.device,
            at_start,
            &stop,
        )?;
        progress.finish();
        let train_seconds = seconds_before + t0.elapsed().as_secs_f64();
        let stats = match outcome {
            EpochOutcome::Complete(stats) => stats,
            EpochOutcome::Interrupted(p) => {
                self.save_mid_epoch(MidEpoch {
                    schema: MID_EPOCH_SCHEMA,
                    epoch,
                    checkpoint: MidEpoch::name(epoch, p.next_step),
                    progress: p,
                    rule: start.rule_at_start.clone(),
                    train_seconds,
                    signal: crate::interrupt::signal_name().map(str::to_owned),
                })?;
                return Ok(None);
            }
        };
        let evaluate_now = epoch + 1 == config.epochs || (epoch + 1) % config.eval.every == 0;
        self.clock = EpochClock {
            started: t0,
            eval_started: Instant::now(),
            evaluate_now,
        };
        let eps_warmup = (scale(0) < 1.0).then(|| [scale(0), scale(n_batches.saturating_sub(1))]);
        Ok(Some(Trained {
            stats,
            lr,
            train_seconds,
            eps_warmup,
        }))
    }

    fn measure_initial(&mut self, _needs: Needs) -> Result<ClassStats> {
        let config = self.config;
        let val = self.val_eval.as_ref().ok_or_else(|| {
            let rule = config.rule.name();
            invalid(
                "data.split",
                "none",
                format!("a validation split: the `{rule}` rule measures on it"),
            )
        })?;
        tch::manual_seed(super::seeds::initial_seed(config.seed));
        let e = evaluate_on(&self.model, val, &self.settings, self.device)?;
        Ok(validation_stats(Some(&e)).1)
    }

    /// Validation when the rule or a hook needs it, or on the evaluation schedule.
    fn measure(&mut self, epoch: usize, trained: &Trained, needs: Needs) -> Result<Measured> {
        let evaluate_val = self.clock.evaluate_now || needs.val_accuracy || needs.val_errors;
        let val = match self.val_eval.is_some() && evaluate_val {
            true => Some(self.eval_split(&self.model, epoch, EvalSplit::Val)?),
            false => None,
        };
        let (val, mut stats) = validation_stats(val.as_ref());
        stats.train_robust = trained.stats.train_robust.clone();
        if needs.val_costs {
            stats.val_costs = self.val_costs(&self.model, epoch)?;
        }
        Ok(Measured { stats, val })
    }

    /// The `metrics.jsonl` line, with the test subset evaluated when the epoch is.
    fn record(
        &mut self,
        epoch: usize,
        plan: ClassPlan,
        trained: Trained,
        measured: &Measured,
        rule: &dyn ClassRule,
    ) -> Result<EpochRecord> {
        let val = measured.val.clone();
        let test = match self.clock.evaluate_now {
            true => Some(split_record(&self.eval_split(
                &self.model,
                epoch,
                EvalSplit::Test,
            )?)),
            false => None,
        };
        let Trained {
            stats: s,
            lr,
            train_seconds,
            eps_warmup,
        } = trained;
        Ok(EpochRecord {
            schema: METRICS_SCHEMA,
            epoch,
            rule: rule.name().to_owned(),
            lr,
            train_loss: s.mean_loss,
            train_robust: s.train_robust,
            train_attack_steps: s.attack_steps,
            train_confusion: s.confusion.filter(|_| self.config.train.log_confusion),
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
            train_images_per_second: Some(self.data.train.len() as f64 / train_seconds.max(1e-9)),
            eval_seconds: None,
        })
    }

    fn add(&mut self, record: &mut EpochRecord, part: RecordPart) -> Result<()> {
        match part {
            RecordPart::Averaging(a) => record.averaging.push(a),
            RecordPart::AverageTest("ema", test) => record.ema_test = Some(test),
            RecordPart::AverageTest(_, test) => record.fawa_test = Some(test),
        }
        Ok(())
    }

    /// The epoch's timings, once the averages were evaluated.
    fn complete(&mut self, record: &mut EpochRecord) -> Result<()> {
        record.eval_seconds = Some(self.clock.eval_started.elapsed().as_secs_f64());
        record.seconds = self.clock.started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Keeps the final report and writes `selection.json` from the tracks' choices: the last
    /// file of a complete run.
    fn finish(&mut self, outputs: Vec<Finished>) -> Result<()> {
        let mut tracks = Vec::new();
        for output in outputs {
            match output {
                Finished::Report(r) => self.report = Some(*r),
                Finished::Selected(t) => tracks.push(t),
            }
        }
        let record = SelectionRecord {
            schema: SELECTION_SCHEMA,
            strategy: self.config.select,
            split: self.best_split.to_owned(),
            tracks,
        };
        write_json(&self.dir.selection(), "selection", &record)
    }

    fn save(&mut self, epoch: usize) -> Result<()> {
        self.save_weights(&checkpoint_name(epoch))
    }

    /// `state.json`, naming the epoch's checkpoint; then the mid-epoch checkpoint it supersedes
    /// is removed.
    fn commit(&mut self, state: &DriverState) -> Result<()> {
        let state = RunState {
            schema: STATE_SCHEMA,
            checkpoint: checkpoint_name(state.completed_epochs - 1),
            driver: state.clone(),
        };
        write_json(&self.dir.state(), "run state", &state)?;
        self.dir.remove_mid_epoch()
    }

    fn clean(&mut self, action: Cleanup) -> Result<()> {
        match action {
            Cleanup::Checkpoint(epoch) => {
                let old = self.dir.checkpoint(&checkpoint_name(epoch));
                if old.exists() {
                    std::fs::remove_dir_all(&old).at("removing", &old)?;
                }
            }
            Cleanup::File(f) => {
                if f.exists() {
                    std::fs::remove_file(&f).at("removing", &f)?;
                }
            }
        }
        Ok(())
    }
}

/// A validation evaluation as the metrics line logs it and as a rule observes it (class-wise
/// clean and robust accuracy, errors); both empty without one.
fn validation_stats(val: Option<&Report>) -> (Option<SplitRecord>, ClassStats) {
    let record = val.map(split_record);
    let stats = ClassStats {
        train_robust: Vec::new(),
        val_clean: record.as_ref().map(|v| v.clean.clone()),
        val_robust: record.as_ref().map(|v| v.robust.clone()),
        val_errors: val.map(|e| e.errors.clone()),
        val_costs: None,
    };
    (record, stats)
}

/// The directory under `checkpoints/` of a 0-based epoch.
pub(crate) fn checkpoint_name(epoch: usize) -> String {
    format!("e{epoch:04}")
}
