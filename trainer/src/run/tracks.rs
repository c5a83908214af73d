//! The models a run selects from, as one driver hook ([`Tracks`]): the raw model and its weight
//! averages (`[ema]`, `[fawa]`), each average driven by a
//! `classwise_core::average::Averager` and applied to the whole state (BN statistics included)
//! by a [`WeightAverage`]. Every track has its own model selection ([`SelectionTrack`]), as
//! `PKU-ML/CFA:train.py` keeps candidates for the raw, EMA and FAWA models apart.
//!
//! Their typed state ([`TracksState`], the fields of `state.json`): `selection.<track>` (each
//! track's selector) and `<average>_updates` (the epochs that changed each average; 0 when it
//! holds nothing).

use std::path::{Path, PathBuf};

use classwise_core::Needs;
use classwise_core::average::{Averager, Averaging};
use classwise_core::driver::{Cleanup, EpochView, Hook};
use classwise_core::record::{AveragingRecord, EpochRecord, SelectedTrack, SelectionNote};
use classwise_core::select::{EpochScore, Selector};
use classwise_theory::calibration::AverageAction;

use super::backend::{Finished, RecordPart, Trainer, checkpoint_name};
use super::dir::TracksState;
use super::log::split_record;
use super::report::{write_report, write_selected_report};
use super::seeds::EvalSplit;
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
        let dropped = keep.drop.into_iter().filter(|&old| old != epoch);
        let files: Vec<PathBuf> = dropped.map(|old| self.candidate_file(old)).collect();
        self.dropped.extend(files);
        Ok(())
    }

    /// Takes its selector back from a resumed run's state, when the state has it.
    fn restore(&mut self, state: &TracksState) {
        if let Some(saved) = state.selection.get(self.name) {
            self.selector = saved.clone();
        }
    }

    /// The dropped candidates, to delete now that a state without them is committed.
    fn cleanup(&mut self) -> Vec<Cleanup> {
        self.dropped.drain(..).map(Cleanup::File).collect()
    }

    /// Chooses the track's model (comparing the candidates under the final attack when the
    /// strategy asks for it), writes it as `best<suffix>.safetensors` with its
    /// `report-best<suffix>`, and returns the choice for `selection.json`.
    fn finish(&self, t: &Trainer<'_>) -> Result<SelectedTrack> {
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
        Ok(SelectedTrack {
            track: self.name.to_owned(),
            epoch: chosen,
            candidates: self.selector.candidates.clone(),
            final_scores,
        })
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
    /// is evaluated; returns its parts of the record.
    fn after_epoch(
        &mut self,
        t: &Trainer<'_>,
        epoch: usize,
        record: &EpochRecord,
    ) -> Result<Vec<RecordPart>> {
        let val_robust = record.val.as_ref().map(|v| v.robust.as_slice());
        let decision = self.averager.decide(epoch, val_robust)?;
        self.weights.apply(decision.action, t.model.var_store());
        if decision.action != AverageAction::Keep {
            self.fresh = false;
        }
        let mut parts = vec![RecordPart::Averaging(AveragingRecord {
            name: self.name().to_owned(),
            action: decision.action,
            gate_value: decision.gate_value,
            updates: self.averager.state.updates,
        })];
        if !t.clock.evaluate_now {
            return Ok(parts);
        }
        let Some(model) = refreshed(&mut self.model, &mut self.fresh, &self.weights, &t.model)?
        else {
            return Ok(parts);
        };
        let test = split_record(&t.eval_split(model, epoch, EvalSplit::Test)?);
        // WAT's output rule scores the average by its own validation costs.
        let val_costs = match self.selection.selector.strategy.needs().val_costs {
            true => t.val_costs(model, epoch)?,
            false => None,
        };
        let score = EpochScore {
            avg_plus_worst: Some(test.score()),
            val_costs,
        };
        self.selection.offer(epoch, &score, model)?;
        parts.push(RecordPart::AverageTest(self.name(), test));
        Ok(parts)
    }

    /// Writes the average's report and its selection's; returns the selection's choice.
    fn finish(&mut self, t: &Trainer<'_>) -> Result<SelectedTrack> {
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

/// The run's tracks: the raw model's selection, scored on `checkpoint.best_split`, and the
/// weight averages (`[ema]`, then `[fawa]`) with theirs.
pub(crate) struct Tracks {
    pub raw: SelectionTrack,
    pub averages: Vec<AveragedTrack>,
}

impl Tracks {
    /// Offers the raw model of the epoch to its selection, scored on the best split's record.
    fn offer_raw(&mut self, end: &EpochView<'_, Trainer<'_>>) -> Result<()> {
        let t = end.backend;
        let split = match t.best_split {
            "val" => &end.record.val,
            _ => &end.record.test,
        };
        let score = EpochScore {
            avg_plus_worst: split.as_ref().map(|s| s.score()),
            val_costs: end.stats.val_costs.clone(),
        };
        self.raw.offer(end.epoch, &score, &t.model)
    }
}

impl Hook<Trainer<'_>> for Tracks {
    type State = TracksState;

    fn needs(&self, _epoch: usize) -> Needs {
        let raw = self.raw.selector.strategy.needs();
        (self.averages.iter()).fold(raw, |n, a| n.or(a.averager.needs()))
    }

    fn restore(&mut self, t: &Trainer<'_>, state: TracksState) -> Result<()> {
        self.raw.restore(&state);
        for avg in &mut self.averages {
            let updates = state.updates(avg.name());
            avg.averager.state.updates = updates;
            if let (true, Some(ck)) = (updates > 0, &t.resumed_checkpoint) {
                avg.weights = WeightAverage::load(&avg.file(ck), updates)?;
            }
            avg.selection.restore(&state);
        }
        Ok(())
    }

    fn after_epoch(&mut self, end: &EpochView<'_, Trainer<'_>>) -> Result<Vec<RecordPart>> {
        self.offer_raw(end)?;
        let mut parts = Vec::new();
        for avg in &mut self.averages {
            parts.extend(avg.after_epoch(end.backend, end.epoch, end.record)?);
        }
        Ok(parts)
    }

    /// Writes each average's weights into the checkpoint; both counters are always in the
    /// state (0 for an average the run does not keep).
    fn save(&self, t: &Trainer<'_>, epoch: usize) -> Result<TracksState> {
        let checkpoint = t.dir.checkpoint(&checkpoint_name(epoch));
        let mut state = TracksState::default();
        let tracks = std::iter::once(&self.raw).chain(self.averages.iter().map(|a| &a.selection));
        for track in tracks {
            (state.selection).insert(track.name.to_owned(), track.selector.clone());
        }
        for avg in &self.averages {
            if avg.weights.is_initialized() {
                avg.weights.save(&avg.file(&checkpoint))?;
            }
            match avg.name() {
                "ema" => state.ema_updates = avg.averager.state.updates,
                _ => state.fawa_updates = avg.averager.state.updates,
            }
        }
        Ok(state)
    }

    fn after_checkpoint(&mut self, _epoch: usize) -> Vec<Cleanup> {
        let averages = self.averages.iter_mut().flat_map(|a| a.selection.cleanup());
        let mut all: Vec<Cleanup> = self.raw.cleanup();
        all.extend(averages);
        all
    }

    /// Each track's choice, the raw model's first.
    fn finish(&mut self, t: &Trainer<'_>) -> Result<Vec<Finished>> {
        let mut chosen = vec![Finished::Selected(self.raw.finish(t)?)];
        for avg in &mut self.averages {
            chosen.push(Finished::Selected(avg.finish(t)?));
        }
        Ok(chosen)
    }
}
