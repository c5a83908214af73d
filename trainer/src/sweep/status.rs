//! `classwise sweep status DIR`: every run of the manifest as done, running, failed,
//! interrupted (checkpointed, to be resumed), killed (its last attempt died without a word) or
//! pending, with how far it got, from the files alone.

use std::path::Path;

use serde::Serialize;

use super::SweepDir;
use super::plan::Manifest;
use super::task::{AttemptState, RunLock, TaskRecord};
use crate::error::Result;
use crate::run::RunProgress;

/// The state of one run of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunState {
    Done,
    Running,
    Failed,
    Interrupted,
    Killed,
    Pending,
}

impl RunState {
    pub const ALL: [RunState; 6] = [
        RunState::Done,
        RunState::Running,
        RunState::Failed,
        RunState::Interrupted,
        RunState::Killed,
        RunState::Pending,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RunState::Done => "done",
            RunState::Running => "running",
            RunState::Failed => "failed",
            RunState::Interrupted => "interrupted",
            RunState::Killed => "killed",
            RunState::Pending => "pending",
        }
    }
}

/// One line of the status.
#[derive(Clone, Debug, Serialize)]
pub struct RunStatus {
    pub index: usize,
    pub id: String,
    pub group: String,
    pub seed: u64,
    pub state: RunState,
    /// How far training got: `-`, `3/10 epochs`, `3/10 epochs + 17 batches`, `complete`.
    pub progress: String,
    pub attempts: usize,
    /// The last attempt's error (failed), signal (interrupted) or host and pid (running).
    pub detail: Option<String>,
}

/// The status of every run of the sweep in `dir`.
pub fn status(dir: &Path) -> Result<(Manifest, Vec<RunStatus>)> {
    let manifest = Manifest::load(dir)?;
    let sweep = SweepDir(dir.to_path_buf());
    let mut rows = Vec::new();
    for (index, entry) in manifest.runs.iter().enumerate() {
        let epochs = entry.run_config()?.epochs;
        let run = sweep.run_dir(&entry.id);
        let progress = run.progress()?;
        let record = TaskRecord::load(dir, &entry.id)?;
        let held = RunLock::is_held(dir, &entry.id)?;
        let last = record.last();
        let state = match (progress, held, last.map(|a| a.state)) {
            (RunProgress::Complete, _, _) => RunState::Done,
            (_, true, _) => RunState::Running,
            (_, false, Some(AttemptState::Failed)) => RunState::Failed,
            (_, false, Some(AttemptState::Interrupted)) => RunState::Interrupted,
            (_, false, Some(AttemptState::Running)) => RunState::Killed,
            _ => RunState::Pending,
        };
        let detail = match state {
            RunState::Running => last.map(|a| format!("on {} (pid {})", a.host, a.pid)),
            RunState::Failed | RunState::Interrupted => last.and_then(|a| a.message.clone()),
            RunState::Killed => last.map(|a| {
                format!(
                    "its process on {} (pid {}) ended without a record: killed?",
                    a.host, a.pid
                )
            }),
            RunState::Pending if !entry.after.is_empty() => {
                let waiting = super::incomplete(dir, &entry.after)?;
                (!waiting.is_empty()).then(|| format!("after {}", waiting.join(", ")))
            }
            _ => None,
        };
        rows.push(RunStatus {
            index,
            id: entry.id.clone(),
            group: entry.group.clone(),
            seed: entry.seed,
            state,
            progress: progress.describe(epochs),
            attempts: record.attempts.len(),
            detail,
        });
    }
    Ok((manifest, rows))
}

/// `4 runs: 2 done, 1 running, 1 pending` (states with no run left out).
/// The indices of the runs not complete (of every run with `all`), in manifest order.
pub fn pending(rows: &[RunStatus], all: bool) -> Vec<usize> {
    (rows.iter())
        .filter(|r| all || r.state != RunState::Done)
        .map(|r| r.index)
        .collect()
}

pub fn summary_line(rows: &[RunStatus]) -> String {
    let parts: Vec<String> = RunState::ALL
        .iter()
        .filter_map(|&s| {
            let n = rows.iter().filter(|r| r.state == s).count();
            (n > 0).then(|| format!("{n} {}", s.name()))
        })
        .collect();
    format!("{} runs: {}", rows.len(), parts.join(", "))
}

/// The status as a markdown table.
pub fn markdown(rows: &[RunStatus]) -> String {
    let mut out = String::from(
        "| index | run | group | seed | state | progress | attempts | detail |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.index,
            r.id,
            r.group,
            r.seed,
            r.state.name(),
            r.progress,
            r.attempts,
            r.detail.as_deref().unwrap_or("")
        ));
    }
    out
}
