//! Sweeps: seeds × presets or variants × a grid of overrides, planned once into a manifest and
//! run locally or as a Slurm job array, each run resumable and each task idempotent.
//!
//! A sweep directory holds
//! * `manifest.json`: the resolved runs ([`plan`]); array task `i` trains run `i`;
//! * `runs/<id>/`: the run directories, as `classwise train` writes them;
//! * `tasks/<id>.json`: the attempts at each run ([`task`]); `locks/<id>.lock`: held while a
//!   process trains the run;
//! * `logs/<id>.log`: the output of the local executor's workers; `slurm/`: the sbatch script
//!   and the array tasks' output ([`slurm`]);
//! * `collect.{json,csv,md}`: the runs aggregated over seeds ([`collect`]).
//!
//! There is no scheduler here: a task is a pure function of (manifest, index) and all state is
//! on the file system, so a local executor, a Slurm array or any engine that runs
//! `classwise sweep task DIR --index i` can drive a sweep.

pub mod collect;
pub mod local;
pub mod plan;
pub mod slurm;
pub mod status;
pub mod task;
mod text;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::run::{RunDir, RunProgress};

pub use plan::{Entry, Manifest, PlanSummary, SweepSpec, plan};

/// The files of a sweep directory.
#[derive(Clone, Debug)]
pub struct SweepDir(pub PathBuf);

impl SweepDir {
    /// The run directory of run `id`.
    pub fn run(&self, id: &str) -> PathBuf {
        self.0.join("runs").join(id)
    }
    /// The run directory of run `id`, as a [`RunDir`].
    pub fn run_dir(&self, id: &str) -> RunDir {
        RunDir(self.run(id))
    }
    /// Whether run `id` is complete.
    pub fn is_complete(&self, id: &str) -> Result<bool> {
        Ok(self.run_dir(id).progress()? == RunProgress::Complete)
    }
    /// The local executor's log of run `id`.
    pub fn log(&self, id: &str) -> PathBuf {
        self.0.join("logs").join(format!("{id}.log"))
    }
}

/// The runs among `ids` of the sweep in `dir` that are not complete.
pub fn incomplete(dir: &Path, ids: &[String]) -> Result<Vec<String>> {
    let sweep = SweepDir(dir.to_path_buf());
    let mut out = Vec::new();
    for id in ids {
        if !sweep.is_complete(id)? {
            out.push(id.clone());
        }
    }
    Ok(out)
}
