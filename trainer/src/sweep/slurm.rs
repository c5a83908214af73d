//! `classwise sweep slurm DIR`: the sbatch script of a job array whose task `i` runs
//! `classwise sweep task DIR --index i`.
//!
//! Preemption and time limits: Slurm sends SIGTERM to the job's processes (and, with
//! `--signal=B:USR1@T`, USR1 to the batch shell T seconds before the time limit). The script
//! runs the task in the background and forwards either signal to it as SIGTERM; the task writes
//! a checkpoint at the next batch boundary and exits with status 75; the script then asks Slurm
//! to requeue the array task (`scontrol requeue`, which `--requeue` allows), and the requeued
//! task resumes from the checkpoint. A job being cancelled or at its time limit (Slurm shows it
//! COMPLETING when the signal comes) is not requeued: its checkpoint waits for the next
//! submission. Any other status ends the array task with that status.

use std::path::{Path, PathBuf};

use crate::error::{Result, TrainerError};
use crate::interrupt::EXIT_INTERRUPTED;

/// What the sbatch script asks of Slurm.
#[derive(Clone, Debug, Default)]
pub struct SlurmOptions {
    pub partition: Option<String>,
    /// Time limit per array task (`--time`, e.g. `04:00:00`).
    pub time: Option<String>,
    pub cpus_per_task: u32,
    /// GPUs per array task (`--gres=gpu:G`); 0 for none.
    pub gpus: u32,
    /// Memory per array task (`--mem`, e.g. `8G`).
    pub mem: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// At most this many array tasks at once (`--array=...%K`).
    pub max_parallel: Option<usize>,
    /// Seconds before the time limit at which the batch shell gets USR1 (checkpoint and
    /// requeue before being killed).
    pub signal_before: u32,
    /// Further sbatch options, written as given (`--constraint=a100`).
    pub extra: Vec<String>,
    /// The classwise binary the tasks run.
    pub program: PathBuf,
    /// `CLASSWISE_DATA_DIR` for the tasks, when set.
    pub data_dir: Option<PathBuf>,
}

/// The stage of each run of `manifest`: 0 for a run that starts from no other, else one more
/// than the stage of the runs it starts from ([`super::Entry::after`]). `classwise sweep slurm`
/// writes one array per stage, each submitted after the one before it
/// (`--dependency=afterany`); a task whose runs are not complete still refuses to start.
pub fn stages(manifest: &super::Manifest) -> Vec<usize> {
    let index: std::collections::BTreeMap<&str, usize> = manifest
        .runs
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let mut stage: Vec<Option<usize>> = vec![None; manifest.runs.len()];
    // Planning refuses cycles, so every pass settles at least one run.
    for _ in 0..=manifest.runs.len() {
        for (i, e) in manifest.runs.iter().enumerate() {
            if stage[i].is_some() {
                continue;
            }
            let deps: Option<Vec<usize>> = e
                .after
                .iter()
                .map(|id| index.get(id.as_str()).map_or(Some(0), |&j| stage[j]))
                .collect();
            if let Some(deps) = deps {
                stage[i] = Some(deps.iter().map(|d| d + 1).max().unwrap_or(0));
            }
        }
    }
    stage.into_iter().map(|s| s.unwrap_or(0)).collect()
}

/// `0-3,5,7-9`: the array indices as ranges.
pub fn array_ranges(indices: &[usize]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Single-quoted for bash.
fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The sbatch script for the array tasks `indices` of the sweep `name` in `dir` (an absolute
/// path: the tasks may start elsewhere).
pub fn script(dir: &Path, name: &str, indices: &[usize], o: &SlurmOptions) -> String {
    let mut array = array_ranges(indices);
    if let Some(k) = o.max_parallel {
        array.push_str(&format!("%{k}"));
    }
    let mut sbatch = vec![
        format!("--job-name=classwise-{name}"),
        format!("--array={array}"),
        format!("--cpus-per-task={}", o.cpus_per_task.max(1)),
        format!("--output={}/slurm/%A_%a.out", dir.display()),
        "--open-mode=append".to_owned(),
        "--requeue".to_owned(),
        format!("--signal=B:USR1@{}", o.signal_before),
    ];
    let optional = [
        ("partition", o.partition.clone()),
        ("time", o.time.clone()),
        ("mem", o.mem.clone()),
        ("account", o.account.clone()),
        ("qos", o.qos.clone()),
        ("gres", (o.gpus > 0).then(|| format!("gpu:{}", o.gpus))),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            sbatch.push(format!("--{key}={v}"));
        }
    }
    sbatch.extend(o.extra.iter().cloned());
    let header: String = sbatch.iter().map(|s| format!("#SBATCH {s}\n")).collect();
    let data = o
        .data_dir
        .as_ref()
        .map(|d| format!("export CLASSWISE_DATA_DIR={}\n", quote(d)))
        .unwrap_or_default();
    format!(
        r#"#!/bin/bash
# The job array of sweep `{name}`, written by `classwise sweep slurm`; submit it with
# `sbatch {script}`. Array task i trains run i of {dir}/manifest.json
# (`classwise sweep status {dir}` shows them all).
{header}set -u
# libtorch's threads: the CPUs Slurm gave the task.
export OMP_NUM_THREADS="${{SLURM_CPUS_PER_TASK:-1}}"
{data}echo "[$(date -Is)] array task ${{SLURM_ARRAY_TASK_ID}} (job ${{SLURM_JOB_ID}}, restart ${{SLURM_RESTART_COUNT:-0}}) on $(hostname)"

# The task runs in the background so that this shell can forward Slurm's signals to it at once
# (bash runs traps only between commands, and `wait` is interruptible).
{program} sweep task {dir_q} --index "${{SLURM_ARRAY_TASK_ID}}" --threads "${{SLURM_CPUS_PER_TASK:-1}}" &
child=$!
# The job's state when the signal came: RUNNING for the time-limit warning or `scancel
# --signal`, COMPLETING for a cancellation or the time limit itself, which must not requeue.
state=RUNNING
trap 'state=$(squeue -h -j "${{SLURM_JOB_ID}}" -o %T 2>/dev/null); state=${{state:-RUNNING}}; kill -TERM "$child" 2>/dev/null' TERM USR1
while :; do
    wait "$child"
    status=$?
    # A trapped signal ends `wait` early, with status > 128, while the task goes on.
    kill -0 "$child" 2>/dev/null && continue
    # The task has ended: its own status (if the last wait was cut short by a signal).
    wait "$child" 2>/dev/null
    again=$?
    [ "$again" -ne 127 ] && status=$again
    break
done
if [ "$status" -eq {interrupted} ] && [ "$state" = RUNNING ]; then
    echo "[$(date -Is)] checkpointed: requeueing ${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"
    # Slurm then ends this incarnation (TERM, then KILL): nothing may follow.
    scontrol requeue "${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"
elif [ "$status" -eq {interrupted} ]; then
    echo "[$(date -Is)] checkpointed; the job was $state, so it is not requeued: resubmit to resume"
fi
exit "$status"
"#,
        script = dir.join("slurm").join("sweep.sbatch").display(),
        dir = dir.display(),
        dir_q = quote(dir),
        program = quote(&o.program),
        interrupted = EXIT_INTERRUPTED,
    )
}

/// The script of one stage of a submission ([`write_stages`]).
#[derive(Clone, Debug)]
pub struct StageScript {
    /// `dir/slurm/sweep.sbatch`, then `sweep-stage<n>.sbatch`.
    pub path: PathBuf,
    /// 0 for runs that start from no other run, n for runs that start from stage n − 1's.
    pub stage: usize,
    /// Array tasks in the script.
    pub tasks: usize,
    /// Slurm's job id, when submitted.
    pub job: Option<String>,
}

/// Writes one sbatch script per stage of the runs `indices` of the sweep in `dir` (runs that
/// start from others go one stage after them) under `dir/slurm/`; with `submit`, submits each
/// with `sbatch`, every stage after the previous one (`--dependency=afterany`).
pub fn write_stages(
    dir: &Path,
    manifest: &super::Manifest,
    indices: &[usize],
    options: &SlurmOptions,
    submit: bool,
) -> Result<Vec<StageScript>> {
    let stage = stages(manifest);
    let mut written: Vec<StageScript> = Vec::new();
    for level in 0..=stage.iter().copied().max().unwrap_or(0) {
        let here: Vec<usize> = (indices.iter().copied())
            .filter(|&i| stage[i] == level)
            .collect();
        if here.is_empty() {
            continue;
        }
        let file = match level {
            0 => "sweep.sbatch".to_owned(),
            l => format!("sweep-stage{l}.sbatch"),
        };
        let path = dir.join("slurm").join(file);
        let text = script(dir, &manifest.name, &here, options);
        crate::io::write_atomic(&path, text.as_bytes())?;
        let after = written.last().and_then(|s| s.job.as_deref());
        let job = submit.then(|| sbatch(&path, after)).transpose()?;
        written.push(StageScript {
            path,
            stage: level,
            tasks: here.len(),
            job,
        });
    }
    Ok(written)
}

/// Submits `script` (after job `after`, if any) and returns its job id.
fn sbatch(script: &Path, after: Option<&str>) -> Result<String> {
    let mut sbatch = std::process::Command::new("sbatch");
    sbatch.arg("--parsable");
    if let Some(job) = after {
        sbatch.arg(format!("--dependency=afterany:{job}"));
    }
    let command = format!("sbatch {}", script.display());
    let out = sbatch
        .arg(script)
        .output()
        .map_err(|e| TrainerError::Command {
            command: command.clone(),
            reason: format!(
                "{e} (is Slurm installed? tools/slurm/setup.sh starts a single-node cluster)"
            ),
        })?;
    if !out.status.success() {
        let reason = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        return Err(TrainerError::Command { command, reason });
    }
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok(id.split(';').next().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(array_ranges(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_ranges(&[9, 0, 1, 5, 7, 8, 3]), "0-1,3,5,7-9");
        assert_eq!(array_ranges(&[4]), "4");
        assert_eq!(array_ranges(&[]), "");
    }
}
