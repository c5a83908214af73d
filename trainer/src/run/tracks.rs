//! The models a run selects from, as [`Hook`]s: the raw model ([`RawSelection`]) and its
//! weight averages (`[ema]`, `[fawa]`: [`Averages`]), each average driven by a
//! `classwise_core::average::Averager` and applied to the whole state (BN statistics included)
//! by a [`WeightAverage`]. Every track has its own model selection ([`SelectionTrack`]), as
//! `PKU-ML/CFA:train.py` keeps candidates for the raw, EMA and FAWA models apart.

use std::path::{Path, PathBuf};

use classwise_core::average::{Averager, Averaging};
use classwise_core::record::AveragingRecord;
use classwise_core::select::{EpochScore, Selector};
use classwise_theory::calibration::AverageAction;

use super::dir::RunState;
use super::hooks::{EpochEnd, Hook, RunEnd, SelectedTrack, remove_dropped};
use super::log::split_record;
use super::{SelectionNote, write_report, write_selected_report};
use crate::error::{IoContext, Result};
use crate::model::Model;
use crate::train::WeightAverage;

/// The model selection of one track: its [`Selector`] and where its candidates' weights live.
pub(crate) struct SelectionTrack {
    /// `raw`, `ema` or `fawa`.
    pub name: &'static str,
    pub selector: Selector,
    /// `checkpoints/`, whose `candidates/` holds the candidates' weights.
    checkpoints: PathBuf,
    /// Candidates dropped since the last checkpoint (deleted once `state.json` is written).
    dropped: Vec<PathBuf>,
}

impl SelectionTrack {
    pub fn new(name: &'static str, selector: Selector, checkpoints: PathBuf) -> Self {
        SelectionTrack {
            name,
            selector,
            checkpoints,
            dropped: Vec::new(),
        }
    }

    /// The weights of the candidate of `epoch`.
    fn candidate_file(&self, epoch: usize) -> PathBuf {
        self.checkpoints
            .join("candidates")
            .join(format!("{}-e{epoch:04}.safetensors", self.name))
    }

    /// Offers an epoch: saves the model when it becomes a candidate and remembers the
    /// candidates it dropped.
    fn offer(&mut self, epoch: usize, score: &EpochScore, model: &Model) -> Result<()> {
        let keep = self.selector.offer(epoch, score)?;
        if keep.keep {
            model.save(&self.candidate_file(epoch))?;
        }
        let dropped: Vec<PathBuf> = keep
            .drop
            .into_iter()
            .filter(|&old| old != epoch)
            .map(|old| self.candidate_file(old))
            .collect();
        self.dropped.extend(dropped);
        Ok(())
    }

    fn restore(&mut self, state: &RunState) {
        if let Some(s) = state.selection.get(self.name) {
            self.selector = s.clone();
        }
    }

    fn save(&self, state: &mut RunState) {
        state
            .selection
            .insert(self.name.to_string(), self.selector.clone());
    }

    /// Chooses the track's model (comparing the candidates under the final attack when the
    /// strategy asks for it), writes it as `best<suffix>.safetensors` with its
    /// `report-best<suffix>` and records the choice.
    fn finish(&self, end: &mut RunEnd<'_>) -> Result<()> {
        let suffix = if self.name == "raw" {
            String::new()
        } else {
            format!("-{}", self.name)
        };
        let mut final_scores = Vec::new();
        let mut reports = Vec::new();
        if self.selector.strategy.compares_candidates() {
            for &e in &self.selector.candidates {
                end.scratch.load_weights(&self.candidate_file(e))?;
                let r = (end.final_eval)(end.scratch)?;
                final_scores.push((e, split_record(&r).score()));
                reports.push((e, r));
            }
        }
        let chosen = self.selector.choose(&final_scores);
        if let Some(e) = chosen {
            let file = self.candidate_file(e);
            let best_file = end.dir.checkpoint(&format!("best{suffix}.safetensors"));
            std::fs::copy(&file, &best_file).at("copying", &file)?;
            let report = match reports.into_iter().find(|(re, _)| *re == e) {
                Some((_, r)) => r,
                None => {
                    end.scratch.load_weights(&file)?;
                    (end.final_eval)(end.scratch)?
                }
            };
            write_selected_report(
                end.dir,
                &format!("report-best{suffix}"),
                &report,
                SelectionNote {
                    strategy: self.selector.strategy.name(),
                    track: self.name,
                    epoch: e,
                    epochs: self.selector.epochs,
                },
            )?;
        }
        end.selected.push(SelectedTrack {
            track: self.name,
            epoch: chosen,
            candidates: self.selector.candidates.clone(),
            final_scores,
        });
        Ok(())
    }
}

/// The raw model's selection, scored on `checkpoint.best_split`.
pub(crate) struct RawSelection {
    pub track: SelectionTrack,
    /// `val` or `test`.
    pub split: &'static str,
}

impl Hook for RawSelection {
    fn restore(&mut self, _checkpoint: &Path, state: &RunState) -> Result<()> {
        self.track.restore(state);
        Ok(())
    }

    fn after_epoch(&mut self, end: &mut EpochEnd<'_>) -> Result<()> {
        let split = if self.split == "val" {
            &end.record.val
        } else {
            &end.record.test
        };
        let score = EpochScore {
            avg_plus_worst: split.as_ref().map(|s| s.score()),
            val_costs: end.val_costs.map(<[f64]>::to_vec),
        };
        self.track.offer(end.epoch, &score, end.model)
    }

    fn save(&self, _checkpoint: &Path, state: &mut RunState) -> Result<()> {
        self.track.save(state);
        Ok(())
    }

    fn after_checkpoint(&mut self, _epoch: usize) -> Result<()> {
        remove_dropped(&mut self.track.dropped)
    }

    fn finish(&mut self, end: &mut RunEnd<'_>) -> Result<()> {
        self.track.finish(end)
    }
}

/// One weight average, the model it is evaluated in, and its selection.
pub(crate) struct AveragedTrack {
    pub averager: Averager,
    weights: WeightAverage,
    /// The averaged weights in a model of the run's architecture, built on first use and
    /// refreshed whenever the average changes.
    model: Option<Model>,
    /// Whether `model` holds the current average.
    fresh: bool,
    selection: SelectionTrack,
}

impl AveragedTrack {
    pub fn new(averaging: Averaging, selector: Selector, checkpoints: PathBuf) -> Result<Self> {
        let averager = Averager::new(averaging)?;
        let name = averager.averaging.name();
        Ok(AveragedTrack {
            averager,
            weights: WeightAverage::new(),
            model: None,
            fresh: false,
            selection: SelectionTrack::new(name, selector, checkpoints),
        })
    }

    /// `ema` or `fawa`.
    pub fn name(&self) -> &'static str {
        self.averager.averaging.name()
    }

    /// The file of the average in a checkpoint directory.
    fn file(&self, checkpoint: &Path) -> PathBuf {
        checkpoint.join(format!("{}.safetensors", self.name()))
    }

    /// The averaged model, or `None` while the average holds nothing.
    fn model(&mut self, raw: &Model) -> Result<Option<&Model>> {
        refreshed(&mut self.model, &mut self.fresh, &self.weights, raw)
    }

    /// The updates recorded for this average in `state.json`.
    fn updates_field<'s>(&self, state: &'s mut RunState) -> &'s mut usize {
        match self.name() {
            "ema" => &mut state.ema_updates,
            _ => &mut state.fawa_updates,
        }
    }

    /// Decides and applies the average after the epoch's validation (CFA Algorithm 1), then
    /// evaluates the average on the test subset and offers it to its selection when the epoch
    /// is evaluated.
    fn after_epoch(&mut self, end: &mut EpochEnd<'_>) -> Result<()> {
        let val_robust = end.record.val.as_ref().map(|v| v.robust.as_slice());
        let decision = self.averager.decide(end.epoch, val_robust)?;
        self.weights.apply(decision.action, end.model.var_store());
        if decision.action != AverageAction::Keep {
            self.fresh = false;
        }
        end.record.averaging.push(AveragingRecord {
            name: self.name().to_owned(),
            action: decision.action,
            gate_value: decision.gate_value,
            updates: self.averager.state.updates,
        });
        if !end.evaluate_now {
            return Ok(());
        }
        let Some(model) = refreshed(&mut self.model, &mut self.fresh, &self.weights, end.model)?
        else {
            return Ok(());
        };
        let test = split_record(&(end.eval_test)(model)?);
        // WAT's output rule scores the average by its own validation costs.
        let val_costs = if self.selection.selector.strategy.needs().val_costs {
            (end.val_costs_of)(model)?
        } else {
            None
        };
        let score = EpochScore {
            avg_plus_worst: Some(test.score()),
            val_costs,
        };
        self.selection.offer(end.epoch, &score, model)?;
        match self.name() {
            "ema" => end.record.ema_test = Some(test),
            _ => end.record.fawa_test = Some(test),
        }
        Ok(())
    }
}

/// `slot` holding the current average (loaded into a clone of `raw` on first use and whenever
/// the average changed), or `None` while the average holds nothing.
fn refreshed<'m>(
    slot: &'m mut Option<Model>,
    fresh: &mut bool,
    weights: &WeightAverage,
    raw: &Model,
) -> Result<Option<&'m Model>> {
    if !weights.is_initialized() {
        return Ok(None);
    }
    let mut m = match slot.take() {
        Some(m) => m,
        None => {
            *fresh = false;
            raw.try_clone()?
        }
    };
    if !*fresh {
        m.load_state(&weights.state())?;
        *fresh = true;
    }
    Ok(Some(slot.insert(m)))
}

/// The run's weight averages (`[ema]`, then `[fawa]`).
pub(crate) struct Averages(pub Vec<AveragedTrack>);

impl Hook for Averages {
    fn restore(&mut self, checkpoint: &Path, state: &RunState) -> Result<()> {
        for avg in &mut self.0 {
            let updates = match avg.name() {
                "ema" => state.ema_updates,
                _ => state.fawa_updates,
            };
            avg.averager.state.updates = updates;
            if updates > 0 {
                avg.weights = WeightAverage::load(&avg.file(checkpoint), updates)?;
            }
            avg.selection.restore(state);
        }
        Ok(())
    }

    fn after_epoch(&mut self, end: &mut EpochEnd<'_>) -> Result<()> {
        self.0.iter_mut().try_for_each(|avg| avg.after_epoch(end))
    }

    fn save(&self, checkpoint: &Path, state: &mut RunState) -> Result<()> {
        for avg in &self.0 {
            if avg.weights.is_initialized() {
                avg.weights.save(&avg.file(checkpoint))?;
            }
            *avg.updates_field(state) = avg.averager.state.updates;
            avg.selection.save(state);
        }
        Ok(())
    }

    fn after_checkpoint(&mut self, _epoch: usize) -> Result<()> {
        self.0
            .iter_mut()
            .try_for_each(|avg| remove_dropped(&mut avg.selection.dropped))
    }

    fn finish(&mut self, end: &mut RunEnd<'_>) -> Result<()> {
        for avg in &mut self.0 {
            let name = avg.name();
            if let Some(m) = avg.model(end.model)? {
                write_report(end.dir, &format!("report-{name}"), &(end.final_eval)(m)?)?;
            }
            avg.selection.finish(end)?;
        }
        Ok(())
    }
}
