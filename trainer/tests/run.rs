//! Runs end to end on the synthetic data set: files of a run directory, resume after a stop is
//! bit-identical to an uninterrupted run, and the guards on existing directories.

use classwise_trainer::model::Model;
use classwise_trainer::run::{RunConfig, TrainOptions, train};
use tch::Device;

const CONFIG: &str = r#"
name = "synthetic-test"
seed = 3
epochs = 3
device = "cpu"
batch_size = 16

[data]
source = { kind = "synthetic", classes = 3, train_per_class = 24, test_per_class = 8, channels = 1, side = 16, seed = 5, noise = [0.1, 0.4] }
split = { rule = "first", size = { per-class = 4 } }
augment = { crop_padding = 2, pad_mode = "zero", flip = true }

[model]
num_classes = 3
input_shape = [1, 16, 16]
architecture = { kind = "small_cnn" }

[optimizer]
momentum = 0.9
weight_decay = 5e-4

[schedule]
base = 0.05
pieces = [[2, 0.005]]

[train]
eps = "16/255"
method = { method = "pgd-at", attack = { steps = 2, step = { kind = "absolute", value = 0.03 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } } }

[eval]
eps = "16/255"
attack = { steps = 3, step = { kind = "absolute", value = 0.03 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } }

[ema]
alpha = 0.5
"#;

fn config() -> RunConfig {
    RunConfig::from_toml(CONFIG).unwrap()
}

fn opts() -> TrainOptions {
    TrainOptions::default()
}

fn resume() -> TrainOptions {
    TrainOptions {
        resume: true,
        ..opts()
    }
}

fn stop_after(n: usize) -> TrainOptions {
    TrainOptions {
        stop_after: Some(n),
        ..opts()
    }
}

fn final_state(dir: &std::path::Path) -> Vec<(String, tch::Tensor)> {
    let run = classwise_trainer::run::RunDir(dir.to_path_buf());
    Model::load(&run.weights("last").unwrap(), Device::Cpu)
        .unwrap()
        .state()
}

#[test]
fn a_run_writes_its_directory_and_resumes_bit_identically() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let full = train(&config(), &a, opts()).unwrap();
    let report = full.report.expect("a finished run has a report");
    assert_eq!(report.n_samples, 24);
    for f in [
        "config.toml",
        "env.json",
        "split.json",
        "metrics.jsonl",
        "state.json",
        "report.json",
        "report.md",
    ] {
        assert!(a.join(f).is_file(), "{f} missing");
    }
    assert!(a.join("checkpoints/best.safetensors").is_file());
    let metrics = std::fs::read_to_string(a.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), 3);
    for line in metrics.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["train_robust"].as_array().unwrap().len(), 3);
        assert!(v["test"]["robust_worst"].is_number(), "{line}");
        assert!(!line.contains("null") || line.contains("\"val\":null"));
    }
    // The resolved config parses back to the same run.
    let saved = std::fs::read_to_string(a.join("config.toml")).unwrap();
    assert_eq!(RunConfig::from_toml(&saved).unwrap(), config());

    // Stop after one epoch, then resume: the same final weights, bit for bit.
    let stopped = train(&config(), &b, stop_after(1)).unwrap();
    assert!(stopped.report.is_none());
    assert_eq!(stopped.completed_epochs, 1);
    let resumed = train(&config(), &b, resume()).unwrap();
    assert_eq!(resumed.completed_epochs, 3);
    let (sa, sb) = (final_state(&a), final_state(&b));
    assert_eq!(sa.len(), sb.len());
    for ((na, ta), (nb, tb)) in sa.iter().zip(&sb) {
        assert_eq!(na, nb);
        assert!(ta.equal(tb), "{na} differs after resume");
    }
    assert_eq!(
        std::fs::read_to_string(b.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    let ra: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("report.json")).unwrap()).unwrap();
    let rb: serde_json::Value =
        serde_json::from_slice(&std::fs::read(b.join("report.json")).unwrap()).unwrap();
    assert_eq!(ra, rb);
}

#[test]
fn existing_runs_and_changed_configs_are_guarded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let e = train(&config(), &dir, resume()).err().unwrap();
    assert!(e.to_string().contains("--resume"), "{e}");
    train(&config(), &dir, stop_after(1)).unwrap();
    let e = train(&config(), &dir, opts()).err().unwrap();
    assert!(e.to_string().contains("--resume"), "{e}");
    let mut changed = config();
    changed.train.beta = 1.0;
    let e = train(&changed, &dir, resume()).err().unwrap();
    assert!(e.to_string().contains("--force"), "{e}");
    let done = train(
        &changed,
        &dir,
        TrainOptions {
            resume: true,
            force: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(done.completed_epochs, 3);
}

#[test]
fn bad_configs_name_the_field() {
    for (from, to, field) in [
        ("epochs = 3", "epochs = 0", "epochs"),
        ("eps = \"16/255\"\nmethod", "eps = \"16/0\"\nmethod", "eps"),
        ("num_classes = 3", "num_classes = 0", "num_classes"),
        ("momentum = 0.9", "momentum = 1.9", "optimizer.momentum"),
        ("batch_size = 16", "batch_size = 16\nbogus = 1", "bogus"),
    ] {
        let text = CONFIG.replacen(from, to, 1);
        assert_ne!(text, CONFIG, "{from}");
        let e = RunConfig::from_toml(&text).err().unwrap().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    // The data's class count must match the model's.
    let text = CONFIG.replace("num_classes = 3", "num_classes = 4");
    let tmp = tempfile::tempdir().unwrap();
    let e = train(&RunConfig::from_toml(&text).unwrap(), tmp.path(), opts())
        .err()
        .unwrap();
    assert!(e.to_string().contains("model.num_classes"), "{e}");
}
