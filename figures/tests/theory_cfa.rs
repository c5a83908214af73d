//! The CFA theorem panels plot the closed forms of `classwise-theory`: every table is recomputed
//! here at a few points from the theory functions (and, where possible, by an independent route:
//! finite differences, class averages, the ridge of the heat map), spot-checked against
//! independently computed (mpmath) values, and each CSV has the expected header and row count.
//! Rendering is checked by `tests/render.rs`.

mod common;

use approx::assert_relative_eq;
use classwise_figures::Figure;
use classwise_figures::theory::cfa::{SigmaScaling, Thm1Gaps, Thm2, Thm4b, Thm34, sigma, thm4b};
use classwise_theory::model::{Adversary, Argmax, BinaryModel, Class};
use classwise_theory::theorems::figure1_model;
use common::num;

/// The Figure 1 model with another d, σ or p₋₁.
fn model(d: u32, sigma: f64, p_neg: f64) -> BinaryModel {
    BinaryModel::new(d, 0.4, sigma, 0.85, p_neg).unwrap()
}

/// Header and rows (as text) of a figure's `k`-th table.
fn csv(fig: &impl Figure, k: usize) -> (String, Vec<Vec<String>>) {
    common::csv(&fig.tables()[k])
}

#[test]
fn theorem1_gaps_are_the_closed_forms() {
    let fig = Thm1Gaps::new().unwrap();
    assert_eq!(fig.eps, 0.8);
    assert_eq!(fig.w.len(), 400);
    assert_relative_eq!(fig.w[0], 0.01, max_relative = 1e-12);
    assert_relative_eq!(fig.w[399], 1000.0, max_relative = 1e-12);
    let sigma = 0.6f64.sqrt();
    for (k, d) in [1, 10, 100].into_iter().enumerate() {
        let m = model(d, sigma, 0.7);
        for i in (0..400).step_by(57) {
            let w = fig.w[i];
            assert_eq!(fig.clean[k][i], m.clean_gap(w).unwrap());
            assert_eq!(
                fig.robust[k][i],
                m.robust_gap(w, 0.8, Adversary::Paper).unwrap()
            );
            assert_eq!(
                fig.robust_full[k][i],
                m.robust_gap(w, 0.8, Adversary::Full).unwrap()
            );
            // The gap is the difference of the class accuracies (computed without it).
            let direct =
                m.clean_accuracy(Class::Pos, w).unwrap() - m.clean_accuracy(Class::Neg, w).unwrap();
            assert!((direct - fig.clean[k][i]).abs() < 1e-14, "d={d}, w={w}");
        }
        for s in [&fig.clean[k], &fig.robust[k], &fig.robust_full[k]] {
            // Theorem 1: positive, and widening in w (the first inequality of CFA Theorem 4(a))
            // up to p₊₁ − p₋₁.
            assert!(s.iter().all(|&g| g > 0.0 && g <= 0.15 + 1e-15), "d={d}");
            assert!(s.windows(2).all(|p| p[1] >= p[0]), "d={d}: not monotone");
            assert!(s[0] < 2e-3, "d={d}: gap at w = 0.01 is {}", s[0]);
            assert!((s[399] - 0.15).abs() < 1e-9, "d={d}: limit {}", s[399]);
        }
        // At ε = 2η the paper adversary mirrors T, so the robust gap is the clean gap.
        for i in 0..400 {
            assert!((fig.robust[k][i] - fig.clean[k][i]).abs() < 1e-15);
        }
    }
    // Check T11's table, d = 1: R₊₁ − R₋₁ at w = 0.1 and 1 (differences of 5-digit values).
    let at = Thm1Gaps::with(figure1_model(), 0.8, &[0.1, 1.0]).unwrap();
    for (i, paper, full) in [
        (0, 0.33577 - 0.32228, 0.29913 - 0.28640),
        (1, 0.66891 - 0.55710, 0.33875 - 0.27936),
    ] {
        assert!((at.robust[0][i] - paper).abs() < 1e-5);
        assert!((at.robust_full[0][i] - full).abs() < 1e-5);
    }

    let (header, rows) = csv(&fig, 0);
    assert_eq!(
        header,
        "w,clean_gap_d1,clean_gap_d10,clean_gap_d100,robust_gap_d1,robust_gap_d10,\
         robust_gap_d100,robust_gap_full_d1,robust_gap_full_d10,robust_gap_full_d100"
    );
    assert_eq!(rows.len(), 400);
    assert_eq!(num(&rows[200][0]), fig.w[200]);
    assert_eq!(num(&rows[200][3]), fig.clean[2][200]);
    assert_eq!(num(&rows[200][8]), fig.robust_full[1][200]);
}

#[test]
fn theorem2_optima_heat_map_and_jump() {
    let fig = Thm2::new().unwrap();
    let m = figure1_model();
    // 501 points of ε ∈ [0, 0.5] plus the jump of the full optimum.
    assert_eq!(fig.eps.len(), 502);
    let (e_jump, w_jump) = fig.jump.unwrap();
    // Check T11: ε = 0.0786256626729084, local maximum 1.80076199659058.
    assert_relative_eq!(e_jump, 0.078_625_662_672_908_4, max_relative = 1e-9);
    assert_relative_eq!(w_jump, 1.800_761_996_590_58, max_relative = 1e-8);
    assert!(fig.eps.contains(&e_jump));
    for (i, &e) in fig.eps.iter().enumerate() {
        let hat = m.w_hat(e).unwrap();
        let full = m.w_hat_full(e).unwrap();
        match hat {
            Argmax::At(w) => assert_eq!(fig.w_hat[i], w),
            _ => {
                assert!(e >= 0.4, "ε = {e}");
                assert_eq!(fig.w_hat[i], f64::INFINITY);
            }
        }
        match full.argmax {
            Argmax::At(w) => {
                assert!(e <= e_jump + 1e-15);
                assert_eq!(fig.w_full[i], w);
            }
            a => {
                assert_eq!(a, Argmax::PlusInfinity);
                assert!(e >= e_jump - 1e-15, "ε = {e}");
                assert_eq!(fig.w_full[i], f64::INFINITY);
            }
        }
    }
    // Theorem 2: ŵ_ε strictly increases on [0, η).
    let finite: Vec<f64> = fig
        .w_hat
        .iter()
        .copied()
        .filter(|w| w.is_finite())
        .collect();
    assert_eq!(finite.len(), 401);
    assert!(finite.windows(2).all(|p| p[1] > p[0]));
    // Caveat C3: ŵ₀ = 0.92757; check T11: full optimum 0.9276 (ε = 0), 0.9971 (0.02),
    // 1.1698 (0.05).
    assert_relative_eq!(fig.w_hat[0], 0.92757, max_relative = 1e-5);
    for (i, want) in [(0, 0.9276), (20, 0.9971), (50, 1.1698)] {
        assert!((fig.w_full[i] - want).abs() < 6e-5, "{}", fig.w_full[i]);
    }

    // Heat map: R̄ of the theory, equal to the mean of the class-wise robust accuracies, with its
    // maximum over the w cells next to the ridge ŵ_ε.
    assert_eq!((fig.eps_c.len(), fig.w_c.len()), (100, 60));
    for i in (0..100).step_by(13) {
        for j in (0..60).step_by(7) {
            let (e, w) = (fig.eps_c[i], fig.w_c[j]);
            let v = fig.heat[i][j];
            assert_eq!(
                v,
                m.average_robust_accuracy(w, e, Adversary::Paper).unwrap()
            );
            let mean = 0.5
                * (m.robust_accuracy(Class::Pos, w, e, Adversary::Paper)
                    .unwrap()
                    + m.robust_accuracy(Class::Neg, w, e, Adversary::Paper)
                        .unwrap());
            assert!((v - mean).abs() < 1e-15);
        }
    }
    let mut checked = 0;
    for (i, row) in fig.heat.iter().enumerate() {
        let Argmax::At(ridge) = m.w_hat(fig.eps_c[i]).unwrap() else {
            continue;
        };
        if ridge > fig.w_max - fig.cell.1 {
            continue;
        }
        let best = (0..row.len())
            .max_by(|&a, &b| row[a].total_cmp(&row[b]))
            .unwrap();
        assert!(
            (fig.w_c[best] - ridge).abs() <= fig.cell.1,
            "ε = {}",
            fig.eps_c[i]
        );
        checked += 1;
    }
    assert!(checked > 50, "{checked}");

    // Erratum C1 (σ = 1): R̄(1, ε = η) = 0.687740, and ŵ = 3.0919, 6.1838, 61.838 at
    // ε = 0.2, 0.3, 0.39.
    let unit = Thm2::with(model(1, 1.0, 0.7), 0.8, 2.0, 81, (1, 1)).unwrap();
    assert_eq!((unit.eps_c[0], unit.w_c[0]), (0.4, 1.0));
    assert!((unit.heat[0][0] - 0.687740).abs() < 5e-7);
    for (e, want) in [(0.2, 3.0919), (0.3, 6.1838), (0.39, 61.838)] {
        let i = unit.eps.iter().position(|x| (x - e).abs() < 1e-12).unwrap();
        assert_relative_eq!(unit.w_hat[i], want, max_relative = 2e-5);
    }

    let (header, rows) = csv(&fig, 0);
    assert_eq!(header, "eps,w_hat,w_hat_full");
    assert_eq!(rows.len(), 502);
    assert_eq!(rows[450][1], "inf");
    assert_eq!(rows[100][2], "inf");
    assert_eq!(num(&rows[10][2]), fig.w_full[10]);
    let (header, rows) = csv(&fig, 1);
    assert_eq!(header, "eps,w,R_bar");
    assert_eq!(rows.len(), 6000);
    assert_eq!(num(&rows[61][2]), fig.heat[1][1]);
    let (header, rows) = csv(&fig, 2);
    assert_eq!(header, "eps_jump,w_local_max");
    assert_eq!(rows.len(), 1);
    assert_eq!(num(&rows[0][0]), e_jump);
}

#[test]
fn theorems_3_4a_accuracies_slopes_and_band() {
    let fig = Thm34::new().unwrap();
    let m = figure1_model();
    assert_eq!(fig.w.len(), 300);
    // The σ² factor of caveat C3.
    assert!((fig.w_star[0] - 1.30095).abs() <= 5e-6);
    assert!((fig.w_star[1] - 0.63547).abs() <= 5e-6);
    let h = 1e-5;
    for i in (0..300).step_by(23) {
        let w = fig.w[i];
        for (k, y) in [Class::Pos, Class::Neg].into_iter().enumerate() {
            assert_eq!(fig.clean[k][i], m.clean_accuracy(y, w).unwrap());
            assert_eq!(fig.slope[k][i], m.clean_accuracy_dw(y, w).unwrap());
            let fd = (m.clean_accuracy(y, w + h).unwrap() - m.clean_accuracy(y, w - h).unwrap())
                / (2.0 * h);
            assert!((fd - fig.slope[k][i]).abs() < 1e-8, "w = {w}: {fd}");
        }
    }
    // Note C4: in (w*₋₁, w*₊₁) A₋₁ falls while A₊₁ rises; outside both move together.
    let (lo, hi) = (fig.w_star[1], fig.w_star[0]);
    let mut inside = 0;
    for (i, &w) in fig.w.iter().enumerate() {
        let (sp, sn) = (fig.slope[0][i], fig.slope[1][i]);
        if w < lo {
            assert!(sp > 0.0 && sn > 0.0, "w = {w}");
        } else if w > lo && w < hi {
            assert!(sp > 0.0 && sn < 0.0, "w = {w}");
            inside += 1;
        } else if w > hi {
            assert!(sp < 0.0 && sn < 0.0, "w = {w}");
        }
    }
    assert!(inside > 50, "{inside}");
    // Note C4, Figure 1 setting: w = 1.0, Δ = 0.1 gives ΔA₋₁ = -0.0046004, ΔA₊₁ = +0.0021732.
    assert!((fig.w[99] - 1.0).abs() < 1e-12 && (fig.w[109] - 1.1).abs() < 1e-12);
    assert!((fig.clean[1][109] - fig.clean[1][99] - -0.0046004).abs() < 5e-8);
    assert!((fig.clean[0][109] - fig.clean[0][99] - 0.0021732).abs() < 5e-8);

    let (header, rows) = csv(&fig, 0);
    assert_eq!(header, "w,A_pos,A_neg,dA_pos_dw,dA_neg_dw");
    assert_eq!(rows.len(), 300);
    assert_eq!(num(&rows[150][4]), fig.slope[1][150]);
    let (header, rows) = csv(&fig, 1);
    assert_eq!(header, "class,w_star");
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[1][0].as_str(), num(&rows[1][1])),
        ("-1", fig.w_star[1])
    );
}

#[test]
fn theorem4b_slopes_and_their_zeros() {
    let fig = Thm4b::new().unwrap();
    assert_eq!(fig.eps, 0.8);
    assert_eq!(fig.w.len(), 300);
    let sigma = 0.6f64.sqrt();
    let h = 1e-5;
    for (a, adv) in thm4b::ADVERSARIES.into_iter().enumerate() {
        for (k, p) in thm4b::P_NEG.into_iter().enumerate() {
            let m = model(1, sigma, p);
            for i in (0..300).step_by(29) {
                let w = fig.w[i];
                let v = fig.slope_neg[a][k][i];
                assert_eq!(v, m.robust_accuracy_dw(Class::Neg, w, 0.8, adv).unwrap());
                let r = |w| m.robust_accuracy(Class::Neg, w, 0.8, adv).unwrap();
                let fd = (r(w + h) - r(w - h)) / (2.0 * h);
                assert!((fd - v).abs() < 1e-8, "{adv:?} p={p} w={w}: {fd} vs {v}");
            }
            // Check T10: the sign at 0⁺ is that of p_y(1 − ε₁) − (1 − p_y)(1 + ε₁).
            let first = fig.slope_neg[a][k][0];
            match adv {
                Adversary::Paper if p < 0.5 => assert!(first < 0.0),
                Adversary::Paper => assert!(first >= 0.0),
                Adversary::Full => assert!(first < 0.0, "2p − 1 − ε < 0 for every p here"),
            }
        }
        let m = figure1_model();
        assert_eq!(
            fig.slope_pos[a][77],
            m.robust_accuracy_dw(Class::Pos, fig.w[77], 0.8, adv)
                .unwrap()
        );
    }
    // Theorem 4(b)-ii: with x₁ pinned only p₋₁ = 0.3 < 1/2 has a negative region, (0, w₀) with
    // w₀ = (σ²/2η) ln((1 − p₋₁)/p₋₁) (note C5); the full adversary has one zero per curve.
    let paper: Vec<_> = fig
        .crossings
        .iter()
        .filter(|c| c.adversary == Adversary::Paper)
        .collect();
    assert_eq!(paper.len(), 1);
    assert_eq!((paper[0].class, paper[0].p), (Class::Neg, 0.3));
    let w0 = 0.6 / (2.0 * 0.4) * (0.7f64 / 0.3).ln();
    assert_relative_eq!(paper[0].w, w0, max_relative = 1e-10);
    let full: Vec<_> = fig
        .crossings
        .iter()
        .filter(|c| c.adversary == Adversary::Full)
        .collect();
    assert_eq!(full.len(), 4);
    for c in &full {
        let m = model(1, sigma, if c.class == Class::Neg { c.p } else { 0.7 });
        let s = m
            .robust_accuracy_dw(c.class, c.w, 0.8, Adversary::Full)
            .unwrap();
        assert!(s.abs() < 1e-12, "{c:?}: slope {s}");
    }
    // Erratum C6: R₋₁^full(0.1) > R₋₁^full(0.5) at p₋₁ = 0.7, so its zero lies beyond 0.5.
    let z07 = full
        .iter()
        .find(|c| c.class == Class::Neg && c.p == 0.7)
        .unwrap();
    assert!(z07.w > 0.5, "{}", z07.w);
    // With σ = 1 the p₋₁ = 0.3 zero is caveat C3's σ = 1 value 1.05912 (the same logit).
    let unit = Thm4b::with(model(1, 1.0, 0.7), 0.8, &[0.5, 1.0, 1.5, 2.0]).unwrap();
    let z = unit
        .crossings
        .iter()
        .find(|c| c.adversary == Adversary::Paper)
        .unwrap();
    assert!((z.w - 1.05912).abs() <= 5e-6, "{}", z.w);

    let (header, rows) = csv(&fig, 0);
    assert_eq!(
        header,
        "w,dR_neg_dw_paper_p0.3,dR_neg_dw_paper_p0.5,dR_neg_dw_paper_p0.7,dR_pos_dw_paper_p0.85,\
         dR_neg_dw_full_p0.3,dR_neg_dw_full_p0.5,dR_neg_dw_full_p0.7,dR_pos_dw_full_p0.85"
    );
    assert_eq!(rows.len(), 300);
    assert_eq!(num(&rows[40][6]), fig.slope_neg[1][1][40]);
    let (header, rows) = csv(&fig, 1);
    assert_eq!(header, "adversary,class,p_y,w_zero");
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0][..3], ["paper", "-1", "0.3"]);
    assert_eq!(num(&rows[0][3]), paper[0].w);
}

#[test]
fn sigma_scaling_is_linear_and_free_of_d() {
    let fig = SigmaScaling::new().unwrap();
    assert_eq!(fig.sigma2.len(), 100);
    for c in 0..2 {
        let y = [Class::Pos, Class::Neg][c];
        for (k, d) in sigma::DIMS.into_iter().enumerate() {
            // The curves of different d coincide exactly.
            assert_eq!(fig.w_star[c][k], fig.w_star[c][0]);
            for i in (0..100).step_by(19) {
                let s2 = fig.sigma2[i];
                let m = model(d, s2.sqrt(), 0.7);
                let w = fig.w_star[c][k][i];
                assert_eq!(Argmax::At(w), m.w_star(y));
                // Independently: the slope of A_y vanishes there and A_y is larger than nearby.
                let scale = m.clean_accuracy_dw(y, 1e-9).unwrap().abs();
                assert!(m.clean_accuracy_dw(y, w).unwrap().abs() < 1e-10 * scale);
                let a = |w| m.clean_accuracy(y, w).unwrap();
                assert!(a(w) >= a(w * 0.9) && a(w) >= a(w * 1.1), "d={d}, σ²={s2}");
            }
        }
        // Linear through the origin: w*/σ² is constant.
        let slope = fig.w_star[c][0][0] / fig.sigma2[0];
        for (i, &s2) in fig.sigma2.iter().enumerate() {
            assert_relative_eq!(fig.w_star[c][0][i] / s2, slope, max_relative = 1e-12);
        }
    }
    // Caveat C3: 1.30095 and 0.63547 at σ² = 0.6; 2.16825 and 1.05912 at σ² = 1.
    assert_eq!(fig.marked.len(), 2);
    for ((s2, w), (want_s2, want)) in fig
        .marked
        .iter()
        .zip([(0.6, [1.30095, 0.63547]), (1.0, [2.16825, 1.05912])])
    {
        assert_eq!(*s2, want_s2);
        assert!((w[0] - want[0]).abs() <= 5e-6 && (w[1] - want[1]).abs() <= 5e-6);
    }

    let (header, rows) = csv(&fig, 0);
    assert_eq!(
        header,
        "sigma2,w_star_pos_d1,w_star_pos_d10,w_star_pos_d100,w_star_neg_d1,w_star_neg_d10,\
         w_star_neg_d100"
    );
    assert_eq!(rows.len(), 100);
    assert_eq!(num(&rows[33][5]), fig.w_star[1][1][33]);
    let (header, rows) = csv(&fig, 1);
    assert_eq!(header, "sigma2,w_star_pos,w_star_neg");
    assert_eq!(rows.len(), 2);
}
