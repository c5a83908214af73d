//! End-to-end tests of the `classwise` binary.

use std::path::Path;
use std::process::{Command, Output};

fn classwise(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_classwise"));
    cmd.args(args).env_remove("CLASSWISE_DATA_DIR");
    cmd
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn doctor_reports_the_pinned_versions_and_the_real_fashion_mnist() {
    let out = classwise(&["doctor", "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json is not JSON ({e}):\n{}", text(&out)));
    assert!(
        out.status.success(),
        "doctor found problems (run `cargo xtask setup`): {}",
        report["problems"]
    );
    assert_eq!(report["tch_version"], "0.26.0");
    let loaded = report["libtorch"]["loaded_version"].as_str().unwrap();
    assert!(loaded.starts_with("2.13.0"), "loaded libtorch {loaded}");
    assert!(report["libtorch"]["loaded_lib_dir"].is_string());
    assert!(report["threads"]["intra_op"].as_i64().unwrap() >= 1);
    let fm = &report["datasets"][0];
    assert_eq!(fm["id"], "fashion-mnist");
    assert_eq!(fm["status"], "found", "{fm}");
    assert_eq!(fm["train"], 60_000);
    assert_eq!(fm["test"], 10_000);
    assert_eq!(report["problems"].as_array().unwrap().len(), 0);
}

#[test]
fn doctor_text_names_versions_devices_and_data() {
    let out = classwise(&["doctor"]).output().unwrap();
    let t = text(&out);
    for needle in [
        "tch                  0.26.0",
        "libtorch             2.13.0",
        "library directory",
        "CUDA",
        "cuDNN",
        "threads",
        "Fashion-MNIST",
        "CIFAR-10",
    ] {
        assert!(t.contains(needle), "doctor output lacks `{needle}`:\n{t}");
    }
}

#[test]
fn doctor_fails_with_an_actionable_message_when_data_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = classwise(&["doctor", "--data-dir", d]).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("Fashion-MNIST not found"), "{t}");
    assert!(
        t.contains(d),
        "the message names the searched directory:\n{t}"
    );
    assert!(t.contains("cargo xtask setup"), "{t}");
    assert!(t.contains("train-images-idx3-ubyte.gz"), "{t}");
}

#[test]
fn doctor_reports_damaged_fashion_mnist_files() {
    let dir = tempfile::tempdir().unwrap();
    let fm = dir.path().join("fashion-mnist");
    std::fs::create_dir_all(&fm).unwrap();
    for f in [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ] {
        std::fs::write(fm.join(f), b"truncated download").unwrap();
    }
    let out = classwise(&["doctor", "--data-dir", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("damaged"), "{t}");
    assert!(t.contains("train-images-idx3-ubyte.gz"), "{t}");
}

#[test]
fn demo_writes_its_outputs_to_one_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("demo");
    let out = classwise(&["demo", "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("libtorch self-check"), "{t}");
    let read = |name: &str| -> serde_json::Value {
        let p = out_dir.join(name);
        serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
    };
    let g = read("gradcheck.json");
    let a = g["autograd"].as_array().unwrap();
    let f = g["finite_difference"].as_array().unwrap();
    assert_eq!(a.len(), 128);
    // Recompute the agreement from the written numbers rather than trusting the printed one.
    let scale = f
        .iter()
        .map(|v| v.as_f64().unwrap().abs())
        .fold(0.0, f64::max);
    let diff = a
        .iter()
        .zip(f)
        .map(|(x, y)| (x.as_f64().unwrap() - y.as_f64().unwrap()).abs())
        .fold(0.0, f64::max);
    assert!(scale > 0.0 && diff / scale < 1e-6, "{diff} / {scale}");
    assert_eq!(read("doctor.json")["tch_version"], "0.26.0");
    assert!(Path::new(&out_dir.join("summary.txt")).exists());
}

#[test]
fn bad_arguments_are_reported_not_panicked() {
    let out = classwise(&["doctor", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("--no-such-flag"));
}

/// The link arguments of trainer/build_support.rs: an rpath to libtorch's lib directory, and
/// libtorch_cuda kept as a dependency (`--no-as-needed`) so a CUDA libtorch is never dropped.
#[test]
fn binary_keeps_libtorch_cuda_and_has_an_rpath_to_libtorch() {
    let out = Command::new("readelf")
        .args(["-d", env!("CARGO_BIN_EXE_classwise")])
        .output()
        .expect("readelf (binutils) runs");
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    for lib in ["libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so"] {
        assert!(needed.contains(&lib), "{lib} not in NEEDED {needed:?}");
    }
    let rpath = dynamic
        .lines()
        .find(|l| l.contains("(RUNPATH)") || l.contains("(RPATH)"))
        .unwrap_or_else(|| panic!("no rpath:\n{dynamic}"));
    let dir = rpath.split('[').nth(1).unwrap().trim_end_matches(']');
    assert!(
        dir.split(':')
            .any(|d| Path::new(d).join("libtorch_cpu.so").exists()),
        "rpath {dir} has no libtorch_cpu.so"
    );
}
