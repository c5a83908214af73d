//! The verdict of a directional claim from paired differences over seeds (the rule of
//! results/fmnist/README.md), against hand-computed intervals. t(0.975, 2) = 4.302653 and
//! t(0.975, 4) = 2.776445 are the tabulated Student quantiles.

use classwise_core::aggregate::{Paired, Sign, Verdict};

#[test]
fn intervals_and_verdicts_are_the_hand_computed_ones() {
    // 0.9, 1.0, 1.1: mean 1, s = 0.1, half-width 4.302653 · 0.1 / √3 = 0.248414.
    let p = Paired::of(vec![0.9, 1.0, 1.1], Sign::Positive, 0.95).unwrap();
    assert!((p.mean - 1.0).abs() < 1e-12 && (p.std - 0.1).abs() < 1e-12);
    let half = 4.302653 * 0.1 / 3f64.sqrt();
    assert!(
        (p.interval[0] - (1.0 - half)).abs() < 1e-6,
        "{:?}",
        p.interval
    );
    assert!(
        (p.interval[1] - (1.0 + half)).abs() < 1e-6,
        "{:?}",
        p.interval
    );
    assert_eq!(p.verdict, Verdict::Reproduced);
    let against = Paired::of(vec![0.9, 1.0, 1.1], Sign::Negative, 0.95).unwrap();
    assert_eq!(against.verdict, Verdict::Refuted);
    // 1, 2, 3: mean 2, s = 1, half-width 2.484138: the interval holds 0.
    let wide = Paired::of(vec![1.0, 2.0, 3.0], Sign::Positive, 0.95).unwrap();
    assert!((wide.interval[0] - (2.0 - 4.302653 / 3f64.sqrt())).abs() < 1e-6);
    assert_eq!(wide.verdict, Verdict::Inconclusive);
    // Five seeds: −0.1, −0.2, −0.3, −0.2, −0.2: mean −0.2, s = √(0.02/4), t(0.975, 4).
    let five = Paired::of(vec![-0.1, -0.2, -0.3, -0.2, -0.2], Sign::Negative, 0.95).unwrap();
    let half = 2.776445 * (0.02f64 / 4.0).sqrt() / 5f64.sqrt();
    assert!(
        (five.interval[1] - (-0.2 + half)).abs() < 1e-6,
        "{:?}",
        five.interval
    );
    assert_eq!(five.verdict, Verdict::Reproduced);
}

#[test]
fn too_few_or_bad_differences_are_refused() {
    for d in [vec![1.0], vec![], vec![1.0, f64::NAN]] {
        let e = Paired::of(d, Sign::Positive, 0.95).unwrap_err().to_string();
        assert!(e.contains("at least two finite paired differences"), "{e}");
    }
    let e = Paired::of(vec![1.0, 2.0], Sign::Positive, 1.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("level"), "{e}");
}
