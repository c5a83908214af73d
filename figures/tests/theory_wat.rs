//! The WAT panels plot the values of `classwise-theory` (recomputed here at a few points with
//! the theory functions themselves) and the independently computed values of checks H5 and G2
//! and errata W1-W4, and write the CSV tables they declare.

mod common;

use approx::assert_relative_eq;
use classwise_figures::Table;
use classwise_figures::theory::wat::hedge::{self, HedgePanels, constant_rows, wat_like_sequence};
use classwise_figures::theory::wat::thm2::{self, MonteCarlo, Thm2Panels};
use classwise_figures::{Figure, theory::wat};
use classwise_theory::tol::G2_TABLE_TOL;
use classwise_theory::verify::rng_for;
use classwise_theory::wat::constant_sequence;
use classwise_theory::wat::counterexample::{
    any_of_k_fails, clopper_pearson_miss_rate, stated_failure_probability,
    union_failure_probability,
};
use classwise_theory::wat::generalization::{Confidence, theorem2_deviation};
use classwise_theory::wat::hedge::Hedge;
use classwise_theory::wat::monte_carlo::{PartA, TermScales};
use classwise_theory::wat::no_regret::{Theorem1Report, lemma1_oscillation};
use classwise_theory::wat::sequences::{SequenceKind, generate};
use common::{csv, num};

fn table<'a>(tables: &'a [Table], name: &str) -> &'a Table {
    tables
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no table {name}"))
}

#[test]
fn hedge_panels_plot_theorem_1() {
    let fig = HedgePanels::new().unwrap();
    assert_eq!(fig.id(), "wat-hedge");
    assert_eq!(fig.size(), wat::PANELS);

    // (a) The sequence: K training-curve classes from the seeded stream, L₀ their mean.
    let mut rng = rng_for(hedge::SEED, "wat-hedge");
    let classes = generate(
        SequenceKind::TrainingCurve,
        hedge::CLASSES,
        hedge::ROUNDS,
        hedge::ETA,
        &mut rng,
    )
    .unwrap();
    assert_eq!(fig.losses.len(), hedge::ROUNDS);
    assert_eq!(fig.weights.len(), hedge::ROUNDS);
    for t in [0, 1, 17, 500, 999] {
        assert_eq!(&fig.losses[t][1..], &classes[t][..]);
        let mean = classes[t].iter().sum::<f64>() / hedge::CLASSES as f64;
        assert_relative_eq!(fig.losses[t][0], mean, max_relative = 1e-15);
    }
    // The weights are Hedge's (WAT eq. (12)) before each round: uniform first.
    let mut player = Hedge::new(hedge::CLASSES + 1, hedge::ETA).unwrap();
    for (t, row) in fig.losses.iter().enumerate() {
        if [0, 1, 99, 999].contains(&t) {
            assert_eq!(fig.weights[t], player.weights(), "round {}", t + 1);
        }
        player.update(row).unwrap();
    }
    assert!(fig.weights[0].iter().all(|&w| w == 0.2));

    // (b) Both sides of Theorem 1 on the first T rounds.
    let t = &fig.bound_rounds;
    assert_eq!((t[0], *t.last().unwrap()), (1.0, hedge::ROUNDS as f64));
    assert!(t.windows(2).all(|w| w[0] < w[1]));
    for i in [0, 10, 40, t.len() - 1] {
        let r = Theorem1Report::evaluate(&fig.losses[..t[i] as usize], hedge::ETA).unwrap();
        assert_eq!(fig.lhs[i], r.max_min);
        assert_eq!(fig.rhs[i], r.rhs);
        assert_eq!(fig.t1a[i], r.t1a_rhs);
        assert_eq!(fig.t1b[i], r.t1b_rhs);
        assert_eq!(fig.assumption_a[i], r.assumption_a);
    }
    // The corrected forms hold everywhere, Theorem 1 wherever (A) holds (check H3), and (A)
    // holds at T = 1000 but not at T = 1 (the shaded region is neither empty nor everything).
    for i in 0..t.len() {
        assert!(fig.t1a[i] >= fig.lhs[i] && fig.t1b[i] >= fig.lhs[i]);
        if fig.assumption_a[i] {
            assert!(fig.rhs[i] >= fig.lhs[i]);
        }
    }
    assert!(!fig.assumption_a[0] && *fig.assumption_a.last().unwrap());

    // (c) The constant sequences: the K = 1, η = 0.5, T = 10 case of check H5, the figure's
    // points, and the large-T approximation (n−1)/(2nT).
    assert_eq!(constant_rows(2, 10), constant_sequence(10));
    assert_eq!(constant_rows(5, 3), vec![vec![1.0, 0.0, 0.0, 0.0, 0.0]; 3]);
    let h5 = Theorem1Report::evaluate(&constant_rows(2, 10), 0.5).unwrap();
    assert_relative_eq!(h5.rhs, 0.975_661_438_858_042_4, max_relative = 1e-10);
    assert!(!h5.assumption_a && h5.max_min == 1.0);
    assert_eq!(
        fig.constant.iter().map(|c| c.decisions).collect::<Vec<_>>(),
        hedge::CONSTANT_DECISIONS
    );
    for c in &fig.constant {
        let n = c.decisions as f64;
        assert!(!c.rounds.is_empty());
        assert_eq!(*c.rounds.last().unwrap(), hedge::CONSTANT_ROUNDS as f64);
        for i in [0, c.rounds.len() / 2, c.rounds.len() - 1] {
            let rounds = c.rounds[i] as usize;
            let r = Theorem1Report::evaluate(&constant_rows(c.decisions, rounds), 0.5).unwrap();
            assert!(!r.assumption_a);
            assert_eq!(c.excess[i], r.max_min - r.rhs);
            assert!(c.excess[i] > 0.0);
            assert_relative_eq!(
                c.approx[i],
                (n - 1.0) / (2.0 * n * c.rounds[i]),
                max_relative = 1e-15
            );
        }
        // Within 5% of (n−1)/(2nT) once T ≥ 1000.
        for (i, &rounds) in c.rounds.iter().enumerate() {
            if rounds >= 1000.0 {
                let ratio = c.excess[i] / c.approx[i];
                assert!((ratio - 1.0).abs() < 0.05, "n = {n}, T = {rounds}: {ratio}");
            }
        }
    }

    // (d) The Lemma-1 oscillation at the independently computed points (H5: T = 50; T = 10⁴).
    let o = &fig.oscillation_rounds;
    assert_eq!(o.len(), 22);
    assert_eq!((o[0], o[1], o[21]), (1.0, 50.0, 10_000.0));
    assert_relative_eq!(
        fig.hedge_slack[1],
        -1.675_188_918_926_472_4,
        max_relative = 1e-10
    );
    assert!(
        (fig.hedge_slack[21] - -610.9).abs() < 0.05,
        "{}",
        fig.hedge_slack[21]
    );
    assert!(
        (fig.linear_slack[21] - 0.561).abs() < 5e-4,
        "{}",
        fig.linear_slack[21]
    );
    for i in [0, 7, 21] {
        let s = lemma1_oscillation(0.5, o[i] as usize).unwrap();
        assert_eq!(fig.hedge_slack[i], s.hedge_slack);
        assert_eq!(fig.linear_slack[i], s.linear_slack);
        assert_eq!(fig.drift[i], -0.5 * o[i] / 8.0);
    }
    assert!(fig.linear_slack.iter().all(|&s| s > 0.0));

    // CSVs: headers and row counts.
    let tables = fig.tables();
    assert_eq!(tables.len(), 4);
    let (header, rows) = csv(table(&tables, "weights"));
    assert_eq!(header, "t,L_0,L_1,L_2,L_3,L_4,w_0,w_1,w_2,w_3,w_4");
    assert_eq!(rows.len(), hedge::ROUNDS);
    assert_eq!(num(&rows[99][0]), 100.0);
    assert_eq!(num(&rows[99][7]), fig.weights[99][1]);
    let (header, rows) = csv(table(&tables, "bound"));
    assert_eq!(header, "T,lhs_max_min,rhs,t1a,t1b,assumption_a");
    assert_eq!(rows.len(), fig.bound_rounds.len());
    assert!(rows.len() > 60, "{} distinct T", rows.len());
    assert_eq!(num(&rows[5][2]), fig.rhs[5]);
    let (header, rows) = csv(table(&tables, "constant"));
    assert_eq!(header, "n,T,excess,approx");
    let points: usize = fig.constant.iter().map(|c| c.rounds.len()).sum();
    assert_eq!(rows.len(), points);
    let (header, rows) = csv(table(&tables, "oscillation"));
    assert_eq!(header, "T,hedge_slack,linear_slack,minus_eta_T_over_8");
    assert_eq!(rows.len(), 22);
    assert_eq!(num(&rows[21][3]), -625.0);
}

#[test]
fn wat_like_sequence_is_seeded() {
    let a = wat_like_sequence(3, 20, 0.1, 5).unwrap();
    assert_eq!(a, wat_like_sequence(3, 20, 0.1, 5).unwrap());
    assert_ne!(a, wat_like_sequence(3, 20, 0.1, 6).unwrap());
    assert!(a.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
}

/// A small Monte Carlo is exactly the theory's part-A trials on the per-n streams.
#[test]
fn thm2_monte_carlo_is_the_theory_trials() {
    let mc = MonteCarlo {
        seed: 7,
        sizes: vec![10, 20],
        trials: 3,
        sign_draws: 8,
        delta: 0.05,
    };
    let model = PartA::spec().unwrap();
    for &n in &mc.sizes {
        let column = thm2::monte_carlo_column(&mc, n).unwrap();
        let mut rng = rng_for(7, &format!("wat-thm2-n{n}"));
        for i in 0..mc.trials {
            let t = model
                .trial(n, &[0.05], 8, TermScales::THEOREM, &mut rng)
                .unwrap();
            assert_eq!(column.sup_deviation[i], t.uniform_deviation);
            assert_eq!(column.two_max_rademacher[i], 2.0 * t.max_class_rademacher);
            assert_eq!(column.stated_slack[i], t.slacks[0].stated);
            assert_eq!(column.union_slack[i], t.slacks[0].union);
        }
        // Deviation terms: 3B√(K log(·)/(2|S|)) with K = 2, |S| = 2n, B = 1.
        let stated = theorem2_deviation(1.0, 2, 2 * n, 0.05, Confidence::Stated).unwrap();
        let union = theorem2_deviation(1.0, 2, 2 * n, 0.05, Confidence::UnionBound).unwrap();
        assert_eq!(column.deviation_stated, stated);
        assert_eq!(column.deviation_union, union);
        // In units of √(1/(2n)): 3√(log(2/δ)) = 5.76 (check G3) and 3√(log(4/δ)) = 6.27999.
        let unit = (2.0 * n as f64).sqrt();
        assert!((column.deviation_stated * unit - 5.76).abs() < 5e-3);
        assert!((column.deviation_union * unit - 6.279_99).abs() < 5e-3);
    }
}

#[test]
fn thm2_panels_plot_theorem_2() {
    let fig = Thm2Panels::new().unwrap();
    assert_eq!(fig.id(), "wat-thm2");
    assert_eq!(fig.monte_carlo, MonteCarlo::full());
    assert_eq!(fig.axis_labels().len(), 6);
    assert!(fig.axis_labels()[0].contains("10, 20, 50, 100, 200"));

    // (a) Part A: no violation of either version, the uniform deviation below
    // 2.50·√(1/(2n)), and 2·max_k R_{S_k} alone covering it in almost every trial.
    let mc = MonteCarlo::full();
    assert_eq!(fig.columns.len(), mc.sizes.len());
    let mut covered = 0;
    for c in &fig.columns {
        assert_eq!(c.sup_deviation.len(), mc.trials);
        assert_eq!(c.violations(), (0, 0));
        let unit = (2.0 * c.n as f64).sqrt();
        for &d in &c.sup_deviation {
            assert!(d * unit <= 2.5, "n = {}: {}", c.n, d * unit);
        }
        covered += c.complexity_covered();
    }
    let total = mc.sizes.len() * mc.trials;
    assert!(covered * 100 >= 95 * total, "{covered}/{total}");
    // The first n is the theory's trials (checked in full above on a small setting).
    let first = thm2::monte_carlo_column(&mc, mc.sizes[0]).unwrap();
    assert_eq!(first, fig.columns[0]);

    // (b) Clopper–Pearson: q = 0.0402, 1 − (1 − q)^K = 0.079, 0.337, 0.984 (independent).
    let (n, r, delta) = thm2::CP_SETTING;
    let q = clopper_pearson_miss_rate(n, r, delta).unwrap();
    assert_eq!(fig.cp_q, q);
    assert!((q - 0.0402).abs() < 5e-5);
    for (m, want) in fig.cp_markers.iter().zip([0.079, 0.337, 0.984]) {
        assert!((m - want).abs() < 5e-4, "{m} vs {want}");
    }
    assert_eq!((fig.cp_k[0], *fig.cp_k.last().unwrap()), (1.0, 1000.0));
    for i in [0, 20, fig.cp_k.len() - 1] {
        let k = fig.cp_k[i];
        assert_eq!(fig.cp_fail[i], any_of_k_fails(q, k).unwrap());
        let qk = clopper_pearson_miss_rate(n, r, delta / k).unwrap();
        assert_eq!(fig.cp_fail_bonferroni[i], any_of_k_fails(qk, k).unwrap());
    }
    assert!(fig.cp_fail_bonferroni.iter().all(|&p| p <= delta));

    // (c) The exact counterexample: the cases of check G2 (P(stated) > δ, union 0) and the
    // curves.
    let expected = [0.9037, 0.5011, 0.1010, 0.0506];
    assert_eq!(fig.counterexamples.len(), 4);
    // The table prints K to 3 digits, hence the theory crate's table tolerance.
    for (c, want) in fig.counterexamples.iter().zip(expected) {
        let p = c.table_stated;
        assert!(
            (p - want).abs() < G2_TABLE_TOL,
            "δ = {}: {p} vs {want}",
            c.delta
        );
        assert!(p > c.delta);
        assert!(c.table_union <= 1e-12);
        // The union version never fails with probability above 10⁻⁶ (its largest value is at
        // K = 1, where both versions coincide).
        assert_eq!(c.union[0], c.stated[0]);
        assert!(c.union.iter().all(|&u| u < 1e-6));
        assert!(*c.stated.last().unwrap() > c.delta);
    }
    assert!((fig.counterexamples[0].table_stated - 0.90366).abs() < 5e-6);
    assert_eq!(fig.log10_k.len(), 211);
    for i in [0, 70, 100, 170, 210] {
        let x = fig.log10_k[i];
        assert_relative_eq!(x, i as f64 / 10.0, max_relative = 1e-12);
        let k = 10f64.powf(x).round();
        for c in &fig.counterexamples {
            let p = stated_failure_probability(k, 500, c.r, c.delta).unwrap();
            let u = union_failure_probability(k, 500, c.r, c.delta).unwrap();
            assert_eq!((c.stated[i], c.union[i]), (p, u));
        }
    }

    // CSVs: headers and row counts.
    let tables = fig.tables();
    assert_eq!(tables.len(), 6);
    let (header, rows) = csv(table(&tables, "mc-trials"));
    assert_eq!(
        header,
        "n,trial,sup_deviation,two_max_rademacher,stated_slack,union_slack"
    );
    assert_eq!(rows.len(), total);
    assert_eq!(num(&rows[mc.trials][0]), 20.0);
    let (header, rows) = csv(table(&tables, "mc"));
    assert_eq!(
        header,
        "n,mean_sup_deviation,mean_two_max_rademacher,deviation_stated,deviation_union,\
         mean_violation_threshold_stated,stated_violations,union_violations,complexity_covered"
    );
    assert_eq!(rows.len(), mc.sizes.len());
    assert_eq!(num(&rows[0][6]), 0.0);
    let (header, rows) = csv(table(&tables, "counterexample"));
    assert_eq!(
        header,
        "log10_K,stated_delta0.9_r0.45,union_delta0.9_r0.45,stated_delta0.5_r0.55,\
         union_delta0.5_r0.55,stated_delta0.1_r0.5,union_delta0.1_r0.5,stated_delta0.05_r0.55,\
         union_delta0.05_r0.55"
    );
    assert_eq!(rows.len(), 211);
    let (header, rows) = csv(table(&tables, "counterexample-table"));
    assert_eq!(header, "delta,r,n,K,p_stated,p_union");
    assert_eq!(rows.len(), 4);
    assert_eq!(num(&rows[0][3]), 10_566_370.0);
    let (header, rows) = csv(table(&tables, "clopper-pearson"));
    assert_eq!(header, "K,fail_level_delta,fail_level_delta_over_K");
    assert_eq!(rows.len(), fig.cp_k.len());
    let (header, rows) = csv(table(&tables, "clopper-pearson-markers"));
    assert_eq!(header, "K,q,fail");
    assert_eq!(rows.len(), 3);
    assert_eq!(
        rows.iter().map(|r| num(&r[0])).collect::<Vec<_>>(),
        [2.0, 10.0, 100.0]
    );
}
