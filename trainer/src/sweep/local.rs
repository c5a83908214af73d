//! `classwise sweep run DIR --workers N`: the local executor. It starts one process per run
//! (`classwise sweep task DIR --index i`, output appended to `logs/<id>.log`), at most N at
//! once, each with its share of the machine's threads; skips complete runs, resumes
//! interrupted ones, goes on when one fails and says which. On SIGTERM or Ctrl-C it stops
//! starting runs and asks the running ones to checkpoint.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::task::{EXIT_BUSY, EXIT_WAITING};
use super::{Manifest, SweepDir};
use crate::error::{IoContext, Result};
use crate::interrupt::EXIT_INTERRUPTED;

/// How the executor runs.
#[derive(Clone, Debug)]
pub struct LocalOptions {
    pub workers: usize,
    /// libtorch threads per worker.
    pub threads: usize,
    /// The classwise binary.
    pub program: PathBuf,
    pub data_dir: Option<PathBuf>,
}

/// What the executor did, by run id.
#[derive(Clone, Debug, Default)]
pub struct LocalReport {
    /// Complete before the executor started.
    pub skipped: Vec<String>,
    pub done: Vec<String>,
    /// Checkpointed after a signal; a rerun resumes them.
    pub interrupted: Vec<String>,
    /// Failed: the id, how the process ended and its log.
    pub failed: Vec<(String, String, PathBuf)>,
    /// Trained by another process at the time.
    pub busy: Vec<String>,
    /// Not started: the executor was stopped, or the runs they start from did not complete.
    pub not_started: Vec<String>,
}

struct Worker {
    child: Child,
    id: String,
    log: PathBuf,
}

/// Runs every unfinished run of the sweep in `dir`.
pub fn run_local(dir: &Path, opts: &LocalOptions) -> Result<LocalReport> {
    let manifest = Manifest::load(dir)?;
    let sweep = SweepDir(dir.to_path_buf());
    let mut report = LocalReport::default();
    let mut queue = std::collections::VecDeque::new();
    for (index, entry) in manifest.runs.iter().enumerate() {
        if sweep.is_complete(&entry.id)? {
            report.skipped.push(entry.id.clone());
        } else {
            queue.push_back((index, entry.id.clone(), entry.after.clone()));
        }
    }
    let mut running: Vec<Worker> = Vec::new();
    let mut stopping = false;
    loop {
        if crate::interrupt::requested() && !stopping {
            stopping = true;
            eprintln!(
                "stopping: asking {} running task(s) to checkpoint",
                running.len()
            );
            for w in &running {
                // SAFETY: signalling a child we spawned and have not reaped.
                unsafe { libc::kill(w.child.id() as libc::pid_t, libc::SIGTERM) };
            }
        }
        // The first queued run whose runs it starts from are complete.
        while !stopping && running.len() < opts.workers.max(1) {
            let mut ready = None;
            for (pos, (_, _, after)) in queue.iter().enumerate() {
                if super::incomplete(dir, after)?.is_empty() {
                    ready = Some(pos);
                    break;
                }
            }
            let Some((index, id, _)) = ready.and_then(|pos| queue.remove(pos)) else {
                break;
            };
            running.push(spawn(dir, &sweep, index, &id, opts)?);
        }
        // Nothing running and nothing startable: what is left waits for runs that did not
        // complete.
        if running.is_empty() {
            break;
        }
        let mut i = 0;
        while i < running.len() {
            let status = running[i]
                .child
                .try_wait()
                .at("waiting for", &running[i].log)?;
            let Some(status) = status else {
                i += 1;
                continue;
            };
            let w = running.swap_remove(i);
            let code = status.code();
            match code {
                Some(0) => {
                    eprintln!("done        {}", w.id);
                    report.done.push(w.id);
                }
                Some(c) if c == i32::from(EXIT_INTERRUPTED) => {
                    eprintln!("interrupted {} (checkpointed; a rerun resumes it)", w.id);
                    report.interrupted.push(w.id);
                }
                Some(c) if c == i32::from(EXIT_WAITING) => {
                    eprintln!(
                        "waiting     {} (the runs it starts from are not complete)",
                        w.id
                    );
                    report.not_started.push(w.id);
                }
                Some(c) if c == i32::from(EXIT_BUSY) => {
                    eprintln!("busy        {} (another process trains it)", w.id);
                    report.busy.push(w.id);
                }
                _ => {
                    let how = match code {
                        Some(c) => format!("exit status {c}"),
                        None => {
                            use std::os::unix::process::ExitStatusExt;
                            format!("killed by signal {}", status.signal().unwrap_or(0))
                        }
                    };
                    eprintln!("FAILED      {} ({how}; see {})", w.id, w.log.display());
                    report.failed.push((w.id, how, w.log));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    report
        .not_started
        .extend(queue.into_iter().map(|(_, id, _)| id));
    Ok(report)
}

fn spawn(
    dir: &Path,
    sweep: &SweepDir,
    index: usize,
    id: &str,
    opts: &LocalOptions,
) -> Result<Worker> {
    let log = sweep.log(id);
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent).at("creating", parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .at("opening", &log)?;
    let err = file.try_clone().at("opening", &log)?;
    let mut cmd = Command::new(&opts.program);
    cmd.arg("sweep")
        .arg("task")
        .arg(dir)
        .args(["--index", &index.to_string()])
        .args(["--threads", &opts.threads.max(1).to_string()])
        .env("OMP_NUM_THREADS", opts.threads.max(1).to_string())
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err);
    if let Some(d) = &opts.data_dir {
        cmd.env("CLASSWISE_DATA_DIR", d);
    }
    let child = cmd.spawn().at("starting", &opts.program)?;
    eprintln!(
        "started     {id} (index {index}, pid {}, log {})",
        child.id(),
        log.display()
    );
    Ok(Worker {
        child,
        id: id.to_owned(),
        log,
    })
}
