//! The hooks of the training loop: everything that happens around an epoch besides the rule,
//! the training and the validation, in the spirit of burn's learner event processors and
//! argmin's observers. The loop calls every hook at the same points of every epoch:
//!
//! 1. [`Hook::after_epoch`], after training and validation (and after the rule observed the
//!    epoch): the weight averages decide (CFA Algorithm 1: after validation) and are evaluated,
//!    the selection strategies are offered the epoch's models, the metrics line is written.
//!    Each hook may add its part to the epoch's record.
//! 2. [`Hook::save`]: each hook writes its files into the epoch's checkpoint directory and its
//!    part of `state.json`, which the loop then writes atomically.
//! 3. [`Hook::after_checkpoint`], once `state.json` names the new checkpoint: files nothing
//!    refers to any more may be deleted (dropped candidates, older checkpoints).
//! 4. [`Hook::finish`], once, after the last epoch: reports and the selected models.
//!
//! On resume, [`Hook::restore`] reads a hook's part of the checkpoint back.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::dir::{RunDir, RunState};
use super::log;
use crate::error::{IoContext, Result};
use crate::eval::Evaluation;
use crate::model::Model;
use classwise_core::record::EpochRecord;

/// An epoch as the hooks see it, after training and validation.
pub(crate) struct EpochEnd<'a> {
    /// 0-based.
    pub epoch: usize,
    /// Whether the per-epoch test evaluation runs in this epoch (`eval.every`, the last epoch).
    pub evaluate_now: bool,
    /// The raw model after the epoch.
    pub model: &'a Model,
    /// The epoch's `metrics.jsonl` record; hooks fill in their fields.
    pub record: &'a mut EpochRecord,
    /// WAT's K + 1 validation costs of the raw model, when measured.
    pub val_costs: Option<&'a [f64]>,
    /// Measures WAT's validation costs of a model (an average's, for WAT's selection); `None`
    /// without a validation split.
    pub val_costs_of: &'a dyn Fn(&Model) -> Result<Option<Vec<f64>>>,
    /// Evaluates a model on the per-epoch test subset (libtorch reseeded as for the raw model).
    pub eval_test: &'a dyn Fn(&Model) -> Result<Evaluation>,
    /// When the epoch started, and when its evaluations started (for the record's times).
    pub started: Instant,
    pub eval_started: Instant,
}

/// The end of a completed run.
pub(crate) struct RunEnd<'a> {
    pub dir: &'a RunDir,
    /// The last raw model.
    pub model: &'a Model,
    /// A model of the run's architecture to load candidates into.
    pub scratch: &'a mut Model,
    /// The final evaluation (the whole test set, the run's attack, reseeded).
    pub final_eval: &'a dyn Fn(&Model) -> Result<Evaluation>,
    /// The selection of every track, in hook order (written to `selection.json`).
    pub selected: Vec<SelectedTrack>,
}

/// One entry of `selection.json`.
#[derive(Serialize)]
pub(crate) struct SelectedTrack {
    pub track: &'static str,
    /// The chosen epoch (0-based); `None` when the track had no candidate.
    pub epoch: Option<usize>,
    pub candidates: Vec<usize>,
    /// avg + worst-class robust accuracy of each candidate under the final attack, when the
    /// strategy compares them.
    pub final_scores: Vec<(usize, f64)>,
}

/// Something the loop does around every epoch. Every method defaults to doing nothing.
pub(crate) trait Hook {
    /// Reads the hook's part of the checkpoint a resume starts from.
    fn restore(&mut self, _checkpoint: &Path, _state: &RunState) -> Result<()> {
        Ok(())
    }

    /// After the epoch's training and validation.
    fn after_epoch(&mut self, _end: &mut EpochEnd<'_>) -> Result<()> {
        Ok(())
    }

    /// Writes the hook's files into the epoch's checkpoint directory and its state.
    fn save(&self, _checkpoint: &Path, _state: &mut RunState) -> Result<()> {
        Ok(())
    }

    /// Once `state.json` names the checkpoint of `epoch`.
    fn after_checkpoint(&mut self, _epoch: usize) -> Result<()> {
        Ok(())
    }

    /// After the last epoch of a completed run.
    fn finish(&mut self, _end: &mut RunEnd<'_>) -> Result<()> {
        Ok(())
    }
}

/// Appends the epoch's record to `metrics.jsonl` (flushed and synced) and prints the epoch's
/// summary line. Runs after the hooks that fill the record.
pub(crate) struct MetricsSink {
    pub path: PathBuf,
    pub epochs: usize,
    pub verbose: bool,
}

impl Hook for MetricsSink {
    fn after_epoch(&mut self, end: &mut EpochEnd<'_>) -> Result<()> {
        end.record.eval_seconds = Some(end.eval_started.elapsed().as_secs_f64());
        end.record.seconds = end.started.elapsed().as_secs_f64();
        log::append_metrics(&self.path, end.record)?;
        if self.verbose {
            log::print_epoch(self.epochs, end.record);
        }
        Ok(())
    }
}

/// Deletes the previous epoch's checkpoint directory once the new one is named in
/// `state.json`, unless `checkpoint.every` keeps it.
pub(crate) struct CheckpointPruner {
    pub dir: RunDir,
    /// Keep every `every`-th epoch's directory (0: keep none but the last).
    pub every: usize,
}

impl Hook for CheckpointPruner {
    fn after_checkpoint(&mut self, epoch: usize) -> Result<()> {
        let Some(prev) = epoch.checked_sub(1) else {
            return Ok(());
        };
        let keep = self.every > 0 && (prev + 1) % self.every == 0;
        let old = self.dir.checkpoint(&format!("e{prev:04}"));
        if !keep && old.exists() {
            std::fs::remove_dir_all(&old).at("removing", &old)?;
        }
        Ok(())
    }
}

/// Deletes files the last `state.json` no longer names (dropped candidates), ignoring those
/// already gone, and forgets them.
pub(crate) fn remove_dropped(files: &mut Vec<PathBuf>) -> Result<()> {
    for f in files.drain(..) {
        if f.exists() {
            std::fs::remove_file(&f).at("removing", &f)?;
        }
    }
    Ok(())
}
