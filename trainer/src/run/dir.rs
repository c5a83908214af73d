//! The run directory: its files, `state.json` (what a resume needs) and `env.json` (the
//! sessions that ran it).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::Device;

use super::TrainOptions;
use super::config::RunConfig;
use classwise_core::record::{ENV_SCHEMA, EnvRecord};

use crate::error::{IoContext, Result, TrainerError, invalid};
use crate::io::write_json;
use crate::model::Model;
use crate::train::WeightAverage;

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
    /// `interrupted.json`: the mid-epoch checkpoint of an interrupted run ([`MidEpoch`]).
    pub fn interrupted(&self) -> PathBuf {
        self.0.join("interrupted.json")
    }
    /// `selection.json`, the last file a completed run writes.
    pub fn selection(&self) -> PathBuf {
        self.0.join("selection.json")
    }

    /// How far the run in this directory got, from its files alone (no libtorch involved).
    pub fn progress(&self) -> Result<RunProgress> {
        if self.selection().exists() {
            return Ok(RunProgress::Complete);
        }
        let epochs = if self.state().exists() {
            load_state(&self.state())?.driver.completed_epochs
        } else {
            0
        };
        if self.interrupted().exists() {
            let mid = load_mid_epoch(&self.interrupted())?;
            if mid.epoch == epochs {
                return Ok(RunProgress::MidEpoch {
                    epoch: mid.epoch,
                    step: mid.progress.next_step,
                });
            }
        }
        Ok(if epochs > 0 || self.config().exists() {
            RunProgress::Epochs(epochs)
        } else {
            RunProgress::NotStarted
        })
    }

    /// Removes the mid-epoch checkpoint (`interrupted.json` first, then its directories), once a
    /// later checkpoint supersedes it.
    pub(crate) fn remove_mid_epoch(&self) -> Result<()> {
        let record = self.interrupted();
        if record.exists() {
            std::fs::remove_file(&record).at("removing", &record)?;
        }
        self.remove_mid_epoch_dirs(None)
    }

    /// Removes the mid-epoch checkpoint directories but `keep`.
    pub(crate) fn remove_mid_epoch_dirs(&self, keep: Option<&str>) -> Result<()> {
        let dir = self.0.join("checkpoints");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(MidEpoch::PREFIX) && Some(name.as_str()) != keep {
                std::fs::remove_dir_all(entry.path()).at("removing", entry.path())?;
            }
        }
        Ok(())
    }

    /// The model weights of a named checkpoint: `last`, `best`, or a path.
    pub fn weights(&self, which: &str) -> Result<PathBuf> {
        match which {
            "best" => Ok(self.best()),
            "best-ema" | "best-fawa" => {
                let file = self.checkpoint(&format!("{which}.safetensors"));
                if file.is_file() {
                    Ok(file)
                } else {
                    Err(invalid(
                        "--checkpoint",
                        which,
                        format!(
                            "a run that selected a weight-averaged model ({} does not exist: \
                             the run has no [{}] or has not finished)",
                            file.display(),
                            &which[5..]
                        ),
                    ))
                }
            }
            "last" => {
                let state = load_state(&self.state())?;
                Ok(self.checkpoint(&state.checkpoint).join("model.safetensors"))
            }
            path if Path::new(path).is_file() => Ok(PathBuf::from(path)),
            other => Err(invalid(
                "--checkpoint",
                other,
                "best, last, ema, fawa, best-ema, best-fawa, or the path of a model file (no \
                 such file)",
            )),
        }
    }

    /// The model of a named checkpoint: `last`, `best`, `ema` or `fawa` (the weight average of
    /// the last epoch, CFA's EMA and FAWA), `best-ema` or `best-fawa` (the selected averages),
    /// or a path to model weights.
    pub fn load_model(&self, which: &str, device: Device) -> Result<Model> {
        if which != "ema" && which != "fawa" {
            return Model::load(&self.weights(which)?, device);
        }
        let state = load_state(&self.state())?;
        let ck = self.checkpoint(&state.checkpoint);
        let average = ck.join(format!("{which}.safetensors"));
        let updates = TracksState::of(&state, &self.state())?.updates(which);
        if updates == 0 || !average.exists() {
            return Err(self.no_average(which, &ck));
        }
        let mut model = Model::load(&ck.join("model.safetensors"), device)?;
        model.load_state(&WeightAverage::load(&average, updates)?.state())?;
        Ok(model)
    }

    /// Why the run has no model of the weight average `which` in checkpoint `ck`: no
    /// `[which]` in its config, or an average that never accepted an epoch (FAWA's gate never
    /// passed; the reference `PKU-ML/CFA:train.py` would hold the initial weights there).
    fn no_average(&self, which: &str, ck: &Path) -> TrainerError {
        let config = RunConfig::from_file(&self.config(), &[]).ok();
        let configured = config.is_some_and(|c| match which {
            "ema" => c.ema.is_some(),
            _ => c.fawa.is_some(),
        });
        let expected = if configured {
            format!(
                "a weight average holding an epoch (the run's [{which}] holds none up to {}: its \
                 start epoch was not reached, or FAWA's gate never passed; no {which} model to \
                 evaluate)",
                ck.display()
            )
        } else {
            format!(
                "a run with this weight average ({} holds none; set [{which}] in the config)",
                ck.display()
            )
        };
        invalid("--checkpoint", which, expected)
    }
}

/// `state.json`: the driver's state with its checkpoint's name, a record of `classwise_core`
/// ([`classwise_core::record::state`]).
pub use classwise_core::record::RunState;

/// The record at `path`, read by its checking `parse` (a `classwise_core::record` type's).
fn read_record<T>(path: &Path, parse: fn(&str, &str) -> classwise_core::Result<T>) -> Result<T> {
    let text = std::fs::read_to_string(path).at("reading", path)?;
    Ok(parse(&text, &path.display().to_string())?)
}

/// Reads and checks `state.json` at `path`.
pub(crate) fn load_state(path: &Path) -> Result<RunState> {
    read_record(path, RunState::parse)
}

/// The tracks' hook state in `state.json` ([`super::tracks::Tracks`]): each track's selector
/// and the epochs that changed each weight average. Files written before a field existed read
/// with its default (a track without a saved selector starts afresh, an average without a
/// count holds nothing).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct TracksState {
    /// Each track's selector, by track name (`raw`, `ema`, `fawa`).
    #[serde(default)]
    pub selection: std::collections::BTreeMap<String, classwise_core::select::Selector>,
    /// The epochs that changed each average (0: it holds nothing); both always written.
    #[serde(default)]
    pub ema_updates: usize,
    #[serde(default)]
    pub fawa_updates: usize,
}

impl TracksState {
    /// The tracks' part of a committed state, checked.
    pub fn of(state: &RunState, path: &Path) -> Result<Self> {
        let fields = serde_json::Value::Object(state.driver.hooks.clone());
        serde_json::from_value(fields).map_err(|e| TrainerError::BadData {
            path: path.to_path_buf(),
            offset: None,
            reason: format!("not the tracks' state: {e}"),
        })
    }

    /// The updates of the average `name` (`ema`, `fawa`).
    pub fn updates(&self, name: &str) -> usize {
        match name {
            "ema" => self.ema_updates,
            _ => self.fawa_updates,
        }
    }
}

/// How far a run got ([`RunDir::progress`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunProgress {
    /// No file of a run yet.
    NotStarted,
    /// This many completed epochs (0: started, or killed before its first checkpoint).
    Epochs(usize),
    /// Interrupted at batch `step` of 0-based epoch `epoch`, with a mid-epoch checkpoint.
    MidEpoch { epoch: usize, step: usize },
    /// Every epoch trained and the reports written.
    Complete,
}

impl RunProgress {
    /// How far a run of `epochs` epochs got, in words.
    pub fn describe(self, epochs: usize) -> String {
        match self {
            RunProgress::NotStarted => "-".into(),
            RunProgress::Epochs(n) => format!("{n}/{epochs} epochs"),
            RunProgress::MidEpoch { epoch, step } => {
                format!("{epoch}/{epochs} epochs + {step} batches")
            }
            RunProgress::Complete => "complete".into(),
        }
    }
}

/// `interrupted.json`: a record of `classwise_core` ([`classwise_core::record::progress`]).
pub use classwise_core::record::MidEpoch;

/// Reads and checks `interrupted.json` at `path`.
pub(crate) fn load_mid_epoch(path: &Path) -> Result<MidEpoch> {
    read_record(path, MidEpoch::parse)
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
pub(crate) fn session(
    config: &RunConfig,
    device: Device,
    opts: &TrainOptions,
    start_epoch: usize,
    start_step: usize,
) -> serde_json::Map<String, serde_json::Value> {
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let serde_json::Value::Object(entry) = serde_json::json!({
        "start_epoch": start_epoch,
        "start_step": start_step,
        "started_unix_seconds": started,
        "git_sha": opts.build.git_sha,
        "git_dirty": opts.build.git_dirty,
        "classwise_trainer": env!("CARGO_PKG_VERSION"),
        "tch": env!("CLASSWISE_TCH_VERSION"),
        "libtorch": crate::LIBTORCH_VERSION,
        "device": format!("{device:?}"),
        "precision": config.precision,
        "cudnn_benchmark": device.is_cuda().then_some(config.cudnn_benchmark),
        "threads": tch::get_num_threads(),
        "cpu_tuning": crate::runtime::current(),
        "data_dir": opts.data_dir,
        "seed": config.seed,
        "streams": "data order and augmentation: ChaCha8(seed) streams per epoch; libtorch \
                    generator reseeded per batch from (seed, epoch, step)",
    }) else {
        unreachable!("an object literal is an object")
    };
    entry
}

/// Writes `env.json` ([`EnvRecord`]): the earlier sessions (when `resumed`) followed by `entry`.
pub(crate) fn record_session(
    path: &Path,
    entry: serde_json::Map<String, serde_json::Value>,
    resumed: bool,
) -> Result<()> {
    let mut record = match resumed && path.exists() {
        true => read_record(path, EnvRecord::parse)?,
        false => EnvRecord::default(),
    };
    record.schema = ENV_SCHEMA;
    record.sessions.push(entry);
    write_json(path, "environment", &record)
}
