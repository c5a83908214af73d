//! Helpers shared by the end-to-end tests.

use std::path::Path;
use std::process::{Command, Output};

/// The `classwise` binary with `args`, without a data-dir override from the environment.
pub fn classwise(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_classwise"));
    cmd.args(args).env_remove("CLASSWISE_DATA_DIR");
    cmd
}

/// stdout followed by stderr, for failure messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The model flags of CFA Figure 1: d = 1, η = 0.4, σ² = 0.6, p = 0.85/0.7.
#[allow(dead_code)] // Each test file compiles this module; not all use every item.
pub const FIG1: [&str; 10] = [
    "--d",
    "1",
    "--eta",
    "0.4",
    "--sigma",
    "0.7745966692414834",
    "--p-pos",
    "0.85",
    "--p-neg",
    "0.7",
];

/// A file of a run's last complete checkpoint (the one `state.json` names).
#[allow(dead_code)]
pub fn last_checkpoint_file(run: &std::path::Path, file: &str) -> Vec<u8> {
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("state.json")).unwrap()).unwrap();
    let ck = state["checkpoint"].as_str().unwrap().to_string();
    std::fs::read(run.join("checkpoints").join(ck).join(file)).unwrap()
}

/// A run's `metrics.jsonl` lines without their wall times, to compare an interrupted run with a
/// whole one.
#[allow(dead_code)]
pub fn metrics_without_times(run: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            for k in [
                "seconds",
                "train_seconds",
                "train_images_per_second",
                "eval_seconds",
            ] {
                v.as_object_mut().unwrap().remove(k);
            }
            v
        })
        .collect()
}

/// Writes a tiny CIFAR-10 in its real binary format into `root/cifar-10-batches-bin`: five
/// training files and a test file of `per_file` records, labels cycling through the classes,
/// each image one grey level per class (learnable in a step).
#[allow(dead_code)]
pub fn write_tiny_cifar10(root: &Path, per_file: usize) {
    let dir = root.join("cifar-10-batches-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let files = (1..=5)
        .map(|i| format!("data_batch_{i}.bin"))
        .chain(["test_batch.bin".to_string()]);
    for (f, name) in files.enumerate() {
        let mut bytes = Vec::new();
        for i in 0..per_file {
            let label = ((i + f) % 10) as u8;
            bytes.push(label);
            bytes.extend(std::iter::repeat_n(20 * label, 3 * 1024));
        }
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}
