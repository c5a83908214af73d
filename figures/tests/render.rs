//! Every figure of `classwise figures theory` and `toy` (quick) renders: a PNG of the declared
//! size, an SVG holding the title and every axis label, the data files, and a gallery that names
//! each image. CFA Figure 1(b) is also checked against the closed forms and independently computed
//! values.

use std::path::Path;

use approx::assert_relative_eq;
use classwise_figures::theory::Fig1b;
use classwise_figures::{Figure, Rendered, write_index};
use classwise_theory::model::{Adversary, Class};
use classwise_theory::theorems::figure1_model;

/// The checks every rendered figure must pass.
fn check_rendered(dir: &Path, figures: &[Rendered]) {
    assert!(!figures.is_empty());
    let mut ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), figures.len(), "figure ids must be unique");
    for f in figures {
        let png = dir.join(format!("{}.png", f.id));
        let img = image::open(&png)
            .unwrap_or_else(|e| panic!("{}: {e}", png.display()))
            .to_rgb8();
        assert_eq!(img.dimensions(), f.size, "{}", f.id);
        // Not a blank canvas: some pixels are dark (text, lines).
        let dark = img
            .pixels()
            .filter(|p| p.0.iter().all(|&c| c < 100))
            .count();
        assert!(dark > 1000, "{}: only {dark} dark pixels", f.id);
        let svg = std::fs::read_to_string(dir.join(format!("{}.svg", f.id))).unwrap();
        assert!(svg.starts_with("<svg"), "{}", f.id);
        assert!(
            svg.contains(&format!("width=\"{}\"", f.size.0))
                && svg.contains(&format!("height=\"{}\"", f.size.1)),
            "{}: SVG size",
            f.id
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{}", f.id);
        assert!(svg.contains(&xml(&f.title)), "{}: title missing", f.id);
        assert!(!f.axis_labels.is_empty(), "{}", f.id);
        for label in &f.axis_labels {
            assert!(
                svg.contains(&xml(label)),
                "{}: axis label {label:?} missing",
                f.id
            );
        }
        let data: Vec<&String> = f.files.iter().filter(|n| n.ends_with(".csv")).collect();
        assert!(!data.is_empty(), "{}: no data file", f.id);
        for name in data {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            assert!(text.lines().count() >= 2, "{name}: no rows");
        }
    }
    let index = write_index(dir, "Figures", "Test gallery.", figures).unwrap();
    let md = std::fs::read_to_string(index).unwrap();
    for f in figures {
        assert!(md.contains(&format!("({}.png)", f.id)), "{}", f.id);
        assert!(md.contains(&f.reproduces), "{}", f.id);
    }
}

/// Text as plotters' SVG backend escapes it.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[test]
fn every_theory_figure_renders() {
    let dir = tempfile::tempdir().unwrap();
    let figures = classwise_figures::theory::render_all(dir.path()).unwrap();
    assert_eq!(figures.len(), 8);
    check_rendered(dir.path(), &figures);
}

#[test]
fn every_toy_figure_renders() {
    let dir = tempfile::tempdir().unwrap();
    let options = classwise_figures::toy::Options {
        quick: true,
        ..Default::default()
    };
    let figures = classwise_figures::toy::render_all(dir.path(), &options).unwrap();
    assert_eq!(figures.len(), 5);
    check_rendered(dir.path(), &figures);
}

/// The 1(b) curves are the closed forms at every w of the grid (recomputed here), the markers
/// are w*₋₁ = 0.635 and w*₊₁ = 1.301 (caveat C3), and the CSV holds the same numbers.
#[test]
fn figure_1b_plots_the_closed_forms() {
    let fig = Fig1b::new().unwrap();
    let m = figure1_model();
    assert_eq!(fig.eps, 0.8);
    assert_eq!(fig.w.len(), 300);
    for (i, &w) in fig.w.iter().enumerate().step_by(37) {
        for (k, y) in [Class::Pos, Class::Neg].into_iter().enumerate() {
            assert_eq!(fig.clean[k][i], m.clean_accuracy(y, w).unwrap());
            assert_eq!(
                fig.robust[k][i],
                m.robust_accuracy(y, w, 0.8, Adversary::Paper).unwrap()
            );
            assert_eq!(
                fig.robust_full[k][i],
                m.robust_accuracy(y, w, 0.8, Adversary::Full).unwrap()
            );
        }
    }
    assert_relative_eq!(fig.w_star[1], 0.635, epsilon = 5e-4);
    assert_relative_eq!(fig.w_star[0], 1.301, epsilon = 5e-4);
    // Check T11's table: at w = 0.1, R₊₁ = 0.33577 (paper) and 0.29913 (full adversary).
    let near = Fig1b::with(m, 0.8, &[0.1]).unwrap();
    assert_relative_eq!(near.robust[0][0], 0.33577, epsilon = 5e-6);
    assert_relative_eq!(near.robust_full[0][0], 0.29913, epsilon = 5e-6);

    let tables = fig.tables();
    let csv = String::from_utf8(tables[0].to_csv().unwrap()).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("w,A_pos,A_neg,R_pos,R_neg,R_full_pos,R_full_neg")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 300);
    assert_eq!(rows[100][0], fig.w[100]);
    assert_eq!(rows[100][4], fig.robust[1][100]);
    let markers = String::from_utf8(tables[1].to_csv().unwrap()).unwrap();
    assert!(markers.starts_with("class,w_star\n+1,1.30"), "{markers}");
}

/// A legend row wider than the figure is broken into rows that fit, in order, and two broken
/// rows alternate piece by piece.
#[test]
fn legend_rows_wrap_to_the_width() {
    use classwise_figures::legend::{Entry, wrap};
    use plotters::prelude::*;
    let mut svg = String::new();
    let root = SVGBackend::with_string(&mut svg, (600, 100)).into_drawing_area();
    let row = |tag: &str| -> Vec<Entry> {
        (0..6)
            .map(|i| Entry::boxed(RGBColor(0, 0, 0), format!("{tag} method number {i}")))
            .collect()
    };
    let labels = |rows: &[Vec<Entry>]| -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|e| e.label.clone()).collect())
            .collect()
    };
    // One short row fits as it is.
    let short = vec![row("a")[..1].to_vec()];
    assert_eq!(labels(&wrap(&root, short.clone())), labels(&short));
    // Six long labels do not fit in 600 pixels: several rows, every entry once, in order.
    let wrapped = wrap(&root, vec![row("a")]);
    assert!(wrapped.len() > 1, "{:?}", labels(&wrapped));
    let flat: Vec<String> = labels(&wrapped).concat();
    assert_eq!(flat, labels(&[row("a")]).concat());
    // Two rows: the pieces alternate, a's first piece, b's first piece, a's second, …
    let two = wrap(&root, vec![row("a"), row("b")]);
    assert_eq!(two.len(), 2 * wrapped.len());
    for (i, r) in two.iter().enumerate() {
        let tag = if i % 2 == 0 { "a" } else { "b" };
        assert!(
            r.iter().all(|e| e.label.starts_with(tag)),
            "{:?}",
            labels(&two)
        );
    }
}
