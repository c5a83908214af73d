//! The leaderboard's ranks, spread and difference flag, on hand-computed values.

use classwise_core::record::{
    Leaderboard, LeaderboardRow, Reported, is_large_difference, ranks, std_dev,
};

#[test]
fn ranks_are_competition_ranks_best_first() {
    assert_eq!(ranks(&[0.5, 0.7, 0.5, 0.1]), vec![2, 1, 2, 4]);
    assert_eq!(ranks(&[]), Vec::<usize>::new());
}

#[test]
fn std_dev_is_the_population_standard_deviation() {
    // mean 0.5; squared deviations 0.04, 0, 0.04 → variance 0.08/3.
    let s = std_dev(&[0.3, 0.5, 0.7]);
    assert!((s - (0.08f64 / 3.0).sqrt()).abs() < 1e-15, "{s}");
}

#[test]
fn a_difference_is_large_beyond_three_standard_errors_and_one_point() {
    // 60 % on 10,000 images: SE = 100·√(0.24/10⁴) = 0.49 points, 3 SE = 1.47.
    assert!(!is_large_difference(58.6, 60.0, 10_000));
    assert!(is_large_difference(58.5, 60.0, 10_000));
    // On 100 images 3 SE = 14.7 points.
    assert!(!is_large_difference(50.0, 60.0, 100));
    // Never below one point, even at 0 % or with huge n.
    assert!(!is_large_difference(0.9, 0.0, 1_000_000));
    assert!(is_large_difference(1.1, 0.0, 1_000_000));
}

fn row(name: &str, robust: f64, worst: f64, reported: Option<f64>) -> LeaderboardRow {
    LeaderboardRow {
        name: name.into(),
        architecture: "WRN-28-10".into(),
        report: String::new(),
        weights_sha256: String::new(),
        clean_per_class: vec![0.9, 0.8],
        robust_per_class: vec![robust, worst],
        clean: 0.85,
        robust,
        worst_class: 1,
        worst_robust: worst,
        robust_std: 0.0,
        robust_worst_20: worst,
        rank_by_average: 0,
        rank_by_worst: 0,
        reported: reported.map(|r| Reported {
            clean: 90.0,
            robust: r,
            source: "paper".into(),
        }),
        difference: None,
        flagged: false,
    }
}

#[test]
fn ranking_orders_by_average_and_flags_large_differences() {
    let board = Leaderboard {
        schema: 1,
        dataset: "CIFAR-10".into(),
        eps: 8.0 / 255.0,
        eps_text: "8/255".into(),
        protocol: "autoattack standard".into(),
        n_samples: 10_000,
        class_names: vec!["a".into(), "b".into()],
        models: vec![
            row("fair", 0.50, 0.45, Some(50.5)),
            row("strong", 0.60, 0.20, Some(70.0)),
        ],
    }
    .ranked();
    let names: Vec<_> = board.models.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["strong", "fair"]);
    let strong = &board.models[0];
    assert_eq!((strong.rank_by_average, strong.rank_by_worst), (1, 2));
    assert!((strong.difference.unwrap() + 10.0).abs() < 1e-9);
    assert!(strong.flagged);
    let fair = &board.models[1];
    assert_eq!((fair.rank_by_average, fair.rank_by_worst), (2, 1));
    assert!(!fair.flagged);
    let text = serde_json::to_string(&board).unwrap();
    assert_eq!(Leaderboard::parse(&text, "board").unwrap(), board);
}
