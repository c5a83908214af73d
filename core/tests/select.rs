//! Model-selection strategies: which epochs are kept as candidates and which one is chosen.

use classwise_core::CoreError;
use classwise_core::select::{EpochScore, Keep, Selection, Selector};

fn score(s: f64) -> EpochScore {
    EpochScore {
        avg_plus_worst: Some(s),
        val_costs: None,
    }
}

fn costs(c: &[f64]) -> EpochScore {
    EpochScore {
        avg_plus_worst: None,
        val_costs: Some(c.to_vec()),
    }
}

fn keep(drop: &[usize]) -> Keep {
    Keep {
        keep: true,
        drop: drop.to_vec(),
    }
}

#[test]
fn last_keeps_the_last_epoch() {
    let mut s = Selector::new(Selection::Last, 3).unwrap();
    assert_eq!(s.offer(0, &EpochScore::default()).unwrap(), keep(&[]));
    assert_eq!(s.offer(1, &EpochScore::default()).unwrap(), keep(&[0]));
    assert_eq!(s.offer(2, &score(0.1)).unwrap(), keep(&[1]));
    assert_eq!(s.candidates, [2]);
    assert_eq!(s.choose(&[]), Some(2));
}

#[test]
fn best_avg_worst_keeps_the_maximum() {
    let mut s = Selector::new(Selection::BestAvgWorst, 5).unwrap();
    assert_eq!(s.offer(0, &score(1.0)).unwrap(), keep(&[]));
    assert_eq!(s.offer(1, &score(1.2)).unwrap(), keep(&[0]));
    // Lower, equal or unevaluated epochs are not kept.
    assert_eq!(s.offer(2, &score(1.1)).unwrap(), Keep::default());
    assert_eq!(s.offer(3, &score(1.2)).unwrap(), Keep::default());
    assert_eq!(s.offer(4, &EpochScore::default()).unwrap(), Keep::default());
    assert_eq!(s.best, Some((1, 1.2)));
    assert_eq!(s.choose(&[]), Some(1));
    // Nothing evaluated, nothing chosen.
    let mut empty = Selector::new(Selection::BestAvgWorst, 1).unwrap();
    empty.offer(0, &EpochScore::default()).unwrap();
    assert_eq!(empty.choose(&[]), None);
}

#[test]
fn cfa_candidates_start_at_half_the_run_and_include_the_last_five() {
    // E = 10: epochs < 5 are never candidates, however good; epochs 5..=9 are the last five
    // and always candidates, however bad.
    let mut s = Selector::new(Selection::cfa(), 10).unwrap();
    for epoch in 0..5 {
        assert_eq!(
            s.offer(epoch, &score(1.9)).unwrap(),
            Keep::default(),
            "{epoch}"
        );
    }
    assert_eq!(s.best, None, "epochs before E/2 set no threshold");
    for (epoch, sc) in [(5, 1.0), (6, 0.2), (7, 1.5), (8, 0.1), (9, 0.0)] {
        assert_eq!(s.offer(epoch, &score(sc)).unwrap(), keep(&[]), "{epoch}");
    }
    assert_eq!(s.candidates, [5, 6, 7, 8, 9]);
}

#[test]
fn cfa_candidates_are_within_the_tolerance_of_the_best_so_far() {
    // E = 20: candidates from epoch 10; the last five are 15..=19.
    let mut s = Selector::new(Selection::cfa(), 20).unwrap();
    for epoch in 0..10 {
        s.offer(epoch, &score(1.5)).unwrap();
    }
    let offered = [
        (10, 1.00), // the first: best = 1.00
        (11, 0.99), // ≥ 1.00 − 0.02
        (12, 0.97), // < 0.98: not a candidate
        (13, 1.05), // new best
        (14, 1.04), // ≥ 1.05 − 0.02
        (15, 0.50), // last five
        (16, 0.40),
        (17, 0.30),
        (18, 0.20),
        (19, 0.10),
    ];
    let kept: Vec<usize> = offered
        .iter()
        .filter(|&&(e, sc)| s.offer(e, &score(sc)).unwrap().keep)
        .map(|&(e, _)| e)
        .collect();
    assert_eq!(kept, [10, 11, 13, 14, 15, 16, 17, 18, 19]);
    assert_eq!(s.candidates, kept);
    assert_eq!(s.best, Some((13, 1.05)));
    // choose(): the highest final score among the candidates; epoch 12 is not one.
    let finals = [
        (10, 0.90),
        (11, 0.95),
        (12, 2.00),
        (13, 0.96),
        (14, 0.80),
        (19, 0.50),
    ];
    assert_eq!(s.choose(&finals), Some(13));
    // Ties go to the later epoch.
    assert_eq!(s.choose(&[(11, 0.9), (14, 0.9)]), Some(14));
    assert_eq!(s.choose(&[(12, 0.9)]), None);
    assert!(Selection::cfa().compares_candidates());
}

#[test]
fn wat_picks_the_epoch_with_the_smallest_worst_class_cost() {
    let mut s = Selector::new(Selection::Wat, 4).unwrap();
    assert!(s.strategy.needs().val_costs);
    // [class 0, class 1, average]; the max over the classes is 2.0, 1.6, 1.7, 1.6.
    assert_eq!(s.offer(0, &costs(&[1.0, 2.0, 0.1])).unwrap(), keep(&[]));
    assert_eq!(s.offer(1, &costs(&[1.5, 1.6, 5.0])).unwrap(), keep(&[0]));
    // The average entry is ignored, however small.
    assert_eq!(
        s.offer(2, &costs(&[1.7, 1.0, 0.0])).unwrap(),
        Keep::default()
    );
    // A tie keeps the earlier epoch.
    assert_eq!(
        s.offer(3, &costs(&[1.6, 1.6, 9.0])).unwrap(),
        Keep::default()
    );
    assert_eq!(s.choose(&[]), Some(1));
    let e = s.offer(4, &score(1.0)).unwrap_err();
    assert!(
        matches!(
            e,
            CoreError::Missing {
                rule: "wat selection",
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn selection_settings_are_checked_and_parsed() {
    let bad = Selection::Cfa {
        tolerance: -0.01,
        from_fraction: 0.5,
        last_epochs: 5,
    };
    match Selector::new(bad, 10).unwrap_err() {
        CoreError::Invalid { field, .. } => assert_eq!(field, "select.tolerance"),
        other => panic!("{other:?}"),
    }
    #[derive(serde::Deserialize)]
    struct File {
        select: Selection,
    }
    let parsed: File = toml::from_str("[select]\nkind = \"cfa\"\n").unwrap();
    assert_eq!(parsed.select, Selection::cfa());
    let parsed: File = toml::from_str("[select]\nkind = \"best-avg-worst\"\n").unwrap();
    assert_eq!(parsed.select, Selection::default());
    let e = toml::from_str::<File>("[select]\nkind = \"cfa\"\ntolerence = 0.01\n")
        .err()
        .unwrap();
    assert!(e.to_string().contains("tolerence"), "{e}");
}
