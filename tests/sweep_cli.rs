//! `classwise sweep` end to end on the shipped smoke sweep (real Fashion-MNIST): planning and
//! re-planning, and the local executor with a worker killed (SIGKILL) and the executor stopped
//! (SIGTERM): a rerun loses nothing, trains nothing twice, and every interrupted run ends
//! bit-identical to an uninterrupted one.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{classwise, last_checkpoint_file, metrics_without_times, text};

fn smoke() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/smoke.toml")
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn ids(dir: &Path) -> Vec<String> {
    manifest(dir)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Where the planning test plans the shipped WAT Table 1 sweep.
fn shipped_dir(tmp: &tempfile::TempDir) -> PathBuf {
    tmp.path().join("shipped").join("fmnist-wat-table1")
}

/// Writes `to`: the sweep file `from` changed by `edit`, its presets named by absolute paths.
fn edited(from: &Path, to: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    let text = edit(std::fs::read_to_string(from).unwrap()).replace(
        "../configs/",
        &format!("{}/configs/", env!("CARGO_MANIFEST_DIR")),
    );
    std::fs::write(to, text).unwrap();
    to.to_path_buf()
}

/// `sweep plan SPEC --out DIR`: whether it succeeded and what it said.
fn plan_output(spec: &Path, dir: &Path) -> (bool, String) {
    let out = classwise(&["sweep", "plan"])
        .arg(spec)
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    (out.status.success(), text(&out))
}

/// `sweep plan` of a bad sweep file: it must fail; returns what it said.
fn plan_fails(spec: &Path, dir: &Path) -> String {
    let (ok, said) = plan_output(spec, dir);
    assert!(!ok, "{said}");
    said
}

fn plan(spec: &Path, dir: &Path) -> String {
    let (ok, said) = plan_output(spec, dir);
    assert!(ok, "{said}");
    said
}

#[test]
fn planning_resolves_every_run_and_replanning_keeps_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let said = plan(&smoke(), &dir);
    assert!(said.contains("4 runs (0 kept"), "{said}");
    let m = manifest(&dir);
    let runs = m["runs"].as_array().unwrap();
    let groups: Vec<(&str, u64)> = runs
        .iter()
        .map(|r| (r["group"].as_str().unwrap(), r["seed"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        groups,
        [
            ("fmnist-at", 0),
            ("fmnist-at", 1),
            ("fmnist-at-cfa", 0),
            ("fmnist-at-cfa", 1)
        ]
    );
    // Each entry is the preset resolved with the sweep's overrides and its seed.
    for r in runs {
        let config: toml::Table = toml::from_str(r["config"].as_str().unwrap()).unwrap();
        assert_eq!(config["epochs"].as_integer(), Some(3));
        assert_eq!(config["seed"].as_integer(), r["seed"].as_i64());
        assert_eq!(config["data"]["train_per_class"].as_integer(), Some(40));
    }
    let cfa: toml::Table = toml::from_str(runs[2]["config"].as_str().unwrap()).unwrap();
    assert_eq!(cfa["rule"]["kind"].as_str(), Some("cfa"));
    let first = ids(&dir);

    // Planned again: the same ids at the same indices.
    let said = plan(&smoke(), &dir);
    assert!(said.contains("4 runs (4 kept"), "{said}");
    assert_eq!(ids(&dir), first);

    // A third seed: the four runs keep their indices, two are appended.
    let spec = edited(&smoke(), &tmp.path().join("three-seeds.toml"), |t| {
        t.replace("seeds = [0, 1]", "seeds = [0, 1, 2]")
    });
    let said = plan(&spec, &dir);
    assert!(said.contains("6 runs (4 kept"), "{said}");
    let now = ids(&dir);
    assert_eq!(&now[..4], &first[..]);
    assert!(now[4].starts_with("fmnist-at-s2-") && now[5].starts_with("fmnist-at-cfa-s2-"));

    // Bad sweep files are refused with the field named.
    for (from, to, named) in [
        ("seeds = [0, 1]", "seeds = []", "seeds"),
        ("seeds = [0, 1]", "seeds = [1, 1]", "seeds"),
        ("\"epochs=3\"", "\"epochs=0\"", "epochs"),
        ("name = \"smoke\"", "name = \"smoke test\"", "name"),
    ] {
        let bad = edited(&smoke(), &tmp.path().join("bad.toml"), |t| {
            t.replace(from, to)
        });
        let said = plan_fails(&bad, &tmp.path().join("bad"));
        assert!(said.contains(named), "{to}: {said}");
    }
    // Every shipped sweep plans: its presets and overrides resolve and validate.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps");
    let mut planned = Vec::new();
    for entry in std::fs::read_dir(&shipped).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out_dir = tmp.path().join("shipped").join(path.file_stem().unwrap());
            plan(&path, &out_dir);
            planned.push((
                path.file_stem().unwrap().to_string_lossy().into_owned(),
                ids(&out_dir).len(),
            ));
        }
    }
    planned.sort();
    assert_eq!(
        planned,
        [
            ("fmnist-bat-training".to_owned(), 2),
            ("fmnist-cfa-fig2-eps".to_owned(), 4),
            ("fmnist-cfa-fig3-beta".to_owned(), 4),
            ("fmnist-cfa-fig5-lambda".to_owned(), 3),
            ("fmnist-cfa-table1".to_owned(), 18),
            ("fmnist-study-bat".to_owned(), 9),
            ("fmnist-study-cfa".to_owned(), 18),
            ("fmnist-study-homing".to_owned(), 33),
            ("fmnist-study-tian".to_owned(), 12),
            ("fmnist-study-tian-cfa-scaling".to_owned(), 6),
            ("fmnist-study-wat".to_owned(), 15),
            ("fmnist-tian-fig4-homing".to_owned(), 11),
            ("fmnist-wat-fig3-weight".to_owned(), 4),
            ("fmnist-wat-table1".to_owned(), 15),
            ("smoke".to_owned(), 4)
        ]
    );
    // FRL fine-tunes the TRADES run of its own seed.
    let wat = shipped_dir(&tmp);
    let m = manifest(&wat);
    let runs = m["runs"].as_array().unwrap();
    let trades: Vec<&serde_json::Value> = runs
        .iter()
        .filter(|r| r["group"] == "fmnist-trades")
        .collect();
    let frl: Vec<&serde_json::Value> = runs
        .iter()
        .filter(|r| r["group"].as_str().unwrap().starts_with("fmnist-frl"))
        .collect();
    assert_eq!((trades.len(), frl.len()), (3, 6));
    for r in frl {
        let t = trades.iter().find(|t| t["seed"] == r["seed"]).unwrap();
        assert_eq!(r["after"], serde_json::json!([t["id"]]));
        let config: toml::Table = toml::from_str(r["config"].as_str().unwrap()).unwrap();
        assert_eq!(
            Path::new(config["train"]["init_from"]["path"].as_str().unwrap()),
            std::path::absolute(&wat)
                .unwrap()
                .join("runs")
                .join(t["id"].as_str().unwrap())
        );
    }
    // The grid point is in the group name, where `classwise compare` reads the swept value.
    let fig3 = manifest(&tmp.path().join("shipped").join("fmnist-wat-fig3-weight"));
    let groups: Vec<&str> = fig3["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["group"].as_str().unwrap())
        .collect();
    assert_eq!(groups[1], "fmnist-smoke/rule.weight=0.1");
    let fig3_dir = tmp.path().join("shipped").join("fmnist-wat-fig3-weight");
    let fig3_ids = ids(&fig3_dir);
    assert!(
        fig3_ids[1].starts_with("fmnist-smoke-rule.weight=0.1-s"),
        "{fig3_ids:?}"
    );
    // A sweep planned by the classwise of manifest schema 1 (its ids named `=` as `_`): it
    // still reads (status), but planning it again would rename its runs and is refused.
    let mut old = fig3.clone();
    old["schema"] = 1.into();
    for r in old["runs"].as_array_mut().unwrap() {
        let id = r["id"].as_str().unwrap().replace('=', "_");
        r["id"] = id.into();
    }
    std::fs::write(fig3_dir.join("manifest.json"), old.to_string()).unwrap();
    assert_eq!(status(&fig3_dir).len(), fig3_ids.len());
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/fmnist-wat-fig3-weight.toml");
    let said = plan_fails(&spec, &fig3_dir);
    assert!(
        said.contains("run `fmnist-smoke-rule.weight=0.05-s0-")
            && said.contains("as `fmnist-smoke-rule.weight_0.05-s0-")
            && said.contains("classwise sweep run"),
        "{said}"
    );
    // CFA Fig. 2's sweep scales the training step with ε (5 steps of ε/4 reach every budget's
    // boundary) and evaluates every run under the same attack at ε = 0.1.
    let fig2 = manifest(&tmp.path().join("shipped").join("fmnist-cfa-fig2-eps"));
    for r in fig2["runs"].as_array().unwrap() {
        let config: toml::Table = toml::from_str(r["config"].as_str().unwrap()).unwrap();
        let step = &config["train"]["method"]["attack"]["step"];
        assert_eq!(
            (step["kind"].as_str(), step["value"].as_float()),
            (Some("fraction-of-eps"), Some(0.25)),
            "{}",
            r["id"]
        );
        let eval_step = &config["eval"]["attack"]["step"];
        assert_eq!(
            (eval_step["kind"].as_str(), eval_step["value"].as_float()),
            (Some("absolute"), Some(0.025))
        );
    }
    // Two presets of one file would share a group and be averaged as seeds of one method.
    let twice = edited(&smoke(), &tmp.path().join("twice.toml"), |t| {
        t.replace(
            r#"presets = ["../configs/fmnist-at.toml", "../configs/fmnist-at-cfa.toml"]"#,
            r#"presets = ["../configs/fmnist-at.toml", { file = "../configs/fmnist-at.toml", set = ["epochs=2"] }]"#,
        )
    });
    let said = plan_fails(&twice, &tmp.path().join("twice"));
    assert!(
        said.contains("group `fmnist-at`") && said.contains("variant"),
        "{said}"
    );
    // A reference to a preset the sweep does not have.
    let bad = edited(
        &shipped.join("fmnist-wat-table1.toml"),
        &tmp.path().join("bad-reference.toml"),
        |t| t.replacen("{run:fmnist-trades}", "{run:fmnist-tradez}", 1),
    );
    let said = plan_fails(&bad, &tmp.path().join("bad-reference"));
    assert!(said.contains("{run:fmnist-tradez}"), "{said}");
    // A task index outside the manifest.
    let out = classwise(&["sweep", "task"])
        .arg(&dir)
        .args(["--index", "6"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("0..=5"), "{}", text(&out));
}

/// `sweep plan --set` overrides every run after the sweep file's own settings, and a bad
/// override is refused with its key named.
#[test]
fn planning_with_command_line_overrides() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let out = classwise(&["sweep", "plan"])
        .arg(smoke())
        .arg("--out")
        .arg(&dir)
        .args(["--set", "epochs=1", "--set", "data.train_per_class=25"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for r in manifest(&dir)["runs"].as_array().unwrap() {
        let config: toml::Table = toml::from_str(r["config"].as_str().unwrap()).unwrap();
        // The sweep file sets epochs=3 and train_per_class=40; the command line wins.
        assert_eq!(config["epochs"].as_integer(), Some(1));
        assert_eq!(config["data"]["train_per_class"].as_integer(), Some(25));
        assert!(
            r["overrides"]
                .as_array()
                .unwrap()
                .contains(&"epochs=1".into())
        );
    }
    let out = classwise(&["sweep", "plan"])
        .arg(smoke())
        .arg("--out")
        .arg(tmp.path().join("bad"))
        .args(["--set", "epochs=0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("epochs"), "{}", text(&out));
}

/// Polls until `done` holds (panics after two minutes).
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn epochs_logged(run: &Path) -> usize {
    std::fs::read_to_string(run.join("metrics.jsonl")).map_or(0, |t| t.lines().count())
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn status(dir: &Path) -> Vec<serde_json::Value> {
    let out = classwise(&["sweep", "status", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
}

fn sessions(run: &Path) -> Vec<(u64, u64)> {
    json(&run.join("env.json"))["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["start_epoch"].as_u64().unwrap(),
                s["start_step"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_local_executor_survives_a_killed_worker_and_a_stop() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    plan(&smoke(), &dir);
    let ids = ids(&dir);
    let run = |i: usize| dir.join("runs").join(&ids[i]);
    let executor = classwise(&["sweep", "run", "--workers", "2", "--threads", "1"])
        .arg(&dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // Run 0 checkpointed its first epoch: kill its process outright.
    wait_for("run 0's first checkpoint", || {
        run(0).join("state.json").exists()
    });
    let record = json(&dir.join("tasks").join(format!("{}.json", ids[0])));
    let pid = record["attempts"][0]["pid"].as_i64().unwrap();
    // SAFETY: a process this test's executor started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    // Run 2 (started in run 0's place) checkpointed its first epoch: stop the executor.
    wait_for("run 2's first checkpoint", || {
        run(2).join("state.json").exists()
    });
    // SAFETY: the child this test started.
    assert_eq!(
        unsafe { libc::kill(executor.id() as i32, libc::SIGTERM) },
        0
    );
    let out = executor.wait_with_output().unwrap();
    let said = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed run fails the executor: {said}"
    );
    assert!(
        said.contains(&format!("failed: {} (killed by signal 9)", ids[0])),
        "{said}"
    );
    let states: Vec<String> = status(&dir)
        .iter()
        .map(|r| r["state"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(states[0], "killed", "{states:?}");
    assert_eq!(states[2], "interrupted", "{states:?}");
    let mid = json(&run(2).join("interrupted.json"));
    assert_eq!(mid["signal"], "SIGTERM");

    // The rerun finishes everything.
    let out = classwise(&["sweep", "run", "--workers", "2", "--threads", "1"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(status(&dir).iter().all(|r| r["state"] == "done"));
    // Nothing lost: the killed run resumed from its last epoch checkpoint, the stopped one from
    // its batch; nothing trained twice: every other run had one session.
    let s0 = sessions(&run(0));
    assert_eq!(s0.len(), 2, "{s0:?}");
    assert!(s0[1].0 >= 1 && s0[1].1 == 0, "{s0:?}");
    let s2 = sessions(&run(2));
    assert_eq!(s2.len(), 2, "{s2:?}");
    assert!(s2[1] > (1, 0), "resumed inside epoch 1 or later: {s2:?}");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(epochs_logged(&run(i)), 3, "run {i}");
        // Every session starts later than the one before; a run whose first attempt finished
        // had that one session.
        let s = sessions(&run(i));
        assert!(s.windows(2).all(|w| w[0] < w[1]), "run {i}: {s:?}");
        let attempts = json(&dir.join("tasks").join(format!("{id}.json")))["attempts"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(attempts.len(), s.len(), "run {i}");
        if attempts[0]["state"] == "done" {
            assert_eq!(s.len(), 1, "run {i}");
        }
    }

    // Bit-identical to runs that were never interrupted.
    let reference = tmp.path().join("reference");
    plan(&smoke(), &reference);
    for i in [0, 2] {
        let out = classwise(&["sweep", "task", "--threads", "1", "--index"])
            .arg(i.to_string())
            .arg(&reference)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let whole = reference.join("runs").join(&ids[i]);
        assert!(
            last_checkpoint_file(&whole, "model.safetensors")
                == last_checkpoint_file(&run(i), "model.safetensors"),
            "run {i}: final weights differ from an uninterrupted run"
        );
        assert_eq!(
            metrics_without_times(&whole),
            metrics_without_times(&run(i))
        );
        assert_eq!(
            json(&whole.join("report.json")),
            json(&run(i).join("report.json"))
        );
    }

    // Collected over seeds: the numbers are the runs' own.
    let out = classwise(&["sweep", "collect"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let c = json(&dir.join("collect.json"));
    let group = &c["groups"][0];
    assert_eq!(group["group"], "fmnist-at");
    let last = &group["models"][0];
    assert_eq!(last["model"], "last");
    let robust: Vec<f64> = [0, 1]
        .iter()
        .map(|&i| {
            let r = json(&run(i).join("report.json"));
            r["robust"]["overall"].as_f64().unwrap()
        })
        .collect();
    let mean = (robust[0] + robust[1]) / 2.0;
    let std = ((robust[0] - mean).powi(2) + (robust[1] - mean).powi(2)).sqrt();
    assert!((last["robust_avg"]["mean"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!((last["robust_avg"]["std"].as_f64().unwrap() - std).abs() < 1e-12);
    assert_eq!(last["robust_avg"]["n"], 2);
    let csv = std::fs::read_to_string(dir.join("collect.csv")).unwrap();
    assert!(csv.starts_with("group,model,attack,eps,metric,class,mean,std,n\n"));
    assert!(csv.contains("fmnist-at-cfa,last,"), "{csv}");
    let md = std::fs::read_to_string(dir.join("collect.md")).unwrap();
    assert!(md.contains("| fmnist-at | 2/2 |"), "{md}");
}

#[test]
fn a_run_that_starts_from_another_waits_for_it() {
    // The smoke settings, PGD-AT then FRL-RWRM fine-tuning it, one seed.
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("chain.toml");
    let smoke_text = std::fs::read_to_string(smoke()).unwrap();
    let set = &smoke_text[smoke_text.find("set = [").unwrap()..];
    let configs = format!("{}/configs", env!("CARGO_MANIFEST_DIR"));
    let chain = format!(
        r#"name = "chain"
seeds = [0]
presets = [
    "{configs}/fmnist-at.toml",
    {{ file = "{configs}/fmnist-frl-rwrm.toml", set = ['train.init_from.path="{{run:fmnist-at}}"', "epochs=1"] }},
]
{set}"#
    );
    std::fs::write(&spec, chain).unwrap();
    let dir = tmp.path().join("s");
    plan(&spec, &dir);
    let ids = ids(&dir);
    // The FRL run alone refuses to start before the run it fine-tunes is complete.
    let out = classwise(&["sweep", "task", "--index", "1"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(17), "{}", text(&out));
    assert!(text(&out).contains(&ids[0]), "{}", text(&out));
    let rows = status(&dir);
    assert_eq!(rows[1]["state"], "pending");
    assert_eq!(rows[1]["detail"], format!("after {}", ids[0]));
    // Two workers: the FRL run starts once the PGD-AT run is complete, from its weights.
    let out = classwise(&["sweep", "run", "--workers", "2", "--threads", "1"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let at = dir.join("runs").join(&ids[0]);
    let frl = dir.join("runs").join(&ids[1]);
    let init = json(&frl.join("init.json"));
    assert_eq!(
        Path::new(init["path"].as_str().unwrap()),
        std::path::absolute(&at).unwrap()
    );
    let attempt =
        |id: &str| json(&dir.join("tasks").join(format!("{id}.json")))["attempts"][0].clone();
    assert!(
        attempt(&ids[1])["started_unix_seconds"].as_u64().unwrap()
            >= attempt(&ids[0])["ended_unix_seconds"].as_u64().unwrap()
    );
    assert!(status(&dir).iter().all(|r| r["state"] == "done"));
}
