//! `classwise compare` end to end on synthetic runs: a planned sweep (the shipped smoke sweep,
//! not trained) whose run directories get reports written here in the trainer's format, plus a
//! standalone run directory named with `--label`. Checks the grouping by sweep group and label,
//! the finished-runs-only rule, mean ± std and ρ in the JSON and the tables, the files written,
//! a second sweep's groups kept apart by `--label SWEEP=NAME`, and the errors for bad arguments.
//! The statistics themselves are checked in detail in figures/tests/compare.rs.

mod common;

use std::path::Path;

use common::{classwise, text};

/// Copies the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

/// A report as `classwise train` writes it (only what compare reads is meaningful; the derived
/// statistics are recomputed on reading), 3 classes of 10 test images.
fn write_report(dir: &Path, clean: [f64; 3], robust: [f64; 3]) {
    let s = |v: [f64; 3]| {
        let m = v.iter().sum::<f64>() / 3.0;
        format!(
            r#"{{"n_classes":3,"per_class":{v:?},"overall":{m},"class_mean":{m},"worst":{{"class":0,"value":0.0}},"best":{{"class":0,"value":0.0}},"cv_fraction2":0.0,"cv_percent2":0.0,"mcd":0.0}}"#
        )
    };
    let per = |f: &dyn Fn(usize) -> f64| (0..3).map(f).collect::<Vec<f64>>();
    let errors = format!(
        r#"{{"standard":{:?},"boundary":{:?},"robust":{:?},"overall_standard":0.0,"overall_boundary":0.0,"overall_robust":0.0,"totals":[10,10,10],"clean_wrong_robust_correct":[0,0,0]}}"#,
        per(&|k| 1.0 - clean[k]),
        per(&|k| clean[k] - robust[k]),
        per(&|k| 1.0 - robust[k]),
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("report.json"),
        format!(
            r#"{{"schema":2,"attack":"pgd-20 ce step 0.025 uniform start","eps":0.1,"robust_counting":"clean-and-adversarial","n_samples":30,"class_names":["x","y","z"],"clean":{},"robust":{},"robust_worst_20_percent":0.0,"errors":{errors},"confusion_under_attack":{{"n_classes":3,"counts":[7,2,1,1,8,1,2,2,6]}},"warnings":[],"precision":"fp32"}}"#,
            s(clean),
            s(robust)
        ),
    )
    .unwrap();
}

#[test]
fn compare_groups_sweep_runs_and_labelled_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("sweep");
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("sweeps/smoke.toml");
    let out = classwise(&["sweep", "plan"])
        .arg(&spec)
        .arg("--out")
        .arg(&sweep)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sweep.join("manifest.json")).unwrap()).unwrap();
    let runs = manifest["runs"].as_array().unwrap();
    let group_of = |i: usize| runs[i]["group"].as_str().unwrap().to_owned();
    let run_dir = |i: usize| sweep.join("runs").join(runs[i]["id"].as_str().unwrap());
    // Runs 0 and 1: the first group's two seeds; run 2: one seed of the second group; run 3
    // is left unfinished.
    let first = group_of(0);
    assert_eq!(group_of(1), first);
    let second = group_of(2);
    assert_ne!(second, first);
    write_report(&run_dir(0), [0.9, 0.8, 0.7], [0.6, 0.4, 0.2]);
    write_report(&run_dir(1), [0.9, 0.8, 0.7], [0.6, 0.4, 0.4]);
    write_report(&run_dir(2), [0.8, 0.8, 0.8], [0.5, 0.4, 0.3]);
    // Runs 0-2 finished (`selection.json` is the last file a run writes); run 3 has its
    // report.json but is still writing the other final reports: left out too.
    for i in 0..3 {
        std::fs::write(run_dir(i).join("selection.json"), "{}").unwrap();
    }
    write_report(&run_dir(3), [0.1, 0.1, 0.1], [0.0, 0.0, 0.0]);
    let extra = tmp.path().join("my-run");
    write_report(&extra, [0.8, 0.8, 0.8], [0.4, 0.4, 0.4]);

    let dest = tmp.path().join("cmp");
    let out = classwise(&["compare"])
        .arg(&sweep)
        .arg(&extra)
        .arg("--label")
        .arg(format!("{}=uniform", extra.display()))
        .arg("--baseline")
        .arg(&first)
        .arg("--out")
        .arg(&dest)
        .arg("--json")
        .output()
        .unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("has not finished; left out"), "{said}");
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let groups = c["groups"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, [first.as_str(), second.as_str(), "uniform"]);
    assert_eq!(groups[0]["seeds"], serde_json::json!([0, 1]));
    let stat = |g: usize, name: &str| {
        groups[g]["stats"][0]["scalars"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == name)
            .unwrap()[1]
            .clone()
    };
    // First group: robust averages 0.4 and 0.4666…, worst 0.2 and 0.4.
    let worst = stat(0, "robust_worst");
    assert!((worst["mean"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert!((worst["std"].as_f64().unwrap() - 0.02f64.sqrt()).abs() < 1e-12);
    assert_eq!(worst["n"], 2);
    // ρ of the labelled run against the first group: (0.4 − 0.3)/0.3 − (0.4333… − 0.4)/0.4333….
    let avg = (0.4 + 1.4 / 3.0) / 2.0;
    let rho = groups[2]["stats"][0]["rho"]["robust"].as_f64().unwrap();
    assert!(
        (rho - (0.1 / 0.3 - (avg - 0.4) / avg)).abs() < 1e-12,
        "{rho}"
    );
    assert_eq!(groups[0]["stats"][0]["rho"]["robust"], 0.0);
    for file in [
        "compare.md",
        "compare.csv",
        "compare.json",
        "index.md",
        "compare-class-bars.png",
        "compare-radar.svg",
        "compare-class-errors.csv",
        "compare-confusion.png",
        "compare-misclassified.png",
    ] {
        assert!(dest.join(file).is_file(), "{file} missing");
    }
    let md = std::fs::read_to_string(dest.join("compare.md")).unwrap();
    assert!(md.contains("| uniform | 80.0 / 80.0 / 0.143 |"), "{md}");

    assert!(dest.join("runs.md").is_file(), "runs.md missing");

    // A second sweep with the same groups: `--label SWEEP=NAME` keeps its groups apart as
    // NAME:GROUP; without it, the note says the two runs of one seed were averaged.
    let again = tmp.path().join("again");
    copy_dir(&sweep, &again);
    let both = |label: bool| {
        let mut cmd = classwise(&["compare"]);
        cmd.arg(&sweep)
            .arg(&again)
            .arg("--json")
            .arg("--no-figures");
        if label {
            cmd.arg("--label").arg(format!("{}=again", again.display()));
        }
        let out = cmd
            .arg("--out")
            .arg(tmp.path().join("both"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let c = both(true);
    let names: Vec<&str> = (c["groups"].as_array().unwrap().iter())
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    let (a1, a2) = (format!("again:{first}"), format!("again:{second}"));
    assert_eq!(names, [first.as_str(), second.as_str(), &a1, &a2]);
    assert!(tmp.path().join("both/runs.md").is_file());
    assert!(!tmp.path().join("both/compare-class-bars.png").exists());
    assert!(!tmp.path().join("both/index.md").exists());
    let c = both(false);
    assert_eq!(c["groups"][0]["seeds"], serde_json::json!([0, 1, 0, 1]));
    let notes = c["notes"].to_string();
    assert!(notes.contains("are both seed 0"), "{notes}");

    for (args, expected) in [
        (vec!["--model", "final"], "--model final: expected one of"),
        (vec!["--baseline", "nope"], "--baseline nope"),
        (vec!["--label", "no-equals"], "expected DIR=NAME"),
    ] {
        let out = classwise(&["compare"])
            .arg(&extra)
            .args(&args)
            .arg("--out")
            .arg(tmp.path().join("bad"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(text(&out).contains(expected), "{args:?}: {}", text(&out));
    }
    let out = classwise(&["compare", "/no/such/run", "--out"])
        .arg(tmp.path().join("bad"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("/no/such/run: no such run or sweep directory"));
}
