//! End-to-end tests of `classwise train`, `classwise eval` and `classwise bench` on the real
//! Fashion-MNIST (installed by `cargo xtask setup`), and of the presets in configs/.

mod common;

use std::path::Path;

use common::{classwise, last_checkpoint_file, metrics_without_times, text};

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
            let c = classwise_trainer::run::RunConfig::from_file(&path, &[])
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

/// Every paper preset behaves as its reference code (issue 38's parity switches): robust counted
/// on the adversarial example alone (all references); CFA's extra clean forward after each
/// update (`PKU-ML/CFA:train.py`) and its AT attack in train mode; the TRADES KL target from a second clean forward where the
/// reference computes it so (`yaodongyu/TRADES`, `PKU-ML/CFA`, `hannxu123/fair_robust`), and not
/// in WAT's code (`boqili/WAT`). The teaching preset `fmnist-smoke` keeps the defaults.
#[test]
fn paper_presets_follow_their_reference_code() {
    use classwise_trainer::eval::RobustCounting;
    use classwise_trainer::train::Method;
    let cfa = |n: &str| {
        n.contains("-cfa-")
            || n.ends_with("-cfa")
            || ["fmnist-at", "fmnist-at-ema", "fmnist-fat", "fmnist-trades"].contains(&n)
    };
    let second = [
        "cifar10-cfa-trades",
        "cifar10-cfa-trades-cfa",
        "tiny-imagenet-cfa-trades",
        "tiny-imagenet-cfa-trades-cfa",
        "fmnist-trades-cfa",
        "fmnist-trades",
        "fmnist-trades-classwise-beta",
        "fmnist-tian-trades",
        "fmnist-frl-rwrm",
        "fmnist-frl-rw",
        "cifar10-tian-trades",
        "cifar10-tian-wrn-trades",
        "cifar10-tian-class-beta",
        "cifar10-tian-wrn-class-beta",
        "cifar10-bat-trades",
        "cifar10-bat-trades-beta1",
        "cifar10-bat-frl-0.05",
        "cifar10-bat-frl-0.07",
        "cifar100-bat-trades",
        "cifar100-bat-trades-beta1",
        "cifar10-wat-frl-rwrm",
        "cifar10-wat-frl-rw",
        "cifar10-wrn-wat-frl-rwrm",
        "cifar10-wrn-wat-frl-rw",
        "cifar100-wat-frl-rwrm",
        "cifar100-wat-frl-rw",
    ];
    let mut trades = 0;
    for entry in std::fs::read_dir(root().join("configs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let c = classwise_trainer::run::RunConfig::from_file(&path, &[]).unwrap();
        let counting = match name.as_str() {
            "fmnist-smoke" => RobustCounting::CleanAndAdversarial,
            _ => RobustCounting::AdversarialOnly,
        };
        assert_eq!(c.eval.robust_counting, counting, "{name}");
        assert_eq!(c.train.clean_forward_after_step, cfa(&name), "{name}");
        if let Method::PgdAt(at) = &c.train.method
            && cfa(&name)
        {
            assert!(
                at.attack_train_mode,
                "{name}: CFA's AT attacks in train mode"
            );
        }
        if let Method::Trades(t) = &c.train.method {
            trades += 1;
            let want = second.contains(&name.as_str());
            assert_eq!(t.second_clean_forward, want, "{name}");
        } else {
            assert!(!second.contains(&name.as_str()), "{name} is not TRADES");
        }
    }
    assert!(trades >= 30, "{trades} TRADES presets");
}

/// The fmnist-smoke preset, shortened for the tests (2 epochs on 50 images per class, 20 test
/// images per class; everything else as the preset, the ε warm-up included), written to `dir`.
fn short_smoke(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(root().join("configs/fmnist-smoke.toml")).unwrap();
    let short = text
        .replacen("epochs = 4", "epochs = 2", 1)
        .replacen("pieces = [[3, 0.005]]", "pieces = [[1, 0.005]]", 1)
        .replacen("train_per_class = 300", "train_per_class = 50", 1)
        .replacen("test_per_class = 50", "test_per_class = 20", 1);
    for changed in ["epochs = 2", "[[1, 0.005]]", "= 50\n", "= 20\n"] {
        assert!(
            short.contains(changed),
            "the preset changed: update short_smoke"
        );
    }
    let path = dir.join("fmnist-smoke-short.toml");
    std::fs::write(&path, short).unwrap();
    path
}

/// A shortened fmnist-smoke stopped after one epoch and resumed ends bit-identical to an
/// uninterrupted run, `classwise eval` reproduces the run's own report from its last checkpoint,
/// names its files after every setting and never replaces an earlier evaluation, and
/// `env.json` names the commit the binary was built from even when it runs elsewhere.
#[test]
fn fmnist_smoke_resumes_bit_identically_and_evaluates() {
    let tmp = tempfile::tempdir().unwrap();
    let config = short_smoke(tmp.path());
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let run = |args: &[&str]| {
        let out = classwise(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        text(&out)
    };
    let c = config.to_str().unwrap();
    // Run from a directory outside any git checkout: env.json still names the build's commit.
    let out = classwise(&["train", "--config", c, "--out", a.to_str().unwrap()])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("| **worst** |"), "{t}");
    assert!(t.contains("eps x0."), "the warm-up epoch is announced: {t}");
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("env.json")).unwrap()).unwrap();
    let build_sha = env!("CLASSWISE_GIT_SHA");
    let logged = &env["sessions"][0]["git_sha"];
    if build_sha == "unknown" {
        assert!(logged.is_null(), "{env}");
    } else {
        assert_eq!(logged.as_str(), Some(build_sha), "{env}");
        assert_eq!(build_sha.len(), 40);
    }
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
    let weights = |d: &Path| last_checkpoint_file(d, "model.safetensors");
    assert_eq!(weights(&a), weights(&b), "resumed weights differ");
    let report = |d: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(d.join("report.json")).unwrap()).unwrap()
    };
    assert_eq!(report(&a), report(&b));
    // 20 test images per class, 10 classes.
    assert_eq!(report(&a)["n_samples"], 200);
    assert_eq!(report(&a)["robust_counting"], "clean-and-adversarial");
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
    assert_eq!(f["attack"], "fgsm ce step 1*eps no start");
    assert_ne!(f["robust"], report(&a)["robust"]);
    let eval_files = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("eval-"))
            .collect();
        v.sort();
        v
    };
    // Step sizes, ε, the counting and the attack all make distinct file names; a repeated
    // evaluation gets a new one; no name makes a subdirectory.
    for args in [
        &["--attack", "pgd", "--steps", "2", "--step", "0.01"][..],
        &["--attack", "pgd", "--steps", "2", "--step", "0.025"],
        &["--attack", "pgd", "--steps", "2", "--step", "0.025"],
        &[
            "--attack", "pgd", "--steps", "2", "--step", "0.025", "--eps", "1/20",
        ],
        &["--attack", "temperature", "--steps", "2"],
        &[
            "--attack",
            "fgsm-rs",
            "--robust-counting",
            "adversarial-only",
        ],
    ] {
        let mut all = vec!["eval", "--run", a.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = classwise(&all).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    let names = eval_files(&a);
    assert_eq!(
        names,
        [
            // The two evaluations above: `eval --json` (the run's attack) and `--attack fgsm`.
            "eval-last-fgsm_ce_step_1_eps_no_start-eps_0.1-clean-and-adversarial.json",
            "eval-last-fgsm_ce_step_1_eps_no_start-eps_0.1-clean-and-adversarial.md",
            "eval-last-fgsm_ce_step_1_eps_uniform_start-eps_0.1-adversarial-only.json",
            "eval-last-fgsm_ce_step_1_eps_uniform_start-eps_0.1-adversarial-only.md",
            "eval-last-pgd-2_ce_1_T=5_step_0.025_uniform_start-eps_0.1-clean-and-adversarial.json",
            "eval-last-pgd-2_ce_1_T=5_step_0.025_uniform_start-eps_0.1-clean-and-adversarial.md",
            "eval-last-pgd-2_ce_step_0.01_uniform_start-eps_0.1-clean-and-adversarial.json",
            "eval-last-pgd-2_ce_step_0.01_uniform_start-eps_0.1-clean-and-adversarial.md",
            "eval-last-pgd-2_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial-2.json",
            "eval-last-pgd-2_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial-2.md",
            "eval-last-pgd-2_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial.json",
            "eval-last-pgd-2_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial.md",
            "eval-last-pgd-2_ce_step_0.025_uniform_start-eps_1_20-clean-and-adversarial.json",
            "eval-last-pgd-2_ce_step_0.025_uniform_start-eps_1_20-clean-and-adversarial.md",
            "eval-last-pgd-5_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial.json",
            "eval-last-pgd-5_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial.md",
        ]
    );
    let fgsm_rs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join(&names[2])).unwrap()).unwrap();
    assert_eq!(fgsm_rs["attack"], "fgsm ce step 1*eps uniform start");
    assert_eq!(fgsm_rs["robust_counting"], "adversarial-only");
    // Bad evaluation arguments are refused before anything is written.
    for (args, needle) in [
        (&["--steps", "0"][..], "--steps"),
        (&["--checkpoint", "lats"], "--checkpoint"),
        (&["--attack", "pgd", "--step=-1"], "attack.step"),
    ] {
        let mut all = vec!["eval", "--run", a.to_str().unwrap()];
        all.extend_from_slice(args);
        let out = classwise(&all).output().unwrap();
        let t = text(&out);
        assert!(!out.status.success() && t.contains(needle), "{args:?}: {t}");
        assert!(!t.contains("panicked"), "{t}");
    }
    assert_eq!(eval_files(&a), names);
    // BAT's attack steps: each image stops at its first misclassification. Counting robust as
    // "correct on the adversarial example", each class's robust and flipped fractions sum to 1,
    // and an image never flipped took all 3 steps.
    let out = classwise(&[
        "eval",
        "--run",
        a.to_str().unwrap(),
        "--attack",
        "flip-steps",
        "--steps",
        "3",
        "--step",
        "0.02",
        "--robust-counting",
        "adversarial-only",
        "--json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let f: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(f["attack"], "early-stopped-pgd-3 ce tau 0 Original");
    let steps = &f["steps_to_flip"];
    assert_eq!(steps["max_steps"], 3);
    let list = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (mean, flipped) = (list(&steps["mean"]), list(&steps["flipped"]));
    let robust = list(&f["robust"]["per_class"]);
    assert_eq!((mean.len(), flipped.len()), (10, 10));
    for k in 0..10 {
        assert!(
            (robust[k] + flipped[k] - 1.0).abs() < 1e-12,
            "class {k}: {f}"
        );
        assert!(
            mean[k] <= 3.0 && mean[k] >= 3.0 * (1.0 - flipped[k]) - 1e-12,
            "class {k}"
        );
    }
    // Every report carries Tian et al.'s CVC; a softmax over 10 classes has variance ≤ 0.09.
    let cvc = list(&f["cvc"]);
    assert_eq!(cvc.len(), 10);
    assert!(cvc.iter().all(|v| (0.0..=0.09).contains(v)), "{cvc:?}");
    assert_eq!(list(&report(&a)["cvc"]).len(), 10);
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
    autoattack_and_protocol(&a);
    bench_autoattack(&a);
}

/// `classwise bench --autoattack RUN` (torchattacks' settings, 1 image per class, no Python):
/// one line of seconds per attack of AutoAttack standard, the whole, the robust accuracy the
/// report it writes holds; a zero count is refused by name.
fn bench_autoattack(a: &Path) {
    let out_dir = a.with_file_name("bench-aa");
    let args = ["bench", "--autoattack", a.to_str().unwrap(), "--settings"];
    let out = classwise(&args)
        .args(["torchattacks", "--test-per-class", "1", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(torchattacks settings)") && stdout.contains("on 10 images"));
    for attack in ["apgd-ce", "apgd-t", "fab-t", "square"] {
        let row = format!("| {attack} | ");
        assert!(stdout.contains(&row), "no {attack} row: {stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("classwise.json")).unwrap()).unwrap();
    assert_eq!(report["evaluation"]["n_samples"], 10);
    let per_class = report["evaluation"]["robust"]["per_class"]
        .as_array()
        .unwrap();
    let robust = per_class.iter().map(|r| r.as_f64().unwrap()).sum::<f64>() / 10.0;
    let line = format!("robust accuracy: classwise {:.2}%", 100.0 * robust);
    assert!(stdout.contains(&line), "{line} not in {stdout}");
    let out = classwise(&args)
        .args(["original", "--test-per-class", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("--test-per-class"), "{}", text(&out));
    // The original AutoAttack runs only its own parameters: refused before anything runs.
    let out = classwise(&args)
        .args(["torchattacks", "--python", "/nonexistent/python"])
        .args(["--against", "torchattacks,pyautoattack"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let expected = "--settings original with pyautoattack";
    assert!(text(&out).contains(expected), "{}", text(&out));
    bench_autoattack_card(a, &out_dir, &report);
    bench_autoattack_python(a);
}

/// crosscheck.py's result as the stand-in interpreter of `bench_autoattack_python` writes it:
/// torchattacks 10 s (APGD-CE 2 s), the original AutoAttack 20 s.
const CANNED_CROSSCHECK: &str = r#"{"passed": true,
 "torchattacks": {"seconds": 10.0, "seconds_per_image": 1.0,
   "components": [{"attack": "apgd-ce", "seconds": 2.0}], "robust": {"overall": 0.5}},
 "pyautoattack": {"seconds": 20.0, "seconds_per_image": 2.0, "robust": {"overall": 0.4}}}"#;

/// `bench --autoattack --python PY --against torchattacks,pyautoattack` with a stand-in for the
/// venv's python that records its arguments and writes a canned result: the flags crosscheck.py
/// gets, and the ratios classwise's seconds / theirs in the table.
fn bench_autoattack_python(a: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let dir = a.with_file_name("fake-python");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("canned.json"), CANNED_CROSSCHECK).unwrap();
    let python = dir.join("python");
    let script = "#!/bin/sh\nd=$(dirname \"$0\")\necho \"$@\" > \"$d/args.txt\"\n\
                  while [ $# -gt 0 ]; do [ \"$1\" = --json ] && out=$2; shift; done\n\
                  [ -f \"$d/canned.json\" ] && cp \"$d/canned.json\" \"$out\"\n\
                  exit $(cat \"$d/exit\" 2>/dev/null || echo 0)\n";
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out_dir = a.with_file_name("bench-aa-python");
    let out = bench_python(a, &python, &out_dir);
    assert!(out.status.success(), "{}", text(&out));
    let args = std::fs::read_to_string(dir.join("args.txt")).unwrap();
    let words: Vec<&str> = args.split_whitespace().collect();
    for flag in ["--original-params", "--pyautoattack", "--adv", "--json"] {
        assert!(words.contains(&flag), "{flag} not in {args}");
    }
    assert!(
        words.windows(2).any(|w| w == ["--batch-size", "500"]),
        "{args}"
    );
    let device = ["--device", "cpu"];
    assert!(words.windows(2).any(|w| w == device), "{args}");
    assert!(!words.contains(&"--no-torchattacks"), "{args}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("classwise.json")).unwrap()).unwrap();
    let seconds = |v: &serde_json::Value| v["seconds"].as_f64().unwrap();
    let (apgd, all) = (seconds(&report["steps"][0]), seconds(&report));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = format!("| apgd-ce | {apgd:.1} | 2.0 | {:.2} | - | - |", apgd / 2.0);
    assert!(stdout.contains(&row), "{row} not in {stdout}");
    let all_cells = format!("| 10.0 | {:.2} | 20.0 | {:.2} |", all / 10.0, all / 20.0);
    assert!(stdout.contains(&all_cells), "{all_cells} not in {stdout}");
    assert!(
        stdout.contains("torchattacks 50.00%, pyautoattack 40.00%"),
        "{stdout}"
    );
    bench_autoattack_failed_check(a, &python, &out_dir);
}

/// `bench --autoattack RUN --test-per-class 1 --python PY --against torchattacks,pyautoattack`.
fn bench_python(a: &Path, python: &Path, out_dir: &Path) -> std::process::Output {
    let python = python.to_str().unwrap();
    classwise(&["bench", "--autoattack", a.to_str().unwrap()])
        .args(["--test-per-class", "1", "--python", python])
        .args(["--against", "torchattacks,pyautoattack", "--out"])
        .arg(out_dir)
        .output()
        .unwrap()
}

/// A failed check (crosscheck.py exits with 1 after writing its result) leaves the timings in
/// the table and names the check; an exit with 1 and no result (an exception) is an error.
fn bench_autoattack_failed_check(a: &Path, python: &Path, out_dir: &Path) {
    let dir = python.parent().unwrap();
    let failed = CANNED_CROSSCHECK.replace(
        r#"{"passed": true,"#,
        r#"{"passed": false, "checks": [{"name": "a: logits", "passed": false, "text": "max 0.5"}],"#,
    );
    std::fs::write(dir.join("canned.json"), failed).unwrap();
    std::fs::write(dir.join("exit"), "1").unwrap();
    let out = bench_python(a, python, out_dir);
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("crosscheck checks FAILED"), "{stdout}");
    assert!(
        stdout.contains("FAILED check a: logits: max 0.5"),
        "{stdout}"
    );
    assert!(stdout.contains("| 10.0 |"), "{stdout}");
    // The result of the run before must not stand in for a missing one.
    std::fs::remove_file(dir.join("canned.json")).unwrap();
    let out = bench_python(a, python, out_dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("exited with"), "{}", text(&out));
}

/// `classwise bench --autoattack CARD` on the run's export: the same images, model and seed as
/// the run's benchmark, so the same robust flags.
fn bench_autoattack_card(a: &Path, run_bench: &Path, run_report: &serde_json::Value) {
    let weights = a.with_file_name("bench-export.safetensors");
    let out = classwise(&["export", "--run", a.to_str().unwrap(), "--out"])
        .arg(&weights)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let card = a.with_file_name("bench-export.safetensors.card.toml");
    assert!(
        card.is_file(),
        "export wrote no card beside {}",
        weights.display()
    );
    let name = format!("{}-last", a.file_name().unwrap().to_string_lossy());
    let out = classwise(&[
        "bench",
        "--autoattack",
        card.to_str().unwrap(),
        "--settings",
    ])
    .args([
        "torchattacks",
        "--test-per-class",
        "1",
        "--checkpoint",
        "last",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let dir = card.with_file_name(format!("bench-autoattack-{name}"));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("classwise.json")).unwrap()).unwrap();
    let robust = |r: &serde_json::Value| r["evaluation"]["robust"]["per_class"].clone();
    assert_eq!(
        robust(&report),
        robust(run_report),
        "{}",
        run_bench.display()
    );
}

/// `classwise eval --attack autoattack` on the first 2 test images of each class: the class ×
/// attack table, the saved adversarial examples, and `--protocol` into one report.
fn autoattack_and_protocol(a: &Path) {
    let run = a.to_str().unwrap();
    let out = classwise(&[
        "eval",
        "--run",
        run,
        "--attack",
        "autoattack",
        "--attacks",
        "apgd-ce,fab-t",
        "--test-per-class",
        "2",
        "--batch-size",
        "8",
        "--save-adv",
        "--json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["version"], "custom");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["attack"], "apgd-ce");
    assert_eq!(
        steps[1]["settings"],
        "fab-t 100 iterations 1 restart 9 targets"
    );
    let e = &r["evaluation"];
    assert_eq!(e["n_samples"], 20);
    // The cascade only removes robust points: clean ≥ after APGD-CE ≥ after FAB-T = final.
    let clean = e["clean"]["overall"].as_f64().unwrap();
    let (r1, r2) = (
        steps[0]["robust"].as_f64().unwrap(),
        steps[1]["robust"].as_f64().unwrap(),
    );
    assert!(clean >= r1 && r1 >= r2, "{clean} {r1} {r2}");
    assert_eq!(e["robust"]["overall"].as_f64().unwrap(), r2);
    assert_eq!(
        steps[0]["attacked"].as_u64().unwrap(),
        (clean * 20.0).round() as u64
    );
    let stem =
        "eval-last-autoattack_custom_apgd-ce_fab-t-eps_0.1-clean-and-adversarial-2_per_class";
    assert!(a.join(format!("{stem}.json")).is_file());
    assert!(a.join(format!("{stem}.md")).is_file());
    assert!(
        !a.join(format!("{stem}.partial")).exists(),
        "the finished state is removed"
    );
    let adv = classwise_trainer::model::safetensors::read(
        &a.join(format!("{stem}-adv.safetensors")),
        tch::Device::Cpu,
    )
    .unwrap();
    let get = |n: &str| {
        adv.tensors
            .iter()
            .find(|(k, _)| k == n)
            .unwrap_or_else(|| panic!("no {n}"))
            .1
            .shallow_clone()
    };
    let (x, x_adv, y, index) = (get("x"), get("x_adv"), get("y"), get("index"));
    assert_eq!(x.size(), [20, 1, 28, 28]);
    let delta = (&x_adv - &x).abs().max().double_value(&[]);
    assert!(delta <= 0.1 + 1e-6, "{delta}");
    // The first two test images of each class, in file order.
    let idx: Vec<i64> = Vec::try_from(&index).unwrap();
    let labels: Vec<i64> = Vec::try_from(&y).unwrap();
    for c in 0..10 {
        let of_c: Vec<i64> = (0..20)
            .filter(|&i| labels[i] == c)
            .map(|i| idx[i])
            .collect();
        assert_eq!(of_c.len(), 2);
        assert!(of_c[0] < of_c[1]);
    }
    let robust: Vec<u8> = Vec::try_from(&get("robust")).unwrap();
    let n_robust = robust.iter().filter(|&&r| r == 1).count();
    assert_eq!(n_robust as f64 / 20.0, r2);
    assert_eq!(
        adv.metadata.get("attacks").map(String::as_str),
        Some("apgd-ce,fab-t")
    );
    // `classwise compare` reads the AutoAttack report's final evaluation beside the others.
    let cmp = a.with_file_name("compare-after-autoattack");
    let out = classwise(&["compare"])
        .arg(a)
        .arg("--out")
        .arg(&cmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let compared: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cmp.join("compare.json")).unwrap()).unwrap();
    let aa: Vec<&serde_json::Value> = compared["groups"][0]["stats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["key"]["attack"] == "autoattack custom (apgd-ce, fab-t)")
        .collect();
    assert_eq!(aa.len(), 1, "{}", compared["groups"][0]["stats"]);
    assert_eq!(aa[0]["key"]["n_samples"], 20);

    let out = classwise(&[
        "eval",
        "--run",
        run,
        "--protocol",
        "--test-per-class",
        "2",
        "--json",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = p["entries"].as_array().unwrap();
    let labels: Vec<&str> = entries
        .iter()
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "natural",
            "pgd-20 ce step 0.025 uniform start",
            "autoattack custom (apgd-ce, apgd-t)"
        ]
    );
    let natural = &entries[0]["evaluation"];
    assert_eq!(
        natural["robust"]["per_class"],
        natural["clean"]["per_class"]
    );
    assert_eq!(natural["clean"]["overall"].as_f64().unwrap(), clean);
    for e in &entries[1..] {
        assert_eq!(e["evaluation"]["clean"], natural["clean"]);
        assert!(e["evaluation"]["robust"]["overall"].as_f64().unwrap() <= clean);
    }
    assert!(entries[2]["autoattack"]["steps"].as_array().unwrap().len() == 2);
    assert!(
        a.join("eval-last-protocol-eps_0.1-2_per_class.md")
            .is_file()
    );
    // --protocol runs the configuration's list: an --attack with it is refused.
    let out = classwise(&["eval", "--run", run, "--protocol", "--attack", "pgd"])
        .output()
        .unwrap();
    assert!(
        !out.status.success() && text(&out).contains("--attack"),
        "{}",
        text(&out)
    );
}

/// A tiny CIFAR-10 (20 records per file) in `root/<data>` and [`CIFAR_CONFIG`] in
/// `root/tiny-cifar.toml`: (data directory, configuration file).
fn tiny_cifar(root: &Path, data: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = root.join(data);
    common::write_tiny_cifar10(&dir, 20);
    let config = root.join("tiny-cifar.toml");
    std::fs::write(&config, CIFAR_CONFIG).unwrap();
    (dir, config)
}

const CIFAR_CONFIG: &str = r#"
name = "tiny-cifar"
seed = 0
epochs = 1
device = "cpu"
batch_size = 25

[data]
source = { kind = "files", id = "cifar10", options = { counts = "any" } }
test_per_class = 2

[model]
num_classes = 10
input_shape = [3, 32, 32]
architecture = { kind = "small_cnn_cifar" }

[optimizer]
momentum = 0.9
weight_decay = 5e-4

[schedule]
base = 0.01

[train]
eps = "8/255"
method = { method = "pgd-at", attack = { steps = 1, step = { kind = "absolute", value = 0.01 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } } }

[eval]
eps = "8/255"
attack = { steps = 1, step = { kind = "absolute", value = 0.01 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } }
"#;

/// `train` and `eval` search `CLASSWISE_DATA_DIR`, or `--data-dir`, as `doctor` does: a user's
/// CIFAR-10 in its real binary format in their own folder trains and evaluates, and is not
/// found when neither names it.
#[test]
fn train_and_eval_honour_the_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = tiny_cifar(tmp.path(), "my data");
    let c = config.to_str().unwrap();
    // An empty set-up cache, so that only the given directory can hold CIFAR-10.
    let cache = tmp.path().join("cache");
    let with_cache = |args: &[&str]| {
        let mut cmd = classwise(args);
        cmd.env("CLASSWISE_CACHE_DIR", &cache);
        cmd
    };
    let out = with_cache(&["doctor", "--json"])
        .env("CLASSWISE_DATA_DIR", &data)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("cifar-10-batches-bin"), "{}", text(&out));

    let by_env = tmp.path().join("by-env");
    let out = with_cache(&["train", "--config", c, "--out", by_env.to_str().unwrap()])
        .env("CLASSWISE_DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(by_env.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["n_samples"], 20);
    assert_eq!(report["class_names"][3], "cat");
    let env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(by_env.join("env.json")).unwrap()).unwrap();
    assert_eq!(env["sessions"][0]["data_dir"], data.to_str().unwrap());

    let by_flag = tmp.path().join("by-flag");
    let out = with_cache(&[
        "train",
        "--config",
        c,
        "--out",
        by_flag.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let out = with_cache(&["eval", "--run", by_flag.to_str().unwrap(), "--json"])
        .env("CLASSWISE_DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["n_samples"], 20);

    // Neither: not found, and the error says where it looked.
    let out = with_cache(&[
        "train",
        "--config",
        c,
        "--out",
        tmp.path().join("none").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("CIFAR-10") && t.contains("cache"), "{t}");
}

/// `data.drop_classes` removes every training image of a class (Tian et al. §6) and nothing
/// else; every report has per-image predictions beside it that add up to the report.
#[test]
fn a_class_left_out_of_training_and_per_image_predictions() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = tiny_cifar(tmp.path(), "data");
    let train = |out: &Path, set: &str| {
        classwise(&[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--set",
            set,
        ])
        .output()
        .unwrap()
    };
    let run = tmp.path().join("without-3");
    let out = train(&run, "data.drop_classes=[3]");
    assert!(out.status.success(), "{}", text(&out));
    let json = |p: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    // Training record r of file f has label (r + f) % 10: 100 images, 10 of class 3.
    let split = json(&run.join("split.json"));
    let train_indices: Vec<u64> = serde_json::from_value(split["train"].clone()).unwrap();
    assert_eq!(train_indices.len(), 90);
    assert!(
        train_indices.iter().all(|i| (i % 20 + i / 20) % 10 != 3),
        "{train_indices:?}"
    );
    // The test images stay: 2 of every class, class 3 included.
    assert_eq!(split["test"].as_array().unwrap().len(), 20);
    let config_text = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(config_text.contains("drop_classes = [3]"), "{config_text}");

    // predictions/report.json: per image, and the report's numbers are their counts.
    let report = json(&run.join("report.json"));
    let p = json(&run.join("predictions/report.json"));
    assert_eq!(p["report"], "report.json");
    assert_eq!(p["attack"], report["attack"]);
    let list = |k: &str| -> Vec<u64> { serde_json::from_value(p[k].clone()).unwrap() };
    let (labels, adversarial) = (list("labels"), list("adversarial"));
    let robust: Vec<bool> = serde_json::from_value(p["robust"].clone()).unwrap();
    assert_eq!(labels.len(), 20);
    let mut counts = vec![0u64; 100];
    for (&y, &a) in labels.iter().zip(&adversarial) {
        counts[(10 * y + a) as usize] += 1;
    }
    let reported: Vec<u64> =
        serde_json::from_value(report["confusion_under_attack"]["counts"].clone()).unwrap();
    assert_eq!(counts, reported);
    for class in 0..10u64 {
        let flags: Vec<bool> = labels
            .iter()
            .zip(&robust)
            .filter(|(y, _)| **y == class)
            .map(|(_, r)| *r)
            .collect();
        let mean = flags.iter().filter(|r| **r).count() as f64 / flags.len() as f64;
        assert_eq!(
            report["robust"]["per_class"][class as usize].as_f64(),
            Some(mean),
            "class {class}"
        );
    }
    // `classwise eval` writes them too, under the evaluation's name.
    let out = classwise(&[
        "eval",
        "--run",
        run.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
        "--attack",
        "fgsm",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let written: Vec<String> = std::fs::read_dir(run.join("predictions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        written.iter().any(|n| n.starts_with("eval-last-")),
        "{written:?}"
    );

    // A class the data set does not have, a repeated class and every class are refused.
    for (i, (set, expected)) in [
        ("data.drop_classes=[10]", "classes 0..10"),
        ("data.drop_classes=[2, 2]", "distinct"),
        (
            "data.drop_classes=[0,1,2,3,4,5,6,7,8,9]",
            "fewer than the 10",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let out = train(&tmp.path().join(format!("bad-{i}")), set);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{set}: {t}");
        assert!(
            t.contains("data.drop_classes") && t.contains(expected),
            "{set}: {t}"
        );
    }
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
    let out = classwise(&["bench", "--small-only", "--batch", "10", "--steps", "1"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(
        out.status.success() && t.contains("img/s") && t.contains("pgd-at"),
        "{t}"
    );
    // Every workload by default: the two training steps and the evaluation batch.
    for workload in ["pgd-at", "trades", "eval-pgd20"] {
        assert_eq!(
            t.lines()
                .filter(|l| l.contains("img/s") && l.contains(workload))
                .count(),
            1,
            "{workload}: {t}"
        );
    }
    // The evaluation reports every class, so its batch holds one image of each at least.
    let out = classwise(&["bench", "--small-only", "--batch", "8", "--steps", "1"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(
        out.status.code() == Some(1) && t.contains("batch") && t.contains("at least 10"),
        "{t}"
    );
}

/// `bench --json`: one object per model × workload asked for, in the format of
/// `tools/bench/reference.py`, with the settings it ran with; a bad name is refused by name.
#[test]
fn bench_json_prints_one_object_per_measurement() {
    let out = classwise(&[
        "bench",
        "--json",
        "--model",
        "small-cnn",
        "--workload",
        "trades,pgd-at",
        "--batch",
        "4",
        "--steps",
        "2",
        "--memory-format",
        "channels-last",
        "--profile",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for (row, workload) in rows.iter().zip(["trades", "pgd-at"]) {
        assert_eq!(row["implementation"], "classwise");
        assert_eq!(row["model"], "small-cnn");
        assert_eq!(row["workload"], workload);
        assert_eq!(row["batch"], 4);
        let (ips, sps) = (
            row["img_per_s"].as_f64().unwrap(),
            row["seconds_per_step"].as_f64().unwrap(),
        );
        assert!(sps > 0.0 && (ips * sps - 4.0).abs() < 1e-9, "{row}");
        let s = &row["settings"];
        assert_eq!(s["memory_format"], "channels-last");
        assert_eq!(s["precision"], "fp32");
        assert_eq!(s["cudnn_benchmark"], false, "no cuDNN on the CPU");
        assert_eq!(
            (s["steps"].clone(), s["warmup"].clone()),
            (2.into(), 1.into())
        );
        assert_eq!(s["attack_steps"], 10);
        assert!(
            (s["eps"].as_f64().unwrap() - 8.0 / 255.0).abs() < 1e-15,
            "{row}"
        );
        assert!(s["threads"].as_i64().unwrap() >= 1, "{row}");
        // The profile: the attack's 10 forward passes, input gradients and updates per step,
        // inside the attack, inside the loss; every phase's parts within the phase, and the
        // top-level phases (with `other`, the rest) adding up to the step.
        let phases: std::collections::BTreeMap<String, (f64, f64)> = row["profile"]
            .as_array()
            .unwrap_or_else(|| panic!("no profile: {row}"))
            .iter()
            .map(|p| {
                (
                    p["phase"].as_str().unwrap().to_string(),
                    (
                        p["seconds_per_step"].as_f64().unwrap(),
                        p["calls_per_step"].as_f64().unwrap(),
                    ),
                )
            })
            .collect();
        for part in ["forward", "backward", "update"] {
            let (_, calls) = phases[&format!("loss/attack/{part}")];
            assert_eq!(calls, 10.0, "{part}: {row}");
        }
        assert_eq!(phases["loss/attack"].1, 1.0, "{row}");
        assert_eq!(
            phases.contains_key("loss/attack/clean-forward"),
            workload == "trades",
            "TRADES' attack computes the clean probabilities once: {row}"
        );
        for (name, &(seconds, _)) in &phases {
            let children: f64 = phases
                .iter()
                .filter(|(n, _)| {
                    n.strip_prefix(name.as_str())
                        .and_then(|rest| rest.strip_prefix('/'))
                        .is_some_and(|rest| !rest.contains('/'))
                })
                .map(|(_, &(s, _))| s)
                .sum();
            assert!(
                children <= seconds * (1.0 + 1e-9),
                "{name}: parts {children} > {seconds}"
            );
        }
        let top: f64 = ["data", "loss", "backward", "optimizer", "other"]
            .iter()
            .map(|n| phases[*n].0)
            .sum();
        assert!(
            (top - sps).abs() <= 1e-6 * sps,
            "top-level phases {top} vs step {sps}: {row}"
        );
        assert_eq!(phases["step"].0, sps, "{row}");
    }
    let out = classwise(&["bench", "--json", "--model", "vgg"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(
        !out.status.success() && t.contains("vgg") && t.contains("small-cnn"),
        "{t}"
    );
}

/// `fmnist-at-cfa` for three short epochs (shortened with `--set`): class-wise ε_k = (λ₁ + t_k)·ε
/// from the previous epoch's logged t_k after the one warm-up epoch, FAWA's decisions in
/// metrics.jsonl (keep before its start, then the first acceptance copied, then averaged), the
/// FAWA and selection reports, and a resume that ends bit-identical.
#[test]
fn fmnist_at_cfa_calibrates_averages_and_resumes_bit_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let config = root().join("configs/fmnist-at-cfa.toml");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let sets = [
        "epochs=3",
        "schedule.pieces=[[2, 0.005]]",
        "data.train_per_class=50",
        "data.test_per_class=20",
        "eval.val_per_class=10",
        "eval.test_per_class=10",
        // δ = 0 admits every epoch from start_epoch on, so that the copy and the average both
        // happen in three epochs.
        "fawa.delta=0.0",
    ];
    let train = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        for s in &sets {
            args.extend(["--set", s]);
        }
        args.extend(extra);
        let out = classwise(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    };
    train(&a, &[]);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(a.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let floats = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    // Epoch 0 (warm-up): ε for every class. Epochs 1, 2: (0.5 + t_k)·0.1 with t_k of the
    // epoch before.
    assert_eq!(lines[0]["rule"], "cfa");
    assert!(floats(&lines[0]["plan"]["eps"]).iter().all(|&e| e == 0.1));
    for e in 1..3 {
        let t = floats(&lines[e - 1]["train_robust"]);
        let eps = floats(&lines[e]["plan"]["eps"]);
        assert_eq!(eps.len(), 10);
        for (k, (&ek, &tk)) in eps.iter().zip(&t).enumerate() {
            assert!((ek - (0.5 + tk) * 0.1).abs() < 1e-12, "epoch {e} class {k}");
        }
        assert!(
            eps.iter().any(|&x| x != eps[0]),
            "class-wise budgets differ: {eps:?}"
        );
    }
    // FAWA: keep before start_epoch 1, then a copy, then an average with α = 0.5.
    let fawa = |e: usize| {
        lines[e]["averaging"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "fawa")
            .unwrap()
            .clone()
    };
    assert_eq!(fawa(0)["action"], "Keep");
    assert_eq!(fawa(1)["action"], "Copy");
    assert_eq!(fawa(2)["action"]["Average"]["alpha"], 0.5);
    assert_eq!(fawa(2)["updates"], 2);
    assert!(fawa(1)["gate_value"].as_f64().unwrap() >= 0.0);
    assert!(lines[0]["fawa_test"].is_null() && lines[1]["fawa_test"].is_object());
    for f in [
        "report.json",
        "report-ema.json",
        "report-fawa.json",
        "report-best.json",
        "report-best-fawa.json",
        "selection.json",
        "checkpoints/best.safetensors",
        "checkpoints/best-fawa.safetensors",
    ] {
        assert!(a.join(f).exists(), "{f}");
    }
    let selection: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("selection.json")).unwrap()).unwrap();
    assert_eq!(selection["strategy"]["kind"], "best-avg-worst");
    // The selected model's report names the strategy and the epoch that selection.json chose.
    let best: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("report-best.json")).unwrap()).unwrap();
    let raw = &selection["tracks"][0];
    assert_eq!(raw["track"], "raw");
    assert_eq!(best["selection"]["strategy"], "best-avg-worst");
    assert_eq!(best["selection"]["epoch"], raw["epoch"]);
    assert!(best["robust"]["per_class"].is_array(), "{best}");
    let best_md = std::fs::read_to_string(a.join("report-best.md")).unwrap();
    let epoch = raw["epoch"].as_u64().unwrap();
    assert!(
        best_md.starts_with(&format!(
            "Selected model: the `raw` track at epoch {} of 3",
            epoch + 1
        )) && best_md.contains("`best-avg-worst` strategy"),
        "{best_md}"
    );
    // The resolved configuration records the overrides.
    let resolved = std::fs::read_to_string(a.join("config.toml")).unwrap();
    assert!(resolved.contains("delta = 0.0"), "{resolved}");
    // Stopped after two epochs and resumed: the same weights, averages, logs and reports.
    train(&b, &["--stop-after", "2"]);
    train(&b, &["--resume"]);
    let last = last_checkpoint_file;
    for f in ["model.safetensors", "fawa.safetensors", "ema.safetensors"] {
        assert_eq!(last(&a, f), last(&b, f), "{f} differs after resume");
    }
    for f in ["report.json", "report-fawa.json", "report-best.json"] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_eq!(metrics_without_times(&a), metrics_without_times(&b));
}
