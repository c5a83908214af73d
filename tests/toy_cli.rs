//! End-to-end tests of `classwise toy`.

mod common;

use common::{FIG1, classwise, text};
use serde_json::Value;

/// Runs a command that must succeed and print JSON.
fn json(args: &[&str]) -> Value {
    let out = classwise(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?} did not print JSON ({e}):\n{}", text(&out)))
}

/// Runs a command that must succeed and print every one of `needles`.
fn succeeds_printing(args: &[&str], needles: &[&str]) {
    let out = classwise(args).output().unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{args:?}: {t}");
    for n in needles {
        assert!(t.contains(n), "{args:?} did not print {n:?}: {t}");
    }
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn with_model(cmd: &[&str], rest: &[&str]) -> Vec<String> {
    cmd.iter()
        .chain(FIG1.iter())
        .chain(rest)
        .map(|s| s.to_string())
        .collect()
}

fn run_json(args: &[String]) -> Value {
    json(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `toy simulate --json` has the documented shape, its closed forms are those of
/// `theory eval`, and the estimates agree with them within 5 standard errors.
#[test]
fn simulate_json_matches_theory_eval() {
    let sim = run_json(&with_model(
        &["toy", "simulate"],
        &[
            "--w",
            "1.3",
            "--eps",
            "0.8",
            "--samples",
            "200000",
            "--seed",
            "3",
            "--json",
        ],
    ));
    let eval = run_json(&with_model(
        &["theory", "eval"],
        &["--w", "1.3", "--eps", "0.8", "--json"],
    ));
    assert_eq!(sim["samples_per_class"], 200_000);
    for acc in ["clean", "robust_paper", "robust_full"] {
        for class in ["pos", "neg"] {
            let est = &sim[acc][class];
            let (mean, se) = (f(&est["mean"]), f(&est["se"]));
            let cf = f(&sim["closed_form"][acc][class]);
            assert_eq!(cf, f(&eval[acc][class]), "{acc}/{class}");
            assert!((0.0..=1.0).contains(&mean) && se > 0.0 && se < 0.01);
            let z = f(&sim["z"][acc][class]);
            assert!((z - (mean - cf) / (cf * (1.0 - cf) / 200_000.0).sqrt()).abs() < 1e-9);
            assert!(z.abs() <= 5.0, "{acc}/{class}: z = {z}");
        }
    }
    // The same seed reproduces the run; another seed does not.
    let again = run_json(&with_model(
        &["toy", "simulate"],
        &[
            "--w",
            "1.3",
            "--eps",
            "0.8",
            "--samples",
            "200000",
            "--seed",
            "3",
            "--json",
        ],
    ));
    assert_eq!(sim, again);
    let other = run_json(&with_model(
        &["toy", "simulate"],
        &[
            "--w",
            "1.3",
            "--eps",
            "0.8",
            "--samples",
            "200000",
            "--seed",
            "4",
            "--json",
        ],
    ));
    assert_ne!(sim["clean"], other["clean"]);
}

/// `toy fit` reports the empirical ŵ_ε per budget next to `theory eval`'s ŵ_ε.
#[test]
fn fit_json_reports_w_hat_next_to_the_closed_form() {
    let fit = run_json(&with_model(
        &["toy", "fit"],
        &[
            "--eps",
            "0,0.1,0.2",
            "--samples",
            "100000",
            "--seed",
            "1",
            "--json",
        ],
    ));
    let points = fit["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for p in points {
        let eps = f(&p["eps"]).to_string();
        let eval = run_json(&with_model(
            &["theory", "eval"],
            &["--w", "1", "--eps", &eps, "--json"],
        ));
        let cf = f(&p["closed_form"]);
        assert_eq!(cf, f(&eval["w_hat"]));
        let emp = f(&p["empirical"]["argmax"]);
        assert!((emp - cf).abs() < 0.15 * cf, "eps {eps}: {emp} vs {cf}");
        assert!(p["surrogate"]["converged"].as_bool().unwrap());
    }
    assert_eq!(fit["empirical_monotone"], true);
    assert!(
        f(&fit["w_star_empirical"]["pos"]["argmax"]) > f(&fit["w_star_empirical"]["neg"]["argmax"])
    );
}

/// `toy multiclass` prints a per-epoch class-wise history and final tables, and --out writes
/// the same report.
#[test]
fn multiclass_reports_history_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let args = [
        "toy",
        "multiclass",
        "--method",
        "cfa-at",
        "--epochs",
        "4",
        "--seed",
        "2",
        "--json",
        "--out",
    ];
    let mut all: Vec<&str> = args.to_vec();
    let p = path.to_str().unwrap();
    all.push(p);
    let r = json(&all);
    let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(r, written);
    assert_eq!(r["config"]["epochs"], 4);
    assert_eq!(r["config"]["seed"], 2);
    let history = r["history"].as_array().unwrap();
    assert_eq!(history.len(), 4);
    let k = r["config"]["data"]["n_classes"].as_u64().unwrap() as usize;
    for h in history {
        for key in ["train_robust", "val_robust", "test_clean", "test_robust"] {
            assert_eq!(h[key].as_array().unwrap().len(), k, "{key}");
        }
        assert_eq!(h["plan"]["eps"].as_array().unwrap().len(), k);
    }
    let robust = &r["final_model"]["robust"];
    let per: Vec<f64> = robust["per_class"]
        .as_array()
        .unwrap()
        .iter()
        .map(f)
        .collect();
    let worst = per.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(f(&robust["worst"]["value"]), worst);
    let best = per.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!((f(&robust["mcd"]) - (best - worst)).abs() < 1e-12);
    // --epochs scales the preset's epoch-relative settings: CFA's 8-epoch run drops the
    // learning rate at epochs 4 and 6 and starts FAWA at epoch 2, as
    // `RunConfig::preset_with_epochs` does (a bare epoch count would keep the 40-epoch preset's
    // drops at 20 and 30, and FAWA would never start).
    let short = json(&[
        "toy",
        "multiclass",
        "--method",
        "cfa-at",
        "--epochs",
        "8",
        "--json",
    ]);
    assert_eq!(short["config"]["epochs"], 8);
    assert_eq!(short["config"]["lr_milestones"], serde_json::json!([4, 6]));
    assert_eq!(short["config"]["fawa"]["start_epoch"], 2);
    assert!(
        short["fawa_accepted"].as_u64().unwrap() > 0,
        "{}",
        short["fawa_accepted"]
    );
    // With a configuration file the epochs are the file's: --epochs is refused.
    let out = classwise(&["toy", "multiclass", "--config", p, "--epochs", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--epochs"), "{}", text(&out));
    // The text form names the method and prints the final table.
    succeeds_printing(
        &["toy", "multiclass", "--method", "wat", "--epochs", "2"],
        &["wat/trades", "robust per class"],
    );
}

/// `toy scatter` writes the Figure 1(a) sample: 100 points per class, x₁ = ±1, reproducible.
#[test]
fn scatter_writes_figure_1a_csv() {
    let out = classwise(&["toy", "scatter", "--seed", "5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let csv = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "y,x1,x2");
    assert_eq!(lines.len(), 201);
    let mut flipped = [0, 0];
    for (i, line) in lines[1..].iter().enumerate() {
        let v: Vec<f64> = line.split(',').map(|s| s.parse().unwrap()).collect();
        assert_eq!(v[0], if i < 100 { 1.0 } else { -1.0 });
        assert!(v[1] == 1.0 || v[1] == -1.0);
        flipped[i / 100] += usize::from(v[1] != v[0]);
    }
    // 15% and 30% flips expected; 100 points keep them well inside (0, 60).
    assert!(flipped.iter().all(|&c| c > 0 && c < 60), "{flipped:?}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scatter.csv");
    let out = classwise(&[
        "toy",
        "scatter",
        "--seed",
        "5",
        "--out",
        path.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), csv);
}

/// Bad input exits 1 with a message naming the flag or field, never a panic.
#[test]
fn bad_toy_input_names_the_field() {
    let cases: [(&[&str], &str); 6] = [
        (&["toy", "simulate", "--w", "-1", "--eps", "0.1"], "`w`"),
        (
            &[
                "toy", "simulate", "--w", "1", "--eps", "0.1", "--p-neg", "1.5",
            ],
            "p_neg",
        ),
        (
            &[
                "toy",
                "simulate",
                "--w",
                "1",
                "--eps",
                "0.1",
                "--samples",
                "0",
            ],
            "samples",
        ),
        (&["toy", "fit", "--eps", "0.1,-0.2"], "`eps`"),
        (&["toy", "multiclass", "--method", "madry"], "--method"),
        (&["toy", "multiclass", "--data", "huge"], "--data huge"),
    ];
    for (args, needle) in cases {
        let out = classwise(args).output().unwrap();
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {t}");
        assert!(
            t.contains(needle) && !t.contains("panicked"),
            "{args:?}: {t}"
        );
    }
}

/// The benchmark prints its measurements.
#[test]
fn bench_prints_samples_per_second() {
    succeeds_printing(
        &["toy", "bench", "--samples", "20000", "--d", "3"],
        &["threads 1:", "samples/s", "ms/epoch"],
    );
}

/// `toy ccm` reports the CCM epochs and both baselines.
#[test]
fn ccm_json_reports_epochs_and_baselines() {
    let r = json(&[
        "toy",
        "ccm",
        "--epochs",
        "3",
        "--samples",
        "20000",
        "--json",
    ]);
    assert_eq!(r["ccm"].as_array().unwrap().len(), 3);
    assert_eq!(r["uniform"].as_array().unwrap().len(), 3);
    let e = &r["ccm"][2];
    for key in [
        "eps",
        "train_robust",
        "clean",
        "robust_at_eps",
        "robust_at_2eta",
    ] {
        assert!(
            e[key]["pos"].is_number() && e[key]["neg"].is_number(),
            "{key}: {e}"
        );
    }
    assert!(f(&e["w"]) > 0.0);
    assert!(r["matched"]["w"].is_number());
}

/// `toy sweep` reports one point per w and the paired differences between neighbours.
#[test]
fn sweep_json_reports_points_and_paired_steps() {
    let r = json(&[
        "toy",
        "sweep",
        "--w",
        "0.5,1,2",
        "--eps",
        "0.8",
        "--samples",
        "50000",
        "--json",
    ]);
    let points = r["points"].as_array().unwrap();
    assert_eq!(
        points.iter().map(|p| f(&p["w"])).collect::<Vec<_>>(),
        [0.5, 1.0, 2.0]
    );
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    // Each paired difference equals the difference of the two estimates (same samples).
    for (s, p) in steps.iter().zip(points.windows(2)) {
        for acc in ["clean", "robust_paper", "robust_full"] {
            for c in ["pos", "neg"] {
                let d = f(&p[1][acc][c]["mean"]) - f(&p[0][acc][c]["mean"]);
                assert!((f(&s[acc][c]["mean"]) - d).abs() < 1e-12, "{acc}/{c}");
                assert!(
                    f(&s[acc][c]["se"]) <= f(&p[0][acc][c]["se"]).hypot(f(&p[1][acc][c]["se"]))
                );
            }
        }
    }
}

/// `--config` reruns a report's configuration exactly; a damaged file is an error naming it.
#[test]
fn multiclass_config_file_reproduces_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let first = json(&[
        "toy",
        "multiclass",
        "--method",
        "frl",
        "--epochs",
        "3",
        "--json",
    ]);
    let config = dir.path().join("config.json");
    std::fs::write(&config, first["config"].to_string()).unwrap();
    let path = config.to_str().unwrap();
    let again = json(&["toy", "multiclass", "--config", path, "--json"]);
    assert_eq!(first, again);
    let reseeded = json(&[
        "toy",
        "multiclass",
        "--config",
        path,
        "--seed",
        "9",
        "--json",
    ]);
    assert_eq!(reseeded["config"]["seed"], 9);
    assert_ne!(reseeded["history"], first["history"]);

    std::fs::write(&config, "{\"seed\": 1}").unwrap();
    let out = classwise(&["toy", "multiclass", "--config", path])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("config.json") && t.contains("not a toy run configuration"),
        "{t}"
    );
}
