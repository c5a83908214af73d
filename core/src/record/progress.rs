//! `interrupted.json`, where a run stopped inside an epoch ([`MidEpoch`]), with the epoch's
//! progress so far ([`EpochProgress`]): written by the trainer after the model and optimiser
//! files of its mid-epoch checkpoint, read by a resume, which continues from that batch.
//!
//! # Versions
//!
//! * Schema 1: files without a `schema` field (2026-11-23 to 2026-11-28).
//! * Schema 2 ([`MID_EPOCH_SCHEMA`]): adds `schema`; every other field as in schema 1.

use serde::{Deserialize, Serialize};

use super::{check_schema, first_schema, parse_json};
use crate::error::{Result, invalid};

/// The version of [`MidEpoch`] written now.
pub const MID_EPOCH_SCHEMA: u32 = 2;

/// How far an epoch got: the next batch to train and what the batches before it measured. A run
/// interrupted mid-epoch saves it with the model and the optimiser, and resumes from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochProgress {
    /// The 0-based index of the next batch of the epoch.
    pub next_step: usize,
    /// Per-class counts of correctly classified training inputs so far (t_k's numerators).
    pub correct: Vec<u64>,
    /// Per-class counts of training inputs so far.
    pub total: Vec<u64>,
    /// Sum of the batch losses so far.
    pub loss_sum: f64,
    /// The confusion counts so far, row-major K × K (rows true classes); absent in progress
    /// saved before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confusion: Option<Vec<u64>>,
    /// Per class: the training attack's steps so far, when the objective counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<u64>>,
}

impl EpochProgress {
    /// The start of an epoch over `k` classes.
    pub fn new(k: usize) -> Self {
        EpochProgress {
            next_step: 0,
            correct: vec![0; k],
            total: vec![0; k],
            loss_sum: 0.0,
            confusion: Some(vec![0; k * k]),
            steps: None,
        }
    }
}

/// `interrupted.json`: where an interrupted run stopped inside an epoch. Written atomically after
/// the model and optimiser files of `checkpoint` (`checkpoints/m<epoch>-<step>/`), and removed
/// once the epoch's own checkpoint is named in `state.json`; a resume reads it only if `epoch`
/// is the epoch after the last completed one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MidEpoch {
    /// [`MID_EPOCH_SCHEMA`] when written; 1 for a file without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// The 0-based epoch being trained.
    pub epoch: usize,
    /// Directory under `checkpoints/` with `model.safetensors` and `optimizer.safetensors`.
    pub checkpoint: String,
    /// The next batch, the counts and the loss sum so far.
    pub progress: EpochProgress,
    /// The class-wise rule's state at the start of the epoch (its plan is recomputed from it).
    pub rule: serde_json::Value,
    /// Seconds spent training the epoch before the interruption.
    pub train_seconds: f64,
    /// The signal that asked for the stop (`None` when asked by the caller).
    pub signal: Option<String>,
}

impl MidEpoch {
    /// The prefix of the mid-epoch checkpoint directories.
    pub const PREFIX: &str = "m";

    /// The directory name of a mid-epoch checkpoint.
    pub fn name(epoch: usize, step: usize) -> String {
        format!("{}{epoch:04}-{step:06}", Self::PREFIX)
    }

    /// Reads `interrupted.json` from its text and checks it: a known schema, the checkpoint of
    /// its epoch and batch, per-class counts of one length. `what` names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let mid: Self = parse_json(text, what, "a mid-epoch checkpoint record")?;
        check_schema(what, mid.schema, MID_EPOCH_SCHEMA, "mid-epoch record")?;
        let p = &mid.progress;
        let expected = Self::name(mid.epoch, p.next_step);
        if mid.checkpoint != expected {
            let field = format!("{what}: checkpoint");
            return Err(invalid(
                field,
                &mid.checkpoint,
                format!("`{expected}`, of its epoch and batch"),
            ));
        }
        if p.correct.len() != p.total.len() {
            let field = format!("{what}: progress.correct");
            let found = format!("{} entries", p.correct.len());
            return Err(invalid(
                field,
                found,
                format!("{}, one per class", p.total.len()),
            ));
        }
        Ok(mid)
    }
}
