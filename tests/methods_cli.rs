//! End-to-end tests of the presets of WAT, FRL, CSL, BAT, MART and Tian et al.'s class-wise β
//! on the real Fashion-MNIST, each shortened with `--set`: every preset trains, logs its rule's
//! per-class state in `metrics.jsonl` as the rule's formula says (recomputed here from the
//! logged measurements), and resumes bit-identically; bad compositions are refused.

mod common;

use std::path::Path;

use common::{classwise, last_checkpoint_file, metrics_without_times, text};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Two short epochs on 20 training images per class, 10 validation and test images per class.
const SHORT: [&str; 7] = [
    "epochs=2",
    "schedule.pieces=[]",
    "data.train_per_class=20",
    "data.test_per_class=10",
    "eval.val_per_class=10",
    "eval.test_per_class=10",
    "train.eps_warmup_epochs=0",
];

/// `classwise train` of `configs/<preset>.toml` into `out` with [`SHORT`] and `extra` arguments;
/// returns the combined output.
fn train(preset: &str, out: &Path, extra: &[&str]) -> String {
    let config = root().join(format!("configs/{preset}.toml"));
    let mut args = vec![
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    for s in SHORT {
        args.extend(["--set", s]);
    }
    args.extend(extra);
    let o = classwise(&args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    text(&o)
}

fn lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}, class {k}: {g} vs {w}");
    }
}

fn not_all_equal(v: &[f64]) -> bool {
    v.iter().any(|x| *x != v[0])
}

/// Trains `preset` whole into `a` and, stopped after one epoch and resumed, into `b`; both end
/// with the same weights, metrics and report.
fn assert_resumes_bit_identically(preset: &str, a: &Path, b: &Path, extra: &[&str]) {
    let stop: Vec<&str> = extra.iter().copied().chain(["--stop-after", "1"]).collect();
    train(preset, b, &stop);
    let resume: Vec<&str> = extra.iter().copied().chain(["--resume"]).collect();
    train(preset, b, &resume);
    assert_eq!(
        last_checkpoint_file(a, "model.safetensors"),
        last_checkpoint_file(b, "model.safetensors"),
        "{preset}: weights after resume"
    );
    assert_eq!(
        metrics_without_times(a),
        metrics_without_times(b),
        "{preset}: metrics"
    );
    assert_eq!(
        std::fs::read(a.join("report.json")).unwrap(),
        std::fs::read(b.join("report.json")).unwrap(),
        "{preset}: report"
    );
}

/// WAT: the plan of epoch 1 is the Hedge weights of epoch 0's logged validation costs
/// (K·softmax(η·c), sample weight w_y + w_K, not rescaled, WAT eq. (12) as
/// `boqili/WAT` normalises it), the logged weights are those, and the run resumes exactly.
#[test]
fn wat_weights_follow_the_logged_costs_and_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    train("fmnist-wat", &a, &[]);
    let l = lines(&a);
    assert_eq!(l.len(), 2);
    assert_eq!(l[0]["rule"], "wat");
    // All K + 1 weights start at 1, so a sample weighs w_y + w_K = 2 (the loss not rescaled).
    assert_eq!(floats(&l[0]["plan"]["natural_weight"]), vec![2.0; 10]);
    let c = floats(&l[0]["rule_state"]["last_costs"]);
    assert_eq!(c.len(), 11, "K class costs and the average");
    let e: Vec<f64> = c.iter().map(|x| (0.5 * x).exp()).collect();
    let sum: f64 = e.iter().sum();
    let w: Vec<f64> = e.iter().map(|x| 10.0 * x / sum).collect();
    assert_close(
        &floats(&l[0]["rule_state"]["weights"]),
        &w,
        1e-12,
        "weights",
    );
    let want: Vec<f64> = (0..10).map(|k| w[k] + w[10]).collect();
    let got = floats(&l[1]["plan"]["natural_weight"]);
    assert_close(&got, &want, 1e-12, "epoch 1 natural weights");
    assert_close(
        &floats(&l[1]["plan"]["boundary_weight"]),
        &want,
        1e-12,
        "boundary",
    );
    assert!(not_all_equal(&got), "{got:?}");
    // WAT's output rule chose an epoch.
    let selection: Value =
        serde_json::from_slice(&std::fs::read(a.join("selection.json")).unwrap()).unwrap();
    assert_eq!(selection["strategy"]["kind"], "wat");
    assert_resumes_bit_identically("fmnist-wat", &a, &b, &[]);
}

/// CSL: epoch 1's weights are 1 + γ·(r_k − r̄) (clipped at 0, rescaled to mean 1) from epoch
/// 0's logged validation robust accuracy (r_k = 1 − robust_k, under the preset's counting).
#[test]
fn csl_weights_follow_the_logged_robust_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    // Enough images that the first epoch leaves some classes robust and others not.
    train("fmnist-csl", &a, &["--set", "data.train_per_class=200"]);
    let l = lines(&a);
    assert_eq!(l[0]["rule"], "csl");
    assert_eq!(floats(&l[0]["plan"]["natural_weight"]), vec![1.0; 10]);
    let r: Vec<f64> = floats(&l[0]["val"]["robust"])
        .iter()
        .map(|x| 1.0 - x)
        .collect();
    let mean_r = r.iter().sum::<f64>() / 10.0;
    let w: Vec<f64> = r
        .iter()
        .map(|x| (1.0 + 0.5 * (x - mean_r)).max(0.0))
        .collect();
    let total: f64 = w.iter().sum();
    let want: Vec<f64> = w.iter().map(|x| x * 10.0 / total).collect();
    assert_close(&floats(&l[1]["plan"]["natural_weight"]), &want, 1e-9, "csl");
    assert_close(
        &floats(&l[0]["rule_state"]["weights"]),
        &want,
        1e-9,
        "state",
    );
    assert!(not_all_equal(&want), "{want:?}");
}

/// Tian et al.'s class-wise β is the plan of every epoch; BAT and MART train and report. BAT,
/// asked to, logs the confusion counts of its training inputs, whose diagonal over the row sums
/// is its t_k, and its attack's mean steps per class (BAT Figs. 2b and 3); MART's fixed-step
/// attack logs no steps and, not asked, no confusion.
#[test]
fn class_beta_bat_and_mart_train() {
    let tmp = tempfile::tempdir().unwrap();
    let beta = tmp.path().join("beta");
    train("fmnist-trades-classwise-beta", &beta, &[]);
    let mut want = vec![6.0; 10];
    want[0] = 0.5;
    for l in lines(&beta) {
        assert_eq!(l["rule"], "class-beta");
        assert_eq!(floats(&l["plan"]["beta"]), want);
    }
    for preset in ["fmnist-bat", "fmnist-mart"] {
        let dir = tmp.path().join(preset);
        let bat = preset == "fmnist-bat";
        train(
            preset,
            &dir,
            if bat {
                &["--set", "train.log_confusion=true"]
            } else {
                &[]
            },
        );
        let l = lines(&dir);
        assert_eq!(l.len(), 2, "{preset}");
        for line in &l {
            assert_eq!(line["schema"], 3);
            if bat {
                let robust = floats(&line["train_robust"]);
                let rows = line["train_confusion"].as_array().unwrap();
                assert_eq!(rows.len(), 10);
                for (k, row) in rows.iter().enumerate() {
                    let row = floats(row);
                    let total: f64 = row.iter().sum();
                    assert!(total > 0.0, "class {k} has training images");
                    assert_eq!(row[k] / total, robust[k], "class {k}: diagonal / row = t_k");
                }
                let steps = floats(&line["train_attack_steps"]);
                assert_eq!(steps.len(), 10);
                // BAT's attack: at most its 10 steps; not every class stops at the same step.
                assert!(steps.iter().all(|s| (0.0..=10.0).contains(s)), "{steps:?}");
                assert!(not_all_equal(&steps), "{steps:?}");
            } else {
                assert!(line.get("train_attack_steps").is_none(), "{line}");
                assert!(line.get("train_confusion").is_none(), "{line}");
            }
            let loss = line["train_loss"].as_f64().unwrap();
            assert!(loss.is_finite() && loss > 0.0, "{preset}: {loss}");
            assert!(
                floats(&line["train_robust"])
                    .iter()
                    .all(|t| (0.0..=1.0).contains(t))
            );
        }
        let config = std::fs::read_to_string(dir.join("config.toml")).unwrap();
        let method = preset.trim_start_matches("fmnist-");
        assert!(
            config.contains(&format!("method = \"{method}\"")),
            "{config}"
        );
        assert!(dir.join("report.json").exists(), "{preset}");
    }
}

/// FRL fine-tunes another run: the multipliers of epoch 0 come from the starting model's
/// validation errors (so epoch 0 is already reweighted), `init.json` names the source, epoch 1's
/// weights follow the logged multipliers (K·(1/K + λ_k − mean λ), ε·clamp(exp(2·λ₂), 0.98, 3)),
/// and the run resumes bit-identically. FRL-RW keeps ε.
#[test]
fn frl_fine_tunes_a_trades_run_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let start = tmp.path().join("trades");
    train("fmnist-trades", &start, &["--set", "epochs=1"]);
    let init = format!("train.init_from.path={}", start.display());
    let extra = ["--set", init.as_str()];
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    train("fmnist-frl-rwrm", &a, &extra);
    let record: Value =
        serde_json::from_slice(&std::fs::read(a.join("init.json")).unwrap()).unwrap();
    assert_eq!(record["checkpoint"], "last");
    assert_eq!(
        record["fingerprint"].as_str().unwrap().len(),
        64,
        "{record}"
    );
    let l = lines(&a);
    assert_eq!(l[0]["rule"], "frl");
    let plan0 = &l[0]["plan"];
    assert!(
        not_all_equal(&floats(&plan0["natural_weight"])),
        "epoch 0 is reweighted from the starting model: {plan0}"
    );
    let lambda = |name: &str| floats(&l[0]["rule_state"][name]);
    let weights = |lam: &[f64]| -> Vec<f64> {
        let mean = lam.iter().sum::<f64>() / 10.0;
        lam.iter().map(|x| 10.0 * (0.1 + x - mean)).collect()
    };
    let plan1 = &l[1]["plan"];
    assert_close(
        &floats(&plan1["natural_weight"]),
        &weights(&lambda("lambda0")),
        1e-12,
        "natural",
    );
    assert_close(
        &floats(&plan1["boundary_weight"]),
        &weights(&lambda("lambda1")),
        1e-12,
        "boundary",
    );
    let eps: Vec<f64> = lambda("lambda2")
        .iter()
        .map(|x| 0.1 * (2.0 * x).exp().clamp(0.98, 3.0))
        .collect();
    assert_close(&floats(&plan1["eps"]), &eps, 1e-12, "eps");
    let step = eps.iter().fold(0.0f64, |m, e| m.max(e / 4.0));
    assert!((plan1["step_size"].as_f64().unwrap() - step).abs() < 1e-12);
    assert_resumes_bit_identically("fmnist-frl-rwrm", &a, &b, &extra);

    let rw = tmp.path().join("rw");
    train("fmnist-frl-rw", &rw, &extra);
    for line in lines(&rw) {
        assert_eq!(floats(&line["plan"]["eps"]), vec![0.1; 10]);
        assert!(line["plan"]["step_size"].is_null());
    }
}

/// A rule on a base its paper does not define it on, and a missing starting run, are refused
/// before training, naming the field.
#[test]
fn bad_compositions_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    // The output of a `train` of `preset` into `out` with `sets`, which must fail.
    let refused = |preset: &str, out: &str, sets: &[&str]| {
        let config = root().join(format!("configs/{preset}.toml"));
        let out = tmp.path().join(out);
        let mut args = vec![
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = classwise(&args).output().unwrap();
        let t = text(&o);
        assert!(!o.status.success(), "{t}");
        assert!(!t.contains("panicked"), "{t}");
        assert!(!out.exists(), "nothing is written: {t}");
        t
    };
    let t = refused("fmnist-mart", "x", &["rule.kind=wat", "rule.eta=0.1"]);
    assert!(
        t.contains("train.method") && t.contains("trades for the `wat` rule"),
        "{t}"
    );
    let missing = tmp.path().join("no-such-run");
    let set = format!("train.init_from.path={}", missing.display());
    let t = refused("fmnist-frl-rwrm", "y", &[&set]);
    assert!(
        t.contains("train.init_from.path") && t.contains("no-such-run"),
        "{t}"
    );
    let t = refused(
        "fmnist-frl-rwrm",
        "z",
        &["train.init_from.checkpoint=first"],
    );
    assert!(
        t.contains("train.init_from.checkpoint") && t.contains("last, best or ema"),
        "{t}"
    );
}
