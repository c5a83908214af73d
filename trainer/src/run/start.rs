//! Where a run starts: a fresh directory, or the last committed state and the mid-epoch
//! checkpoint of a run being resumed; the directory prepared, and the trainer built with its
//! weights restored (or loaded from `[train] init_from`), so that the driver's loop has no
//! special case for resuming.

use std::path::PathBuf;

use classwise_core::driver::Start;
use serde::Serialize;

use super::backend::Trainer;
use super::config::{InitFrom, RunConfig};
use super::dir::{self, MidEpoch, RunDir, RunState, load_state};
use super::{TrainOptions, data, log};
use crate::error::{IoContext, Result, invalid};
use crate::io::write_json;
use crate::model::Model;
use crate::train::Sgd;

/// The committed state and the mid-epoch checkpoint a run continues from (neither: fresh).
pub(crate) struct Resume {
    pub state: Option<RunState>,
    /// A mid-epoch checkpoint of the epoch after the committed ones.
    pub mid: Option<MidEpoch>,
}

impl Resume {
    /// What `dir` holds, refusing a run without `--resume` and a changed configuration.
    pub fn find(dir: &RunDir, config: &RunConfig, opts: &TrainOptions) -> Result<Resume> {
        let existing = dir.state().exists() || dir.interrupted().exists();
        if existing && !opts.resume {
            return Err(invalid(
                "--out",
                dir.0.display(),
                "a directory without a run (pass --resume to continue it)",
            ));
        }
        if !opts.resume {
            return Ok(Resume {
                state: None,
                mid: None,
            });
        }
        // A run killed before its first checkpoint has a config.toml but no state.json: it
        // starts again from the beginning (its config must still match).
        check_resumable(dir, config, opts)?;
        if !existing {
            eprintln!(
                "{} holds no completed epoch (no state.json): starting the run from the beginning",
                dir.0.display()
            );
        }
        let state = dir
            .state()
            .exists()
            .then(|| load_state(&dir.state()))
            .transpose()?;
        let epoch = state.as_ref().map_or(0, |s| s.driver.completed_epochs);
        // A mid-epoch checkpoint of an earlier epoch (a crash after the epoch's checkpoint, before
        // the record was removed) is superseded.
        let mid = match dir.interrupted().exists() {
            true => Some(dir::load_mid_epoch(&dir.interrupted())?).filter(|m| m.epoch == epoch),
            false => None,
        };
        Ok(Resume { state, mid })
    }

    pub fn is_fresh(&self) -> bool {
        self.state.is_none() && self.mid.is_none()
    }

    /// The driver's start: the rule's state as the epoch began (the mid-epoch record's, else the
    /// committed one's) and the hooks' fields.
    pub fn start(&self) -> Start {
        if self.is_fresh() {
            return Start::Fresh;
        }
        let state = self.state.as_ref();
        Start::Resume {
            epoch: state.map_or(0, |s| s.driver.completed_epochs),
            rule: match (&self.mid, state) {
                (Some(m), _) => m.rule.clone(),
                (None, Some(s)) => s.driver.rule.clone(),
                (None, None) => serde_json::Value::Null,
            },
            hooks: state.map(|s| s.driver.hooks.clone()).unwrap_or_default(),
        }
    }
}

/// Reads the saved configuration of a run being resumed and checks it matches.
fn check_resumable(dir: &RunDir, config: &RunConfig, opts: &TrainOptions) -> Result<()> {
    if !dir.config().exists() {
        return Ok(());
    }
    let saved = std::fs::read_to_string(dir.config()).at("reading", dir.config())?;
    let saved = RunConfig::from_toml(&saved).map_err(|e| {
        let what = format!("the run's readable configuration ({e})");
        invalid("--resume", dir.config().display(), what)
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

/// Checks a fresh run's starting weights exist, then writes `config.toml` and the session's
/// entry of `env.json`, before anything else is written.
pub(crate) fn prepare(
    dir: &RunDir,
    config: &RunConfig,
    opts: &TrainOptions,
    device: tch::Device,
    resume: &Resume,
) -> Result<()> {
    if let (true, Some(init)) = (resume.is_fresh(), &config.train.init_from)
        && !init.path.exists()
    {
        return Err(invalid(
            "train.init_from.path",
            init.path.display(),
            "a run directory or a model .safetensors file (no such file or directory)",
        ));
    }
    std::fs::create_dir_all(&dir.0).at("creating", &dir.0)?;
    crate::io::write_atomic(&dir.config(), config.to_toml()?.as_bytes())?;
    let epoch = resume
        .state
        .as_ref()
        .map_or(0, |s| s.driver.completed_epochs);
    let step = resume.mid.as_ref().map_or(0, |m| m.progress.next_step);
    let session = dir::session(config, device, opts, epoch, step);
    dir::record_session(&dir.env(), session, !resume.is_fresh())
}

/// The trainer of the run: its data, and its model and optimiser as the run starts (initial,
/// from `init_from`, from the committed checkpoint or from the mid-epoch one); `metrics.jsonl`
/// cut back to the committed epochs.
pub(crate) fn trainer<'a>(
    config: &'a RunConfig,
    opts: &'a TrainOptions,
    dir: RunDir,
    device: tch::Device,
    resume: Resume,
) -> Result<Trainer<'a>> {
    let data = data::load_data(config, &dir, opts.data_dir.as_deref())?;
    let k = data.train.num_classes();
    if config.model.num_classes != k {
        let expected = format!("{k}, the number of classes of the data");
        return Err(invalid(
            "model.num_classes",
            config.model.num_classes,
            expected,
        ));
    }
    let mut model = Model::new(&config.model, device, config.seed as i64)?;
    model.set_memory_format(config.memory_format)?;
    model.set_precision(config.precision)?;
    let mut sgd = Sgd::new(model.var_store(), config.optimizer)?;
    if let (true, Some(init)) = (resume.is_fresh(), &config.train.init_from) {
        let record = load_init(&mut model, init, device)?;
        write_json(&dir.0.join("init.json"), "initial weights", &record)?;
    }
    let committed = resume.state.as_ref().map(|s| dir.checkpoint(&s.checkpoint));
    let restore_from = resume.mid.as_ref().map(|m| dir.checkpoint(&m.checkpoint));
    if let Some(ck) = restore_from.as_ref().or(committed.as_ref()) {
        model.load_weights(&ck.join("model.safetensors"))?;
        sgd.load(&ck.join("optimizer.safetensors"))?;
    }
    let completed = resume
        .state
        .as_ref()
        .map_or(0, |s| s.driver.completed_epochs);
    log::truncate_metrics(&dir.metrics(), completed)?;
    let mut trainer = Trainer::new(config, opts, dir, device, data, model, sgd, resume.mid)?;
    trainer.resumed_checkpoint = committed;
    Ok(trainer)
}

/// `init.json`: the weights a run started from.
#[derive(Serialize)]
struct InitRecord {
    /// `[train] init_from` as configured.
    #[serde(flatten)]
    from: InitFrom,
    /// The model file read (`None` for `ema`, assembled from the last checkpoint).
    file: Option<PathBuf>,
    /// [`Model::fingerprint`] of the loaded weights.
    fingerprint: String,
}

/// Loads `[train] init_from` into `model`; the source must be a model of the same spec.
fn load_init(model: &mut Model, init: &InitFrom, device: tch::Device) -> Result<InitRecord> {
    let file = if init.path.is_dir() {
        let run = RunDir(init.path.clone());
        let source = run.load_model(&init.checkpoint, device).map_err(|e| {
            let what = format!(
                "a run directory with a `{}` checkpoint ({e})",
                init.checkpoint
            );
            invalid("train.init_from", init.path.display(), what)
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
