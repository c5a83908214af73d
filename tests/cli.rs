//! End-to-end tests of the `classwise` binary.

use std::path::Path;
use std::process::Command;

mod common;

use common::{FIG1, classwise, text};

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
    for f in classwise_trainer::paths::FASHION_MNIST_FILES {
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
    assert!(
        scale > 0.0 && diff / scale < classwise_trainer::gradcheck::GRAD_REL_TOL,
        "{diff} / {scale}"
    );
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

#[test]
fn theory_verify_prints_the_table_and_exits_zero() {
    let out = classwise(&["theory", "verify", "--cases", "50"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for needle in [
        "T1",
        "CFA Theorem 4",
        "WAT Theorem 2",
        "C1",
        "W4",
        "confirmed",
        "all hold",
    ] {
        assert!(t.contains(needle), "verify output lacks `{needle}`:\n{t}");
    }
    let out = classwise(&["theory", "verify", "--cases", "20", "--json"])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = r["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["passed"] == c["cases"]), "{r}");
    let errata: Vec<&str> = r["errata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    for id in [
        "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "W1", "W2", "W3", "W4", "W5", "W6",
    ] {
        assert!(errata.contains(&id), "erratum {id} missing from {errata:?}");
    }
}

#[test]
fn theory_eval_json_has_the_documented_shape() {
    // CFA Figure 1 setting at the paper's ε = 2η = 0.8 (check T11's table, w = 2).
    let mut args = vec!["theory", "eval"];
    args.extend(FIG1);
    args.extend(["--w", "2", "--eps", "0.8", "--json"]);
    let out = classwise(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let num = |x: &serde_json::Value| x.as_f64().unwrap();
    assert!((num(&v["robust_paper"]["pos"]) - 0.83363).abs() < 1e-5);
    assert!((num(&v["robust_full"]["pos"]) - 0.42500).abs() < 1e-5);
    assert!((num(&v["robust_paper"]["neg"]) - 0.68669).abs() < 1e-5);
    assert!((num(&v["robust_full"]["neg"]) - 0.35000).abs() < 1e-5);
    assert!((num(&v["w_star"]["pos"]) - 1.30095).abs() < 1e-5);
    // ε = 0.8 ≥ η: ŵ does not exist; the full optimum is past ε < 1 too.
    assert_eq!(v["w_hat"], "+inf");
    for key in [
        "params",
        "clean",
        "robust_paper_2eta",
        "robust_full_2eta",
        "w_hat_full",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
}

/// `theory verify --cases 0` would check nothing and say "all hold": refused.
#[test]
fn theory_verify_needs_at_least_one_case() {
    let out = classwise(&["theory", "verify", "--cases", "0"])
        .output()
        .unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("--cases") && !t.contains("all hold"), "{t}");
}

#[test]
fn theory_eval_batch_matches_the_mpmath_table_and_reports_bad_lines() {
    let table = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/theory/reference/model.csv"
    ))
    .unwrap();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .take(12)
        .map(|l| l.split(',').collect())
        .collect();
    let mut input = String::new();
    for r in &rows {
        input += &format!(
            "{{\"d\":{},\"eta\":{},\"sigma\":{},\"p_pos\":{},\"p_neg\":{},\"w\":{},\"eps\":{}}}\n",
            r[0], r[1], r[2], r[3], r[4], r[5], r[6]
        );
    }
    // Two bad lines in the middle: a probability out of range and a missing field.
    input += "{\"d\":1,\"eta\":0.4,\"sigma\":1,\"p_pos\":1.5,\"p_neg\":0.7,\"w\":1,\"eps\":0.1}\n";
    input += "{\"d\":1,\"eta\":0.4,\"sigma\":1,\"p_pos\":0.8,\"w\":1,\"eps\":0.1}\n";
    let first = input.lines().next().unwrap().to_owned();
    input += &first;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batch.jsonl");
    std::fs::write(&path, &input).unwrap();
    let out = classwise(&["theory", "eval", "--batch", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "bad lines give exit status 1");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines.len(),
        rows.len() + 3,
        "one output line per input line"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let n = rows.len();
    assert_eq!(lines[n]["line"], n + 1);
    assert!(
        lines[n]["error"].as_str().unwrap().contains("p_pos"),
        "{}",
        lines[n]
    );
    assert_eq!(lines[n + 1]["line"], n + 2);
    assert!(
        lines[n + 1]["error"].as_str().unwrap().contains("p_neg"),
        "{}",
        lines[n + 1]
    );
    assert!(stderr.contains(&format!("line {}", n + 1)), "{stderr}");
    assert!(
        lines[n + 2].get("clean").is_some(),
        "processing continued after the bad lines"
    );
    // Accuracies agree with the independent table to 1e-12 relative.
    let cols = [
        ("clean", 7),
        ("robust_paper", 9),
        ("robust_full", 11),
        ("robust_paper_2eta", 13),
        ("robust_full_2eta", 15),
    ];
    for (r, v) in rows.iter().zip(&lines) {
        for (key, col) in cols {
            for (k, class) in ["pos", "neg"].into_iter().enumerate() {
                let want: f64 = r[col + k].parse().unwrap();
                let got = v[key][class].as_f64().unwrap();
                let rel = (got - want).abs() / want.abs().max(got.abs());
                assert!(rel <= 1e-12, "{key}.{class}: {got} vs {want} ({rel:e})");
            }
        }
    }
}
