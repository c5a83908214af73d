//! Cross-checks by computations independent of the closed forms, over the whole parameter
//! space: accuracies by numerical quadrature of the Gaussian density of T (never Φ),
//! and argmaxes by a value-only bracketing maximiser (golden section), never the logit formulas.

mod common;

use classwise_theory::model::{Adversary, Argmax, BinaryModel, Class};
use proptest::prelude::*;

/// Adaptive Simpson quadrature of the N(mu, s²) density over [a, b] with absolute tolerance `tol`.
fn density_integral(mu: f64, s: f64, a: f64, b: f64, tol: f64) -> f64 {
    let f = |t: f64| {
        let z = (t - mu) / s;
        (-0.5 * z * z).exp() / (s * (2.0 * std::f64::consts::PI).sqrt())
    };
    fn simpson(a: f64, b: f64, fa: f64, fm: f64, fb: f64) -> f64 {
        (b - a) / 6.0 * (fa + 4.0 * fm + fb)
    }
    #[allow(clippy::too_many_arguments)]
    fn adapt(
        f: &dyn Fn(f64) -> f64,
        a: f64,
        b: f64,
        fa: f64,
        fm: f64,
        fb: f64,
        whole: f64,
        tol: f64,
        depth: u32,
    ) -> f64 {
        let m = 0.5 * (a + b);
        let (lm, rm) = (0.5 * (a + m), 0.5 * (m + b));
        let (flm, frm) = (f(lm), f(rm));
        let left = simpson(a, m, fa, flm, fm);
        let right = simpson(m, b, fm, frm, fb);
        if depth == 0 || (left + right - whole).abs() <= 15.0 * tol {
            left + right + (left + right - whole) / 15.0
        } else {
            adapt(f, a, m, fa, flm, fm, left, tol / 2.0, depth - 1)
                + adapt(f, m, b, fm, frm, fb, right, tol / 2.0, depth - 1)
        }
    }
    // Split at the mean and at ±1, ±4 standard deviations so every piece is smooth and short.
    let mut knots = vec![a, b];
    for k in [-8.0, -4.0, -1.0, 0.0, 1.0, 4.0, 8.0] {
        let t = mu + k * s;
        if t > a && t < b {
            knots.push(t);
        }
    }
    knots.sort_by(f64::total_cmp);
    knots
        .windows(2)
        .map(|w| {
            let (lo, hi) = (w[0], w[1]);
            let (fa, fm, fb) = (f(lo), f(0.5 * (lo + hi)), f(hi));
            adapt(&f, lo, hi, fa, fm, fb, simpson(lo, hi, fa, fm, fb), tol, 40)
        })
        .sum()
}

/// P(N(mu, s²) > c), integrating over whichever side of c holds less mass.
fn tail(c: f64, mu: f64, s: f64) -> f64 {
    let reach = 40.0 * s;
    if c >= mu {
        density_integral(mu, s, c, mu + reach, 1e-15)
    } else {
        1.0 - density_integral(mu, s, mu - reach, c, 1e-15)
    }
}

/// Accuracy by quadrature: a point is correct iff (z - e1)·w + T' > 0 (the frame of the label,
/// as in CFA eq. (13)).
fn accuracy(m: &BinaryModel, y: Class, w: f64, shift: f64, e1: f64) -> f64 {
    let d = f64::from(m.d());
    let (mu, s) = (d * (m.eta() - shift), m.s());
    m.p(y) * tail(-(1.0 - e1) * w, mu, s) + (1.0 - m.p(y)) * tail((1.0 + e1) * w, mu, s)
}

/// Golden-section maximiser of `f` on [a, b] using values only.
fn golden_max(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64) -> f64 {
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - g * (b - a), a + g * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..200 {
        if fc > fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    0.5 * (a + b)
}

/// Quadrature with 1e-15 absolute pieces reproduces probabilities to ~1e-13; allow 1e-11.
const QUADRATURE_ABS: f64 = 1e-11;
/// A value-only maximiser in f64 resolves a maximum only to δ with ½|f''|δ² ≈ a few ulp of f:
/// δ ≈ √(8ε/|f''|) for values ≤ 1. The tolerance is 10 such widths (plus 1e-9 relative).
fn argmax_tolerance(curvature: f64, w: f64) -> f64 {
    10.0 * (8.0 * f64::EPSILON / curvature.abs()).sqrt() + 1e-9 * w
}

/// |f''(w)| from central differences of f' (only used to size the tolerance).
fn curvature(slope: impl Fn(f64) -> f64, w: f64) -> f64 {
    let h = 1e-4 * w;
    (slope(w + h) - slope(w - h)) / (2.0 * h)
}

proptest! {
    #![proptest_config(common::config("proptest-regressions/independent.txt", 64))]

    /// Clean, paper-robust and full-robust accuracies against quadrature.
    #[test]
    fn accuracies_match_quadrature(d in 1u32..=100, eta in 0.01..0.49f64, ln_sigma in -1.6..1.1f64,
                                   a in 0.0..=1.0f64, b in 0.0..=1.0f64, ln_w in -4.6..3.9f64,
                                   eps in 0.0..0.99f64) {
        let m = BinaryModel::new(d, eta, ln_sigma.exp(), a.max(b), a.min(b)).unwrap();
        let w = ln_w.exp();
        for y in Class::BOTH {
            let cases = [
                (m.clean_accuracy(y, w).unwrap(), accuracy(&m, y, w, 0.0, 0.0)),
                (m.robust_accuracy(y, w, eps, Adversary::Paper).unwrap(), accuracy(&m, y, w, eps, 0.0)),
                (m.robust_accuracy(y, w, eps, Adversary::Full).unwrap(), accuracy(&m, y, w, eps, eps)),
            ];
            for (closed, quad) in cases {
                prop_assert!((closed - quad).abs() <= QUADRATURE_ABS, "{closed} vs {quad}");
            }
        }
    }

    /// w*_y and ŵ_ε against a value-only maximiser of the quadrature-free closed-form values
    /// bracketed around the candidate, and the absence of a maximiser for p ≤ 1/2.
    #[test]
    fn argmaxes_match_a_bracketing_maximiser(d in 1u32..=50, eta in 0.05..0.45f64, ln_sigma in -1.2..0.7f64,
                                             pn in 0.55..0.95f64, gap in 0.01..0.04f64, f in 0.0..0.8f64) {
        let pp = (pn + gap).min(0.99);
        let m = BinaryModel::new(d, eta, ln_sigma.exp(), pp, pn).unwrap();
        for y in Class::BOTH {
            let Argmax::At(ws) = m.w_star(y) else { return Err(TestCaseError::fail("no w*")) };
            // Bracket by a coarse log scan of the values, then refine by golden section.
            let scan = |g: &dyn Fn(f64) -> f64| {
                let grid: Vec<f64> = (0..=400).map(|k| 1e-3 * 1e5f64.powf(k as f64 / 400.0)).collect();
                let k = (1..grid.len() - 1).max_by(|&i, &j| g(grid[i]).total_cmp(&g(grid[j]))).unwrap();
                golden_max(g, grid[k - 1], grid[k + 1])
            };
            // A maximum that rises above both limits (p_y at ∞, A(0⁺)) by less than ~1e-10 is
            // numerically flat: values cannot locate it (`theory/reference/model_table.py`
            // rejects such draws too).
            let a = |w| m.clean_accuracy(y, w).unwrap();
            prop_assume!(a(ws) - m.p(y).max(a(1e-12)) > 1e-10);
            let found = scan(&|w| m.clean_accuracy(y, w).unwrap());
            let tol = argmax_tolerance(curvature(|w| m.clean_accuracy_dw(y, w).unwrap(), ws), ws);
            prop_assert!((found - ws).abs() <= tol, "w*: {found} vs {ws} (tol {tol:e})");
            let eps = f * eta;
            let r = |w| m.average_robust_accuracy(w, eps, Adversary::Paper).unwrap();
            if let Argmax::At(wh) = m.w_hat(eps).unwrap()
                && r(wh) - (m.p_sum() / 2.0).max(r(1e-12)) > 1e-10
            {
                let found = scan(&|w| m.average_robust_accuracy(w, eps, Adversary::Paper).unwrap());
                let slope = |w| m.average_robust_accuracy_dw(w, eps, Adversary::Paper).unwrap();
                let tol = argmax_tolerance(curvature(slope, wh), wh);
                prop_assert!((found - wh).abs() <= tol, "ŵ: {found} vs {wh} (tol {tol:e})");
            }
        }
    }
}
