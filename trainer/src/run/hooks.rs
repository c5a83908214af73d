//! The trainer's hooks of the shared driver ([`classwise_core::driver::Hook`]) besides the
//! selection and averaging tracks ([`super::tracks`]): the final report, the metrics line,
//! checkpoint pruning and `selection.json`. Their order in a run: [`FinalReport`], the raw
//! model's selection, the averages (which fill in their part of the record), [`MetricsSink`]
//! (which writes the record), [`CheckpointPruner`], [`WriteSelection`] (`selection.json`, written last: a run with
//! `selection.json` is complete).

use classwise_core::driver::{Cleanup, EpochEnd, Hook};
use classwise_core::record::EpochRecord;

use super::backend::Trainer;
use super::log;
use super::report::write_report;
use crate::error::Result;
use crate::io::write_json;
use classwise_core::record::{SELECTION_SCHEMA, SelectionRecord};

/// Evaluates the last raw model for `report.json` and `report.md`, before the selected models.
pub(crate) struct FinalReport;

impl Hook<Trainer<'_>> for FinalReport {
    fn finish(&mut self, t: &mut Trainer<'_>) -> Result<()> {
        let report = t.final_eval(&t.model)?;
        write_report(&t.dir, "report", &report)?;
        t.report = Some(report);
        Ok(())
    }
}

/// Appends the epoch's record to `metrics.jsonl` (flushed and synced) and prints the epoch's
/// summary line. Runs after the hooks that fill the record.
pub(crate) struct MetricsSink;

impl Hook<Trainer<'_>> for MetricsSink {
    fn after_epoch(
        &mut self,
        t: &mut Trainer<'_>,
        end: &mut EpochEnd<'_, EpochRecord>,
    ) -> Result<()> {
        end.record.eval_seconds = Some(t.clock.eval_started.elapsed().as_secs_f64());
        end.record.seconds = t.clock.started.elapsed().as_secs_f64();
        log::append_metrics(&t.dir.metrics(), end.record)?;
        if t.opts.verbose {
            log::print_epoch(t.config.epochs, end.record);
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

/// Writes `selection.json` from the tracks' choices, the last file of a completed run.
pub(crate) struct WriteSelection;

impl Hook<Trainer<'_>> for WriteSelection {
    fn finish(&mut self, t: &mut Trainer<'_>) -> Result<()> {
        let file = SelectionRecord {
            schema: SELECTION_SCHEMA,
            strategy: t.config.select,
            split: t.best_split.to_owned(),
            tracks: std::mem::take(&mut t.selected),
        };
        write_json(&t.dir.selection(), "selection", &file)
    }
}
