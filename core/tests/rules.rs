//! The class-wise rules pinned to numbers computed by hand from the papers' formulas (CFA eqs.
//! (6)-(7), WAT eq. (12) with the reference code's normalisation, FRL's multiplier update), their
//! warm-ups, state round trips, errors and `[rule]` parsing.

use approx::assert_abs_diff_eq;
use classwise_core::rule::{
    Base, CfaSettings, ClassBetaSettings, CslSettings, FrlSettings, WatLossScale, WatSettings,
};
use classwise_core::{ClassPlan, ClassStats, CoreError, RuleConfig, RuleContext};
use classwise_theory::calibration::WatNormalization;
use classwise_theory::metrics::ClassErrors;

/// Two classes, ε = 0.1, TRADES β = 6, attack step 0.025.
/// Two objectives of the trainer, as they describe themselves to the rules.
const MART: Base = Base::adversarial("mart");
const BAT: Base = Base::adversarial("bat");

fn ctx() -> RuleContext {
    RuleContext {
        base: Base::TRADES,
        n_classes: 2,
        eps: 0.1,
        beta: Some(6.0),
        step_size: 0.025,
    }
}

/// The same context without a β (AT, FAT, natural).
fn ctx_without_beta() -> RuleContext {
    RuleContext {
        base: Base::PGD_AT,
        beta: None,
        ..ctx()
    }
}

fn uniform_plan(eps: f64, beta: f64) -> ClassPlan {
    ClassPlan {
        eps: vec![eps; 2],
        beta: vec![beta; 2],
        natural_weight: vec![1.0; 2],
        boundary_weight: vec![1.0; 2],
        step_size: None,
    }
}

fn train_robust(t: &[f64]) -> ClassStats {
    ClassStats {
        train_robust: t.to_vec(),
        ..ClassStats::default()
    }
}

fn costs(c: &[f64]) -> ClassStats {
    ClassStats {
        val_costs: Some(c.to_vec()),
        ..ClassStats::default()
    }
}

fn assert_all_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert_abs_diff_eq!(*g, *w, epsilon = 1e-12);
    }
}

/// The field an [`CoreError::Invalid`] names.
fn invalid_field(e: CoreError) -> String {
    match e {
        CoreError::Invalid { field, .. } => field,
        other => panic!("expected an invalid-setting error, got {other:?}"),
    }
}

fn cfa(lambda1: f64, begin: usize, ccr: bool) -> RuleConfig {
    RuleConfig::Cfa(CfaSettings::calibrated(lambda1, begin, ccr))
}

// ---------------------------------------------------------------------------------------------
// Uniform
// ---------------------------------------------------------------------------------------------

#[test]
fn uniform_plans_the_context_every_epoch() {
    let mut rule = RuleConfig::Uniform.build(ctx()).unwrap();
    assert_eq!(rule.name(), "uniform");
    for epoch in 0..3 {
        assert_eq!(rule.plan(epoch).unwrap(), uniform_plan(0.1, 6.0));
        rule.observe(epoch, &train_robust(&[0.2, 0.9])).unwrap();
    }
    assert!(!rule.needs(0).any());
    assert_eq!(rule.state().unwrap(), serde_json::Value::Null);
    // Without a β the plan's β is 0.
    let mut at = RuleConfig::Uniform.build(ctx_without_beta()).unwrap();
    assert_eq!(at.plan(0).unwrap(), uniform_plan(0.1, 0.0));
}

#[test]
fn contexts_are_checked() {
    let bad = RuleContext {
        n_classes: 0,
        ..ctx()
    };
    assert_eq!(
        invalid_field(RuleConfig::Uniform.build(bad).err().unwrap()),
        "n_classes"
    );
    let bad = RuleContext { eps: -0.1, ..ctx() };
    assert_eq!(
        invalid_field(RuleConfig::Uniform.build(bad).err().unwrap()),
        "eps"
    );
}

// ---------------------------------------------------------------------------------------------
// CFA
// ---------------------------------------------------------------------------------------------

#[test]
fn cfa_ccm_and_ccr_follow_eqs_6_and_7() {
    // begin = 1: epoch 0 is uniform, epoch 1 is calibrated from epoch 0's t_k.
    let mut rule = cfa(0.5, 1, true).build(ctx()).unwrap();
    assert_eq!(rule.name(), "cfa");
    assert_eq!(rule.plan(0).unwrap(), uniform_plan(0.1, 6.0));
    rule.observe(0, &train_robust(&[0.2, 0.9])).unwrap();
    let p = rule.plan(1).unwrap();
    // ε_k = (λ₁ + t_k)·ε = (0.5 + 0.2)·0.1, (0.5 + 0.9)·0.1.
    assert_all_close(&p.eps, &[0.07, 0.14], "eps");
    // β_k = (λ₂ + t_k)·β = (0.5 + 0.2)·6, (0.5 + 0.9)·6.
    assert_all_close(&p.beta, &[4.2, 8.4], "beta");
    // CFA changes neither the weights (the objective scales by 1/(1 + β_k)) nor the step.
    assert_eq!(p.natural_weight, [1.0, 1.0]);
    assert_eq!(p.boundary_weight, [1.0, 1.0]);
    assert_eq!(p.step_size, None);
    p.validate(2).unwrap();
}

#[test]
fn cfa_without_ccr_keeps_beta_and_without_a_beta_plans_zero() {
    let mut rule = cfa(0.3, 1, false).build(ctx()).unwrap();
    rule.plan(0).unwrap();
    rule.observe(0, &train_robust(&[0.2, 0.9])).unwrap();
    let p = rule.plan(1).unwrap();
    assert_all_close(&p.eps, &[0.05, 0.12], "eps"); // (0.3 + t_k)·0.1
    assert_eq!(p.beta, [6.0, 6.0]);

    let mut at = cfa(0.5, 1, false).build(ctx_without_beta()).unwrap();
    at.plan(0).unwrap();
    at.observe(0, &train_robust(&[0.2, 0.9])).unwrap();
    let p = at.plan(1).unwrap();
    assert_all_close(&p.eps, &[0.07, 0.14], "eps");
    assert_eq!(p.beta, [0.0, 0.0]);
}

#[test]
fn cfa_warm_up_is_uniform_until_begin() {
    let t = [0.2, 0.9];
    let mut rule = cfa(0.5, 3, true).build(ctx()).unwrap();
    for epoch in 0..3 {
        assert_eq!(
            rule.plan(epoch).unwrap(),
            uniform_plan(0.1, 6.0),
            "epoch {epoch}"
        );
        rule.observe(epoch, &train_robust(&t)).unwrap();
    }
    // From `begin` on, the previous epoch's t_k.
    let p = rule.plan(3).unwrap();
    assert_all_close(&p.eps, &[0.07, 0.14], "eps");
    rule.observe(3, &train_robust(&[1.0, 0.0])).unwrap();
    let p = rule.plan(4).unwrap();
    assert_all_close(&p.eps, &[0.15, 0.05], "eps"); // (0.5 + 1)·0.1, (0.5 + 0)·0.1
    assert_all_close(&p.beta, &[9.0, 3.0], "beta"); // (0.5 + 1)·6, (0.5 + 0)·6
}

#[test]
fn cfa_epoch_0_is_uniform_even_without_warm_up() {
    let mut rule = cfa(0.5, 0, true).build(ctx()).unwrap();
    assert_eq!(rule.plan(0).unwrap(), uniform_plan(0.1, 6.0));
    rule.observe(0, &train_robust(&[0.2, 0.9])).unwrap();
    assert_all_close(&rule.plan(1).unwrap().eps, &[0.07, 0.14], "eps");
    // A calibrated epoch without any observation is an error, not a silent uniform plan.
    let mut fresh = cfa(0.5, 0, true).build(ctx()).unwrap();
    assert!(fresh.plan(1).is_err());
}

#[test]
fn cfa_settings_and_observations_are_checked() {
    // CCR needs a β.
    let e = cfa(0.5, 0, true).build(ctx_without_beta()).err().unwrap();
    assert!(e.to_string().contains("rule.ccr"), "{e}");
    assert_eq!(invalid_field(e), "rule.ccr");
    let e = cfa(-0.5, 0, false).build(ctx()).err().unwrap();
    assert_eq!(invalid_field(e), "rule.lambda1");
    let mut rule = cfa(0.5, 0, false).build(ctx()).unwrap();
    assert_eq!(
        invalid_field(rule.observe(0, &train_robust(&[0.2, 1.5])).unwrap_err()),
        "train_robust"
    );
    assert!(matches!(
        rule.observe(0, &train_robust(&[0.2])).unwrap_err(),
        CoreError::LengthMismatch { .. }
    ));
}

#[test]
fn cfa_paper_settings() {
    let trades = CfaSettings::paper(0.5, true, 10);
    assert_eq!(
        trades,
        CfaSettings {
            lambda1: 0.3,
            lambda2: 0.5,
            begin: 10,
            ccm: true,
            ccr: true
        }
    );
    let fat = CfaSettings::paper(0.7, false, 0);
    assert_eq!((fat.lambda1, fat.ccr, fat.begin), (0.7, false, 0));
}

/// A rule restored from another's state plans what the other plans.
fn assert_state_round_trips(config: &RuleConfig, observed: &[ClassStats], next_epoch: usize) {
    let mut a = config.build(ctx()).unwrap();
    for (epoch, stats) in observed.iter().enumerate() {
        a.plan(epoch).unwrap();
        a.observe(epoch, stats).unwrap();
    }
    let state = a.state().unwrap();
    // Through JSON text, as in a checkpoint file.
    let state: serde_json::Value = serde_json::from_str(&state.to_string()).unwrap();
    let mut b = config.build(ctx()).unwrap();
    assert_ne!(
        b.plan(next_epoch).ok(),
        Some(a.plan(next_epoch).unwrap()),
        "{}: a fresh rule already plans the same; the test shows nothing",
        config.name()
    );
    b.restore(&state).unwrap();
    assert_eq!(b.plan(next_epoch).unwrap(), a.plan(next_epoch).unwrap());
    assert_eq!(b.state().unwrap(), a.state().unwrap());
    // A state of another shape is refused, naming the rule.
    let e = b.restore(&serde_json::json!({"nonsense": 1})).unwrap_err();
    assert_eq!(invalid_field(e), format!("{} rule state", config.name()));
}

#[test]
fn rule_states_round_trip() {
    assert_state_round_trips(
        &cfa(0.5, 1, true),
        &[train_robust(&[0.2, 0.9]), train_robust(&[0.4, 0.6])],
        2,
    );
    assert_state_round_trips(
        &RuleConfig::Wat(WatSettings::new(0.5)),
        &[costs(&[1.0, 2.0, 1.5])],
        1,
    );
    assert_state_round_trips(
        &RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40)),
        &[errors_stats()],
        1,
    );
    assert_state_round_trips(
        &RuleConfig::Csl(CslSettings { gamma: 0.5 }),
        &[errors_stats()],
        1,
    );
    // One rule's state does not restore another (CFA's would otherwise read as empty).
    let wat_state = serde_json::json!({ "history": [[1.0, 2.0, 1.5]] });
    let mut rule = cfa(0.5, 1, true).build(ctx()).unwrap();
    assert_eq!(
        invalid_field(rule.restore(&wat_state).unwrap_err()),
        "cfa rule state"
    );
}

// ---------------------------------------------------------------------------------------------
// `[rule]` in a run configuration
// ---------------------------------------------------------------------------------------------

#[derive(Debug, serde::Deserialize)]
struct File {
    rule: RuleConfig,
}

fn parse(toml: &str) -> Result<RuleConfig, toml::de::Error> {
    toml::from_str::<File>(toml).map(|f| f.rule)
}

#[test]
fn rule_tables_parse_with_defaults() {
    let r = parse("[rule]\nkind = \"cfa\"\nlambda1 = 0.3\nbegin = 10\n").unwrap();
    assert_eq!(
        r,
        RuleConfig::Cfa(CfaSettings {
            lambda1: 0.3,
            lambda2: 0.5,
            begin: 10,
            ccm: true,
            ccr: false,
        })
    );
    assert_eq!(r.name(), "cfa");
    assert_eq!(
        parse("[rule]\nkind = \"uniform\"\n").unwrap(),
        RuleConfig::Uniform
    );
    assert_eq!(
        parse("[rule]\nkind = \"wat\"\neta = 0.1\n").unwrap(),
        RuleConfig::Wat(WatSettings::new(0.1))
    );
    // FRL's defaults are hannxu123/fair_robust's (τ = α₁ = 0.05, α₂ = 0.2, lim 0.5, clamp 3).
    assert_eq!(
        parse("[rule]\nkind = \"frl\"\nremargin = true\nhalve_every = 40\n").unwrap(),
        RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40))
    );
    assert_eq!(RuleConfig::default(), RuleConfig::Uniform);
}

#[test]
fn rule_tables_refuse_unknown_fields_and_kinds() {
    let e = parse("[rule]\nkind = \"cfa\"\nlambda1 = 0.3\nbegin = 10\nlamda2 = 0.4\n").unwrap_err();
    assert!(e.to_string().contains("lamda2"), "{e}");
    assert!(
        parse("[rule]\nkind = \"cfa\"\nbegin = 10\n").is_err(),
        "λ₁ is required"
    );
    let e = parse("[rule]\nkind = \"bat\"\n").unwrap_err();
    assert!(e.to_string().contains("bat"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// WAT
// ---------------------------------------------------------------------------------------------

/// The plan's class weights after cumulative costs `c` (K = 2, c[2] the average loss): Hedge
/// weights w = K·softmax(η·c) (WAT eq. (12), `boqili/WAT`'s normalisation), sample weight
/// s_k = w_k + w_K, rescaled to class-mean 1.
fn wat_by_hand(c: [f64; 3], eta: f64) -> [f64; 2] {
    let e = c.map(|x| (eta * x).exp());
    let sum: f64 = e.iter().sum();
    let w = e.map(|x| 2.0 * x / sum);
    let s = [w[0] + w[2], w[1] + w[2]];
    let mean = (s[0] + s[1]) / 2.0;
    [s[0] / mean, s[1] / mean]
}

#[test]
fn wat_weights_follow_hedge_on_the_cumulative_costs() {
    let mut rule = RuleConfig::Wat(WatSettings::new(0.5)).build(ctx()).unwrap();
    assert_eq!(rule.name(), "wat");
    assert!(rule.needs(0).val_costs);
    // Initial weights 1 (K + 1 of them): s_k = 2 for both classes, i.e. 1 after rescaling.
    assert_eq!(rule.plan(0).unwrap(), uniform_plan(0.1, 6.0));

    rule.observe(0, &costs(&[1.0, 2.0, 1.5])).unwrap();
    let p = rule.plan(1).unwrap();
    let want = wat_by_hand([1.0, 2.0, 1.5], 0.5);
    // The same numbers, evaluated independently (Python, math.exp).
    assert_abs_diff_eq!(want[0], 0.875_646_998_228_403_9, epsilon = 1e-12);
    assert_abs_diff_eq!(want[1], 1.124_353_001_771_596_4, epsilon = 1e-12);
    assert_all_close(&p.natural_weight, &want, "natural_weight");
    assert_all_close(&p.boundary_weight, &want, "boundary_weight");
    // WAT changes the weights only.
    assert_eq!(p.eps, [0.1, 0.1]);
    assert_eq!(p.beta, [6.0, 6.0]);
    assert_eq!(p.step_size, None);

    // The costs accumulate: [1, 2, 1.5] + [0.5, 0, 0.25].
    rule.observe(1, &costs(&[0.5, 0.0, 0.25])).unwrap();
    let want = wat_by_hand([1.5, 2.0, 1.75], 0.5);
    assert_abs_diff_eq!(want[0], 0.937_581_253_252_487_5, epsilon = 1e-12);
    assert_all_close(&rule.plan(2).unwrap().natural_weight, &want, "second step");
}

#[test]
fn wat_needs_its_costs() {
    let mut rule = RuleConfig::Wat(WatSettings::new(0.5)).build(ctx()).unwrap();
    let e = rule.observe(3, &train_robust(&[0.5, 0.5])).unwrap_err();
    assert!(
        matches!(
            e,
            CoreError::Missing {
                rule: "wat",
                epoch: 3,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("wat"), "{e}");
    assert!(matches!(
        rule.observe(0, &costs(&[1.0, 2.0])).unwrap_err(),
        CoreError::LengthMismatch { .. }
    ));
    let e = RuleConfig::Wat(WatSettings::new(-0.1))
        .build(ctx())
        .err()
        .unwrap();
    assert_eq!(invalid_field(e), "rule.eta");
}

// ---------------------------------------------------------------------------------------------
// FRL
// ---------------------------------------------------------------------------------------------

/// Validation errors of two classes: standard e = [0.1, 0.4] (overall 0.25), boundary
/// b = [0.05, 0.3] (overall 0.175).
fn errors_stats() -> ClassStats {
    ClassStats {
        val_errors: Some(ClassErrors {
            standard: vec![0.1, 0.4],
            boundary: vec![0.05, 0.3],
            robust: vec![0.15, 0.7],
            overall_standard: 0.25,
            overall_boundary: 0.175,
            overall_robust: 0.425,
            totals: vec![100, 100],
            clean_wrong_robust_correct: vec![0, 0],
        }),
        ..ClassStats::default()
    }
}

#[test]
fn frl_starts_uniform() {
    // λ = 0: w_k = 1/K + λ_k − mean(λ) = 1/2, times K = 1 for both terms; ε multiplier
    // clamp(e⁰, 0.98, 3) = 1; RWRM's step max_k ε_k / 4 = 0.025.
    let mut rule = RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40))
        .build(ctx())
        .unwrap();
    assert_eq!(rule.name(), "frl");
    assert_eq!(
        rule.plan(0).unwrap(),
        ClassPlan {
            step_size: Some(0.025),
            ..uniform_plan(0.1, 6.0)
        }
    );
}

#[test]
fn frl_one_update_step_by_hand() {
    let mut rule = RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40))
        .build(ctx())
        .unwrap();
    rule.plan(0).unwrap();
    rule.observe(0, &errors_stats()).unwrap();
    let p = rule.plan(1).unwrap();
    // γ₀ = e_k − e − τ₁ = [0.1 − 0.25 − 0.05, 0.4 − 0.25 − 0.05] = [−0.2, 0.1];
    // γ₁ = b_k − b − τ₂ = [0.05 − 0.175 − 0.05, 0.3 − 0.175 − 0.05] = [−0.175, 0.075].
    // α₁ for 1-based epoch 2 = 0.05 (halved every 40 epochs).
    // λ₀ = N(0.05·γ₀) = N([−0.01, 0.005]) = [0, 0.005] (clamped at 0, sum ≤ lim 0.5);
    // λ₁ = N(2·0.05·γ₁) = N([−0.0175, 0.0075]) = [0, 0.0075];
    // λ₂ = 0.2·γ₁ = [−0.035, 0.015].
    // Natural weights K·(1/2 + λ₀ − mean λ₀) = 2·[0.5 − 0.0025, 0.5 + 0.0025].
    assert_all_close(&p.natural_weight, &[0.995, 1.005], "natural_weight");
    // Boundary weights 2·[0.5 − 0.00375, 0.5 + 0.00375].
    assert_all_close(&p.boundary_weight, &[0.9925, 1.0075], "boundary_weight");
    // ε multipliers clamp(exp(2·λ₂), 0.98, 3) = [0.98 (exp(−0.07) ≈ 0.932), exp(0.03)].
    let eps1 = 0.1 * 0.03f64.exp();
    assert_abs_diff_eq!(eps1, 0.103_045_453_395_351_7, epsilon = 1e-15);
    assert_all_close(&p.eps, &[0.098, eps1], "eps");
    // RWRM's step: max_k ε_k / 4.
    assert_abs_diff_eq!(p.step_size.unwrap(), eps1 / 4.0, epsilon = 1e-15);
    assert_eq!(p.beta, [6.0, 6.0]);
}

/// Every class within τ₂ of the mean boundary error: every ε multiplier below 1, and RWRM's
/// step max_k ε_k / 4 falls below the configured 0.025, as `hannxu123/fair_robust:utils_frl2.py`
/// (`trades_adv`: `step_size = torch.max(new_eps) / 4`) has it.
#[test]
fn frl_step_follows_the_budgets_below_the_configured_step() {
    let mut rule = RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40))
        .build(ctx())
        .unwrap();
    let mut stats = errors_stats();
    let errors = stats.val_errors.as_mut().unwrap();
    errors.boundary = vec![0.2, 0.2];
    errors.overall_boundary = 0.2;
    rule.observe(0, &stats).unwrap();
    let p = rule.plan(1).unwrap();
    // γ₁ = b_k − b − τ₂ = −0.05 for both; λ₂ = 0.2·γ₁ = −0.01; multiplier
    // clamp(exp(−0.02), 0.98, 3) = 0.980 198 7 (above the floor); step ε·0.980 198 7 / 4.
    let eps = 0.1 * (-0.02f64).exp();
    assert_abs_diff_eq!(eps, 0.098_019_867_330_675_5, epsilon = 1e-15);
    assert_all_close(&p.eps, &[eps, eps], "eps");
    assert_abs_diff_eq!(
        p.step_size.unwrap(),
        0.024_504_966_832_668_9,
        epsilon = 1e-15
    );
}

#[test]
fn frl_reweight_only_keeps_eps_and_step() {
    let s = FrlSettings {
        remargin: false,
        ..FrlSettings::reweight_remargin(0, 40)
    };
    let mut rule = RuleConfig::Frl(s).build(ctx()).unwrap();
    rule.observe(0, &errors_stats()).unwrap();
    let p = rule.plan(1).unwrap();
    assert_all_close(&p.natural_weight, &[0.995, 1.005], "natural_weight");
    assert_eq!(p.eps, [0.1, 0.1]);
    assert_eq!(p.step_size, None);
}

#[test]
fn frl_updates_from_epoch_begin_minus_one() {
    let mut rule = RuleConfig::Frl(FrlSettings::reweight_remargin(3, 40))
        .build(ctx())
        .unwrap();
    for epoch in 0..4 {
        assert_eq!(rule.needs(epoch).val_errors, epoch + 1 >= 3, "{epoch}");
    }
    // Before epoch begin − 1 = 2 nothing is needed and nothing changes.
    rule.observe(0, &ClassStats::default()).unwrap();
    rule.observe(1, &errors_stats()).unwrap();
    assert_eq!(rule.plan(2).unwrap().natural_weight, [1.0, 1.0]);
    let e = rule.observe(2, &ClassStats::default()).unwrap_err();
    assert!(
        matches!(
            e,
            CoreError::Missing {
                rule: "frl",
                epoch: 2,
                ..
            }
        ),
        "{e:?}"
    );
    rule.observe(2, &errors_stats()).unwrap();
    assert_all_close(
        &rule.plan(3).unwrap().natural_weight,
        &[0.995, 1.005],
        "after epoch 2",
    );
    // α₁'s halving counts FRL's own epochs from `begin` (frlrw.py's `now_epoch` starts at 1 on
    // the hot start): with halve_every = 2 the first update still has the whole α₁ = 0.05 (the
    // same weights), where counting from the run's epoch 0 (epoch 4) would give α₁/4.
    let mut halving = RuleConfig::Frl(FrlSettings::reweight_remargin(3, 2))
        .build(ctx())
        .unwrap();
    halving.observe(2, &errors_stats()).unwrap();
    assert_all_close(
        &halving.plan(3).unwrap().natural_weight,
        &[0.995, 1.005],
        "first FRL epoch, halve_every = 2",
    );
}

#[test]
fn frl_settings_are_checked() {
    // FRL is defined on the TRADES loss: PGD-AT (no β), MART and BAT (a β, another loss) are
    // refused, so no BAT run gets RWRM's step (the only rule that sets one).
    for base in [Base::PGD_AT, MART, BAT] {
        let e = RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40))
            .build(RuleContext { base, ..ctx() })
            .err()
            .unwrap();
        assert!(e.to_string().contains("trades for the `frl` rule"), "{e}");
        assert_eq!(invalid_field(e), "train.method");
    }
    let bad = |s: FrlSettings| invalid_field(RuleConfig::Frl(s).build(ctx()).err().unwrap());
    let rwrm = FrlSettings::reweight_remargin(0, 40);
    assert_eq!(bad(FrlSettings { lim: 1.0, ..rwrm }), "rule.lim");
    assert_eq!(bad(FrlSettings { tau1: -1.0, ..rwrm }), "rule.tau1");
    assert_eq!(
        bad(FrlSettings {
            halve_every: 0,
            ..rwrm
        }),
        "rule.halve_every"
    );
    assert_eq!(
        bad(FrlSettings {
            eps_multiplier_max: 0.5,
            ..rwrm
        }),
        "rule.eps_multiplier_max"
    );
}

#[test]
fn frl_observes_the_initial_model_when_it_starts_at_epoch_0() {
    // FRL evaluates before every epoch, its pretrained start before epoch 1: with begin = 0 the
    // plan of epoch 0 already carries the update of `frl_one_update_step_by_hand` (α₁ = 0.05
    // for 1-based epoch 1).
    let mut rule = RuleConfig::Frl(FrlSettings::reweight_remargin(0, 40))
        .build(ctx())
        .unwrap();
    assert!(rule.needs_initial().val_errors);
    rule.observe_initial(&errors_stats()).unwrap();
    let p = rule.plan(0).unwrap();
    assert_all_close(&p.natural_weight, &[0.995, 1.005], "natural_weight");
    assert_all_close(&p.boundary_weight, &[0.9925, 1.0075], "boundary_weight");
    assert_all_close(&p.eps, &[0.098, 0.1 * 0.03f64.exp()], "eps");
    let e = rule.observe_initial(&ClassStats::default()).unwrap_err();
    assert!(
        matches!(e, CoreError::MissingInitial { rule: "frl", .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("before the first epoch"), "{e}");

    // With plain TRADES epochs first (begin = 3) the initial model is not evaluated.
    let mut later = RuleConfig::Frl(FrlSettings::reweight_remargin(3, 40))
        .build(ctx())
        .unwrap();
    assert!(!later.needs_initial().any());
    later.observe_initial(&errors_stats()).unwrap();
    assert_eq!(later.plan(0).unwrap().natural_weight, [1.0, 1.0]);
}

/// The paper's normalisation by hand (K = 2, c[2] the average loss): w = softmax(η·c) (WAT
/// eq. (12)), sample weight s_k = K·w_k + w_K (eq. (11) with class-mean losses), rescaled to
/// class-mean 1 when `mean_one`.
fn wat_paper_by_hand(c: [f64; 3], eta: f64, mean_one: bool) -> [f64; 2] {
    let e = c.map(|x| (eta * x).exp());
    let sum: f64 = e.iter().sum();
    let w = e.map(|x| x / sum);
    let s = [2.0 * w[0] + w[2], 2.0 * w[1] + w[2]];
    let mean = if mean_one { (s[0] + s[1]) / 2.0 } else { 1.0 };
    [s[0] / mean, s[1] / mean]
}

#[test]
fn wat_paper_normalisation_and_loss_scales() {
    let wat = |normalization, loss_scale| {
        RuleConfig::Wat(WatSettings {
            eta: 0.5,
            normalization,
            loss_scale,
        })
        .build(ctx())
        .unwrap()
    };
    // As written, the code's first epoch is 2× TRADES (weights 1 + 1) and the paper's exactly
    // TRADES (2·1/3 + 1/3).
    let mut code_raw = wat(WatNormalization::Code, WatLossScale::AsWritten);
    assert_eq!(code_raw.plan(0).unwrap().natural_weight, [2.0, 2.0]);
    let mut paper_raw = wat(WatNormalization::Paper, WatLossScale::AsWritten);
    assert_all_close(
        &paper_raw.plan(0).unwrap().natural_weight,
        &[1.0, 1.0],
        "paper, epoch 0",
    );
    let mut paper = wat(WatNormalization::Paper, WatLossScale::ClassMeanOne);

    let c = [1.0, 2.0, 1.5];
    for rule in [&mut code_raw, &mut paper_raw, &mut paper] {
        rule.observe(0, &costs(&c)).unwrap();
    }
    // Code, as written: w = 2·softmax(0.5·c) = 2·[e^0.5, e^1, e^0.75]/Σ; s_k = w_k + w_2.
    let e = c.map(|x| (0.5 * x).exp());
    let sum: f64 = e.iter().sum();
    let code_s = [2.0 * (e[0] + e[2]) / sum, 2.0 * (e[1] + e[2]) / sum];
    // The same numbers, evaluated independently (Python, math.exp).
    assert_abs_diff_eq!(code_s[0], 1.161_542_096_780_604_5, epsilon = 1e-12);
    assert_all_close(
        &code_raw.plan(1).unwrap().natural_weight,
        &code_s,
        "code, as written",
    );
    let want = wat_paper_by_hand(c, 0.5, false);
    assert_abs_diff_eq!(want[0], 0.835_046_260_980_767_8, epsilon = 1e-12);
    assert_all_close(
        &paper_raw.plan(1).unwrap().boundary_weight,
        &want,
        "paper, as written",
    );
    let want = wat_paper_by_hand(c, 0.5, true);
    assert_all_close(
        &paper.plan(1).unwrap().natural_weight,
        &want,
        "paper, mean one",
    );
    // The two normalisations differ beyond a scale: the code's average decision weighs K
    // times more, so its class weights are closer to 1.
    let code = wat_by_hand(c, 0.5);
    assert!(
        (code[1] - 1.0).abs() < (want[1] - 1.0).abs(),
        "{code:?} {want:?}"
    );
    // The metrics line shows the Hedge weights and the last costs, not the history.
    let snap = paper.snapshot().unwrap();
    assert_eq!(snap["last_costs"], serde_json::json!(c));
    let w: Vec<f64> = serde_json::from_value(snap["weights"].clone()).unwrap();
    assert_all_close(&w, &e.map(|x| x / sum), "snapshot weights");
    // Settings parse with the defaults and by name.
    assert_eq!(
        parse("[rule]\nkind = \"wat\"\neta = 0.5\nnormalization = \"paper\"\nloss_scale = \"as-written\"\n")
            .unwrap(),
        RuleConfig::Wat(WatSettings {
            eta: 0.5,
            normalization: WatNormalization::Paper,
            loss_scale: WatLossScale::AsWritten,
        })
    );
}

// ---------------------------------------------------------------------------------------------
// CSL, class-wise β, and which rule fits which base
// ---------------------------------------------------------------------------------------------

#[test]
fn csl_moves_weights_by_the_robust_error_gap() {
    let mut rule = RuleConfig::Csl(CslSettings { gamma: 0.5 })
        .build(ctx())
        .unwrap();
    assert_eq!(rule.name(), "csl");
    assert!(rule.needs(0).val_errors);
    assert_eq!(rule.plan(0).unwrap(), uniform_plan(0.1, 6.0));
    // Robust errors [0.15, 0.7], mean 0.425: w = 1 + 0.5·[−0.275, 0.275] = [0.8625, 1.1375],
    // whose mean is already 1.
    rule.observe(0, &errors_stats()).unwrap();
    let p = rule.plan(1).unwrap();
    assert_all_close(&p.natural_weight, &[0.8625, 1.1375], "natural_weight");
    assert_all_close(&p.boundary_weight, &[0.8625, 1.1375], "boundary_weight");
    assert_eq!((p.eps, p.beta), (vec![0.1, 0.1], vec![6.0, 6.0]));
    // A second step from there: [0.725, 1.275].
    rule.observe(1, &errors_stats()).unwrap();
    assert_all_close(
        &rule.plan(2).unwrap().natural_weight,
        &[0.725, 1.275],
        "second",
    );
    // γ = 4: 1 − 4·0.275 < 0 clips to 0 and the other class takes the whole mass 2.
    let mut steep = RuleConfig::Csl(CslSettings { gamma: 4.0 })
        .build(ctx())
        .unwrap();
    steep.observe(0, &errors_stats()).unwrap();
    assert_all_close(
        &steep.plan(1).unwrap().natural_weight,
        &[0.0, 2.0],
        "clipped",
    );
    let e = steep.observe(1, &train_robust(&[0.5, 0.5])).unwrap_err();
    assert!(
        matches!(
            e,
            CoreError::Missing {
                rule: "csl",
                epoch: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let e = RuleConfig::Csl(CslSettings { gamma: -1.0 })
        .build(ctx())
        .err()
        .unwrap();
    assert_eq!(invalid_field(e), "rule.gamma");
}

#[test]
fn class_beta_plans_the_given_vector() {
    // Tian et al.'s experiment, on two classes: β = [6, 0.5].
    let settings = ClassBetaSettings {
        beta: vec![6.0, 0.5],
    };
    let mut rule = RuleConfig::ClassBeta(settings.clone())
        .build(ctx())
        .unwrap();
    for epoch in [0, 5] {
        let p = rule.plan(epoch).unwrap();
        assert_eq!(p.beta, [6.0, 0.5]);
        assert_eq!(
            p,
            ClassPlan {
                beta: vec![6.0, 0.5],
                ..uniform_plan(0.1, 6.0)
            }
        );
    }
    assert_eq!(
        parse("[rule]\nkind = \"class-beta\"\nbeta = [6.0, 0.5]\n").unwrap(),
        RuleConfig::ClassBeta(settings)
    );
    let bad = |beta: Vec<f64>, c: RuleContext| {
        invalid_field(
            RuleConfig::ClassBeta(ClassBetaSettings { beta })
                .build(c)
                .err()
                .unwrap(),
        )
    };
    let e = RuleConfig::ClassBeta(ClassBetaSettings { beta: vec![6.0] })
        .build(ctx())
        .err()
        .unwrap();
    assert!(
        matches!(&e, CoreError::LengthMismatch { what, expected: 2, got: 1 } if what == "rule.beta"),
        "{e:?}"
    );
    assert_eq!(bad(vec![6.0, -1.0], ctx()), "rule.beta");
    assert_eq!(bad(vec![6.0, 0.5], ctx_without_beta()), "rule.kind");
}

#[test]
fn rules_refuse_bases_their_papers_do_not_define_them_on() {
    let on = |base: Base, rule: RuleConfig| {
        let beta = ["trades", "mart", "bat"]
            .contains(&base.name)
            .then_some(6.0);
        rule.build(RuleContext {
            base,
            beta,
            ..ctx()
        })
    };
    let wat = || RuleConfig::Wat(WatSettings::new(0.1));
    let csl = || RuleConfig::Csl(CslSettings { gamma: 0.05 });
    // WAT's costs are TRADES losses.
    for base in [Base::PGD_AT, Base::FAT, MART, BAT, Base::NATURAL] {
        let e = on(base, wat()).err().unwrap();
        assert!(e.to_string().contains(base.name()), "{e}");
        assert_eq!(invalid_field(e), "train.method");
    }
    // CCM and CSL need a training attack; CCM composes with every adversarial base, CCR with
    // every base that has a β.
    for rule in [cfa(0.5, 0, false), csl()] {
        let e = on(Base::NATURAL, rule).err().unwrap();
        assert!(e.to_string().contains("training attack"), "{e}");
    }
    for base in [Base::PGD_AT, Base::TRADES, Base::FAT, MART, BAT] {
        on(base, cfa(0.5, 0, false)).unwrap();
        on(base, csl()).unwrap();
    }
    for base in [Base::TRADES, MART, BAT] {
        on(base, cfa(0.3, 0, true)).unwrap();
    }
    assert_eq!(
        invalid_field(on(Base::FAT, cfa(0.3, 0, true)).err().unwrap()),
        "rule.ccr"
    );
}
