//! The trainer's hooks of the shared driver ([`classwise_core::driver::Hook`]) besides the
//! selection and averaging tracks ([`super::tracks`]): the final report, the metrics line and
//! checkpoint pruning. None has state of its own. The driver's phases order them: the tracks
//! add their parts to the record before [`MetricsSink`] sees it, and the backend writes
//! `selection.json` from the tracks' choices after every hook finished (the last file of a
//! complete run).

use classwise_core::driver::{Cleanup, Hook, NoState};
use classwise_core::record::EpochRecord;

use super::backend::{Finished, Trainer};
use super::log;
use super::report::write_report;
use crate::error::Result;

/// Evaluates the last raw model for `report.json` and `report.md`, before the selected models.
pub(crate) struct FinalReport;

impl Hook<Trainer<'_>> for FinalReport {
    type State = NoState;

    fn finish(&mut self, t: &Trainer<'_>) -> Result<Vec<Finished>> {
        let report = t.final_eval(&t.model)?;
        write_report(&t.dir, "report", &report)?;
        Ok(vec![Finished::Report(Box::new(report))])
    }
}

/// Appends the epoch's completed record to `metrics.jsonl` (flushed and synced) and prints the
/// epoch's summary line.
pub(crate) struct MetricsSink;

impl Hook<Trainer<'_>> for MetricsSink {
    type State = NoState;

    fn on_record(&mut self, t: &Trainer<'_>, record: &EpochRecord) -> Result<()> {
        log::append_metrics(&t.dir.metrics(), record)?;
        if t.opts.verbose {
            log::print_epoch(t.config.epochs, record);
        }
        Ok(())
    }
}

/// Drops the previous epoch's checkpoint once the new one is committed, unless
/// `checkpoint.every` keeps it.
pub(crate) struct CheckpointPruner {
    /// Keep every `every`-th epoch's directory (0: keep none but the last).
    pub every: usize,
}

impl Hook<Trainer<'_>> for CheckpointPruner {
    type State = NoState;

    fn after_checkpoint(&mut self, epoch: usize) -> Vec<Cleanup> {
        let Some(prev) = epoch.checked_sub(1) else {
            return Vec::new();
        };
        let keep = self.every > 0 && (prev + 1) % self.every == 0;
        if keep {
            Vec::new()
        } else {
            vec![Cleanup::Checkpoint(prev)]
        }
    }
}
