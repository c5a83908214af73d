//! The toy figures plot what `classwise-toy` and `classwise-theory` compute: every series is
//! recomputed here by calling the toy/theory functions independently (same seeds, so the
//! simulations are bit-identical), spot-checked against independently computed values where
//! there are any, Monte Carlo points are checked against the closed forms, and every CSV has the
//! expected header and row count. (Rendering is checked by `tests/render.rs`.)

use approx::assert_relative_eq;
use classwise_figures::Figure;
use classwise_figures::toy::{
    CcmFigure, Fig1a, METHODS, McVsClosed, MulticlassBars, MulticlassBudgets, MulticlassRuns,
    Options, QUICK_EPOCHS, ccm, mc, multiclass_config,
};
use classwise_theory::calibration::{
    WatNormalization, cfa_class_beta, cfa_class_epsilon, wat_sample_weight,
    wat_weights_from_history,
};
use classwise_theory::model::{Adversary, Class};
use classwise_theory::theorems::figure1_model;
use classwise_toy::binary::{Sampler, ccm_run, sweep};
use classwise_toy::multiclass::{CfaBase, Method, RunConfig, run};

const CLASSES: [Class; 2] = [Class::Pos, Class::Neg];

fn quick() -> Options {
    Options {
        quick: true,
        ..Default::default()
    }
}

/// Header and data rows of table `i` of `fig`.
fn csv(fig: &impl Figure, i: usize) -> (String, Vec<String>) {
    let t = &fig.tables()[i];
    let text = String::from_utf8(t.to_csv().unwrap()).unwrap();
    let mut lines = text.lines().map(str::to_owned);
    let header = lines.next().unwrap();
    (header, lines.collect())
}

#[test]
fn figure_1a_is_the_seeded_sample() {
    let fig = Fig1a::new(&Options::default()).unwrap();
    let sampler = Sampler::new(figure1_model());
    for (c, y) in CLASSES.into_iter().enumerate() {
        let s = sampler.sample(y, 100, 0);
        let rows: Vec<(f64, f64)> = s.rows().map(|r| (r[0], r[1])).collect();
        assert_eq!(fig.points[c], rows);
        let label = if c == 0 { 1.0 } else { -1.0 };
        let agree = rows.iter().filter(|p| p.0 == label).count();
        assert_eq!(fig.agree[c], agree);
        // x₁ = y with probability p_y: within 4 binomial standard deviations.
        let p = figure1_model().p(y);
        assert!((agree as f64 - 100.0 * p).abs() < 4.0 * (100.0 * p * (1.0 - p)).sqrt());
        assert!(rows.iter().all(|p| p.0 == 1.0 || p.0 == -1.0));
    }
    // The boundaries at w*₊₁ = 1.301 and w*₋₁ = 0.635 (CFA Theorem 3 with caveat C3's σ²).
    assert_relative_eq!(fig.w_star[0], 1.301, epsilon = 5e-4);
    assert_relative_eq!(fig.w_star[1], 0.635, epsilon = 5e-4);
    // Quick mode draws the same sample; another seed another one.
    assert_eq!(Fig1a::new(&quick()).unwrap().points, fig.points);
    let other = Fig1a::new(&Options {
        seed: 1,
        quick: false,
    })
    .unwrap();
    assert_ne!(other.points, fig.points);

    let (header, rows) = csv(&fig, 0);
    assert_eq!(header, "y,x1,x2");
    assert_eq!(rows.len(), 200);
    assert_eq!(
        rows[0],
        format!("1.0,{:?},{:?}", fig.points[0][0].0, fig.points[0][0].1)
    );
    assert!(rows[100].starts_with("-1.0,"));
    let (header, rows) = csv(&fig, 1);
    assert_eq!(header, "class,w_star,agree,n");
    assert_eq!(rows.len(), 2);
    assert!(rows[1].starts_with("-1,0.63"), "{}", rows[1]);
}

/// The estimates are those of `sweep` on the same seed, within 5 s.e. of the closed forms
/// (T12), the curves are the closed forms, and the closed forms match check T11's table.
fn check_mc(fig: &McVsClosed, n: usize) {
    let m = figure1_model();
    assert_eq!(fig.eps, 0.8);
    assert_eq!(fig.samples_per_class, n as u64);
    assert_eq!(fig.w, mc::WS);
    let s = sweep(m, &mc::WS, 0.8, n, 0).unwrap();
    for (i, p) in s.points.iter().enumerate() {
        let est = [
            &p.estimates.clean,
            &p.estimates.robust_paper,
            &p.estimates.robust_full,
        ];
        for (q, e) in est.into_iter().enumerate() {
            assert_eq!(fig.estimates[q][0][i], e.pos);
            assert_eq!(fig.estimates[q][1][i], e.neg);
        }
        for (c, y) in CLASSES.into_iter().enumerate() {
            let w = p.w;
            let cf = [
                m.clean_accuracy(y, w).unwrap(),
                m.robust_accuracy(y, w, 0.8, Adversary::Paper).unwrap(),
                m.robust_accuracy(y, w, 0.8, Adversary::Full).unwrap(),
            ];
            for (q, cf) in cf.into_iter().enumerate() {
                assert_eq!(fig.closed_form[q][c][i], cf);
                let e = fig.estimates[q][c][i];
                let sd = (cf * (1.0 - cf) / n as f64).sqrt();
                assert!(
                    (e.mean - cf).abs() <= 5.0 * sd,
                    "w = {w}, quantity {q}, class {c}: {} vs {cf}",
                    e.mean
                );
            }
        }
    }
    assert!(fig.max_abs_z() <= 5.0, "max |z| = {}", fig.max_abs_z());
    for (i, &w) in fig.grid.iter().enumerate().step_by(41) {
        for (c, y) in CLASSES.into_iter().enumerate() {
            assert_eq!(fig.curves[0][c][i], m.clean_accuracy(y, w).unwrap());
            assert_eq!(
                fig.curves[2][c][i],
                m.robust_accuracy(y, w, 0.8, Adversary::Full).unwrap()
            );
        }
    }
    // Check T11's table: R paper / full at ε = 0.8 for w = 0.1, 0.5, 1, 2, 3 (5 digits).
    let expected = [
        (0.1, [0.33577, 0.29913, 0.32228, 0.28640]),
        (0.5, [0.48705, 0.30387, 0.42274, 0.25848]),
        (1.0, [0.66891, 0.33875, 0.55710, 0.27936]),
        (2.0, [0.83363, 0.42500, 0.68669, 0.35000]),
        (3.0, [0.84967, 0.51159, 0.69973, 0.42131]),
    ];
    for (w, v) in expected {
        let i = fig.w.iter().position(|&x| x == w).unwrap();
        let got = [
            fig.closed_form[1][0][i],
            fig.closed_form[2][0][i],
            fig.closed_form[1][1][i],
            fig.closed_form[2][1][i],
        ];
        for (g, want) in got.into_iter().zip(v) {
            assert_relative_eq!(g, want, epsilon = 5e-6);
        }
        // The Monte Carlo points are within 5 s.e. of these (independently computed) values
        // too.
        let est = [
            fig.estimates[1][0][i],
            fig.estimates[2][0][i],
            fig.estimates[1][1][i],
            fig.estimates[2][1][i],
        ];
        for (e, want) in est.into_iter().zip(v) {
            let sd = (want * (1.0 - want) / n as f64).sqrt();
            assert!((e.mean - want).abs() <= 5.0 * sd + 5e-6);
        }
    }

    let (header, rows) = csv(fig, 0);
    assert_eq!(header, "w,quantity,class,estimate,se,closed_form,z");
    assert_eq!(rows.len(), 3 * 2 * mc::WS.len());
    assert!(rows[0].starts_with("0.1,clean,+1,"), "{}", rows[0]);
    let last = rows.last().unwrap();
    assert!(last.starts_with("3.0,robust_full,-1,"), "{last}");
    let (header, rows) = csv(fig, 1);
    assert_eq!(header, "w,A_pos,A_neg,R_pos,R_neg,R_full_pos,R_full_neg");
    assert_eq!(rows.len(), 300);
}

#[test]
fn monte_carlo_matches_the_closed_forms() {
    check_mc(&McVsClosed::new(&quick()).unwrap(), mc::QUICK_SAMPLES);
}

#[test]
fn monte_carlo_full_size_matches_the_closed_forms() {
    check_mc(&McVsClosed::new(&Options::default()).unwrap(), mc::SAMPLES);
}

#[test]
fn ccm_figure_plots_ccm_run() {
    let fig = CcmFigure::new(&quick()).unwrap();
    let m = figure1_model();
    let n = ccm::QUICK_SAMPLES;
    let r = ccm_run(m, ccm::EPS, ccm::LAMBDA1, ccm::EPOCHS, n, 0).unwrap();
    assert_eq!(fig.epochs.len(), ccm::EPOCHS);
    let [ccm_s, uniform, matched] = &fig.runs;
    for (e, rec) in r.ccm.iter().enumerate() {
        assert_eq!(fig.epochs[e], e as f64);
        assert_eq!(ccm_s.eps[0][e], rec.eps.pos);
        assert_eq!(ccm_s.eps[1][e], rec.eps.neg);
        assert_eq!(ccm_s.w[e], rec.w);
        assert_eq!(ccm_s.train_robust[1][e], rec.train_robust.neg);
        assert_eq!(ccm_s.robust_at_2eta[0][e], rec.robust_at_2eta.pos);
        // CFA eq. (6): the budgets of epoch e + 1 come from t_y of epoch e.
        let next = cfa_class_epsilon(
            &[rec.train_robust.pos, rec.train_robust.neg],
            ccm::LAMBDA1,
            ccm::EPS,
        )
        .unwrap();
        if e + 1 < ccm::EPOCHS {
            assert_relative_eq!(ccm_s.eps[0][e + 1], next[0], epsilon = 1e-15);
            assert_relative_eq!(ccm_s.eps[1][e + 1], next[1], epsilon = 1e-15);
        }
        // The population accuracies are the closed forms at the fitted w.
        for (c, y) in CLASSES.into_iter().enumerate() {
            let cf = m
                .robust_accuracy(y, ccm_s.w[e], 0.8, Adversary::Paper)
                .unwrap();
            assert_eq!(ccm_s.robust_at_2eta[c][e], cf);
            // t_y is an empirical robust accuracy at ε_y: within 5 s.e. of the closed form.
            let cf_t = m
                .robust_accuracy(y, ccm_s.w[e], ccm_s.eps[c][e], Adversary::Paper)
                .unwrap();
            let sd = (cf_t * (1.0 - cf_t) / n as f64).sqrt();
            assert!((ccm_s.train_robust[c][e] - cf_t).abs() <= 5.0 * sd);
        }
        assert_eq!(uniform.eps[0][e], ccm::EPS);
        assert_eq!(uniform.w[e], r.uniform[e].w);
        assert_eq!(matched.w[e], r.matched.w);
    }
    assert_eq!(ccm_s.eps[0][0], ccm::EPS);
    let last = r.ccm.last().unwrap();
    assert_relative_eq!(
        matched.eps[0][0],
        0.5 * (last.eps.pos + last.eps.neg),
        epsilon = 1e-15
    );
    // The easy class gets the larger budget (t₊₁ ≈ p₊₁ > t₋₁ ≈ p₋₁).
    assert!(ccm_s.eps[0][ccm::EPOCHS - 1] > ccm_s.eps[1][ccm::EPOCHS - 1]);
    // ŵ_ε of CFA Theorem 2: σ² ln(P/(2−P)) / (2(η−ε)) = 0.6 ln(1.55/0.45) / 0.4.
    assert_eq!(fig.w_hat, m.w_hat(ccm::EPS).unwrap().value().unwrap());
    assert_relative_eq!(fig.w_hat, 1.5 * (1.55f64 / 0.45).ln(), epsilon = 1e-12);

    let (header, rows) = csv(&fig, 0);
    let cols: Vec<&str> = header.split(',').collect();
    assert_eq!(cols.len(), 1 + 3 * 8);
    assert_eq!(
        &cols[..9],
        &[
            "epoch",
            "ccm_eps_pos",
            "ccm_eps_neg",
            "ccm_w",
            "ccm_w_unbounded",
            "ccm_t_pos",
            "ccm_t_neg",
            "ccm_R2eta_pos",
            "ccm_R2eta_neg"
        ]
    );
    assert_eq!(cols[9], "uniform_eps_pos");
    assert_eq!(cols[24], "matched_R2eta_neg");
    assert_eq!(rows.len(), ccm::EPOCHS);
    let (header, rows) = csv(&fig, 1);
    assert_eq!(header, "eps,w_hat");
    assert_eq!(rows.len(), 1);
}

#[test]
fn multiclass_configs_are_the_presets() {
    for m in METHODS.map(|(m, _)| m) {
        assert_eq!(
            multiclass_config(m, &Options::default()),
            RunConfig::preset(m),
            "{m}"
        );
        let q = multiclass_config(m, &quick());
        assert_eq!(q.epochs, QUICK_EPOCHS);
        assert!(q.lr_milestones.iter().all(|&e| e < QUICK_EPOCHS));
        assert_eq!(q.seed, 0);
        assert_eq!(
            multiclass_config(
                m,
                &Options {
                    seed: 9,
                    quick: false
                }
            )
            .seed,
            9
        );
    }
}

#[test]
fn multiclass_figures_plot_the_runs() {
    let options = quick();
    let runs = MulticlassRuns::new(&options).unwrap();
    let bars = MulticlassBars::from_runs(&runs).unwrap();
    let budgets = MulticlassBudgets::from_runs(&runs).unwrap();
    let k = 5;

    // Independent re-runs of two methods give the same bars.
    for (i, method) in [(1, Method::At), (5, Method::Cfa(CfaBase::Trades))] {
        let r = run(&multiclass_config(method, &options)).unwrap();
        let b = &bars.methods[i];
        assert_eq!(b.per_class, r.final_model.robust.per_class);
        assert_eq!(b.label, r.label);
        if i == 5 {
            // ε_k of TRADES + CFA is the run's trajectory.
            for (e, row) in r.epsilon_trajectory().iter().enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    assert_eq!(budgets.cfa_trades_eps[c][e], v);
                }
            }
        }
    }
    for b in &bars.methods {
        assert_eq!(b.per_class.len(), k);
        let min = b.per_class.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(b.worst, min);
        assert_eq!(b.per_class[b.worst_class], min);
        // Balanced test set: the class mean is the plain mean.
        let mean = b.per_class.iter().sum::<f64>() / k as f64;
        assert_relative_eq!(b.class_mean, mean, epsilon = 1e-12);
        assert!(b.per_class.iter().all(|&v| (0.0..=1.0).contains(&v)));
    }
    assert_eq!(bars.methods.len(), 8);
    assert_eq!(bars.epochs, QUICK_EPOCHS);

    // CCM and CCR (CFA eqs. (6)-(7)) from the previous epoch's t_k, after the warm-up.
    let cfa = runs.get(Method::Cfa(CfaBase::Trades)).unwrap();
    let cfa_at = runs.get(Method::Cfa(CfaBase::At)).unwrap();
    for e in 0..QUICK_EPOCHS {
        let (eps, beta): (Vec<f64>, Vec<f64>) = if e < 2 {
            (vec![0.3; k], vec![6.0; k])
        } else {
            let t = &cfa.history[e - 1].train_robust;
            (
                cfa_class_epsilon(t, 0.3, 0.3).unwrap(),
                cfa_class_beta(t, 0.5, 6.0).unwrap(),
            )
        };
        let eps_at = if e < 2 {
            vec![0.3; k]
        } else {
            cfa_class_epsilon(&cfa_at.history[e - 1].train_robust, 0.5, 0.3).unwrap()
        };
        for c in 0..k {
            assert_relative_eq!(budgets.cfa_trades_eps[c][e], eps[c], epsilon = 1e-15);
            assert_relative_eq!(budgets.cfa_beta[c][e], beta[c], epsilon = 1e-13);
            assert_relative_eq!(budgets.cfa_at_eps[c][e], eps_at[c], epsilon = 1e-15);
        }
    }

    // WAT: s_k = w_k + w_K from Hedge on the validation costs so far, rescaled to mean 1.
    let wat = runs.get(Method::Wat).unwrap();
    let costs: Vec<Vec<f64>> = wat.history.iter().map(|h| h.val_costs.clone()).collect();
    for e in 0..QUICK_EPOCHS {
        let w = wat_weights_from_history(&costs[..e], k, 0.1, WatNormalization::Code).unwrap();
        let s: Vec<f64> = (0..k)
            .map(|c| wat_sample_weight(&w, c, WatNormalization::Code).unwrap())
            .collect();
        let mean = s.iter().sum::<f64>() / k as f64;
        for (c, v) in s.iter().enumerate() {
            assert_relative_eq!(budgets.wat_weight[c][e], v / mean, epsilon = 1e-12);
        }
    }
    // FRL: plain TRADES weights before its first weighted epoch (QUICK_EPOCHS / 4).
    for e in 0..QUICK_EPOCHS / 4 {
        for c in 0..k {
            assert_relative_eq!(budgets.frl_natural[c][e], 1.0, epsilon = 1e-12);
            assert_relative_eq!(budgets.frl_boundary[c][e], 1.0, epsilon = 1e-12);
        }
    }
    assert_eq!(budgets.epsilon, 0.3);
    assert_eq!(budgets.beta, 6.0);

    let (header, rows) = csv(&bars, 0);
    assert_eq!(
        header,
        "method,label,class_0,class_1,class_2,class_3,class_4,worst_class,worst,class_mean"
    );
    assert_eq!(rows.len(), 8);
    assert!(
        rows[0].starts_with("natural,uniform/natural,"),
        "{}",
        rows[0]
    );
    assert!(
        rows[5].starts_with("TRADES + CFA,cfa/trades,"),
        "{}",
        rows[5]
    );
    let (header, rows) = csv(&budgets, 0);
    let cols: Vec<&str> = header.split(',').collect();
    assert_eq!(cols.len(), 1 + 6 * k);
    assert_eq!(cols[0], "epoch");
    assert_eq!(cols[1], "cfa_trades_eps_0");
    assert_eq!(cols[30], "frl_boundary_weight_4");
    assert_eq!(rows.len(), QUICK_EPOCHS);
}
