//! The models a run selects from, as driver hooks: the raw model ([`RawSelection`]) and its
//! weight averages (`[ema]`, `[fawa]`: [`Averages`]), each average driven by a
//! `classwise_core::average::Averager` and applied to the whole state (BN statistics included)
//! by a [`WeightAverage`]. Every track has its own model selection ([`SelectionTrack`]), as
//! `PKU-ML/CFA:train.py` keeps candidates for the raw, EMA and FAWA models apart.
//!
//! Their fields of `state.json`: `selection.<track>` (each track's selector) and
//! `<average>_updates` (the epochs that changed each average; 0 when it holds nothing).

use std::path::{Path, PathBuf};

use classwise_core::Needs;
use classwise_core::average::{Averager, Averaging};
use classwise_core::driver::{Cleanup, EpochEnd, Hook};
use classwise_core::record::{AveragingRecord, EpochRecord};
use classwise_core::select::{EpochScore, Selector};
use classwise_theory::calibration::AverageAction;
use serde_json::{Map, Value, json};

use super::backend::{Trainer, checkpoint_name};
use super::dir::updates_field;
use super::log::split_record;
use super::report::{write_report, write_selected_report};
use super::seeds::EvalSplit;
use crate::error::{IoContext, Result, TrainerError};
use crate::model::Model;
use crate::train::WeightAverage;
use classwise_core::record::{SelectedTrack, SelectionNote};

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
        let dropped = keep.drop.into_iter().filter(|&old| old != epoch);
        let files: Vec<PathBuf> = dropped.map(|old| self.candidate_file(old)).collect();
        self.dropped.extend(files);
        Ok(())
    }

    /// Reads `selection.<name>` back from the fields of `state` (the file, for errors), when the
    /// state has it.
    fn restore(&mut self, fields: &Map<String, Value>, state: &Path) -> Result<()> {
        let Some(saved) = fields.get("selection").and_then(|s| s.get(self.name)) else {
            return Ok(());
        };
        self.selector =
            serde_json::from_value(saved.clone()).map_err(|e| TrainerError::BadData {
                path: state.to_path_buf(),
                offset: None,
                reason: format!("`selection.{}` is not a selection state: {e}", self.name),
            })?;
        Ok(())
    }

    /// `selection.<name>`.
    fn save(&self) -> Result<Map<String, Value>> {
        let selector =
            serde_json::to_value(&self.selector).map_err(|source| TrainerError::Json {
                what: "selection state",
                source,
            })?;
        Ok(object(json!({ "selection": { self.name: selector } })))
    }

    /// The dropped candidates, to delete now that a state without them is committed.
    fn cleanup(&mut self) -> Vec<Cleanup> {
        self.dropped.drain(..).map(Cleanup::File).collect()
    }

    /// Chooses the track's model (comparing the candidates under the final attack when the
    /// strategy asks for it), writes it as `best<suffix>.safetensors` with its
    /// `report-best<suffix>` and records the choice.
    fn finish(&self, t: &mut Trainer<'_>) -> Result<()> {
        let suffix = match self.name {
            "raw" => String::new(),
            name => format!("-{name}"),
        };
        let mut scratch = t.model.try_clone()?;
        let mut final_scores = Vec::new();
        let mut reports = Vec::new();
        if self.selector.strategy.compares_candidates() {
            for &e in &self.selector.candidates {
                scratch.load_weights(&self.candidate_file(e))?;
                let r = t.final_eval(&scratch)?;
                final_scores.push((e, split_record(&r).score()));
                reports.push((e, r));
            }
        }
        let chosen = self.selector.choose(&final_scores);
        if let Some(e) = chosen {
            let file = self.candidate_file(e);
            let best_file = t.dir.checkpoint(&format!("best{suffix}.safetensors"));
            std::fs::copy(&file, &best_file).at("copying", &file)?;
            let report = match reports.into_iter().find(|(re, _)| *re == e) {
                Some((_, r)) => r,
                None => {
                    scratch.load_weights(&file)?;
                    t.final_eval(&scratch)?
                }
            };
            let note = SelectionNote {
                strategy: self.selector.strategy.name().to_owned(),
                track: self.name.to_owned(),
                epoch: e,
                epochs: self.selector.epochs,
            };
            write_selected_report(&t.dir, &format!("report-best{suffix}"), &report, note)?;
        }
        t.selected.push(SelectedTrack {
            track: self.name.to_owned(),
            epoch: chosen,
            candidates: self.selector.candidates.clone(),
            final_scores,
        });
        Ok(())
    }
}

/// The map of a JSON object built with `json!`.
fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The raw model's selection, scored on `checkpoint.best_split`.
pub(crate) struct RawSelection(pub SelectionTrack);

impl Hook<Trainer<'_>> for RawSelection {
    fn needs(&self, _epoch: usize) -> Needs {
        self.0.selector.strategy.needs()
    }

    fn restore(&mut self, t: &mut Trainer<'_>, fields: &Map<String, Value>) -> Result<()> {
        self.0.restore(fields, &t.dir.state())
    }

    fn after_epoch(
        &mut self,
        t: &mut Trainer<'_>,
        end: &mut EpochEnd<'_, EpochRecord>,
    ) -> Result<()> {
        let split = match t.best_split {
            "val" => &end.record.val,
            _ => &end.record.test,
        };
        let score = EpochScore {
            avg_plus_worst: split.as_ref().map(|s| s.score()),
            val_costs: end.stats.val_costs.clone(),
        };
        self.0.offer(end.epoch, &score, &t.model)
    }

    fn save(&self, _t: &mut Trainer<'_>, _epoch: usize) -> Result<Map<String, Value>> {
        self.0.save()
    }

    fn after_checkpoint(&mut self, _epoch: usize) -> Vec<Cleanup> {
        self.0.cleanup()
    }

    fn finish(&mut self, t: &mut Trainer<'_>) -> Result<()> {
        self.0.finish(t)
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

    /// Decides and applies the average after the epoch's validation (CFA Algorithm 1), then
    /// evaluates the average on the test subset and offers it to its selection when the epoch
    /// is evaluated.
    fn after_epoch(&mut self, t: &Trainer<'_>, end: &mut EpochEnd<'_, EpochRecord>) -> Result<()> {
        let val_robust = end.record.val.as_ref().map(|v| v.robust.as_slice());
        let decision = self.averager.decide(end.epoch, val_robust)?;
        self.weights.apply(decision.action, t.model.var_store());
        if decision.action != AverageAction::Keep {
            self.fresh = false;
        }
        end.record.averaging.push(AveragingRecord {
            name: self.name().to_owned(),
            action: decision.action,
            gate_value: decision.gate_value,
            updates: self.averager.state.updates,
        });
        if !t.clock.evaluate_now {
            return Ok(());
        }
        let Some(model) = refreshed(&mut self.model, &mut self.fresh, &self.weights, &t.model)?
        else {
            return Ok(());
        };
        let test = split_record(&t.eval_split(model, end.epoch, EvalSplit::Test)?);
        // WAT's output rule scores the average by its own validation costs.
        let val_costs = match self.selection.selector.strategy.needs().val_costs {
            true => t.val_costs(model, end.epoch)?,
            false => None,
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

    /// Writes the average's report and its selection's.
    fn finish(&mut self, t: &mut Trainer<'_>) -> Result<()> {
        let name = self.name();
        if let Some(m) = refreshed(&mut self.model, &mut self.fresh, &self.weights, &t.model)? {
            write_report(&t.dir, &format!("report-{name}"), &t.final_eval(m)?)?;
        }
        self.selection.finish(t)
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

impl Hook<Trainer<'_>> for Averages {
    fn needs(&self, _epoch: usize) -> Needs {
        (self.0.iter()).fold(Needs::default(), |n, a| n.or(a.averager.needs()))
    }

    fn restore(&mut self, t: &mut Trainer<'_>, fields: &Map<String, Value>) -> Result<()> {
        for avg in &mut self.0 {
            let updates = fields
                .get(&updates_field(avg.name()))
                .and_then(Value::as_u64);
            let updates = updates.unwrap_or(0) as usize;
            avg.averager.state.updates = updates;
            if let (true, Some(ck)) = (updates > 0, &t.resumed_checkpoint) {
                avg.weights = WeightAverage::load(&avg.file(ck), updates)?;
            }
            avg.selection.restore(fields, &t.dir.state())?;
        }
        Ok(())
    }

    fn after_epoch(
        &mut self,
        t: &mut Trainer<'_>,
        end: &mut EpochEnd<'_, EpochRecord>,
    ) -> Result<()> {
        self.0
            .iter_mut()
            .try_for_each(|avg| avg.after_epoch(t, end))
    }

    /// Both counters are always written (0 for an average the run does not keep).
    fn save(&self, t: &mut Trainer<'_>, epoch: usize) -> Result<Map<String, Value>> {
        let checkpoint = t.dir.checkpoint(&checkpoint_name(epoch));
        let mut fields = object(json!({ updates_field("ema"): 0, updates_field("fawa"): 0 }));
        for avg in &self.0 {
            if avg.weights.is_initialized() {
                avg.weights.save(&avg.file(&checkpoint))?;
            }
            fields.insert(updates_field(avg.name()), json!(avg.averager.state.updates));
            classwise_core::driver::merge(&mut fields, avg.selection.save()?)?;
        }
        Ok(fields)
    }

    fn after_checkpoint(&mut self, _epoch: usize) -> Vec<Cleanup> {
        self.0
            .iter_mut()
            .flat_map(|avg| avg.selection.cleanup())
            .collect()
    }

    fn finish(&mut self, t: &mut Trainer<'_>) -> Result<()> {
        self.0.iter_mut().try_for_each(|avg| avg.finish(t))
    }
}
