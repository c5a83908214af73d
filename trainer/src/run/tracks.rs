//! The models a run keeps besides the raw one: its weight averages (`[ema]`, `[fawa]`), each
//! driven by a `classwise_core::average::Averager` and applied to the whole state (BN
//! statistics included) by a [`WeightAverage`]; and the model-selection candidates of every
//! track (raw, EMA, FAWA).

use std::path::{Path, PathBuf};

use classwise_core::average::{Averager, Averaging};
use classwise_core::record::AveragingRecord;
use classwise_core::select::{EpochScore, Selector};

use crate::error::{IoContext, Result};
use crate::model::Model;
use crate::train::WeightAverage;

/// One weight average and the model it is evaluated in.
pub(crate) struct AveragedTrack {
    pub averager: Averager,
    pub weights: WeightAverage,
    /// The averaged weights in a model of the run's architecture, built on first use and
    /// refreshed whenever the average changes.
    model: Option<Model>,
    /// Whether `model` holds the current average.
    fresh: bool,
}

impl AveragedTrack {
    pub fn new(averaging: Averaging) -> Result<Self> {
        Ok(AveragedTrack {
            averager: Averager::new(averaging)?,
            weights: WeightAverage::new(),
            model: None,
            fresh: false,
        })
    }

    /// `ema` or `fawa`.
    pub fn name(&self) -> &'static str {
        self.averager.averaging.name()
    }

    /// The file of the average in a checkpoint directory.
    pub fn file(&self, checkpoint: &Path) -> PathBuf {
        checkpoint.join(format!("{}.safetensors", self.name()))
    }

    /// Restores the average of a checkpoint that recorded `updates` updates.
    pub fn restore(&mut self, checkpoint: &Path, updates: usize) -> Result<()> {
        self.averager.state.updates = updates;
        if updates > 0 {
            self.weights = WeightAverage::load(&self.file(checkpoint), updates)?;
        }
        Ok(())
    }

    /// Decides and applies the average after `epoch` (CFA Algorithm 1: after validation).
    pub fn after_epoch(
        &mut self,
        epoch: usize,
        val_robust: Option<&[f64]>,
        model: &Model,
    ) -> Result<AveragingRecord> {
        let decision = self.averager.decide(epoch, val_robust)?;
        self.weights.apply(decision.action, model.var_store());
        if decision.action != classwise_theory::calibration::AverageAction::Keep {
            self.fresh = false;
        }
        Ok(AveragingRecord {
            name: self.name().to_owned(),
            action: decision.action,
            gate_value: decision.gate_value,
            updates: self.averager.state.updates,
        })
    }

    /// The averaged model, or `None` while the average holds nothing.
    pub fn model(&mut self, raw: &Model) -> Result<Option<&Model>> {
        if !self.weights.is_initialized() {
            return Ok(None);
        }
        let mut m = match self.model.take() {
            Some(m) => m,
            None => {
                self.fresh = false;
                raw.try_clone()?
            }
        };
        if !self.fresh {
            m.load_state(&self.weights.state())?;
            self.fresh = true;
        }
        Ok(Some(self.model.insert(m)))
    }
}

/// The model selection of one track: its [`Selector`] and where its candidates' weights live.
pub(crate) struct SelectionTrack {
    /// `raw`, `ema` or `fawa`.
    pub name: &'static str,
    pub selector: Selector,
}

impl SelectionTrack {
    /// The weights of the candidate of `epoch`.
    pub fn candidate_file(&self, dir: &Path, epoch: usize) -> PathBuf {
        dir.join("candidates")
            .join(format!("{}-e{epoch:04}.safetensors", self.name))
    }

    /// Offers an epoch: saves the model when it becomes a candidate. Returns the files of the
    /// candidates it dropped, to delete once the run state no longer names them.
    pub fn offer(
        &mut self,
        dir: &Path,
        epoch: usize,
        score: &EpochScore,
        model: Option<&Model>,
    ) -> Result<Vec<PathBuf>> {
        let Some(model) = model else {
            return Ok(Vec::new());
        };
        let keep = self.selector.offer(epoch, score)?;
        if keep.keep {
            model.save(&self.candidate_file(dir, epoch))?;
        }
        Ok(keep
            .drop
            .into_iter()
            .filter(|&old| old != epoch)
            .map(|old| self.candidate_file(dir, old))
            .collect())
    }
}

/// Deletes files that no longer matter (dropped candidates), ignoring those already gone.
pub(crate) fn remove_files(files: &[PathBuf]) -> Result<()> {
    for f in files {
        if f.exists() {
            std::fs::remove_file(f).at("removing", f)?;
        }
    }
    Ok(())
}
