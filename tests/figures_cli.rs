//! End-to-end tests of `classwise figures theory|toy`: every image the gallery names exists with
//! its data, and a bad output path is reported with the path.

mod common;

use common::{classwise, text};

/// The ids `index.md` shows as images, in order.
fn gallery_ids(md: &str) -> Vec<String> {
    md.lines()
        .filter_map(|l| l.strip_prefix("!["))
        .filter_map(|l| l.split("](").nth(1))
        .filter_map(|l| l.strip_suffix(".png)"))
        .map(str::to_owned)
        .collect()
}

fn check_gallery(args: &[&str], expected_min: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("figs");
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--out", out_dir.to_str().unwrap()]);
    let out = classwise(&full).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", text(&out));
    let md = std::fs::read_to_string(out_dir.join("index.md")).unwrap();
    let ids = gallery_ids(&md);
    assert!(ids.len() >= expected_min, "{ids:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{} figures in", ids.len())),
        "{stdout}"
    );
    for id in &ids {
        for ext in ["png", "svg"] {
            let p = out_dir.join(format!("{id}.{ext}"));
            assert!(p.is_file(), "{} missing", p.display());
        }
        // The data: `<id>.csv` or `<id>-<table>.csv`, each linked from the gallery.
        let data: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| {
                n.ends_with(".csv")
                    && (n == &format!("{id}.csv") || n.starts_with(&format!("{id}-")))
            })
            .collect();
        assert!(!data.is_empty(), "{id}: no data file");
        for n in &data {
            assert!(
                md.contains(&format!("[{n}]({n})")),
                "{n} not in the gallery"
            );
        }
        assert!(md.contains(&format!("[{id}.svg]({id}.svg)")), "{id}");
        assert!(stdout.contains(id.as_str()), "{id} not reported");
    }
    // Nothing half-written is left behind.
    for entry in std::fs::read_dir(&out_dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(!name.contains(".tmp"), "{name}");
    }
}

#[test]
fn theory_figures_and_gallery() {
    check_gallery(&["figures", "theory"], 8);
}

#[test]
fn toy_figures_and_gallery() {
    check_gallery(&["figures", "toy", "--quick", "--seed", "3"], 5);
}

#[test]
fn an_output_path_that_is_a_file_is_reported() {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    let path = tmp.path().to_str().unwrap();
    let out = classwise(&["figures", "theory", "--out", path])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains(path), "{msg}");
}
