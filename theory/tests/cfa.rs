//! Property tests of the CFA binary model and Theorems 1-4 (checks T1-T11), and regression
//! tests for the errata's counterexamples. Expected numbers were computed independently of this
//! code, in mpmath.

mod common;

use approx::assert_relative_eq;
use classwise_theory::model::{Adversary, Argmax, BinaryModel, Class};
use classwise_theory::theorems::{self, figure1_model};
use classwise_theory::{tol, verify};
use proptest::prelude::*;

/// Generator ranges of check T1.
const D: std::ops::RangeInclusive<u32> = 1..=100;
const ETA: std::ops::Range<f64> = 0.01..0.49;
const LN_SIGMA: std::ops::Range<f64> = -1.609_437_912_434_100_3..1.098_612_288_668_109_8; // ln 0.2 .. ln 3
const LN_W: std::ops::Range<f64> = -6.907_755_278_982_137..4.605_170_185_988_092; // ln 1e-3 .. ln 1e2
const EPS: std::ops::Range<f64> = 0.0..0.99;

fn model(d: u32, eta: f64, ln_sigma: f64, p_pos: f64, p_neg: f64) -> BinaryModel {
    BinaryModel::new(d, eta, ln_sigma.exp(), p_pos, p_neg).unwrap()
}

/// 1/2 < p₋₁ < p₊₁ < 1, both at least 1/2 + 1e-6 (check T3).
fn ordered_p() -> impl Strategy<Value = (f64, f64)> {
    (0.500_001..0.999_999f64, 0.500_001..0.999_999f64)
        .prop_filter("distinct", |(a, b)| a != b)
        .prop_map(|(a, b)| (a.max(b), a.min(b)))
}

proptest! {
    #![proptest_config(common::config("proptest-regressions/cfa.txt", 256))]

    /// T1: A₊₁ - A₋₁ = (p₊₁ - p₋₁)·P(band), the same for R and R^full.
    #[test]
    fn t1_gap_identity(d in D, eta in ETA, ls in LN_SIGMA, a in 0.0..=1.0f64, b in 0.0..=1.0f64,
                       lw in LN_W, eps in EPS) {
        let m = model(d, eta, ls, a.max(b), a.min(b));
        let w = lw.exp();
        let direct = m.clean_accuracy(Class::Pos, w).unwrap() - m.clean_accuracy(Class::Neg, w).unwrap();
        prop_assert!((direct - m.clean_gap(w).unwrap()).abs() <= tol::IDENTITY_ABS);
        for adv in [Adversary::Paper, Adversary::Full] {
            let r = |y| m.robust_accuracy(y, w, eps, adv).unwrap();
            let gap = m.robust_gap(w, eps, adv).unwrap();
            prop_assert!((r(Class::Pos) - r(Class::Neg) - gap).abs() <= tol::IDENTITY_ABS);
        }
    }

    /// T2 (CFA Theorem 1): with p₊₁ ≥ p₋₁ every accuracy of +1 is ≥ that of -1 in f64 (exactly,
    /// no slack), and equal when p₊₁ = p₋₁.
    #[test]
    fn t2_theorem1(d in D, eta in ETA, ls in LN_SIGMA, a in 0.0..=1.0f64, b in 0.0..=1.0f64,
                   lw in LN_W, eps in EPS) {
        let m = model(d, eta, ls, a.max(b), a.min(b));
        let w = lw.exp();
        prop_assert!(m.clean_accuracy(Class::Pos, w).unwrap() >= m.clean_accuracy(Class::Neg, w).unwrap());
        for adv in [Adversary::Paper, Adversary::Full] {
            prop_assert!(m.robust_accuracy(Class::Pos, w, eps, adv).unwrap()
                >= m.robust_accuracy(Class::Neg, w, eps, adv).unwrap());
        }
        prop_assert!(m.clean_gap(w).unwrap() >= 0.0);
        let same = model(d, eta, ls, a, a);
        prop_assert_eq!(same.clean_accuracy(Class::Pos, w).unwrap(), same.clean_accuracy(Class::Neg, w).unwrap());
    }

    /// T3 (CFA Theorem 3): w*_y is a critical point and a maximiser, w*₊₁ > w*₋₁, independent of d.
    #[test]
    fn t3_w_star(d in D, d2 in D, eta in ETA, ls in LN_SIGMA, (pp, pn) in ordered_p()) {
        let m = model(d, eta, ls, pp, pn);
        let other = model(d2, eta, ls, pp, pn);
        prop_assert!(theorems::theorem3(&m).holds);
        for y in Class::BOTH {
            let Argmax::At(ws) = m.w_star(y) else { return Err(TestCaseError::fail("no w*")) };
            prop_assert_eq!(other.w_star(y), Argmax::At(ws));
            let scale = classwise_theory::normal::pdf(0.0) / m.s();
            prop_assert!(m.clean_accuracy_dw(y, ws).unwrap().abs() <= tol::ARGMAX_DERIV_REL * scale);
            for h in [1e-3, 0.1, 0.5] {
                let a = |w| m.clean_accuracy(y, w).unwrap();
                prop_assert!(a(ws) + tol::ARGMAX_VALUE_SLACK >= a(ws * (1.0 + h)));
                prop_assert!(a(ws) + tol::ARGMAX_VALUE_SLACK >= a(ws * (1.0 - h)));
            }
        }
    }

    /// T4: for p_y ≤ 1/2, A_y decreases and has no maximiser.
    #[test]
    fn t4_no_w_star_below_one_half(d in D, eta in ETA, ls in LN_SIGMA, pn in 0.05..=0.5f64, lw in LN_W) {
        let m = model(d, eta, ls, 0.9, pn);
        prop_assert_eq!(m.w_star(Class::Neg), Argmax::ZeroPlus);
        prop_assert!(m.clean_accuracy_dw(Class::Neg, lw.exp()).unwrap() <= 0.0);
        prop_assert!(m.clean_accuracy_dw(Class::Neg, 1e-3).unwrap() < 0.0);
    }

    /// T5 (CFA Theorem 2): ŵ_ε maximises R̄ and strictly increases in ε on [0, η).
    #[test]
    fn t5_w_hat(d in D, eta in ETA, ls in LN_SIGMA, big_p in 1.001..1.999f64, u in 0.0..1.0f64,
                f1 in 0.0..0.99f64, f2 in 0.0..0.99f64) {
        let lo = (big_p - 1.0).max(0.0);
        let pn = lo + u * (big_p / 2.0 - lo);
        let m = model(d, eta, ls, big_p - pn, pn);
        let (e1, e2) = (f1.min(f2) * eta, f1.max(f2) * eta);
        let Argmax::At(w1) = m.w_hat(e1).unwrap() else { return Err(TestCaseError::fail("no ŵ")) };
        let scale = classwise_theory::normal::pdf(0.0) / m.s();
        prop_assert!(m.average_robust_accuracy_dw(w1, e1, Adversary::Paper).unwrap().abs() <= tol::ARGMAX_DERIV_REL * scale);
        if e2 > e1 {
            prop_assert!(theorems::theorem2(&m, e1, e2).unwrap().holds);
        }
    }

    /// T6: at ε ≥ η (P > 1) R̄ increases and ŵ is "+inf"; for P ≤ 1 it decreases, "0+".
    #[test]
    fn t6_w_hat_boundaries(d in D, eta in ETA, ls in LN_SIGMA, f in 1.0..=2.0f64, lw in LN_W,
                           pp in 0.5..1.0f64) {
        let eps = f * eta;
        let m = model(d, eta, ls, 0.95, 0.6);
        prop_assert_eq!(m.w_hat(eps).unwrap(), Argmax::PlusInfinity);
        prop_assert!(m.average_robust_accuracy_dw(lw.exp(), eps, Adversary::Paper).unwrap() >= 0.0);
        let low = model(d, eta, ls, pp, 1.0 - pp);
        prop_assert_eq!(low.w_hat(0.5 * eta).unwrap(), Argmax::ZeroPlus);
        prop_assert!(low.average_robust_accuracy_dw(lw.exp(), 0.5 * eta, Adversary::Paper).unwrap() <= 0.0);
    }

    /// T7 (CFA Theorem 4a-i): the clean gap never shrinks as w grows.
    #[test]
    fn t7_gap_widens(d in D, eta in ETA, ls in LN_SIGMA, a in 0.0..=1.0f64, b in 0.0..=1.0f64,
                     lw in LN_W, ld in -9.2..2.3f64) {
        let m = model(d, eta, ls, a.max(b), a.min(b));
        let (w, delta) = (lw.exp(), ld.exp());
        prop_assert!(m.clean_gap(w + delta).unwrap() >= m.clean_gap(w).unwrap());
    }

    /// T9 (CFA Theorem 4b at ε = 2η): with p₋₁ ≥ 1/2, R₋₁ never falls and the gap never shrinks.
    #[test]
    fn t9_robust_gains(d in D, eta in ETA, ls in LN_SIGMA, (pp, pn) in ordered_p(), lw in LN_W,
                       ld in -9.2..2.3f64) {
        let m = model(d, eta, ls, pp, pn);
        let o = theorems::theorem4_robust(&m, lw.exp(), ld.exp()).unwrap();
        // Near p₋₁ = 1/2 the gain of R₋₁ falls below f64 resolution: its sign is checked up
        // to the rounding of a difference of probabilities (`theory verify` checks it strictly
        // where it is resolvable).
        prop_assert!(o.margin >= -tol::PROB_DIFF_ABS, "{o:?}");
    }

    /// T10: the full adversary is at least as strong; equal at ε = 0; R^full → p_y as w → ∞.
    #[test]
    fn t10_full_adversary(d in D, eta in ETA, ls in LN_SIGMA, a in 0.0..=1.0f64, b in 0.0..=1.0f64,
                          lw in LN_W, eps in EPS) {
        let m = model(d, eta, ls, a.max(b), a.min(b));
        let w = lw.exp();
        for y in Class::BOTH {
            let paper = m.robust_accuracy(y, w, eps, Adversary::Paper).unwrap();
            let full = m.robust_accuracy(y, w, eps, Adversary::Full).unwrap();
            prop_assert!(full <= paper + tol::IDENTITY_ABS);
            prop_assert_eq!(m.robust_accuracy(y, w, 0.0, Adversary::Full).unwrap(),
                            m.robust_accuracy(y, w, 0.0, Adversary::Paper).unwrap());
            prop_assert!((m.robust_accuracy(y, 1e6, eps, Adversary::Full).unwrap() - m.p(y)).abs() < 1e-9);
        }
    }
}

/// T8 / note C4: the chain fails inside (w*₋₁, w*₊₁) (mpmath values).
#[test]
fn t8_note_c4_counterexample() {
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.7).unwrap();
    let da = |y| m.clean_accuracy(y, 1.6).unwrap() - m.clean_accuracy(y, 1.5).unwrap();
    assert_relative_eq!(
        da(Class::Neg),
        -0.002_002_417_709_926_51,
        max_relative = tol::SPEC_VALUE_REL
    );
    assert_relative_eq!(
        da(Class::Pos),
        0.001_982_005_078_948_04,
        max_relative = tol::SPEC_VALUE_REL
    );
    assert!(!theorems::theorem4_clean(&m, 1.5, 0.1).unwrap().holds);
    // Past w*₊₁ = 2.16825 the chain holds.
    assert!(theorems::theorem4_clean(&m, 2.2, 0.1).unwrap().holds);
}

/// T9 / note C5: with p₋₁ < 1/2, R₋₁ falls near 0 (mpmath value).
#[test]
fn t9_note_c5_counterexample() {
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.4).unwrap();
    let r = |w| {
        m.robust_accuracy(Class::Neg, w, 0.8, Adversary::Paper)
            .unwrap()
    };
    assert_relative_eq!(
        r(0.2) - r(0.1),
        -0.005_109_967_485_608_14,
        max_relative = tol::SPEC_VALUE_REL
    );
    assert!(!theorems::theorem4_robust(&m, 0.1, 0.1).unwrap().holds);
}

/// Erratum C1: ŵ_ε → ∞ as ε → η, and at ε = η no maximiser.
#[test]
fn e4_w_hat_blows_up_at_eta() {
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.7).unwrap();
    for (eps, want) in [
        (0.0, 1.5460),
        (0.2, 3.0919),
        (0.3, 6.1838),
        (0.39, 61.838),
        (0.399, 618.38),
    ] {
        let w = m.w_hat(eps).unwrap().value().unwrap();
        assert_relative_eq!(w, want, max_relative = 1e-4);
    }
    assert_eq!(m.w_hat(0.4).unwrap(), Argmax::PlusInfinity);
    let r = |w| m.average_robust_accuracy(w, 0.4, Adversary::Paper).unwrap();
    assert_relative_eq!(r(1.0), 0.687_740, max_relative = 1e-6);
    assert!(r(1.0) < r(10.0) && r(10.0) < 0.775);
}

/// Erratum C2 (p₋₁ ≤ 1/2) and equal p's: boundary values of A₋₁.
#[test]
fn e6_e7_boundary_values() {
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.45).unwrap();
    let a = |w| m.clean_accuracy(Class::Neg, w).unwrap();
    assert_relative_eq!(a(0.001), 0.655_385, max_relative = 1e-6);
    assert_relative_eq!(a(1.0), 0.564_499, max_relative = 1e-6);
    assert_relative_eq!(
        m.clean_accuracy_dw(Class::Neg, 0.1).unwrap(),
        -0.0513,
        max_relative = 1e-3
    );
    let half = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.5).unwrap();
    assert_relative_eq!(
        half.clean_accuracy(Class::Neg, 0.001).unwrap(),
        0.655_422,
        max_relative = 1e-6
    );
    assert_relative_eq!(
        half.clean_accuracy(Class::Neg, 0.5).unwrap(),
        0.638_056,
        max_relative = 1e-6
    );
    let same = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.85).unwrap();
    for y in Class::BOTH {
        assert_relative_eq!(
            same.clean_accuracy(y, 1.0).unwrap(),
            0.822_494_807_313_806,
            max_relative = tol::SPEC_VALUE_REL
        );
    }
}

/// Caveat C3: the σ² factor at the Figure 1 setting.
#[test]
fn e8_sigma_scaling() {
    let m = figure1_model();
    assert_relative_eq!(
        m.w_star(Class::Pos).value().unwrap(),
        1.30095,
        max_relative = 1e-5
    );
    assert_relative_eq!(
        m.w_star(Class::Neg).value().unwrap(),
        0.63547,
        max_relative = 1e-5
    );
    assert_relative_eq!(
        m.w_hat(0.0).unwrap().value().unwrap(),
        0.92757,
        max_relative = 1e-5
    );
}

/// T11: the full-adversary optimum follows the interior root, then jumps to +∞.
#[test]
fn t11_full_adversary_jump() {
    let m = figure1_model();
    for (eps, root) in [(0.0, 0.9276), (0.02, 0.9971), (0.05, 1.1698)] {
        let w = m.w_hat_full(eps).unwrap().argmax.value().unwrap();
        assert_relative_eq!(w, root, max_relative = 1e-4);
    }
    let eps_star = 0.078_625_662_672_908_4;
    let opt = m.w_hat_full(eps_star).unwrap();
    assert_relative_eq!(
        opt.local_max.unwrap(),
        1.800_761_996_590_58,
        max_relative = tol::SPEC_VALUE_REL
    );
    assert_eq!(
        m.w_hat_full(eps_star + 1e-4).unwrap().argmax,
        Argmax::PlusInfinity
    );
    assert!(matches!(
        m.w_hat_full(eps_star - 1e-4).unwrap().argmax,
        Argmax::At(_)
    ));
}

/// Every CFA erratum (C1-C9) is reproduced, and the whole verify table holds for a few seeds.
#[test]
fn errata_confirmed_and_verify_holds() {
    for e in theorems::cfa_errata() {
        assert!(e.confirmed, "{} not confirmed: {}", e.id, e.counterexample);
    }
    for seed in 0..3 {
        let r = verify::run(100, seed);
        let failed: Vec<_> = r.checks.iter().filter(|c| !c.ok()).map(|c| &c.id).collect();
        assert!(r.ok(), "seed {seed}: failed {failed:?}");
        assert!(r.checks.len() >= 19 && r.errata.len() == 15);
    }
}

/// The printed hypotheses admit the errata's counterexamples; the corrected ones exclude them.
#[test]
fn printed_hypotheses_admit_the_counterexamples_corrected_ones_do_not() {
    use theorems::Statement::{Corrected, Printed};
    // C1: ε = η is allowed as printed, and there ŵ does not exist.
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.7).unwrap();
    assert!(theorems::theorem2_applies(&m, 0.4, Printed));
    assert!(!theorems::theorem2_applies(&m, 0.4, Corrected));
    assert!(!theorems::theorem2(&m, 0.39, 0.4).unwrap().holds);
    // C2: p₋₁ = 1/2 is allowed by Sec. 2.2, and there w*₋₁ does not exist.
    let half = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.5).unwrap();
    assert!(theorems::theorem3_applies(&half, Printed));
    assert!(!theorems::theorem3_applies(&half, Corrected));
    assert!(!theorems::theorem3(&half).holds);
    // C2, conversely: (0.9, 0.3) is outside the printed hypotheses but Theorem 2 holds.
    let m = BinaryModel::new(1, 0.4, 1.0, 0.9, 0.3).unwrap();
    assert!(!theorems::theorem2_applies(&m, 0.1, Printed));
    assert!(theorems::theorem2_applies(&m, 0.1, Corrected));
    assert!(theorems::theorem2(&m, 0.1, 0.2).unwrap().holds);
    // C5: p₋₁ = 0.4 passes the printed robust hypotheses, and the claim fails there.
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.4).unwrap();
    assert!(theorems::theorem4_robust_applies(&m, Printed));
    assert!(!theorems::theorem4_robust_applies(&m, Corrected));
    assert!(!theorems::theorem4_robust(&m, 0.1, 0.1).unwrap().holds);
    // C4: the printed hypothesis w > w*₊₁ excludes w = 1.5 < 2.168, where the chain fails.
    let m = BinaryModel::new(1, 0.4, 1.0, 0.85, 0.7).unwrap();
    assert!(!theorems::theorem4_clean_applies(&m, 1.5, Printed));
    assert!(theorems::theorem4_clean_applies(&m, 2.2, Printed));
}
