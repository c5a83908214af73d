//! The closed forms against committed tables computed by independent mpmath scripts in
//! `theory/reference/` (never by this crate).

use classwise_theory::model::{Adversary, Argmax, BinaryModel, Class};
use classwise_theory::normal;
use classwise_theory::tol;

/// Rows of a committed CSV (header skipped) as f64 fields.
fn table(name: &str) -> Vec<Vec<f64>> {
    let path = format!("{}/reference/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|v| v.parse().unwrap_or_else(|e| panic!("{path}: `{v}`: {e}")))
                .collect()
        })
        .collect()
}

#[test]
fn normal_functions_match_mpmath() {
    let rows = table("normal.csv");
    assert!(rows.len() > 400);
    let (mut worst_cdf, mut worst_log) = (0.0f64, 0.0f64);
    for r in &rows {
        let (z, cdf, sf, pdf, log_cdf) = (r[0], r[1], r[2], r[3], r[4]);
        // ln Φ everywhere.
        let e = tol::rel_diff(normal::log_cdf(z), log_cdf);
        assert!(
            e <= tol::LOG_CDF_REL,
            "log_cdf({z}): {} vs {log_cdf}",
            normal::log_cdf(z)
        );
        worst_log = worst_log.max(e);
        if z.abs() <= 37.0 {
            for (name, got, want) in [
                ("cdf", normal::cdf(z), cdf),
                ("sf", normal::sf(z), sf),
                ("pdf", normal::pdf(z), pdf),
            ] {
                let e = tol::rel_diff(got, want);
                assert!(
                    e <= tol::NORMAL_REL,
                    "{name}({z}) = {got:e}, mpmath {want:e}: {e:e}"
                );
                worst_cdf = worst_cdf.max(e);
            }
        } else {
            // Below the normal range the values are subnormal or zero: absolute agreement.
            assert!((normal::cdf(z) - cdf).abs() <= 1e-300, "cdf({z})");
        }
    }
    eprintln!("worst relative error: Φ/Φc/φ {worst_cdf:e}, ln Φ {worst_log:e}");
}

/// One row of `model.csv` (see `reference/model_table.py` for the columns).
struct ModelRow {
    fields: Vec<String>,
}

impl ModelRow {
    fn num(&self, k: usize) -> f64 {
        self.fields[k]
            .parse()
            .unwrap_or_else(|e| panic!("column {k} `{}`: {e}", self.fields[k]))
    }
    fn text(&self, k: usize) -> &str {
        &self.fields[k]
    }
}

fn model_rows() -> Vec<ModelRow> {
    let path = format!("{}/reference/model.csv", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .skip(1)
        .map(|l| ModelRow {
            fields: l.split(',').map(str::to_string).collect(),
        })
        .collect()
}

/// The label the table uses for an argmax: a number, "+inf" or "0+".
fn same_argmax(got: Argmax, want: &str) -> bool {
    match (got, want) {
        (Argmax::PlusInfinity, "+inf") | (Argmax::ZeroPlus, "0+") => true,
        (Argmax::At(w), s) => s
            .parse::<f64>()
            .is_ok_and(|x| tol::rel_diff(w, x) <= tol::MODEL_REL),
        _ => false,
    }
}

/// Check T0: every closed form against the mpmath table (quadrature and value-only search).
#[test]
fn binary_model_matches_the_mpmath_table() {
    let rows = model_rows();
    assert!(rows.len() >= 50, "{} rows", rows.len());
    let mut worst = 0.0f64;
    for (i, r) in rows.iter().enumerate() {
        let d = r.text(0).parse::<u32>().unwrap();
        let (eta, sigma, pp, pn, w, eps) =
            (r.num(1), r.num(2), r.num(3), r.num(4), r.num(5), r.num(6));
        let m = BinaryModel::new(d, eta, sigma, pp, pn).unwrap();
        let ctx = format!("row {i}: d={d} η={eta} σ={sigma} p={pp}/{pn} w={w} ε={eps}");
        let mut expect = |col: usize, got: f64| {
            let e = tol::rel_diff(got, r.num(col));
            worst = worst.max(e);
            assert!(
                e <= tol::MODEL_REL,
                "{ctx}: column {col}: {got:e} vs {:e} ({e:e})",
                r.num(col)
            );
        };
        for (k, y) in Class::BOTH.into_iter().enumerate() {
            expect(7 + k, m.clean_accuracy(y, w).unwrap());
            expect(
                9 + k,
                m.robust_accuracy(y, w, eps, Adversary::Paper).unwrap(),
            );
            expect(
                11 + k,
                m.robust_accuracy(y, w, eps, Adversary::Full).unwrap(),
            );
            expect(
                13 + k,
                m.robust_accuracy(y, w, 2.0 * eta, Adversary::Paper)
                    .unwrap(),
            );
            expect(
                15 + k,
                m.robust_accuracy(y, w, 2.0 * eta, Adversary::Full).unwrap(),
            );
            let ws = m.w_star(y);
            assert!(
                same_argmax(ws, r.text(17 + k)),
                "{ctx}: w*: {ws:?} vs {}",
                r.text(17 + k)
            );
        }
        let wh = m.w_hat(eps).unwrap();
        assert!(
            same_argmax(wh, r.text(19)),
            "{ctx}: ŵ: {wh:?} vs {}",
            r.text(19)
        );
        if eps < 1.0 {
            let full = m.w_hat_full(eps).unwrap();
            let local = full.local_max.map_or(Argmax::ZeroPlus, Argmax::At);
            let want_local = r.text(20);
            assert!(
                (want_local == "none" && full.local_max.is_none())
                    || same_argmax(local, want_local),
                "{ctx}: full local max {:?} vs {want_local}",
                full.local_max
            );
            assert!(
                same_argmax(full.argmax, r.text(21)),
                "{ctx}: full argmax {:?} vs {}",
                full.argmax,
                r.text(21)
            );
        }
    }
    eprintln!("worst relative error of the accuracies: {worst:e}");
}
