//! FAWA (CFA §4.3, Algorithm 1) and EMA decisions, epoch by epoch.

use approx::assert_abs_diff_eq;
use classwise_core::CoreError;
use classwise_core::average::{Averager, Averaging, EmaSettings, FawaGate, FawaSettings};
use classwise_theory::calibration::{AverageAction, FawaComparison};

fn fawa(delta: f64, start_epoch: usize, comparison: FawaComparison, gate: FawaGate) -> Averager {
    Averager::new(Averaging::Fawa(FawaSettings {
        alpha: 0.8,
        delta,
        start_epoch,
        comparison,
        gate,
    }))
    .unwrap()
}

fn invalid_field(e: CoreError) -> String {
    match e {
        CoreError::Invalid { field, .. } => field,
        other => panic!("expected an invalid-setting error, got {other:?}"),
    }
}

#[test]
fn fawa_copies_the_first_accepted_epoch_then_averages_the_accepted_ones() {
    let mut a = fawa(0.5, 2, FawaComparison::AtLeast, FawaGate::WorstClass);
    assert!(a.needs().val_accuracy);
    assert!(!a.is_initialized());
    let mut decide = |epoch, val_robust: &[f64]| a.decide(epoch, Some(val_robust)).unwrap();
    // Before the start epoch nothing happens, even when the gate passes.
    let d = decide(0, &[0.9, 0.6]);
    assert_eq!(d.action, AverageAction::Keep);
    assert_eq!(d.gate_value, Some(0.6)); // min_k
    assert_eq!(decide(1, &[0.9, 0.7]).action, AverageAction::Keep);
    // The worst class 0.4 < δ = 0.5: rejected.
    let d = decide(2, &[0.9, 0.4]);
    assert_eq!((d.action, d.gate_value), (AverageAction::Keep, Some(0.4)));
    // min_k = 0.5 ≥ δ (at equality): the first acceptance is a copy.
    assert_eq!(decide(3, &[0.5, 0.9]).action, AverageAction::Copy);
    // The next acceptance averages with α.
    assert_eq!(
        decide(4, &[0.7, 0.55]).action,
        AverageAction::Average { alpha: 0.8 }
    );
    // A rejected epoch keeps θ̄.
    assert_eq!(decide(5, &[0.3, 0.9]).action, AverageAction::Keep);
    assert_eq!(
        decide(6, &[0.6, 0.6]).action,
        AverageAction::Average { alpha: 0.8 }
    );
    // Copies and averages are counted, keeps are not.
    assert_eq!(a.state.updates, 3);
    assert!(a.is_initialized());
}

#[test]
fn fawa_above_refuses_equality() {
    let mut a = fawa(0.5, 0, FawaComparison::Above, FawaGate::WorstClass);
    assert_eq!(
        a.decide(0, Some(&[0.5, 0.9])).unwrap().action,
        AverageAction::Keep
    );
    assert_eq!(
        a.decide(1, Some(&[0.51, 0.9])).unwrap().action,
        AverageAction::Copy
    );
}

#[test]
fn fawa_worst_fraction_gate_averages_the_worst_classes() {
    // Ten classes: the worst 20% are two classes, 0.3 and 0.4, mean 0.35; the worst class 0.3.
    let acc = [0.9, 0.8, 0.3, 0.7, 0.6, 0.5, 0.4, 0.95, 0.85, 0.75];
    let mut fraction = fawa(
        0.33,
        0,
        FawaComparison::AtLeast,
        FawaGate::WorstFraction { fraction: 0.2 },
    );
    let d = fraction.decide(0, Some(&acc)).unwrap();
    assert_abs_diff_eq!(d.gate_value.unwrap(), 0.35, epsilon = 1e-12);
    assert_eq!(d.action, AverageAction::Copy);
    // The worst-class gate rejects the same epoch (0.3 < 0.33).
    let mut worst = fawa(0.33, 0, FawaComparison::AtLeast, FawaGate::WorstClass);
    let d = worst.decide(0, Some(&acc)).unwrap();
    assert_eq!((d.action, d.gate_value), (AverageAction::Keep, Some(0.3)));
}

#[test]
fn fawa_needs_the_validation_robust_accuracy() {
    let mut a = fawa(0.5, 0, FawaComparison::AtLeast, FawaGate::WorstClass);
    let e = a.decide(4, None).unwrap_err();
    assert!(
        matches!(
            e,
            CoreError::Missing {
                rule: "fawa",
                epoch: 4,
                ..
            }
        ),
        "{e:?}"
    );
    // Accuracies outside [0, 1] are refused.
    assert!(a.decide(4, Some(&[0.5, 1.5])).is_err());
}

#[test]
fn averaging_settings_are_checked() {
    let bad = |averaging: Averaging| invalid_field(Averager::new(averaging).unwrap_err());
    let ok = FawaSettings {
        alpha: 0.85,
        delta: 0.2,
        start_epoch: 0,
        comparison: FawaComparison::AtLeast,
        gate: FawaGate::WorstClass,
    };
    assert_eq!(
        bad(Averaging::Fawa(FawaSettings { alpha: 1.5, ..ok })),
        "fawa.alpha"
    );
    assert_eq!(
        bad(Averaging::Fawa(FawaSettings { delta: -0.1, ..ok })),
        "fawa.delta"
    );
    assert_eq!(
        bad(Averaging::Fawa(FawaSettings {
            gate: FawaGate::WorstFraction { fraction: 0.0 },
            ..ok
        })),
        "fawa.gate.fraction"
    );
    assert_eq!(
        bad(Averaging::Ema(EmaSettings {
            alpha: f64::NAN,
            start_epoch: 0
        })),
        "ema.alpha"
    );
}

#[test]
fn ema_keeps_before_its_start_copies_at_it_and_averages_after() {
    let mut a = Averager::new(Averaging::Ema(EmaSettings {
        alpha: 0.85,
        start_epoch: 2,
    }))
    .unwrap();
    assert!(!a.needs().any());
    let actions: Vec<AverageAction> = (0..5).map(|e| a.decide(e, None).unwrap().action).collect();
    let avg = AverageAction::Average { alpha: 0.85 };
    assert_eq!(
        actions,
        [
            AverageAction::Keep,
            AverageAction::Keep,
            AverageAction::Copy,
            avg,
            avg
        ]
    );
    assert_eq!(a.decide(5, None).unwrap().gate_value, None);
    assert_eq!(a.state.updates, 4);
}

#[test]
fn an_average_of_nothing_is_a_copy() {
    // An EMA resumed past its start without its weights: nothing to average yet.
    let mut a = Averager::new(Averaging::Ema(EmaSettings {
        alpha: 0.85,
        start_epoch: 0,
    }))
    .unwrap();
    assert_eq!(a.decide(7, None).unwrap().action, AverageAction::Copy);
    assert_eq!(
        a.decide(8, None).unwrap().action,
        AverageAction::Average { alpha: 0.85 }
    );
}

#[test]
fn actions_apply_to_flat_weights() {
    // θ̄ ← α·θ̄ + (1 − α)·θ with α = 0.8: 0.8·[1, 2] + 0.2·[3, 4] = [1.4, 2.4].
    let avg = AverageAction::Average { alpha: 0.8 }
        .apply(&[1.0, 2.0], &[3.0, 4.0])
        .unwrap();
    assert_abs_diff_eq!(avg[0], 1.4, epsilon = 1e-15);
    assert_abs_diff_eq!(avg[1], 2.4, epsilon = 1e-15);
    assert_eq!(AverageAction::Copy.apply(&[1.0], &[3.0]).unwrap(), [3.0]);
    assert_eq!(AverageAction::Keep.apply(&[1.0], &[3.0]).unwrap(), [1.0]);
}
