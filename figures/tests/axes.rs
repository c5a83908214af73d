//! The y axes of the bar charts (issue 37, item 6: an axis must never hide data): bars start at
//! 0 unless every value is close to the others, and every value lies inside the axis with a
//! visible bar. The expected ranges are worked out by hand in the comments.

mod common;

use classwise_figures::bars::{accuracy_range, from_zero, truncation_note};
use common::assert_on_axis;

fn assert_range(got: (std::ops::Range<f64>, bool), want: (f64, f64, bool)) {
    let (y, truncated) = got;
    assert!(
        (y.start - want.0).abs() < 1e-12 && (y.end - want.1).abs() < 1e-12,
        "{y:?}, expected {}..{}",
        want.0,
        want.1
    );
    assert_eq!(truncated, want.2, "{y:?}");
}

/// The demo's comparison: one run per method, so no error bar, and classes from 0.0 (Shirt) to
/// 0.94 (Trouser). The axis used to be 0.9..0.95, hiding nine classes of ten.
#[test]
fn spread_accuracies_start_at_zero() {
    let values = [
        0.78, 0.94, 0.32, 0.74, 0.48, 0.74, 0.0, 0.76, 0.78, 0.84, 0.0, 0.638,
    ];
    let got = accuracy_range(values.iter().map(|&v| (v, 0.0)));
    // Not close (0.94 − 0.0 > 0.0 / 4): from 0; top ⌈(0.94 + 0.04)·20⌉/20 = ⌈19.6⌉/20 = 1.
    assert_range(got.clone(), (0.0, 1.0, false));
    assert_on_axis(&got.0, &values, "demo");
    assert_eq!(truncation_note(&got), "");
    // 0.5 and 0.8: 0.3 > 0.5 / 4, from 0; top ⌈0.84·20⌉/20 = ⌈16.8⌉/20 = 0.85.
    assert_range(accuracy_range([(0.5, 0.0), (0.8, 0.0)]), (0.0, 0.85, false));
}

/// Near-equal values may zoom, the start at least 0.08 below every bar.
#[test]
fn close_accuracies_zoom_without_cutting_a_bar() {
    let values = [0.90, 0.92, 0.95];
    let got = accuracy_range(values.iter().map(|&v| (v, 0.0)));
    // 0.95 − 0.90 = 0.05 ≤ 0.90 / 4: start ⌊(0.90 − 0.08)·10⌋/10 = ⌊8.2⌋/10 = 0.8;
    // top ⌈(0.95 + 0.04)·20⌉/20 = ⌈19.8⌉/20 = 1.
    assert_range(got.clone(), (0.8, 1.0, true));
    assert_on_axis(&got.0, &values, "close");
    assert_eq!(truncation_note(&got), "; the y axis starts at 0.8");
    // With error bars 0.61 ± 0.02 and 0.66 ± 0.03 the band is 0.59..0.69 (0.10 ≤ 0.59 / 4):
    // start ⌊0.51·10⌋/10 = 0.5, top ⌈0.73·20⌉/20 = ⌈14.6⌉/20 = 0.75.
    let got = accuracy_range([(0.61, 0.02), (0.66, 0.03)]);
    assert_range(got.clone(), (0.5, 0.75, true));
    assert_on_axis(&got.0, &[0.59, 0.63, 0.69], "error bar ends");
    // An error bar above 1 (0.97 ± 0.05) does not stretch the axis past 1: band 0.92..1.02,
    // start ⌊0.84·10⌋/10 = 0.8, top min(⌈1.06·20⌉/20, 1) = 1.
    assert_range(
        accuracy_range([(0.97, 0.05), (0.95, 0.0)]),
        (0.8, 1.0, true),
    );
}

/// A bar's error bar counts: one far below the others makes the values not close.
#[test]
fn a_long_error_bar_keeps_the_axis_from_zero() {
    // Band 0.5..0.95 (0.9 ± 0.4 reaches 0.5): 0.45 > 0.5 / 4, from 0; top ⌈0.99·20⌉/20 = 1.
    assert_range(accuracy_range([(0.9, 0.4), (0.95, 0.0)]), (0.0, 1.0, false));
}

#[test]
fn degenerate_inputs_give_a_drawable_axis() {
    assert_range(accuracy_range(std::iter::empty()), (0.0, 1.0, false));
    assert_range(accuracy_range([(f64::NAN, 0.0)]), (0.0, 1.0, false));
    // Only zeros: start max(⌊−0.8⌋/10, 0) = 0, top ⌈0.04·20⌉/20 = 0.05.
    assert_range(accuracy_range([(0.0, 0.0)]), (0.0, 0.05, false));
}

#[test]
fn axes_from_zero_reach_above_the_largest_value() {
    // ⌈(0.8 + 0.05)·10⌉/10 = ⌈8.5⌉/10 = 0.9.
    assert_eq!(from_zero([0.35, 0.8], 0.05), 0.0..0.9);
    // ⌈10.1⌉/10 = 1.1, at most 1.
    assert_eq!(from_zero([0.96], 0.05), 0.0..1.0);
    // A value above 1 is never cut: 1.2.
    assert_eq!(from_zero([1.2, f64::NAN], 0.05), 0.0..1.2);
    assert_eq!(from_zero([], 0.05), 0.0..0.1);
}
