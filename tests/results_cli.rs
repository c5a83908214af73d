//! The committed results are regenerable: `classwise compare` on the committed run records of
//! the Fashion-MNIST study's CFA table (`results/fmnist/cfa/runs/`) writes the committed
//! `compare.md`, `claims.md` and every other text output (CSV, JSON, the gallery's index) of
//! `results/fmnist/cfa/compare/` byte for byte. The figures' images are not compared (their
//! pixels depend on the fonts installed); their CSV data is.

mod common;

use std::path::Path;

use common::{classwise, text};

#[test]
fn the_committed_cfa_table_is_reproduced_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let committed = root.join("results/fmnist/cfa/compare");
    let tmp = tempfile::tempdir().unwrap();
    // The command of results/fmnist/README.md, run where it is run: in the repository's root,
    // with relative inputs (the outputs name them).
    let out = classwise(&["compare", "results/fmnist/cfa", "--out"])
        .arg(tmp.path())
        .args(["--claims", "results/fmnist/claims.toml"])
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
            "{name} differs from the committed one:\n{}",
            String::from_utf8_lossy(&got)
        );
        compared.push(name);
    }
    for name in ["compare.md", "claims.md", "compare.csv"] {
        assert!(compared.iter().any(|n| n == name), "no committed {name}");
    }
}
