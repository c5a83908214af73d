//! The resumable state of a cascade: in its state directory, `state.json` (the flags and
//! predictions, the finished attacks, the finished batches of the current attack, the
//! warnings and the seconds so far, under a key that names the model, the images and the
//! settings) and one `adv-SS-BBBBB.safetensors` per finished batch (the indices and the
//! adversarial examples of the points that batch broke). Everything is written atomically
//! after every batch, so a killed evaluation continues from its last finished batch.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::report::StepReport;
use crate::data::Dataset;
use crate::error::{IoContext, Result, TrainerError};
use crate::io::write_json;
use crate::model::safetensors::{load_tensors, save_tensors};

/// Version of the state file.
const STATE_SCHEMA: u32 = 1;

/// What a state must match to be resumed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct StateKey {
    pub(super) model: String,
    pub(super) data: String,
    pub(super) attacks: Vec<String>,
    pub(super) eps: f64,
    pub(super) batch_size: usize,
    pub(super) seed: u64,
}

/// The attack in progress.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Current {
    pub(super) step: usize,
    /// The points still robust when the attack started, in order; batch b is
    /// queue[b·bs .. (b+1)·bs].
    pub(super) queue: Vec<i64>,
    pub(super) batches_done: usize,
    pub(super) broken: usize,
    pub(super) seconds: f64,
}

impl Current {
    /// Attack `step` starting on the points still robust.
    pub(super) fn start(step: usize, robust: &[bool]) -> Self {
        Current {
            step,
            queue: (0..robust.len() as i64)
                .filter(|&i| robust[i as usize])
                .collect(),
            batches_done: 0,
            broken: 0,
            seconds: 0.0,
        }
    }
}

/// The saved state of a cascade (`state.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct State {
    pub(super) schema: u32,
    pub(super) key: StateKey,
    pub(super) clean_pred: Vec<i64>,
    pub(super) robust: Vec<bool>,
    /// Predictions on the current adversarial examples (the clean ones where none).
    pub(super) adv_pred: Vec<i64>,
    pub(super) finished: Vec<StepReport>,
    pub(super) current: Option<Current>,
    pub(super) warnings: Vec<String>,
    pub(super) seconds: f64,
}

impl State {
    /// The state after the clean pass: the points classified correctly are robust, the
    /// adversarial predictions are the clean ones, no attack has run.
    pub(super) fn new(
        key: StateKey,
        clean_pred: Vec<i64>,
        robust: Vec<bool>,
        warnings: Vec<String>,
        seconds: f64,
    ) -> Self {
        State {
            schema: STATE_SCHEMA,
            key,
            adv_pred: clean_pred.clone(),
            clean_pred,
            robust,
            finished: Vec::new(),
            current: None,
            warnings,
            seconds,
        }
    }

    /// The fraction of points robust so far.
    pub(super) fn robust_fraction(&self) -> f64 {
        let flags = &self.robust;
        flags.iter().filter(|&&f| f).count() as f64 / flags.len().max(1) as f64
    }
}

/// The seconds of an evaluation over all its sessions: those saved before this session, plus
/// this session's.
pub(super) struct Clock {
    before: f64,
    session: Instant,
}

impl Clock {
    /// Starts this session's count, after `before` seconds of earlier sessions.
    pub(super) fn start(before: f64) -> Self {
        Clock {
            before,
            session: Instant::now(),
        }
    }

    pub(super) fn total(&self) -> f64 {
        self.before + self.session.elapsed().as_secs_f64()
    }
}

/// Where the state lives; without a directory, saving does nothing and nothing is resumed.
#[derive(Clone, Copy)]
pub(super) struct Store<'a> {
    dir: Option<&'a Path>,
}

impl<'a> Store<'a> {
    pub(super) fn new(dir: Option<&'a Path>) -> Self {
        Store { dir }
    }

    /// `state.json` in the state directory.
    pub(super) fn path(&self) -> Option<PathBuf> {
        self.dir.map(|d| d.join("state.json"))
    }

    pub(super) fn save(&self, state: &State) -> Result<()> {
        match self.path() {
            Some(p) => write_json(&p, "autoattack state", state),
            None => Ok(()),
        }
    }

    /// Saves what batch `b` of attack `s` broke: the points' indices and their adversarial
    /// examples.
    pub(super) fn save_batch(
        &self,
        s: usize,
        b: usize,
        index: &Tensor,
        adv: &Tensor,
    ) -> Result<()> {
        let Some(dir) = self.dir else {
            return Ok(());
        };
        save_tensors(
            &batch_file(dir, s, b),
            &[
                ("index".to_string(), index.shallow_clone()),
                ("x_adv".to_string(), adv.shallow_clone()),
            ],
        )
    }

    /// A saved state with this key, if any; a state of another evaluation is an error.
    pub(super) fn load(&self, key: &StateKey) -> Result<Option<State>> {
        let Some(path) = self.path() else {
            return Ok(None);
        };
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).at("reading", &path)?;
        let state: State = serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
            path: path.clone(),
            offset: None,
            reason: format!("not an AutoAttack state file: {e}"),
        })?;
        if state.schema != STATE_SCHEMA {
            return Err(TrainerError::BadData {
                path,
                offset: None,
                reason: format!(
                    "state schema {} (this build reads schema {STATE_SCHEMA})",
                    state.schema
                ),
            });
        }
        if &state.key != key {
            return Err(TrainerError::BadData {
                path: path.clone(),
                offset: None,
                reason: format!(
                    "saved by another evaluation ({}); delete {} to start afresh",
                    key_difference(&state.key, key),
                    path.parent().unwrap_or(&path).display()
                ),
            });
        }
        Ok(Some(state))
    }

    /// Reloads the adversarial examples of the finished batches.
    pub(super) fn restore_adversarial(&self, state: &State, x_adv: &mut Tensor) -> Result<()> {
        let Some(dir) = self.dir else {
            return Ok(());
        };
        let mut done: Vec<(usize, usize)> = Vec::new();
        for (si, _) in state.finished.iter().enumerate() {
            done.extend(batch_range(dir, si)?);
        }
        if let Some(c) = &state.current {
            done.extend((0..c.batches_done).map(|b| (c.step, b)));
        }
        for (si, bi) in done {
            let path = batch_file(dir, si, bi);
            let tensors = load_tensors(&path)?;
            let get = |name: &str| {
                tensors
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, t)| t.shallow_clone())
                    .ok_or_else(|| TrainerError::BadData {
                        path: path.clone(),
                        offset: None,
                        reason: format!("no tensor `{name}`"),
                    })
            };
            let (index, adv) = (get("index")?, get("x_adv")?);
            let _ = x_adv.index_copy_(0, &index, &adv.to_kind(Kind::Float));
        }
        Ok(())
    }
}

/// The file of batch `b` of attack `s`.
fn batch_file(dir: &Path, s: usize, b: usize) -> PathBuf {
    dir.join(format!("adv-{s:02}-{b:05}.safetensors"))
}

/// The batches of attack `s` that have a file.
fn batch_range(dir: &Path, s: usize) -> Result<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    let mut b = 0;
    while batch_file(dir, s, b).exists() {
        out.push((s, b));
        b += 1;
    }
    Ok(out)
}

/// SHA-256 of the images and labels.
pub(super) fn data_fingerprint(data: &Dataset) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let images = data.images().to_device(Device::Cpu).contiguous();
    let mut bytes = vec![0u8; images.numel() * images.kind().elt_size_in_bytes()];
    images.f_copy_data_u8(&mut bytes, images.numel())?;
    h.update(&bytes);
    for l in data.label_slice() {
        h.update(l.to_le_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Which part of two state keys differs, for the error message.
fn key_difference(saved: &StateKey, now: &StateKey) -> String {
    if saved.model != now.model {
        "another model".into()
    } else if saved.data != now.data {
        "other images".into()
    } else if saved.attacks != now.attacks {
        format!("attacks {:?}, now {:?}", saved.attacks, now.attacks)
    } else if saved.eps != now.eps {
        format!("eps {}, now {}", saved.eps, now.eps)
    } else if saved.batch_size != now.batch_size {
        format!("batch size {}, now {}", saved.batch_size, now.batch_size)
    } else {
        format!("seed {}, now {}", saved.seed, now.seed)
    }
}
