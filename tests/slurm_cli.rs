//! The smoke sweep on a real Slurm cluster: planned, written as a job array and submitted; one
//! array task gets SIGTERM mid-run (as at a time limit or a preemption), checkpoints, is
//! requeued by its script and finishes where it stopped, bit-identical to a run that was never
//! stopped; then the sweep is collected.
//!
//! Needs a running cluster: `cargo xtask test-slurm` starts a single-node one on this machine
//! (`tools/slurm/setup.sh`, Debian's slurm-wlm and munge, as root) and runs this test; `cargo
//! xtask test` (CI) does the same. Plain `cargo test` skips it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{classwise, last_checkpoint_file, metrics_without_times, text};

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn states(dir: &Path) -> Vec<String> {
    let out = classwise(&["sweep", "status", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout)
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap().to_owned())
        .collect()
}

fn squeue(job: &str) -> String {
    let out = Command::new("squeue")
        .args(["-h", "-o", "%i %T %r", "-j", job])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "needs a Slurm cluster: run `cargo xtask test-slurm`"]
fn a_job_array_task_stopped_by_sigterm_is_requeued_and_resumes() {
    let sinfo = Command::new("sinfo").arg("-h").output();
    assert!(
        sinfo.as_ref().is_ok_and(|o| o.status.success()),
        "no Slurm cluster answers (`sinfo`): start one with tools/slurm/setup.sh ({sinfo:?})"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let smoke: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/smoke.toml");
    let out = classwise(&["sweep", "plan"])
        .arg(&smoke)
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let manifest = json(&dir.join("manifest.json"));
    let ids: Vec<String> = manifest["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let run = |i: usize| dir.join("runs").join(&ids[i]);

    let out = classwise(&["sweep", "slurm", "--cpus-per-task", "1", "--submit"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let job = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        job.parse::<u64>().is_ok(),
        "sbatch --parsable printed {job:?}"
    );
    let script = std::fs::read_to_string(dir.join("slurm/sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-3\n"), "{script}");
    assert!(script.contains("#SBATCH --requeue\n"), "{script}");

    // Task 0 checkpointed its first epoch: SIGTERM to it, as Slurm sends at a time limit.
    wait_for(
        "task 0's first checkpoint",
        Duration::from_secs(300),
        || run(0).join("state.json").exists(),
    );
    let task0 = format!("{job}_0");
    // scancel of Slurm 22.05 gets "Job can not be altered now, try again later" back although
    // the signal was delivered, and retries every few seconds: left alone, it would signal the
    // requeued task too. It is stopped once the task has checkpointed.
    let mut scancel = Command::new("scancel")
        .args(["--signal=TERM", "--batch", &task0])
        .spawn()
        .unwrap();
    wait_for("task 0's checkpoint", Duration::from_secs(120), || {
        let t = json_or_null(&dir.join("tasks").join(format!("{}.json", ids[0])));
        t["attempts"][0]["state"] == "interrupted"
    });
    let _ = scancel.kill();
    let _ = scancel.wait();

    // Every task ends, task 0 after its requeue.
    wait_for("the array to finish", Duration::from_secs(600), || {
        states(&dir).iter().all(|s| s == "done") && squeue(&job).trim().is_empty()
    });
    let record = json(&dir.join("tasks").join(format!("{}.json", ids[0])));
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{record}");
    assert_eq!(attempts[0]["state"], "interrupted", "{record}");
    assert!(
        attempts[0]["message"].as_str().unwrap().contains("SIGTERM"),
        "{record}"
    );
    assert_eq!(attempts[1]["state"], "done", "{record}");
    assert_eq!(attempts[1]["slurm"]["array_task_id"], "0", "{record}");
    assert_eq!(attempts[1]["slurm"]["restart_count"], 1, "{record}");
    let log = std::fs::read_to_string(dir.join(format!("slurm/{job}_0.out"))).unwrap();
    assert!(log.contains("requeueing"), "{log}");
    // The other tasks ran once.
    for (i, id) in ids.iter().enumerate().skip(1) {
        let r = json(&dir.join("tasks").join(format!("{id}.json")));
        assert_eq!(r["attempts"].as_array().unwrap().len(), 1, "task {i}: {r}");
    }

    // The requeued task resumed where it stopped and ended as if never stopped.
    let sessions = json(&run(0).join("env.json"))["sessions"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(sessions.len(), 2);
    assert!(sessions[1]["start_epoch"].as_u64().unwrap() >= 1);
    let reference = tmp.path().join("reference");
    let out = classwise(&["sweep", "plan"])
        .arg(&smoke)
        .arg("--out")
        .arg(&reference)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let out = classwise(&["sweep", "task", "--index", "0", "--threads", "1"])
        .arg(&reference)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let whole = reference.join("runs").join(&ids[0]);
    assert!(
        last_checkpoint_file(&whole, "model.safetensors")
            == last_checkpoint_file(&run(0), "model.safetensors"),
        "the requeued run's final weights differ from an uninterrupted run's"
    );
    assert_eq!(
        metrics_without_times(&whole),
        metrics_without_times(&run(0))
    );
    assert_eq!(
        json(&whole.join("report.json")),
        json(&run(0).join("report.json"))
    );

    let out = classwise(&["sweep", "collect"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let c = json(&dir.join("collect.json"));
    assert_eq!(c["groups"][0]["seeds_done"], serde_json::json!([0, 1]));
    assert_eq!(c["groups"][1]["seeds_done"], serde_json::json!([0, 1]));
}

fn json_or_null(path: &Path) -> serde_json::Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null)
}
