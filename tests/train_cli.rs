//! End-to-end tests of `classwise train`, `classwise eval` and `classwise bench` on the real
//! Fashion-MNIST (installed by `cargo xtask setup`), and of the presets in configs/.

mod common;

use std::path::Path;

use common::{classwise, text};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every preset parses and validates.
#[test]
fn every_preset_is_a_valid_configuration() {
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("configs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let c = classwise_trainer::run::RunConfig::from_toml(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(
                Some(c.name.as_str()),
                path.file_stem().and_then(|s| s.to_str())
            );
            n += 1;
        }
    }
    assert!(n >= 10, "{n} presets");
}

/// fmnist-smoke stopped after one epoch and resumed ends bit-identical to an uninterrupted run,
/// and `classwise eval` reproduces the run's own report from its last checkpoint.
#[test]
fn fmnist_smoke_resumes_bit_identically_and_evaluates() {
    let tmp = tempfile::tempdir().unwrap();
    let config = root().join("configs/fmnist-smoke.toml");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let run = |args: &[&str]| {
        let out = classwise(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        text(&out)
    };
    let c = config.to_str().unwrap();
    let t = run(&["train", "--config", c, "--out", a.to_str().unwrap()]);
    assert!(t.contains("| **worst** |"), "{t}");
    let t = run(&[
        "train",
        "--config",
        c,
        "--out",
        b.to_str().unwrap(),
        "--stop-after",
        "1",
    ]);
    assert!(t.contains("continue with --resume"), "{t}");
    run(&[
        "train",
        "--config",
        c,
        "--out",
        b.to_str().unwrap(),
        "--resume",
    ]);
    let weights = |d: &Path| {
        let state: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join("state.json")).unwrap()).unwrap();
        let ck = state["checkpoint"].as_str().unwrap().to_string();
        std::fs::read(d.join("checkpoints").join(ck).join("model.safetensors")).unwrap()
    };
    assert_eq!(weights(&a), weights(&b), "resumed weights differ");
    let report = |d: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(d.join("report.json")).unwrap()).unwrap()
    };
    assert_eq!(report(&a), report(&b));
    // 50 test images per class, 10 classes.
    assert_eq!(report(&a)["n_samples"], 500);
    // `eval --json` of the last checkpoint with the run's attack gives the run's report.
    let out = classwise(&["eval", "--run", a.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["clean"], report(&a)["clean"]);
    assert_eq!(e["robust"], report(&a)["robust"]);
    assert_eq!(e["attack"], report(&a)["attack"]);
    // A different attack changes the numbers and is named in the report.
    let out = classwise(&[
        "eval",
        "--run",
        a.to_str().unwrap(),
        "--attack",
        "fgsm",
        "--json",
    ])
    .output()
    .unwrap();
    let f: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        f["attack"].as_str().unwrap().starts_with("pgd-1 "),
        "{}",
        f["attack"]
    );
    // `figures run` draws the real run's logs into <run>/figures, with the report's numbers.
    let out = classwise(&["figures", "run", "--run", a.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let figs = a.join("figures");
    for f in [
        "index.md",
        "run-curves.png",
        "run-curves-test.csv",
        "run-report.svg",
    ] {
        assert!(figs.join(f).is_file(), "{f} missing");
    }
    let bars = std::fs::read_to_string(figs.join("run-report.csv")).unwrap();
    let robust = &report(&a)["robust"]["per_class"];
    for (c, row) in bars.lines().skip(1).enumerate() {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(
            cells[3].parse::<f64>().unwrap(),
            robust[c].as_f64().unwrap(),
            "{row}"
        );
    }
    // Re-running into an existing run directory without --resume is refused.
    let out = classwise(&["train", "--config", c, "--out", a.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("--resume"), "{}", text(&out));
}

#[test]
fn bad_train_input_is_reported_not_panicked() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "name = \"x\"\nepochs = 0\n").unwrap();
    let out = classwise(&["train", "--config", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("bad.toml") && !t.contains("panicked"), "{t}");
    let out = classwise(&["eval", "--run", tmp.path().join("none").to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("config.toml") && !t.contains("panicked"), "{t}");
}

#[test]
fn bench_prints_images_per_second() {
    let out = classwise(&["bench", "--small-only", "--batch", "8", "--steps", "1"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(
        out.status.success() && t.contains("img/s") && t.contains("pgd-10 at"),
        "{t}"
    );
}
