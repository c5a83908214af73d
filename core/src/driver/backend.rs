//! What a training backend does for the [driver](super): train an epoch under a plan, measure
//! what the rule and the hooks need, and write its checkpoint.

use serde_json::Value;

use super::state::DriverState;
use crate::error::CoreError;
use crate::plan::{ClassPlan, ClassStats, Needs};
use crate::rule::ClassRule;

/// The epoch the driver asks a backend to train.
pub struct EpochStart<'a> {
    /// 0-based.
    pub epoch: usize,
    /// The rule's plan for the epoch ([`ClassRule::plan`]).
    pub plan: &'a ClassPlan,
    /// The rule's state as the epoch began, before its plan was drawn: what a backend that
    /// stops inside the epoch saves, so that a resume redraws the same plan.
    pub rule_at_start: &'a Value,
    /// When the run is asked to stop ([`Stop`]).
    pub stop: &'a Stop,
}

impl EpochStart<'_> {
    /// Whether the backend should stop before batch `step` of this epoch: a signal came
    /// ([`crate::interrupt`]), or the run's stop point is here. Every backend asks this, at the
    /// batches it can stop before (the toy at the epoch's start, the trainer at every batch).
    pub fn stop_before(&self, step: usize) -> bool {
        self.stop.requested(self.epoch, step)
    }
}

/// When a run stops early: on a signal (SIGTERM, SIGUSR1, SIGINT; [`crate::interrupt`]), and,
/// for tests of mid-epoch resume, before a given batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stop {
    /// Stop before batch `step` of 0-based epoch `epoch`, `(epoch, step)`, as a signal arriving
    /// there would.
    pub at: Option<(usize, usize)>,
}

impl Stop {
    /// Whether to stop before batch `step` of `epoch`.
    pub fn requested(&self, epoch: usize, step: usize) -> bool {
        crate::interrupt::requested() || self.at == Some((epoch, step))
    }
}

/// Where a backend's model is trained and measured: the multi-class toy's linear model
/// (`classwise-toy`) or a libtorch network (`classwise-trainer`). Each method is one step of
/// the driver's epoch, in this order: [`train_epoch`](Backend::train_epoch) →
/// [`measure`](Backend::measure) → (the rule observes) → [`record`](Backend::record) → (the
/// hooks' parts) [`add`](Backend::add) → [`complete`](Backend::complete) → (the hooks see the
/// record) → [`save`](Backend::save) → [`commit`](Backend::commit) →
/// [`clean`](Backend::clean); after the last epoch [`finish`](Backend::finish).
pub trait Backend {
    /// The backend's error; the driver's own errors (a rule's, a hook's) convert into it.
    type Error: From<CoreError>;
    /// What training an epoch reports (its loss, t_k, timings).
    type Trained;
    /// What measuring the trained model gives: the [`ClassStats`] the rule observes and
    /// whatever else the backend's record takes from the same evaluations (the trainer's
    /// validation record, the toy's test evaluation). Handed from [`Backend::measure`] to
    /// [`Backend::record`] by the driver, not kept in the backend.
    type Measured: Measurement;
    /// The epoch's record, which the hooks complete (the toy's history entry, the trainer's
    /// `metrics.jsonl` line).
    type Record;
    /// A part of the record a hook adds ([`Backend::add`]): an average's decision, its
    /// evaluation.
    type Part;
    /// What a hook hands over when the run completes ([`Backend::finish`]): a final report, a
    /// selected model.
    type Output;

    /// Trains one epoch under `start.plan`; `None` when it stopped before its end because
    /// [`EpochStart::stop_before`] said so: the backend has saved what a resume needs.
    fn train_epoch(&mut self, start: &EpochStart<'_>)
    -> Result<Option<Self::Trained>, Self::Error>;

    /// Measures the initial model for a rule that decides its first epoch from it (FRL).
    fn measure_initial(&mut self, needs: Needs) -> Result<ClassStats, Self::Error>;

    /// Measures the trained model: t_k from `trained`, and on validation what `needs` asks for
    /// (a backend may measure more, e.g. on its evaluation schedule).
    fn measure(
        &mut self,
        epoch: usize,
        trained: &Self::Trained,
        needs: Needs,
    ) -> Result<Self::Measured, Self::Error>;

    /// The epoch's record from its training and measurements, once the rule observed them;
    /// the hooks then add their parts.
    fn record(
        &mut self,
        epoch: usize,
        plan: ClassPlan,
        trained: Self::Trained,
        measured: &Self::Measured,
        rule: &dyn ClassRule,
    ) -> Result<Self::Record, Self::Error>;

    /// Adds a hook's `part` to the epoch's record.
    fn add(&mut self, record: &mut Self::Record, part: Self::Part) -> Result<(), Self::Error>;

    /// Completes the record once every hook added its parts (its timings), before the hooks
    /// see it ([`Hook::on_record`](super::Hook::on_record)).
    fn complete(&mut self, _record: &mut Self::Record) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Takes the hooks' outputs once every hook finished a completed run: the backend's last
    /// step (the trainer writes `selection.json` here, the mark of a complete run).
    fn finish(&mut self, outputs: Vec<Self::Output>) -> Result<(), Self::Error>;

    /// Writes the model's and the optimiser's files of the epoch's checkpoint (before the hooks
    /// write theirs). Backends without checkpoints do nothing.
    fn save(&mut self, _epoch: usize) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Writes the run state naming the epoch's checkpoint, atomically: from here on a resume
    /// starts after this epoch.
    fn commit(&mut self, _state: &DriverState) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Carries out a hook's clean-up, once the state naming a newer checkpoint is committed.
    fn clean(&mut self, _action: Cleanup) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// What a backend measured after an epoch, as far as the driver needs it: the statistics the
/// rule observes and the hooks see.
pub trait Measurement {
    fn stats(&self) -> &ClassStats;
}

/// A file a hook no longer needs, deleted by the backend once [`Backend::commit`] wrote a state
/// that does not name it (as burn's `CheckpointingStrategy` returns actions instead of deleting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// The checkpoint of a 0-based epoch.
    Checkpoint(usize),
    /// A file (a dropped selection candidate).
    File(std::path::PathBuf),
}
