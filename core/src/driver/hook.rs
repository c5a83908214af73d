//! What happens around every epoch besides the rule, the training and the measurements: model
//! selection, weight averages, the metrics log, checkpoint pruning (argmin's observers, burn's
//! event processors). Each hook owns its state, which the driver stores opaquely in the run
//! state.

use serde_json::{Map, Value};

use super::backend::{Backend, Cleanup};
use crate::plan::{ClassStats, Needs};

/// An epoch as the hooks see it, after the rule observed it.
pub struct EpochEnd<'a, R> {
    /// 0-based.
    pub epoch: usize,
    /// What was measured after training (and what the rule observed).
    pub stats: &'a ClassStats,
    /// The epoch's record; each hook may add its part.
    pub record: &'a mut R,
}

/// Something the driver does around every epoch. Every method defaults to doing nothing. The
/// driver calls the hooks in their order at each point.
pub trait Hook<B: Backend> {
    /// What the hook needs measured on validation after `epoch` (added to the rule's needs).
    fn needs(&self, _epoch: usize) -> Needs {
        Needs::default()
    }

    /// Reads the hook's state back from a resumed run's state (`fields`: every hook's fields),
    /// and its files from the backend's checkpoint.
    fn restore(&mut self, _backend: &mut B, _fields: &Map<String, Value>) -> Result<(), B::Error> {
        Ok(())
    }

    /// After the epoch's training and measurements, once the rule observed them.
    fn after_epoch(
        &mut self,
        _backend: &mut B,
        _end: &mut EpochEnd<'_, B::Record>,
    ) -> Result<(), B::Error> {
        Ok(())
    }

    /// Writes the hook's files into the epoch's checkpoint and returns its fields of the run
    /// state (merged with the other hooks' fields, objects key by key).
    fn save(&self, _backend: &mut B, _epoch: usize) -> Result<Map<String, Value>, B::Error> {
        Ok(Map::new())
    }

    /// Once the state naming the checkpoint of `epoch` is committed: what may be deleted.
    fn after_checkpoint(&mut self, _epoch: usize) -> Vec<Cleanup> {
        Vec::new()
    }

    /// Once, after the last epoch of a completed run.
    fn finish(&mut self, _backend: &mut B) -> Result<(), B::Error> {
        Ok(())
    }
}
