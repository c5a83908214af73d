//! The committed results are regenerable: `classwise compare` on the committed run records of
//! the Fashion-MNIST study's CFA table (`results/fmnist/cfa/runs/`) writes the committed
//! `compare.md`, `claims.md` and every other text output (CSV, JSON, the gallery's index) of
//! `results/fmnist/cfa/compare/` byte for byte. The figures' images are not compared (their
//! pixels depend on the fonts installed); their CSV data is. So do the ledger's comparisons
//! across tables: the registered versions of the revised claims (`results/fmnist/registered/`)
//! and the runs one by one (`results/fmnist/scale/`), whose table the ledger quotes.

mod common;

use std::path::Path;

use common::{classwise, text};

/// Runs `classwise compare ARGS --out TMP` in the repository's root (with relative inputs, as
/// results/fmnist/README.md runs it: the outputs name them) and checks that every text file of
/// the committed `dir` comes back byte for byte, `must` among them; returns the folder written.
fn reproduces(args: &[&str], dir: &str, must: &[&str]) -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = root.join(dir);
    let tmp = tempfile::tempdir().unwrap();
    let out = classwise(&["compare"])
        .args(args)
        .arg("--out")
        .arg(tmp.path())
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut compared = Vec::new();
    for entry in std::fs::read_dir(&committed).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.ends_with(".md") || name.ends_with(".csv") || name.ends_with(".json")) {
            continue;
        }
        let want = std::fs::read(&path).unwrap();
        let got = std::fs::read(tmp.path().join(&name))
            .unwrap_or_else(|e| panic!("compare did not write {name}: {e}"));
        assert!(
            got == want,
            "{dir}/{name} differs from the committed one:\n{}",
            String::from_utf8_lossy(&got)
        );
        compared.push(name);
    }
    for name in must {
        assert!(
            compared.iter().any(|n| n == name),
            "no committed {dir}/{name}"
        );
    }
    tmp
}

#[test]
fn the_committed_cfa_table_is_reproduced_byte_for_byte() {
    let args = [
        "results/fmnist/cfa",
        "--claims",
        "results/fmnist/claims.toml",
    ];
    let must = ["compare.md", "claims.md", "compare.csv", "runs.md"];
    reproduces(&args, "results/fmnist/cfa/compare", &must);
}

/// The tables the ledger runs across the study's tables (the command lines of its "Registered
/// and revised verdicts" and "Scale" sections).
const ACROSS: [&str; 5] = [
    "results/fmnist/cfa",
    "results/fmnist/wat",
    "results/fmnist/tian",
    "results/fmnist/tian-cfa-scaling",
    "results/fmnist/bat",
];
const LABEL: [&str; 2] = ["--label", "results/fmnist/tian-cfa-scaling=cfa-scaling"];

#[test]
fn the_registered_verdicts_are_reproduced_byte_for_byte() {
    let args = [
        &[ACROSS[0], ACROSS[2], ACROSS[3]][..],
        &LABEL,
        &[
            "--no-figures",
            "--claims",
            "results/fmnist/claims-registered.toml",
        ],
    ]
    .concat();
    let tmp = reproduces(
        &args,
        "results/fmnist/registered",
        &["claims.md", "claims.json"],
    );
    // As registered, C16 is refuted under both countings and C15 under clean-and-adversarial.
    let md = std::fs::read_to_string(tmp.path().join("claims.md")).unwrap();
    assert!(md.contains("| -9.1 [-9.4, -8.8] | refuted |"), "{md}");
    assert!(md.contains("| -2.4 [-4.4, -0.4] | refuted |"), "{md}");
    assert!(
        md.contains("| s0: -0.6, s1: +0.0 | -0.3 [-4.1, +3.5] | inconclusive |"),
        "{md}"
    );
}

#[test]
fn the_scale_tables_are_reproduced_and_quoted_by_the_ledger() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for model in ["last", "best"] {
        let args = [&ACROSS[..], &LABEL, &["--model", model, "--no-figures"]].concat();
        reproduces(
            &args,
            &format!("results/fmnist/scale/{model}"),
            &["runs.md"],
        );
    }
    // The ledger quotes the last models' table as it is: every row of it, verbatim.
    let ledger = std::fs::read_to_string(root.join("results/fmnist/README.md")).unwrap();
    let table = std::fs::read_to_string(root.join("results/fmnist/scale/last/runs.md")).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() > 10, "{table}");
    for row in rows {
        assert!(ledger.contains(row), "the ledger lacks the row\n{row}");
    }
}
