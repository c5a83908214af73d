//! The verdict of a directional claim from paired differences over seeds (the rule of
//! results/fmnist/README.md), against hand-computed intervals. t(0.975, 2) = 4.302653 and
//! t(0.975, 4) = 2.776445 are the tabulated Student quantiles.

use classwise_core::aggregate::{Paired, SeedsNeeded, Sign, Verdict};

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

/// The seeds a claim of `sign` on the differences `d` would need, searched up to `cap`.
fn needed(d: &[f64], sign: Sign, cap: usize) -> SeedsNeeded {
    let p = Paired::of(d.to_vec(), sign, 0.95).unwrap();
    p.seeds_needed(sign, cap).unwrap()
}

/// The seeds an inconclusive claim would need with its observed numbers, against the tabulated
/// quantiles t(0.975, 3) = 3.182446, t(0.975, 5) = 2.570582, t(0.975, 6) = 2.446912 and
/// t(0.975, 99) = 1.984217.
#[test]
fn seeds_needed_are_the_hand_computed_ones() {
    use SeedsNeeded::{Decided, NotDecidable, OppositeSign, Seeds};
    use Sign::{Negative, Positive};
    // 1, 2, 3: mean 2, s = 1, inconclusive with 3 seeds (half-width 4.302653 / √3 = 2.484 ≥ 2);
    // n = 4: 3.182446 / 2 = 1.591 < 2.
    let d = [1.0, 2.0, 3.0];
    assert_eq!(
        Paired::of(d.to_vec(), Positive, 0.95).unwrap().verdict,
        Verdict::Inconclusive
    );
    assert_eq!(needed(&d, Positive, 100), Seeds(4));
    // 0, 1, 2: mean 1, s = 1. n = 6: 2.570582 / √6 = 1.0494 ≥ 1; n = 7: 2.446912 / √7 = 0.9248.
    // The cap is inclusive: with a cap of 6 it is not decidable, with 7 it takes 7.
    let d = [0.0, 1.0, 2.0];
    assert_eq!(needed(&d, Positive, 100), Seeds(7));
    assert_eq!(needed(&d, Positive, 6), NotDecidable);
    assert_eq!(needed(&d, Positive, 7), Seeds(7));
    // The same numbers against a claim of the other sign.
    assert_eq!(needed(&d, Negative, 100), OppositeSign);
    // 1.7, −2.4, 0.5: mean −0.0667, s = 2.1079. Even n = 100 gives a half-width of
    // 1.984217 · 2.1079 / 10 = 0.418 > 0.0667.
    assert_eq!(needed(&[1.7, -2.4, 0.5], Negative, 100), NotDecidable);
    // A decided claim needs no more seeds, whichever its verdict (0.9, 1.0, 1.1 is refuted
    // against a negative claim).
    assert_eq!(needed(&[0.9, 1.0, 1.1], Negative, 100), Decided);
    assert_eq!(needed(&[0.9, 1.0, 1.1], Positive, 100), Decided);
    let texts: Vec<String> = [Decided, Seeds(4), OppositeSign, NotDecidable]
        .iter()
        .map(|s| s.describe(100))
        .collect();
    assert_eq!(texts, ["–", "4", "opposite sign", "not decidable (> 100)"]);
}
