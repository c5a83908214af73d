//! What `classwise sweep run`, `sweep task` and `sweep slurm` say when they end, and the exit
//! status each ending gives (the scripts and Slurm read the statuses).

use std::fmt;
use std::path::Path;

use super::local::LocalReport;
use super::slurm::StageScript;
use super::task::{EXIT_BUSY, EXIT_WAITING, TaskOutcome};
use crate::interrupt::EXIT_INTERRUPTED;

impl TaskOutcome {
    /// 0 when the run is complete; [`EXIT_INTERRUPTED`], [`EXIT_BUSY`] or [`EXIT_WAITING`]
    /// otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            TaskOutcome::AlreadyDone | TaskOutcome::Done => 0,
            TaskOutcome::Interrupted(_) => EXIT_INTERRUPTED,
            TaskOutcome::Busy(_) => EXIT_BUSY,
            TaskOutcome::Waiting(_) => EXIT_WAITING,
        }
    }

    /// What the task of run `index` of the sweep in `dir` says when it ends (nothing when it
    /// trained the run to the end).
    pub fn describe(&self, dir: &Path, index: usize) -> Option<String> {
        let dir = dir.display();
        Some(match self {
            TaskOutcome::Done => return None,
            TaskOutcome::AlreadyDone => format!("run {index} of {dir} is already complete"),
            TaskOutcome::Interrupted(mid) => format!(
                "interrupted{} before batch {} of epoch {}: checkpointed; the next task for \
                 index {index} resumes it",
                (mid.signal.as_ref())
                    .map(|s| format!(" by {s}"))
                    .unwrap_or_default(),
                mid.progress.next_step,
                mid.epoch + 1
            ),
            TaskOutcome::Waiting(ids) => format!(
                "run {index} of {dir} starts from runs that are not complete: {}",
                ids.join(", ")
            ),
            TaskOutcome::Busy(holder) => format!(
                "run {index} of {dir} is being trained by another process{}",
                (holder.as_ref())
                    .map(|a| format!(" (on {}, pid {})", a.host, a.pid))
                    .unwrap_or_default()
            ),
        })
    }
}

impl LocalReport {
    /// 1 when a run failed, [`EXIT_INTERRUPTED`] when runs remain (interrupted or not started),
    /// else 0.
    pub fn exit_code(&self) -> u8 {
        if !self.failed.is_empty() {
            1
        } else if !self.interrupted.is_empty() || !self.not_started.is_empty() {
            EXIT_INTERRUPTED
        } else {
            0
        }
    }
}

impl fmt::Display for LocalReport {
    /// The count of each ending, then each failed run with its log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} trained, {} already done, {} interrupted, {} failed, {} busy, {} not started",
            self.done.len(),
            self.skipped.len(),
            self.interrupted.len(),
            self.failed.len(),
            self.busy.len(),
            self.not_started.len()
        )?;
        for (id, how, log) in &self.failed {
            write!(f, "\nfailed: {id} ({how}); its log: {}", log.display())?;
        }
        Ok(())
    }
}

impl StageScript {
    /// The script written, its array tasks and how its stage follows the previous one
    /// (`submitted`: by a Slurm dependency already given).
    pub fn describe(&self, submitted: bool) -> String {
        let after = match self.stage {
            0 => "",
            _ if submitted => ", after the previous stage",
            _ => ", to submit after the previous stage: sbatch --dependency=afterany:JOB",
        };
        let (path, tasks) = (self.path.display(), self.tasks);
        format!("wrote {path} ({tasks} array tasks{after})")
    }
}
