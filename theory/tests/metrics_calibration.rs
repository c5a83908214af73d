//! Tests of `metrics` (class-wise metrics) and `calibration` (CFA, WAT, FRL, CSL rules).
//! Expected values are computed by hand in the comments or taken from the papers' tables; none
//! is produced by the code under test.

mod common;

use approx::assert_abs_diff_eq;
use classwise_theory::TheoryError;
use classwise_theory::calibration::*;
use classwise_theory::metrics::*;
use proptest::prelude::*;

const EPS8: f64 = 8.0 / 255.0;

// =============================================================================================
// metrics: hand-computed examples
// =============================================================================================

/// labels  0 0 0 1 1 2
/// preds   0 1 0 1 1 0
/// class 0: 2/3, class 1: 2/2 = 1, class 2: 0/1 = 0; overall 4/6 = 2/3;
/// class mean (2/3 + 1 + 0)/3 = 5/9;
/// CV: deviations 1/9, 4/9, -5/9 -> (1 + 16 + 25)/81/3 = 42/243 = 14/81 = 0.172839506...
/// MCD = 1 - 0 = 1.
fn small_example() -> ClassAccuracy {
    class_accuracy(&[0, 1, 0, 1, 1, 0], &[0, 0, 0, 1, 1, 2], 3).unwrap()
}

#[test]
fn per_class_accuracy_small_example() {
    let acc = small_example();
    assert_eq!(acc.n_classes(), 3);
    assert_abs_diff_eq!(acc.per_class()[0], 2.0 / 3.0, epsilon = 1e-15);
    assert_eq!(acc.per_class()[1], 1.0);
    assert_eq!(acc.per_class()[2], 0.0);
    assert_eq!(acc.totals(), Some(&[3u64, 2, 1][..]));
    assert_eq!(acc.corrects(), Some(&[2u64, 2, 0][..]));
    assert_abs_diff_eq!(acc.overall().unwrap(), 2.0 / 3.0, epsilon = 1e-15);
    assert_abs_diff_eq!(acc.average(), 2.0 / 3.0, epsilon = 1e-15);
    assert_abs_diff_eq!(acc.class_mean(), 5.0 / 9.0, epsilon = 1e-15);
    assert_eq!(
        acc.worst(),
        ClassValue {
            class: 2,
            value: 0.0
        }
    );
    assert_eq!(
        acc.best(),
        ClassValue {
            class: 1,
            value: 1.0
        }
    );
    assert_abs_diff_eq!(acc.cv(), 14.0 / 81.0, epsilon = 1e-15);
    assert_abs_diff_eq!(acc.cv_percent2(), 1400.0 * 100.0 / 81.0, epsilon = 1e-10);
    assert_abs_diff_eq!(acc.std_dev(), (14.0f64 / 81.0).sqrt(), epsilon = 1e-15);
    assert_eq!(acc.mcd(), 1.0);
    assert_eq!(acc.mcd_percent(), 100.0);
}

#[test]
fn flags_and_counts_agree_with_predictions() {
    // Same data as `small_example`, as correctness flags and as counts.
    let flags = [true, false, true, true, true, false];
    let a = class_accuracy_from_flags(&flags, &[0, 0, 0, 1, 1, 2], 3).unwrap();
    let b = class_accuracy_from_counts(&[2, 2, 0], &[3, 2, 1]).unwrap();
    assert_eq!(a, small_example());
    assert_eq!(b, small_example());
}

#[test]
fn overall_differs_from_class_mean_on_unbalanced_data() {
    // class 0: 9/10, class 1: 0/2. Overall 9/12 = 0.75, class mean 0.45.
    let acc = class_accuracy_from_counts(&[9, 0], &[10, 2]).unwrap();
    assert_abs_diff_eq!(acc.overall().unwrap(), 0.75, epsilon = 1e-15);
    assert_abs_diff_eq!(acc.class_mean(), 0.45, epsilon = 1e-15);
}

#[test]
fn absent_class_is_an_error_naming_the_class() {
    let err = class_accuracy(&[0, 0, 2], &[0, 0, 2], 3).unwrap_err();
    assert_eq!(
        err,
        TheoryError::Class {
            what: "total",
            class: 1,
            n_classes: 3,
            problem: "has no samples"
        }
    );
    assert!(err.to_string().contains("class 1"));
    // ... and the Option alternative.
    let mut tally = ClassTally::new(3).unwrap();
    tally.add_predictions(&[0, 1, 2], &[0, 0, 2]).unwrap();
    assert_eq!(tally.accuracies(), vec![Some(0.5), None, Some(1.0)]);
}

#[test]
fn invalid_inputs_are_errors() {
    // label 3 with 3 classes
    assert!(matches!(
        class_accuracy(&[0], &[3], 3),
        Err(TheoryError::Class {
            class: 3,
            problem: "is out of range",
            ..
        })
    ));
    // prediction out of range
    assert!(matches!(
        class_accuracy(&[5], &[0], 3),
        Err(TheoryError::Class {
            what: "predictions",
            class: 5,
            ..
        })
    ));
    assert!(matches!(
        class_accuracy(&[0, 1], &[0], 2),
        Err(TheoryError::LengthMismatch { .. })
    ));
    assert!(matches!(
        class_accuracy(&[], &[], 0),
        Err(TheoryError::Empty { .. })
    ));
    assert!(class_accuracy_from_counts(&[3], &[2]).is_err());
    assert!(ClassAccuracy::from_values(vec![]).is_err());
    assert!(ClassAccuracy::from_values(vec![0.5, f64::NAN]).is_err());
    assert!(ClassAccuracy::from_values(vec![0.5, 1.5]).is_err());
    assert!(class_variance(&[1.0, f64::INFINITY]).is_err());
    assert!(max_class_discrepancy(&[]).is_err());
}

#[test]
fn tally_error_leaves_counts_unchanged() {
    let mut tally = ClassTally::new(2).unwrap();
    tally.add(0, true).unwrap();
    // second label is out of range: nothing of this batch may be recorded
    assert!(tally.add_flags(&[true, true], &[1, 2]).is_err());
    assert_eq!(tally.total(), &[1, 0]);
    assert_eq!(tally.correct(), &[1, 0]);
}

#[test]
fn worst_fraction_mean_small() {
    // sorted: 0.1 0.2 0.3 0.5 0.9
    let acc = ClassAccuracy::from_values(vec![0.1, 0.5, 0.2, 0.9, 0.3]).unwrap();
    // 40% of 5 = 2 classes: (0.1 + 0.2)/2 = 0.15
    assert_eq!(acc.worst_fraction_count(0.4).unwrap(), 2);
    assert_abs_diff_eq!(acc.worst_fraction_mean(0.4).unwrap(), 0.15, epsilon = 1e-15);
    // 50% of 5 = 2.5 -> ceil = 3: (0.1 + 0.2 + 0.3)/3 = 0.2
    assert_abs_diff_eq!(acc.worst_fraction_mean(0.5).unwrap(), 0.2, epsilon = 1e-15);
    // 100% = class mean = 2.0/5 = 0.4
    assert_abs_diff_eq!(acc.worst_fraction_mean(1.0).unwrap(), 0.4, epsilon = 1e-15);
    assert_eq!(acc.worst_k_mean(1).unwrap(), 0.1);
    assert!(acc.worst_k_mean(0).is_err());
    assert!(acc.worst_k_mean(6).is_err());
    assert!(acc.worst_fraction_mean(0.0).is_err());
    assert!(acc.worst_fraction_mean(1.5).is_err());
    // from_values has no counts
    assert_eq!(acc.overall(), None);
}

#[test]
fn worst_20_percent_of_200_classes_is_40() {
    // CFA App. C.1: Tiny-ImageNet worst-20% = 40 of 200 classes.
    let acc = ClassAccuracy::from_values((0..200).map(|i| i as f64 / 200.0).collect()).unwrap();
    assert_eq!(acc.worst_fraction_count(0.2).unwrap(), 40);
    // mean of 0/200 .. 39/200 = (39/2)/200 = 0.0975
    assert_abs_diff_eq!(
        acc.worst_fraction_mean(0.2).unwrap(),
        0.0975,
        epsilon = 1e-15
    );
}

#[test]
fn ties_go_to_lowest_class() {
    let acc = ClassAccuracy::from_values(vec![0.5, 0.2, 0.2, 0.7, 0.7]).unwrap();
    assert_eq!(acc.worst().class, 1);
    assert_eq!(acc.best().class, 3);
}

#[test]
fn tian_table1_cv_and_mcd() {
    // Tian Table 1 (PGD rows), per-class robust accuracy in %, then the printed CV (%^2) and MCD.
    // The printed CVs are computed from unrounded per-class numbers; recomputing from the
    // one-decimal values gives 224.365, 235.166, 224.894 -> within 0.1 of the table (checked by
    // hand; a sample variance, divisor 9, would give ~249, far outside).
    let rows: [(&str, [f64; 10], f64, f64); 3] = [
        (
            "Madry",
            [63.8, 71.6, 39.1, 25.3, 36.7, 38.6, 57.4, 59.5, 63.1, 66.8],
            224.3,
            46.3,
        ),
        (
            "MART",
            [64.5, 78.0, 45.1, 35.4, 37.7, 43.5, 65.3, 67.5, 76.3, 69.5],
            235.1,
            42.6,
        ),
        (
            "HE",
            [64.9, 79.3, 41.0, 34.5, 47.9, 51.5, 67.6, 70.5, 76.9, 73.2],
            224.8,
            44.8,
        ),
    ];
    for (name, pct, cv, mcd) in rows {
        // percent input directly: CV in %^2
        let cv_pct = class_variance(&pct).unwrap();
        assert!(
            (cv_pct - cv).abs() <= 0.1,
            "{name}: CV {cv_pct} vs printed {cv}"
        );
        assert_abs_diff_eq!(max_class_discrepancy(&pct).unwrap(), mcd, epsilon = 1e-9);
        // fractions via ClassAccuracy: same numbers in %^2 and %
        let acc = ClassAccuracy::from_values(pct.iter().map(|p| p / 100.0).collect()).unwrap();
        assert!((acc.cv_percent2() - cv).abs() <= 0.1, "{name}");
        assert_abs_diff_eq!(acc.cv(), acc.cv_percent2() / 1e4, epsilon = 1e-15);
        assert_abs_diff_eq!(acc.mcd_percent(), mcd, epsilon = 1e-9);
    }
    // Madry: worst class is 3 (cat) at 25.3, best class 1 at 71.6.
    let madry = [63.8, 71.6, 39.1, 25.3, 36.7, 38.6, 57.4, 59.5, 63.1, 66.8];
    let acc = ClassAccuracy::from_values(madry.iter().map(|p| p / 100.0).collect()).unwrap();
    assert_eq!(acc.worst().class, 3);
    assert_eq!(acc.best().class, 1);
}

#[test]
fn wat_rho_matches_wat_table1_cifar10_resnet18() {
    // WAT Table 1, CIFAR-10 ResNet-18, baseline TRADES: natural 82.11/64.6, PGD-100 51.69/25.2,
    // CW 50.38/24.1, AA 48.64/21.7. Each cell: (avg, worst, printed rho). All
    // these cells check out against eq. (7) to the printed 3 decimals.
    let base = [(82.11, 64.6), (51.69, 25.2), (50.38, 24.1), (48.64, 21.7)];
    let rows: [[(f64, f64, f64); 4]; 4] = [
        // FRL-RW
        [
            (81.75, 69.2, 0.067),
            (49.02, 30.8, 0.171),
            (47.80, 27.8, 0.102),
            (46.08, 25.4, 0.118),
        ],
        // FRL-RWRM
        [
            (80.69, 71.4, 0.088),
            (49.16, 32.0, 0.221),
            (47.45, 28.1, 0.108),
            (45.94, 26.1, 0.147),
        ],
        // CSL
        [
            (76.29, 67.1, -0.032),
            (43.30, 33.8, 0.179),
            (41.60, 31.3, 0.124),
            (40.32, 29.2, 0.175),
        ],
        // WAT eta = 0.1
        [
            (80.98, 69.5, 0.062),
            (49.13, 36.6, 0.403),
            (47.57, 33.3, 0.326),
            (46.04, 30.1, 0.334),
        ],
    ];
    for row in rows {
        for ((a, w, printed), (a0, w0)) in row.into_iter().zip(base) {
            let rho = wat_rho(a0, w0, a, w).unwrap();
            assert!(
                (rho - printed).abs() <= 5e-4 + 1e-12,
                "rho({a}, {w}) = {rho}, printed {printed}"
            );
        }
    }
}

#[test]
fn wat_rho_paper_check_and_discrepancy() {
    // WAT Table 1, PGD-100:
    // (36.6 − 25.2)/25.2 − (51.69 − 49.13)/51.69 = 0.452381 − 0.049526 = 0.402855.
    let rho = wat_rho(51.69, 25.2, 49.13, 36.6).unwrap();
    assert_abs_diff_eq!(rho, 11.4 / 25.2 - 2.56 / 51.69, epsilon = 1e-12);
    assert_abs_diff_eq!(rho, 0.402855, epsilon = 1e-6);
    // scale-free: fractions give the same value
    assert_abs_diff_eq!(
        wat_rho(0.5169, 0.252, 0.4913, 0.366).unwrap(),
        rho,
        epsilon = 1e-12
    );
    // WAT Table 2 (WRN-34-10), natural: WAT vs TRADES is printed 0.062 but eq. (7) gives
    // (74.0 − 64.7)/64.7 − (84.51 − 83.71)/84.51 = 0.143740 − 0.009466 = 0.134274.
    let wrn = wat_rho(84.51, 64.7, 83.71, 74.0).unwrap();
    assert_abs_diff_eq!(wrn, 0.134274, epsilon = 1e-6);
    // the baseline against itself is 0
    assert_eq!(wat_rho(82.11, 64.6, 82.11, 64.6).unwrap(), 0.0);
    assert!(wat_rho(0.0, 0.2, 0.3, 0.2).is_err());
    assert!(wat_rho(0.5, 0.0, 0.3, 0.2).is_err());
    assert!(wat_rho(0.5, f64::NAN, 0.3, 0.2).is_err());
}

#[test]
fn rho_against_uses_average_and_worst() {
    // baseline: counts 8/10 and 2/10 -> overall 0.5, worst 0.2
    // strategy: 7/10 and 3/10 -> overall 0.5, worst 0.3
    // rho = (0.3 − 0.2)/0.2 − (0.5 − 0.5)/0.5 = 0.5
    let base = class_accuracy_from_counts(&[8, 2], &[10, 10]).unwrap();
    let strat = class_accuracy_from_counts(&[7, 3], &[10, 10]).unwrap();
    assert_abs_diff_eq!(strat.rho_against(&base).unwrap(), 0.5, epsilon = 1e-12);
}

#[test]
fn standard_boundary_robust_error_small() {
    // class 0 (4 samples): clean T T T F, robust T F F F
    //   std 1/4, bndy 3/4 − 1/4 = 1/2, rob 3/4
    // class 1 (2 samples): clean T F, robust F T (sample 2 flips to correct under attack)
    //   std 1/2, bndy 1/2 − 1/2 = 0, rob 1/2, clean_wrong_robust_correct = 1
    // overall: clean 4/6, robust 2/6 -> std 1/3, bndy 1/3, rob 2/3
    let labels = [0, 0, 0, 0, 1, 1];
    let clean = [true, true, true, false, true, false];
    let robust = [true, false, false, false, false, true];
    let e = class_errors(&clean, &robust, &labels, 2).unwrap();
    assert_abs_diff_eq!(e.standard[0], 0.25, epsilon = 1e-15);
    assert_abs_diff_eq!(e.boundary[0], 0.5, epsilon = 1e-15);
    assert_abs_diff_eq!(e.robust[0], 0.75, epsilon = 1e-15);
    assert_abs_diff_eq!(e.standard[1], 0.5, epsilon = 1e-15);
    assert_abs_diff_eq!(e.boundary[1], 0.0, epsilon = 1e-15);
    assert_abs_diff_eq!(e.robust[1], 0.5, epsilon = 1e-15);
    assert_eq!(e.clean_wrong_robust_correct, vec![0, 1]);
    assert_eq!(e.totals, vec![4, 2]);
    assert_abs_diff_eq!(e.overall_standard, 1.0 / 3.0, epsilon = 1e-15);
    assert_abs_diff_eq!(e.overall_boundary, 1.0 / 3.0, epsilon = 1e-15);
    assert_abs_diff_eq!(e.overall_robust, 2.0 / 3.0, epsilon = 1e-15);
    // worst values are maximised separately (as in BAT Table 1)
    assert_eq!(e.worst_standard().class, 1);
    assert_eq!(e.worst_boundary().class, 0);
    assert_eq!(e.worst_robust().class, 0);
    assert!(e.worst_standard().value + e.worst_boundary().value > e.worst_robust().value);
    // errors
    assert!(class_errors(&clean, &robust[..5], &labels, 2).is_err());
    assert!(class_errors(&clean, &robust, &labels, 3).is_err()); // class 2 absent
}

#[test]
fn bat_table1_identity() {
    // BAT Table 1 CIFAR-10 averages: robust = standard + boundary for every row (in %).
    for (s, b, r) in [
        (13.43, 39.47, 52.90),
        (12.82, 38.91, 51.73),
        (15.79, 31.60, 47.39),
        (12.91, 31.57, 44.48),
    ] {
        assert_abs_diff_eq!(s + b, r, epsilon = 1e-9);
    }
    // Reproduce the PGD-AT averages with flags on 10000 samples (1 class):
    // 1343 wrong when clean, 3947 correct-clean but wrong-robust, 4710 correct both.
    let n = 10_000;
    let clean: Vec<bool> = (0..n).map(|i| i >= 1343).collect();
    let robust: Vec<bool> = (0..n).map(|i| i >= 1343 + 3947).collect();
    let e = class_errors(&clean, &robust, &vec![0; n], 1).unwrap();
    assert_abs_diff_eq!(e.overall_standard, 0.1343, epsilon = 1e-12);
    assert_abs_diff_eq!(e.overall_boundary, 0.3947, epsilon = 1e-12);
    assert_abs_diff_eq!(e.overall_robust, 0.5290, epsilon = 1e-12);
}

#[test]
fn cvc_small() {
    // C = 2. class 0: rows [1, 0] (mean 0.5, squares 0.25 + 0.25 = 0.5) and [0.5, 0.5] (0);
    //   CVC_0 = 0.5 / (2 * 2) = 0.125.
    // class 1: row [0.8, 0.2] (squares 0.09 + 0.09 = 0.18); CVC_1 = 0.18 / (1 * 2) = 0.09.
    let probs = [1.0, 0.0, 0.8, 0.2, 0.5, 0.5];
    let v = cvc(&probs, &[0, 1, 0], 2).unwrap();
    assert_abs_diff_eq!(v[0], 0.125, epsilon = 1e-15);
    assert_abs_diff_eq!(v[1], 0.09, epsilon = 1e-15);
    // absent class 2
    assert!(matches!(
        cvc(&probs, &[0, 1, 0], 3),
        Err(TheoryError::LengthMismatch { .. })
    ));
    assert!(matches!(
        cvc(&[1.0, 0.0, 0.0, 0.0, 1.0, 0.0], &[0, 0], 3),
        Err(TheoryError::Class {
            class: 1,
            problem: "has no samples",
            ..
        })
    ));
    // rows must be probability vectors
    assert!(cvc(&[0.7, 0.7], &[0], 2).is_err());
    assert!(cvc(&[-0.5, 1.5], &[0], 2).is_err());
}

#[test]
fn confusion_matrix_small() {
    // labels 0 0 1 1 1, preds 0 1 1 1 0 -> [[1, 1], [1, 2]]
    let cm = ConfusionMatrix::from_predictions(&[0, 1, 1, 1, 0], &[0, 0, 1, 1, 1], 2).unwrap();
    assert_eq!(cm.count(0, 0), Some(1));
    assert_eq!(cm.count(0, 1), Some(1));
    assert_eq!(cm.count(1, 0), Some(1));
    assert_eq!(cm.count(1, 1), Some(2));
    assert_eq!(cm.count(2, 0), None);
    assert_eq!(cm.row_totals(), vec![2, 3]);
    let pct = cm.row_normalized_percent().unwrap();
    assert_abs_diff_eq!(pct[0][0], 50.0, epsilon = 1e-12);
    assert_abs_diff_eq!(pct[1][1], 200.0 / 3.0, epsilon = 1e-12);
    assert_eq!(cm.misclassified(), vec![vec![0, 1], vec![1, 0]]);
    // One image of each class misclassified into the other: the targets are split evenly.
    assert_eq!(cm.target_shares(), Some(vec![0.5, 0.5]));
    // 3 classes, off-diagonal column sums [1, 3, 0] of 4; nothing misclassified is None.
    let three = ConfusionMatrix::from_counts(3, vec![5, 2, 0, 1, 5, 0, 0, 1, 5]).unwrap();
    assert_eq!(three.target_shares(), Some(vec![0.25, 0.75, 0.0]));
    let none = ConfusionMatrix::from_counts(2, vec![3, 0, 0, 3]).unwrap();
    assert_eq!(none.target_shares(), None);
    let acc = cm.class_accuracy().unwrap();
    assert_abs_diff_eq!(acc.per_class()[0], 0.5, epsilon = 1e-15);
    assert_abs_diff_eq!(acc.per_class()[1], 2.0 / 3.0, epsilon = 1e-15);
    let empty = ConfusionMatrix::from_predictions(&[0], &[0], 2).unwrap();
    assert!(empty.row_normalized_percent().is_err());
}

#[test]
fn summary_serializes() {
    let s = small_example().summary();
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["n_classes"], 3);
    assert_eq!(json["worst"]["class"], 2);
    assert_eq!(json["best"]["value"], 1.0);
    assert!((json["cv_fraction2"].as_f64().unwrap() - 14.0 / 81.0).abs() < 1e-15);
    let e = class_errors(&[true, false], &[false, false], &[0, 1], 2).unwrap();
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["boundary"][0], 1.0);
}

// =============================================================================================
// calibration: hand-computed examples
// =============================================================================================

#[test]
fn cfa_eq6_class_epsilon() {
    // t = 0, 0.5, 1; λ1 = 0.5: (0.5, 1.0, 1.5)·8/255 = 4/255, 8/255, 12/255
    let e = cfa_class_epsilon(&[0.0, 0.5, 1.0], 0.5, EPS8).unwrap();
    assert_abs_diff_eq!(e[0], 4.0 / 255.0, epsilon = 1e-15);
    assert_abs_diff_eq!(e[1], 8.0 / 255.0, epsilon = 1e-15);
    assert_abs_diff_eq!(e[2], 12.0 / 255.0, epsilon = 1e-15);
    // no clipping: λ1 = 0.7 (FAT), t = 1 -> 1.7ε
    assert_abs_diff_eq!(
        cfa_class_epsilon(&[1.0], 0.7, EPS8).unwrap()[0],
        1.7 * EPS8,
        epsilon = 1e-15
    );
    assert!(cfa_class_epsilon(&[1.1], 0.5, EPS8).is_err());
    assert!(cfa_class_epsilon(&[f64::NAN], 0.5, EPS8).is_err());
    assert!(cfa_class_epsilon(&[], 0.5, EPS8).is_err());
    assert!(cfa_class_epsilon(&[0.5], -0.1, EPS8).is_err());
}

#[test]
fn cfa_eq7_class_beta_and_eq8_weights() {
    // t = 0.2, 0.6; λ2 = 0.5; β = 6: 0.7·6 = 4.2, 1.1·6 = 6.6
    let b = cfa_class_beta(&[0.2, 0.6], 0.5, 6.0).unwrap();
    assert_abs_diff_eq!(b[0], 4.2, epsilon = 1e-12);
    assert_abs_diff_eq!(b[1], 6.6, epsilon = 1e-12);
    // erratum C9: Algorithm 1's "(λ2 + t_k)·ε" would give 0.7·8/255 ≈ 0.022; eq. (7) is used.
    assert!((b[0] - 0.7 * EPS8).abs() > 1.0);
    // eq. (8): b_k = β_k/(1+β_k): 4.2/5.2 = 0.8076923..., 6.6/7.6 = 0.8684210...; 6/7 vanilla
    let w = cfa_ccr_weights(&b).unwrap();
    assert_abs_diff_eq!(w[0], 4.2 / 5.2, epsilon = 1e-12);
    assert_abs_diff_eq!(w[1], 6.6 / 7.6, epsilon = 1e-12);
    assert_abs_diff_eq!(cfa_ccr_weight(6.0).unwrap(), 6.0 / 7.0, epsilon = 1e-15);
    assert!(cfa_ccr_weight(-1.0).is_err());
    assert!(cfa_class_beta(&[-0.1], 0.5, 6.0).is_err());
}

#[test]
fn cfa_epoch_config_warmup_and_calibration() {
    let cfg = CfaConfig::trades_reference(); // λ1 0.3, λ2 0.5, begin 10
    // warm-up: uniform ε, β, b = 6/7, t ignored
    let warm = cfa_epoch_config(&cfg, 5, 2, Some(&[0.1, 0.9])).unwrap();
    assert!(!warm.calibrated);
    assert_eq!(warm.epsilon, vec![EPS8; 2]);
    assert_eq!(warm.beta, vec![6.0; 2]);
    assert_abs_diff_eq!(warm.ccr_weight[1], 6.0 / 7.0, epsilon = 1e-15);
    // calibrated at epoch 10: t = 0.1, 0.9 -> ε_k = 0.4ε, 1.2ε; β_k = 3.6, 8.4
    let cal = cfa_epoch_config(&cfg, 10, 2, Some(&[0.1, 0.9])).unwrap();
    assert!(cal.calibrated);
    assert_abs_diff_eq!(cal.epsilon[0], 0.4 * EPS8, epsilon = 1e-15);
    assert_abs_diff_eq!(cal.epsilon[1], 1.2 * EPS8, epsilon = 1e-15);
    assert_abs_diff_eq!(cal.beta[0], 3.6, epsilon = 1e-12);
    assert_abs_diff_eq!(cal.beta[1], 8.4, epsilon = 1e-12);
    assert_abs_diff_eq!(cal.ccr_weight[0], 3.6 / 4.6, epsilon = 1e-12);
    // AT + CFA: CCM only (λ1 0.5), β stays 6
    let at = cfa_epoch_config(&CfaConfig::at_reference(), 10, 2, Some(&[0.1, 0.9])).unwrap();
    assert_abs_diff_eq!(at.epsilon[0], 0.6 * EPS8, epsilon = 1e-15);
    assert_eq!(at.beta, vec![6.0; 2]);
    // missing or wrong-length t after the warm-up is an error
    assert!(cfa_epoch_config(&cfg, 10, 2, None).is_err());
    assert!(cfa_epoch_config(&cfg, 10, 3, Some(&[0.1, 0.9])).is_err());
    // begin = 0 (paper, no warm-up): epoch 0 has no previous epoch -> uniform
    let paper = CfaConfig { begin: 0, ..cfg };
    assert!(!cfa_epoch_config(&paper, 0, 2, None).unwrap().calibrated);
    assert!(
        cfa_epoch_config(&paper, 1, 2, Some(&[0.5, 0.5]))
            .unwrap()
            .calibrated
    );
}

#[test]
fn cfa_reference_code_t_quirk() {
    // K = 2, N = 10 with classes of 8 and 2 samples, all correct: code gives 2·8/10 = 1.6 and
    // 2·2/10 = 0.4 instead of 1 and 1 (`CW_log` in `PKU-ML/CFA:train.py`).
    let t = cfa_train_robust_reference_code(&[8, 2], 10).unwrap();
    assert_abs_diff_eq!(t[0], 1.6, epsilon = 1e-15);
    assert_abs_diff_eq!(t[1], 0.4, epsilon = 1e-15);
    // balanced: equals per-class accuracy 3/5
    let t = cfa_train_robust_reference_code(&[3, 3], 10).unwrap();
    assert_abs_diff_eq!(t[0], 0.6, epsilon = 1e-15);
    assert!(cfa_train_robust_reference_code(&[1], 0).is_err());
}

#[test]
fn fawa_gate_and_actions() {
    use FawaComparison::*;
    // ≥ (Algorithm 1, code) vs > (text)
    assert!(fawa_accepts(0.2, 0.2, AtLeast).unwrap());
    assert!(!fawa_accepts(0.2, 0.2, Above).unwrap());
    assert!(!fawa_accepts(0.19, 0.2, AtLeast).unwrap());
    assert!(fawa_accepts(1.2, 0.2, AtLeast).is_err());
    assert!(fawa_accepts(f64::NAN, 0.2, AtLeast).is_err());

    let cfg = FawaConfig::paper(); // α 0.85, δ 0.2, start 50
    assert_eq!(
        fawa_action(&cfg, 49, 0.5, false).unwrap(),
        AverageAction::Keep
    );
    assert_eq!(
        fawa_action(&cfg, 50, 0.1, false).unwrap(),
        AverageAction::Keep
    );
    assert_eq!(
        fawa_action(&cfg, 51, 0.25, false).unwrap(),
        AverageAction::Copy
    );
    assert_eq!(
        fawa_action(&cfg, 52, 0.25, true).unwrap(),
        AverageAction::Average { alpha: 0.85 }
    );
    assert_eq!(
        fawa_action(&cfg, 53, 0.15, true).unwrap(),
        AverageAction::Keep
    );
    // reference code: no epoch gate, threshold 0.24
    let code = FawaConfig::reference_code();
    assert_eq!(
        fawa_action(&code, 0, 0.24, false).unwrap(),
        AverageAction::Copy
    );
    assert_eq!(
        fawa_action(&code, 1, 0.23, true).unwrap(),
        AverageAction::Keep
    );

    // θ̄ = [1, 2], θ = [3, 4], α = 0.85: [0.85 + 0.45, 1.7 + 0.6] = [1.3, 2.3]
    let avg = weight_average(&[1.0, 2.0], &[3.0, 4.0], 0.85).unwrap();
    assert_abs_diff_eq!(avg[0], 1.3, epsilon = 1e-12);
    assert_abs_diff_eq!(avg[1], 2.3, epsilon = 1e-12);
    let a = AverageAction::Average { alpha: 0.85 };
    assert_eq!(a.apply(&[1.0, 2.0], &[3.0, 4.0]).unwrap(), avg);
    assert_eq!(
        AverageAction::Copy.apply(&[1.0], &[3.0]).unwrap(),
        vec![3.0]
    );
    assert_eq!(
        AverageAction::Keep.apply(&[1.0], &[3.0]).unwrap(),
        vec![1.0]
    );
    assert!(AverageAction::Keep.apply(&[1.0], &[3.0, 4.0]).is_err());
    assert!(weight_average(&[1.0], &[2.0], 1.5).is_err());

    assert_eq!(ema_action(0, 0, 0.88).unwrap(), AverageAction::Copy);
    assert_eq!(
        ema_action(3, 0, 0.88).unwrap(),
        AverageAction::Average { alpha: 0.88 }
    );
    assert_eq!(ema_action(3, 50, 0.85).unwrap(), AverageAction::Keep);
}

#[test]
fn wat_weights_small() {
    // K = 2, η = 1, cumulative costs [0, ln 3, 0] (average at index 2):
    // exp -> [1, 3, 1], sum 5 -> paper [0.2, 0.6, 0.2]; code = 2 × paper = [0.4, 1.2, 0.4].
    let c = [0.0, 3f64.ln(), 0.0];
    let p = wat_weights(&c, 1.0, WatNormalization::Paper).unwrap();
    let k = wat_weights(&c, 1.0, WatNormalization::Code).unwrap();
    for (got, want) in p.iter().zip([0.2, 0.6, 0.2]) {
        assert_abs_diff_eq!(*got, want, epsilon = 1e-15);
    }
    for (got, want) in k.iter().zip([0.4, 1.2, 0.4]) {
        assert_abs_diff_eq!(*got, want, epsilon = 1e-15);
    }
    // initial weights: code all 1; paper 1/(K+1) = 1/3
    assert_eq!(
        wat_initial_weights(2, WatNormalization::Code).unwrap(),
        vec![1.0; 3]
    );
    assert_eq!(
        wat_initial_weights(2, WatNormalization::Paper).unwrap(),
        vec![1.0 / 3.0; 3]
    );
    // code sample weight = w_y + w_K: 1.2 + 0.4 = 1.6
    assert_abs_diff_eq!(
        wat_sample_weight(&k, 1, WatNormalization::Code).unwrap(),
        1.6,
        epsilon = 1e-15
    );
    assert!(wat_sample_weight(&k, 2, WatNormalization::Code).is_err());
    // paper: K·w_y + w_K = 2 × 0.6 + 0.2 = 1.4 (class 1), 2 × 0.2 + 0.2 = 0.6 (class 0); with the
    // initial 1/3 each: 2/3 + 1/3 = 1 (exactly TRADES).
    assert_abs_diff_eq!(
        wat_sample_weight(&p, 1, WatNormalization::Paper).unwrap(),
        1.4,
        epsilon = 1e-15
    );
    assert_abs_diff_eq!(
        wat_sample_weight(&p, 0, WatNormalization::Paper).unwrap(),
        0.6,
        epsilon = 1e-15
    );
    let p0 = wat_initial_weights(2, WatNormalization::Paper).unwrap();
    assert_abs_diff_eq!(
        wat_sample_weight(&p0, 0, WatNormalization::Paper).unwrap(),
        1.0,
        epsilon = 1e-15
    );
    // η = 0: uniform
    assert_eq!(
        wat_weights(&[5.0, 1.0, 2.0], 0.0, WatNormalization::Paper).unwrap(),
        vec![1.0 / 3.0; 3]
    );
}

#[test]
fn wat_weights_do_not_overflow() {
    // η = 0.5, costs [2000, 1998, 1999]: η·c = 1000, 999, 999.5; e^1000 overflows f64.
    // max-subtracted: [1, e^-1, e^-0.5] = [1, 0.3678794412, 0.6065306597], sum 1.9744101009
    // -> [0.5064803911, 0.1863237232, 0.3071958857]
    let w = wat_weights(&[2000.0, 1998.0, 1999.0], 0.5, WatNormalization::Paper).unwrap();
    assert_abs_diff_eq!(w[0], 0.506480391055654, epsilon = 1e-12);
    assert_abs_diff_eq!(w[1], 0.1863237232258476, epsilon = 1e-12);
    assert_abs_diff_eq!(w[2], 0.3071958857184984, epsilon = 1e-12);
    assert!(wat_weights(&[1.0, f64::NAN], 0.5, WatNormalization::Paper).is_err());
    assert!(wat_weights(&[1.0], 0.5, WatNormalization::Paper).is_err());
    assert!(wat_weights(&[1.0, 2.0], -0.1, WatNormalization::Paper).is_err());
    assert!(wat_weights(&[1e308, 0.0], 10.0, WatNormalization::Paper).is_err());
}

#[test]
fn wat_history_costs_and_selection() {
    // history [[0, ln3/2, 0], [0, ln3/2, 0]] sums to [0, ln 3, 0] -> code weights [0.4, 1.2, 0.4]
    let h = vec![vec![0.0, 3f64.ln() / 2.0, 0.0]; 2];
    let w = wat_weights_from_history(&h, 2, 1.0, WatNormalization::Code).unwrap();
    assert_abs_diff_eq!(w[1], 1.2, epsilon = 1e-14);
    assert_eq!(
        wat_weights_from_history(&[], 2, 1.0, WatNormalization::Code).unwrap(),
        vec![1.0; 3]
    );
    assert!(wat_weights_from_history(&h, 3, 1.0, WatNormalization::Code).is_err());
    let cum = wat_cumulative_costs(&[vec![1.0, 2.0], vec![0.5, 0.25]]).unwrap();
    assert_eq!(cum, vec![1.5, 2.25]);
    assert!(wat_cumulative_costs(&[vec![1.0, 2.0], vec![0.5]]).is_err());

    // validation costs: K = 2, CE sums [3, 1], KL sums [0.5, 0.25], β = 6, divisor 4
    // c_0 = (3 + 3)·2/4 = 3; c_1 = (1 + 1.5)·2/4 = 1.25; c_K = (4 + 6·0.75)/4 = 2.125
    let c = wat_validation_costs(&[3.0, 1.0], &[0.5, 0.25], 6.0, 4.0).unwrap();
    assert_eq!(c.len(), 3);
    assert_abs_diff_eq!(c[0], 3.0, epsilon = 1e-15);
    assert_abs_diff_eq!(c[1], 1.25, epsilon = 1e-15);
    assert_abs_diff_eq!(c[2], 2.125, epsilon = 1e-15);
    assert!(wat_validation_costs(&[3.0], &[0.5, 0.25], 6.0, 4.0).is_err());
    assert!(wat_validation_costs(&[3.0], &[0.5], 6.0, 0.0).is_err());

    // selection: worst class costs (index K ignored): 3, 2, 2.5 -> epoch 1
    let hist = vec![
        vec![1.0, 3.0, 2.0],
        vec![2.0, 2.0, 9.0],
        vec![0.5, 2.5, 0.0],
    ];
    assert_eq!(wat_select_iterate(&hist).unwrap(), 1);
    assert!(wat_select_iterate(&[]).is_err());
}

#[test]
fn frl_rules_small() {
    // violations: e = [0.1, 0.3], b = [0.2, 0.4], overall 0.2, 0.3, τ = 0.05
    // γ0 = [0.1 − 0.2 − 0.05, 0.3 − 0.2 − 0.05] = [−0.15, 0.05]; γ1 likewise [−0.15, 0.05]
    let (g0, g1) = frl_violations(&[0.1, 0.3], &[0.2, 0.4], 0.2, 0.3, 0.05, 0.05).unwrap();
    assert_abs_diff_eq!(g0[0], -0.15, epsilon = 1e-15);
    assert_abs_diff_eq!(g0[1], 0.05, epsilon = 1e-15);
    assert_abs_diff_eq!(g1[0], -0.15, epsilon = 1e-15);
    assert_abs_diff_eq!(g1[1], 0.05, epsilon = 1e-15);

    // update from zero, RWRM, α1 0.05, α2 0.2, lim 0.5:
    // λ0 = N([−0.0075, 0.0025]) = [0, 0.0025]; λ1 = N(2·0.05·γ1) = N([−0.015, 0.005]) = [0, 0.005]
    // λ2 = 0.2·γ1 = [−0.03, 0.01] (unclipped)
    let cfg = FrlConfig {
        tau1: 0.05,
        tau2: 0.05,
        ..FrlConfig::reweight_remargin_code()
    };
    let m0 = FrlMultipliers::zeros(2).unwrap();
    let m1 = frl_update(&cfg, &m0, &g0, &g1, 0.05).unwrap();
    assert_abs_diff_eq!(m1.lambda0[0], 0.0, epsilon = 1e-15);
    assert_abs_diff_eq!(m1.lambda0[1], 0.0025, epsilon = 1e-15);
    assert_abs_diff_eq!(m1.lambda1[1], 0.005, epsilon = 1e-15);
    assert_abs_diff_eq!(m1.lambda2[0], -0.03, epsilon = 1e-15);
    assert_abs_diff_eq!(m1.lambda2[1], 0.01, epsilon = 1e-15);
    // RW keeps λ2 = 0
    let rw = FrlConfig::reweight_code();
    assert_eq!(
        frl_update(&rw, &m0, &g0, &g1, 0.05).unwrap().lambda2,
        vec![0.0; 2]
    );
    assert!(frl_update(&cfg, &m0, &g0[..1], &g1, 0.05).is_err());

    // weights from λ1 = [0, 0.005]: mean 0.0025 -> [0.5 − 0.0025, 0.5 + 0.0025]
    let w = frl_weights(&cfg, &m1).unwrap();
    assert_abs_diff_eq!(w.boundary[0], 0.4975, epsilon = 1e-15);
    assert_abs_diff_eq!(w.boundary[1], 0.5025, epsilon = 1e-15);
    // ε multipliers: exp(−0.06) = 0.9418 -> clamp 0.98; exp(0.02) = 1.02020134
    assert_abs_diff_eq!(w.eps_multiplier[0], 0.98, epsilon = 1e-15);
    assert_abs_diff_eq!(w.eps_multiplier[1], 1.0202013400267558, epsilon = 1e-12);
}

#[test]
fn frl_normalize_weights_eps_and_rate() {
    // clamp [−0.1, 0.2, 0.1] -> [0, 0.2, 0.1], sum 0.3 ≤ 0.5: unchanged
    let v = frl_normalize(&[-0.1, 0.2, 0.1], 0.5).unwrap();
    assert_eq!(v, vec![0.0, 0.2, 0.1]);
    // [0.4, 0.6, −1] -> [0.4, 0.6, 0], sum 1 > 0.5 -> [0.2, 0.3, 0]
    let v = frl_normalize(&[0.4, 0.6, -1.0], 0.5).unwrap();
    assert_abs_diff_eq!(v[0], 0.2, epsilon = 1e-15);
    assert_abs_diff_eq!(v[1], 0.3, epsilon = 1e-15);
    assert_eq!(v[2], 0.0);
    assert!(frl_normalize(&[0.1], 0.0).is_err());

    // λ = [0.2, 0.3, 0], K = 3, mean 1/6:
    // w = [1/3 + 0.2 − 1/6, 1/3 + 0.3 − 1/6, 1/3 − 1/6] = [11/30, 14/30, 5/30]
    let w = frl_class_weights(&[0.2, 0.3, 0.0]).unwrap();
    assert_abs_diff_eq!(w[0], 11.0 / 30.0, epsilon = 1e-15);
    assert_abs_diff_eq!(w[1], 14.0 / 30.0, epsilon = 1e-15);
    assert_abs_diff_eq!(w[2], 5.0 / 30.0, epsilon = 1e-15);

    // exp(2·λ2) clamped to [0.98, 2.5]: λ2 = 0 -> 1; −1 -> e^−2 = 0.135 -> 0.98;
    // 1 -> e^2 = 7.39 -> 2.5; 0.2 -> e^0.4 = 1.4918246976
    let m = frl_eps_multipliers(&[0.0, -1.0, 1.0, 0.2], 2.5).unwrap();
    assert_eq!(m[0], 1.0);
    assert_eq!(m[1], 0.98);
    assert_eq!(m[2], 2.5);
    assert_abs_diff_eq!(m[3], 1.4918246976412703, epsilon = 1e-12);
    assert_eq!(frl_eps_multipliers(&[1.0], 3.0).unwrap()[0], 3.0);
    assert!(frl_eps_multipliers(&[1.0], 0.5).is_err());

    // α1 halves at 1-based epochs 40, 80, ...
    assert_eq!(frl_rate1(0.05, 1, 40).unwrap(), 0.05);
    assert_eq!(frl_rate1(0.05, 39, 40).unwrap(), 0.05);
    assert_eq!(frl_rate1(0.05, 40, 40).unwrap(), 0.025);
    assert_eq!(frl_rate1(0.05, 80, 40).unwrap(), 0.0125);
    assert!(frl_rate1(0.05, 0, 40).is_err());
    assert!(frl_rate1(0.05, 1, 0).is_err());
}

#[test]
fn frl_violations_from_class_errors() {
    // 2 classes, 2 samples each. class 0: clean T T, robust T F -> e 0, b 0.5.
    // class 1: clean T F, robust F F -> e 0.5, b 0.5. overall: e 1/4, b 3/4 − 1/4 = 1/2.
    // γ0 = [0 − 0.25 − 0.1, 0.5 − 0.25 − 0.1] = [−0.35, 0.15]; γ1 = [−0.1, −0.1]
    let e = class_errors(
        &[true, true, true, false],
        &[true, false, false, false],
        &[0, 0, 1, 1],
        2,
    )
    .unwrap();
    let (g0, g1) = frl_violations(
        &e.standard,
        &e.boundary,
        e.overall_standard,
        e.overall_boundary,
        0.1,
        0.1,
    )
    .unwrap();
    assert_abs_diff_eq!(g0[0], -0.35, epsilon = 1e-15);
    assert_abs_diff_eq!(g0[1], 0.15, epsilon = 1e-15);
    assert_abs_diff_eq!(g1[0], -0.1, epsilon = 1e-15);
    assert_abs_diff_eq!(g1[1], -0.1, epsilon = 1e-15);
}

#[test]
fn csl_update_small() {
    // w = 1, r = [0.2, 0.5, 0.8], r̄ = 0.5, γ = 1: [0.7, 1.0, 1.3] (sum 3, mean 1 already)
    let w = csl_update(&[1.0; 3], &[0.2, 0.5, 0.8], 1.0).unwrap();
    for (g, e) in w.iter().zip([0.7, 1.0, 1.3]) {
        assert_abs_diff_eq!(*g, e, epsilon = 1e-15);
    }
    // γ = 5: [1 − 1.5, 1, 1 + 1.5] -> clip [0, 1, 2.5], sum 3.5 -> ×3/3.5 = [0, 6/7, 15/7]
    let w = csl_update(&[1.0; 3], &[0.2, 0.5, 0.8], 5.0).unwrap();
    assert_eq!(w[0], 0.0);
    assert_abs_diff_eq!(w[1], 6.0 / 7.0, epsilon = 1e-15);
    assert_abs_diff_eq!(w[2], 15.0 / 7.0, epsilon = 1e-15);
    assert!(csl_update(&[1.0; 3], &[0.2, 0.5], 1.0).is_err());
    assert!(csl_update(&[0.0; 2], &[0.2, 0.5], 1.0).is_err());
    assert!(csl_update(&[1.0; 2], &[0.2, 1.5], 1.0).is_err());
}

// =============================================================================================
// properties
// =============================================================================================

/// (n_classes, labels, predictions) with every class present.
fn labelled_data() -> impl Strategy<Value = (usize, Vec<usize>, Vec<usize>)> {
    (2usize..8).prop_flat_map(|k| {
        (
            Just(k),
            proptest::collection::vec(0..k, 0..40),
            proptest::collection::vec(0..k, k..k + 40),
        )
            .prop_map(|(k, extra, preds)| {
                // labels: one of each class, then random extra labels; preds same length
                let mut labels: Vec<usize> = (0..k).collect();
                labels.extend(extra);
                let preds: Vec<usize> = preds.into_iter().cycle().take(labels.len()).collect();
                (k, labels, preds)
            })
    })
}

fn permutation(k: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..k).collect::<Vec<usize>>()).prop_shuffle()
}

proptest! {
    #![proptest_config(common::config("proptest-regressions/metrics_calibration.txt", 256))]

    #[test]
    fn relabelling_permutes_per_class_and_keeps_statistics(
        (k, labels, preds, perm) in labelled_data().prop_flat_map(|(k, l, p)| {
            (Just(k), Just(l), Just(p), permutation(k))
        })
    ) {
        let a = class_accuracy(&preds, &labels, k).unwrap();
        let pl: Vec<usize> = labels.iter().map(|&y| perm[y]).collect();
        let pp: Vec<usize> = preds.iter().map(|&y| perm[y]).collect();
        let b = class_accuracy(&pp, &pl, k).unwrap();
        for (c, &pc) in perm.iter().enumerate() {
            prop_assert_eq!(a.per_class()[c], b.per_class()[pc]);
        }
        prop_assert_eq!(a.overall(), b.overall());
        prop_assert!((a.cv() - b.cv()).abs() <= 1e-14);
        prop_assert_eq!(a.mcd(), b.mcd());
        prop_assert_eq!(a.worst().value, b.worst().value);
        prop_assert_eq!(a.best().value, b.best().value);
        prop_assert!((a.class_mean() - b.class_mean()).abs() <= 1e-15);
        prop_assert_eq!(a.worst_k_mean(1).unwrap(), b.worst_k_mean(1).unwrap());
    }

    #[test]
    fn order_statistics(values in proptest::collection::vec(0.0f64..=1.0, 1..30)) {
        let a = ClassAccuracy::from_values(values.clone()).unwrap();
        let (w, m, b) = (a.worst().value, a.class_mean(), a.best().value);
        prop_assert!(w <= m && m <= b);
        prop_assert_eq!(w, values.iter().copied().fold(f64::INFINITY, f64::min));
        prop_assert_eq!(a.mcd(), b - w);
        // worst-k mean between worst and class mean, non-decreasing in k
        let mut prev = w;
        for k in 1..=values.len() {
            let wk = a.worst_k_mean(k).unwrap();
            prop_assert!(wk >= w && wk <= m + 1e-15);
            prop_assert!(wk >= prev - 1e-15);
            prev = wk;
        }
        // Popoviciu: CV ≤ MCD²/4
        prop_assert!(a.cv() <= a.mcd() * a.mcd() / 4.0 + 1e-15);
        prop_assert!((a.cv_percent2() - 1e4 * a.cv()).abs() <= 1e-9);
    }

    #[test]
    fn cv_zero_iff_all_equal(values in proptest::collection::vec(0.0f64..=1.0, 1..20), v in 0.0f64..=1.0) {
        let a = ClassAccuracy::from_values(values.clone()).unwrap();
        let all_equal = values.iter().all(|&x| x == values[0]);
        prop_assert_eq!(a.cv() == 0.0, all_equal);
        prop_assert_eq!(class_variance(&values).unwrap() == 0.0, all_equal);
        let same = ClassAccuracy::from_values(vec![v; values.len()]).unwrap();
        prop_assert_eq!(same.cv(), 0.0);
        prop_assert_eq!(same.mcd(), 0.0);
    }

    #[test]
    fn tally_is_batch_independent(
        (k, labels, preds) in labelled_data(), split in 0usize..100
    ) {
        let s = split % (labels.len() + 1);
        let mut t = ClassTally::new(k).unwrap();
        t.add_predictions(&preds[..s], &labels[..s]).unwrap();
        t.add_predictions(&preds[s..], &labels[s..]).unwrap();
        prop_assert_eq!(t.to_accuracy().unwrap(), class_accuracy(&preds, &labels, k).unwrap());
        let cm = ConfusionMatrix::from_predictions(&preds, &labels, k).unwrap();
        prop_assert_eq!(cm.class_accuracy().unwrap(), t.to_accuracy().unwrap());
    }

    #[test]
    fn robust_error_is_standard_plus_boundary(
        (k, labels, _p) in labelled_data(),
        bits in proptest::collection::vec(any::<(bool, bool)>(), 48)
    ) {
        let clean: Vec<bool> = labels.iter().zip(bits.iter().cycle()).map(|(_, b)| b.0).collect();
        let robust: Vec<bool> = labels.iter().zip(bits.iter().cycle()).map(|(_, b)| b.1).collect();
        let e = class_errors(&clean, &robust, &labels, k).unwrap();
        for c in 0..k {
            prop_assert!((e.standard[c] + e.boundary[c] - e.robust[c]).abs() <= 1e-15);
            prop_assert!(e.standard[c] >= 0.0 && e.robust[c] <= 1.0);
        }
        prop_assert!((e.overall_standard + e.overall_boundary - e.overall_robust).abs() <= 1e-15);
        // boundary error is clean-correct-and-robust-wrong when nothing flips to correct
        if e.clean_wrong_robust_correct.iter().all(|&n| n == 0) {
            for c in 0..k {
                prop_assert!(e.boundary[c] >= 0.0);
            }
        }
    }

    #[test]
    fn wat_weights_normalised_positive_monotone(
        costs in proptest::collection::vec(0.0f64..50.0, 2..12),
        eta in 0.001f64..0.5,
        idx in 0usize..12,
        bump in 0.01f64..5.0,
        shift in -100.0f64..100.0,
    ) {
        let n = costs.len();
        let k = (n - 1) as f64;
        let p = wat_weights(&costs, eta, WatNormalization::Paper).unwrap();
        let c = wat_weights(&costs, eta, WatNormalization::Code).unwrap();
        prop_assert!((p.iter().sum::<f64>() - 1.0).abs() <= 1e-12);
        prop_assert!((c.iter().sum::<f64>() - k).abs() <= 1e-12 * k);
        prop_assert!(p.iter().all(|&w| w > 0.0));
        // higher cumulative cost -> higher weight (positive exponent)
        for i in 0..n {
            for j in 0..n {
                if costs[i] > costs[j] {
                    prop_assert!(p[i] > p[j]);
                }
            }
        }
        // raising one cost raises its weight and lowers every other weight
        let i = idx % n;
        let mut up = costs.clone();
        up[i] += bump;
        let q = wat_weights(&up, eta, WatNormalization::Paper).unwrap();
        prop_assert!(q[i] > p[i]);
        for j in (0..n).filter(|&j| j != i) {
            prop_assert!(q[j] < p[j]);
        }
        // shift invariance
        let shifted: Vec<f64> = costs.iter().map(|x| x + shift).collect();
        let s = wat_weights(&shifted, eta, WatNormalization::Paper).unwrap();
        for (a, b) in p.iter().zip(&s) {
            prop_assert!((a - b).abs() <= 1e-9);
        }
    }

    #[test]
    fn cfa_epsilon_monotone_and_bounded(
        t in proptest::collection::vec(0.0f64..=1.0, 1..20),
        lambda1 in 0.0f64..1.0,
    ) {
        let e = cfa_class_epsilon(&t, lambda1, EPS8).unwrap();
        let b = cfa_class_beta(&t, lambda1, 6.0).unwrap();
        for i in 0..t.len() {
            prop_assert!(e[i] >= lambda1 * EPS8 - 1e-18 && e[i] <= (lambda1 + 1.0) * EPS8 + 1e-18);
            for j in 0..t.len() {
                if t[i] < t[j] {
                    prop_assert!(e[i] < e[j]);
                    prop_assert!(b[i] < b[j]);
                }
            }
        }
        let w = cfa_ccr_weights(&b).unwrap();
        prop_assert!(w.iter().all(|&x| (0.0..1.0).contains(&x)));
    }

    #[test]
    fn frl_normalize_and_weights(
        v in proptest::collection::vec(-1.0f64..1.0, 1..12),
        lim in 0.01f64..0.99,
    ) {
        let n = frl_normalize(&v, lim).unwrap();
        prop_assert!(n.iter().all(|&x| x >= 0.0));
        prop_assert!(n.iter().sum::<f64>() <= lim + 1e-12);
        let n2 = frl_normalize(&n, lim).unwrap();
        for (a, b) in n.iter().zip(&n2) {
            prop_assert!((a - b).abs() <= 1e-12);
        }
        let w = frl_class_weights(&n).unwrap();
        prop_assert!((w.iter().sum::<f64>() - 1.0).abs() <= 1e-12);
        prop_assert!(w.iter().all(|&x| x > 0.0));
        let m = frl_eps_multipliers(&v, 2.5).unwrap();
        prop_assert!(m.iter().all(|&x| (0.98..=2.5).contains(&x)));
    }

    #[test]
    fn csl_mean_one_and_monotone(
        r in proptest::collection::vec(0.0f64..=1.0, 2..12),
        gamma in 0.0f64..5.0,
    ) {
        let w = csl_update(&vec![1.0; r.len()], &r, gamma).unwrap();
        let k = r.len() as f64;
        prop_assert!((w.iter().sum::<f64>() - k).abs() <= 1e-12 * k);
        prop_assert!(w.iter().all(|&x| x >= 0.0));
        for i in 0..r.len() {
            for j in 0..r.len() {
                if r[i] > r[j] {
                    prop_assert!(w[i] >= w[j]);
                }
            }
        }
    }
}
