//! The bookkeeping of one sweep task (`classwise sweep task DIR --index i`): an exclusive lock
//! per run, so that two executors (a local one and a Slurm array, or a requeued task and its
//! stale predecessor) never train the same run at once, and `tasks/<id>.json`, the attempts of
//! the run with where and how each ended, which `classwise sweep status` reads.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, TrainerError};

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptState {
    /// Still training (or killed without a chance to say so: see [`Attempt::pid`]).
    Running,
    /// The run completed.
    Done,
    /// Stopped by a signal after writing a checkpoint; to be resumed.
    Interrupted,
    /// Stopped by an error (in `error`).
    Failed,
}

/// Where an attempt ran under Slurm (from the job's environment).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmIds {
    pub job_id: Option<String>,
    pub array_job_id: Option<String>,
    pub array_task_id: Option<String>,
    /// `SLURM_RESTART_COUNT`: how many times Slurm requeued the job.
    pub restart_count: Option<u32>,
}

impl SlurmIds {
    /// From the environment; `None` outside a Slurm job.
    pub fn from_env() -> Option<SlurmIds> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let job_id = var("SLURM_JOB_ID")?;
        Some(SlurmIds {
            job_id: Some(job_id),
            array_job_id: var("SLURM_ARRAY_JOB_ID"),
            array_task_id: var("SLURM_ARRAY_TASK_ID"),
            restart_count: var("SLURM_RESTART_COUNT").and_then(|v| v.parse().ok()),
        })
    }
}

/// One attempt at a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    pub state: AttemptState,
    pub host: String,
    pub pid: u32,
    pub slurm: Option<SlurmIds>,
    pub started_unix_seconds: u64,
    pub ended_unix_seconds: Option<u64>,
    /// Where the run stood when the attempt began and ended: `epoch e` or `epoch e, batch b`.
    pub from: String,
    pub to: Option<String>,
    /// The error of a failed attempt, the signal of an interrupted one.
    pub message: Option<String>,
}

/// `tasks/<id>.json`: the attempts at one run, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub attempts: Vec<Attempt>,
}

impl TaskRecord {
    pub fn path(sweep: &Path, id: &str) -> PathBuf {
        sweep.join("tasks").join(format!("{id}.json"))
    }

    /// The record of run `id`; empty when the run was never attempted.
    pub fn load(sweep: &Path, id: &str) -> Result<TaskRecord> {
        let path = TaskRecord::path(sweep, id);
        if !path.exists() {
            return Ok(TaskRecord {
                id: id.to_owned(),
                attempts: Vec::new(),
            });
        }
        let text = std::fs::read_to_string(&path).at("reading", &path)?;
        serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
            path,
            offset: None,
            reason: format!("not a sweep task record: {e}"),
        })
    }

    /// Writes the record atomically.
    pub fn save(&self, sweep: &Path) -> Result<()> {
        crate::io::write_json(
            &TaskRecord::path(sweep, &self.id),
            "sweep task record",
            self,
        )
    }

    /// The last attempt.
    pub fn last(&self) -> Option<&Attempt> {
        self.attempts.last()
    }
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// This machine's host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// An exclusive lock on one run (`locks/<id>.lock`, `flock(2)`), released when dropped or when
/// the process dies, however it dies.
pub struct RunLock {
    _file: File,
}

impl RunLock {
    pub fn path(sweep: &Path, id: &str) -> PathBuf {
        sweep.join("locks").join(format!("{id}.lock"))
    }

    /// Takes the lock of run `id`; `Ok(None)` when another process holds it.
    pub fn try_acquire(sweep: &Path, id: &str) -> Result<Option<RunLock>> {
        let path = RunLock::path(sweep, id);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).at("creating", dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .at("opening", &path)?;
        // SAFETY: flock on a valid descriptor owned by `file`.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(Some(RunLock { _file: file }));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(TrainerError::Io {
                context: "locking",
                path,
                source: err,
            })
        }
    }

    /// Whether some process holds the lock of run `id` (takes and releases it when free).
    pub fn is_held(sweep: &Path, id: &str) -> Result<bool> {
        if !RunLock::path(sweep, id).exists() {
            return Ok(false);
        }
        Ok(RunLock::try_acquire(sweep, id)?.is_none())
    }
}

/// The exit status of a task whose run another process holds (`sweep run` reports it as busy).
pub const EXIT_BUSY: u8 = 16;

/// The exit status of a task whose run starts from runs that are not complete yet.
pub const EXIT_WAITING: u8 = 17;

/// What one task did.
#[derive(Debug)]
pub enum TaskOutcome {
    /// The run was complete before the task started: nothing trained.
    AlreadyDone,
    /// The run completed.
    Done,
    /// A signal stopped the run; its checkpoint is written.
    Interrupted(crate::run::MidEpoch),
    /// Another process holds the run's lock (its last attempt, if recorded).
    Busy(Option<Attempt>),
    /// The runs it starts from ([`super::Entry::after`]) are not complete: these ids.
    Waiting(Vec<String>),
}

/// How a task trains.
#[derive(Clone, Debug, Default)]
pub struct TaskOptions {
    pub data_dir: Option<PathBuf>,
    pub build: crate::run::BuildInfo,
    pub verbose: bool,
}

/// `classwise sweep task DIR --index i`: trains run `i` of the manifest, resuming it from its
/// checkpoint if it has one, unless it is complete or another process trains it; records the
/// attempt in `tasks/<id>.json`. Install [`crate::interrupt`]'s handlers first for signals to
/// checkpoint.
pub fn run_task(dir: &Path, index: usize, opts: TaskOptions) -> Result<TaskOutcome> {
    use crate::run::{RunProgress, TrainOptions};
    let manifest = super::Manifest::load(dir)?;
    let entry = manifest.entry(index)?;
    let config = entry.run_config()?;
    let run = super::SweepDir(dir.to_path_buf()).run_dir(&entry.id);
    if run.progress()? == RunProgress::Complete {
        return Ok(TaskOutcome::AlreadyDone);
    }
    let waiting = super::incomplete(dir, &entry.after)?;
    if !waiting.is_empty() {
        return Ok(TaskOutcome::Waiting(waiting));
    }
    let Some(_lock) = RunLock::try_acquire(dir, &entry.id)? else {
        let holder = TaskRecord::load(dir, &entry.id)?.last().cloned();
        return Ok(TaskOutcome::Busy(holder));
    };
    // Another process may have finished it between the check and the lock.
    let progress = run.progress()?;
    if progress == RunProgress::Complete {
        return Ok(TaskOutcome::AlreadyDone);
    }
    let mut record = TaskRecord::load(dir, &entry.id)?;
    record.attempts.push(Attempt {
        state: AttemptState::Running,
        host: host_name(),
        pid: std::process::id(),
        slurm: SlurmIds::from_env(),
        started_unix_seconds: now(),
        ended_unix_seconds: None,
        from: progress.describe(config.epochs),
        to: None,
        message: None,
    });
    record.save(dir)?;
    let result = crate::run::train(
        &config,
        &run.0,
        TrainOptions {
            resume: true,
            verbose: opts.verbose,
            data_dir: opts.data_dir,
            build: opts.build,
            ..Default::default()
        },
    );
    let attempt = record.attempts.last_mut().expect("pushed above");
    attempt.ended_unix_seconds = Some(now());
    attempt.to = run.progress().ok().map(|p| p.describe(config.epochs));
    match &result {
        Ok(summary) => match &summary.interrupted {
            Some(mid) => {
                attempt.state = AttemptState::Interrupted;
                attempt.message = Some(format!(
                    "stopped by {} before batch {} of epoch {}",
                    mid.signal.as_deref().unwrap_or("request"),
                    mid.progress.next_step,
                    mid.epoch + 1
                ));
            }
            None => attempt.state = AttemptState::Done,
        },
        Err(e) => {
            attempt.state = AttemptState::Failed;
            attempt.message = Some(e.to_string());
        }
    }
    record.save(dir)?;
    Ok(match result?.interrupted {
        Some(mid) => TaskOutcome::Interrupted(mid),
        None => TaskOutcome::Done,
    })
}
