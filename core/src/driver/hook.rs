//! What happens around every epoch besides the rule, the training and the measurements: model
//! selection, weight averages, the metrics log, checkpoint pruning (argmin's observers, burn's
//! event processors). A hook sees the backend and the epoch read-only and returns what it
//! produces: parts of the epoch's record, files to clean up, outputs when the run completes.
//! Its own state is a typed value ([`Hook::State`]), checked when a resumed run reads it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::backend::{Backend, Cleanup};
use crate::error::CoreError;
use crate::plan::{ClassStats, Needs};

/// An epoch as the hooks see it, after the rule observed it: read-only. (The plan it trained
/// under is in its record.)
pub struct EpochView<'a, B: Backend> {
    /// 0-based.
    pub epoch: usize,
    /// What was measured after training (and what the rule observed).
    pub stats: &'a ClassStats,
    /// The epoch's record as the backend built it, before the hooks' parts.
    pub record: &'a B::Record,
    /// The backend: its model, its clock, its evaluations.
    pub backend: &'a B,
}

/// A hook with no state of its own: it writes nothing into the run state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NoState {}

/// Something the driver does around every epoch. The driver calls every hook at one point of the
/// epoch before any hook at the next, so a hook never depends on another's place in the list:
/// the types order them. A hook adds parts to the record in [`Hook::after_epoch`] (it gets the
/// record as the backend built it), and sees the completed record, every hook's parts in it, in
/// [`Hook::on_record`].
pub trait Hook<B: Backend> {
    /// The hook's part of the run state: a serde type whose fields are written beside the
    /// other hooks' (no two hooks may name the same field) and read back, checked, on resume.
    /// A hook without state says [`NoState`] and keeps the defaults of [`Hook::restore`] and
    /// [`Hook::save`]; a hook with state implements both.
    type State: Serialize + DeserializeOwned + Default;

    /// What the hook needs measured on validation after `epoch` (added to the rule's needs).
    fn needs(&self, _epoch: usize) -> Needs {
        Needs::default()
    }

    /// Takes the hook's state back from a resumed run, and its files from the backend's
    /// checkpoint.
    fn restore(&mut self, _backend: &B, _state: Self::State) -> Result<(), B::Error> {
        Ok(())
    }

    /// After the epoch's training and measurements, once the rule observed them: the parts the
    /// hook adds to the epoch's record ([`Backend::add`]).
    fn after_epoch(&mut self, _epoch: &EpochView<'_, B>) -> Result<Vec<B::Part>, B::Error> {
        Ok(Vec::new())
    }

    /// The epoch's completed record (every hook's parts added, [`Backend::complete`] called).
    fn on_record(&mut self, _backend: &B, _record: &B::Record) -> Result<(), B::Error> {
        Ok(())
    }

    /// Writes the hook's files into the epoch's checkpoint and returns its state.
    fn save(&self, _backend: &B, _epoch: usize) -> Result<Self::State, B::Error> {
        Ok(Self::State::default())
    }

    /// Once the state naming the checkpoint of `epoch` is committed: what may be deleted.
    fn after_checkpoint(&mut self, _epoch: usize) -> Vec<Cleanup> {
        Vec::new()
    }

    /// Once, after the last epoch of a completed run: what the hook hands over
    /// ([`Backend::finish`]).
    fn finish(&mut self, _backend: &B) -> Result<Vec<B::Output>, B::Error> {
        Ok(Vec::new())
    }
}

/// A [`Hook`] with its state as JSON fields, so that hooks of different state types live in one
/// list ([`super::Driver::hooks`]); every `Hook` is one ([`boxed`]).
pub trait DynHook<B: Backend> {
    fn needs(&self, epoch: usize) -> Needs;
    /// Reads the hook's typed state from `fields` (the committed state's hook fields; the
    /// others' are ignored), naming the field that does not fit.
    fn restore(&mut self, backend: &B, fields: &Map<String, Value>) -> Result<(), B::Error>;
    fn after_epoch(&mut self, epoch: &EpochView<'_, B>) -> Result<Vec<B::Part>, B::Error>;
    fn on_record(&mut self, backend: &B, record: &B::Record) -> Result<(), B::Error>;
    /// The typed state written as JSON fields.
    fn save(&self, backend: &B, epoch: usize) -> Result<Map<String, Value>, B::Error>;
    fn after_checkpoint(&mut self, epoch: usize) -> Vec<Cleanup>;
    fn finish(&mut self, backend: &B) -> Result<Vec<B::Output>, B::Error>;
}

/// A hook for the driver's list.
pub fn boxed<'h, B: Backend, H: Hook<B> + 'h>(hook: H) -> Box<dyn DynHook<B> + 'h> {
    Box::new(hook)
}

/// A state that does not serialise to JSON, or fields that do not read as a hook's state.
fn state_error(message: String) -> CoreError {
    CoreError::File {
        what: "the run state".to_owned(),
        kind: "a hook's state",
        message,
    }
}

impl<B: Backend, H: Hook<B>> DynHook<B> for H {
    fn needs(&self, epoch: usize) -> Needs {
        Hook::needs(self, epoch)
    }
    fn restore(&mut self, backend: &B, fields: &Map<String, Value>) -> Result<(), B::Error> {
        let state = serde_json::from_value(Value::Object(fields.clone()))
            .map_err(|e| state_error(e.to_string()))?;
        Hook::restore(self, backend, state)
    }
    fn after_epoch(&mut self, epoch: &EpochView<'_, B>) -> Result<Vec<B::Part>, B::Error> {
        Hook::after_epoch(self, epoch)
    }
    fn on_record(&mut self, backend: &B, record: &B::Record) -> Result<(), B::Error> {
        Hook::on_record(self, backend, record)
    }
    fn save(&self, backend: &B, epoch: usize) -> Result<Map<String, Value>, B::Error> {
        match serde_json::to_value(Hook::save(self, backend, epoch)?) {
            Ok(Value::Object(fields)) => Ok(fields),
            Ok(other) => Err(state_error(format!("{other} is not a JSON object")).into()),
            Err(e) => Err(state_error(e.to_string()).into()),
        }
    }
    fn after_checkpoint(&mut self, epoch: usize) -> Vec<Cleanup> {
        Hook::after_checkpoint(self, epoch)
    }
    fn finish(&mut self, backend: &B) -> Result<Vec<B::Output>, B::Error> {
        Hook::finish(self, backend)
    }
}
