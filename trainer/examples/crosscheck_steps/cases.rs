//! The step files' cases: each method with the settings of the reference it is checked against
//! (STEP_FORMAT.md, "Which reference a step is checked against"), and a control.

use classwise_core::rule::{Base, CslSettings, WatLossScale};
use classwise_trainer::Result;
use classwise_trainer::attack::AttackLoss;
use classwise_trainer::attack::{EarlyStopVariant, EarlyStoppedPgd, Pgd, Start, StepSize};
use classwise_trainer::train::{
    Bat, BatPoint, BatSource, ClassPlan, Fat, Mart, Method, PgdAt, RuleConfig, Trades,
    TradesScaling,
};
use serde_json::json;

use crate::common::{EPS, K, STEP, ramp, to_json};
use crate::rules::{Stats, context, frl_config, run_rule, wat_config};
use crate::steps::Case;

/// The early-stopped attacks' budget and step: twice CFA's, so that the fitted model is
/// misclassified at various steps (as the self-test's 16/255 and 4/255).
const EPS_WIDE: f64 = 16.0 / 255.0;
const STEP_WIDE: f64 = 4.0 / 255.0;
/// CFA's FAT attacks in train mode, where the fitted model resists 16/255 for all ten steps: a
/// budget of 32/255 makes its samples stop after 8 to 10 steps.
const EPS_FAT_CFA: f64 = 32.0 / 255.0;

/// Every case.
pub fn all() -> Result<Vec<Case>> {
    let mut cases = pgd_at_and_mart();
    cases.extend(trades_by_hand());
    cases.extend(fat()?);
    cases.extend(bat_cases());
    cases.extend(ruled()?);
    Ok(cases)
}

/// TRADES' KL attack from x + 0.001·N(0, I).
fn normal_attack() -> Pgd {
    Pgd::trades(10, STEP)
}

/// A class-wise plan around `eps`: ε_k from 0.5·ε to 1.4·ε, β_k from 1 to 10, weights around 1.
fn class_wise(eps: f64) -> ClassPlan {
    ClassPlan {
        eps: ramp(0.5 * eps, 1.4 * eps),
        beta: ramp(1.0, 10.0),
        natural_weight: ramp(0.6, 1.5),
        boundary_weight: ramp(1.4, 0.7),
        step_size: None,
    }
}

fn kind(kind: &str) -> serde_json::Value {
    json!({ "kind": kind })
}

fn trades(scaling: TradesScaling, second_clean_forward: bool) -> Method {
    Method::Trades(Trades {
        attack: normal_attack(),
        scaling,
        second_clean_forward,
    })
}

/// Tian et al.'s class-β plan (§5.2: β of class 5, dog, lowered from 6 to 0.5).
fn tian_beta() -> ClassPlan {
    ClassPlan {
        beta: (0..K).map(|k| if k == 5 { 0.5 } else { 6.0 }).collect(),
        ..ClassPlan::uniform(K, EPS, 6.0)
    }
}

/// PGD-AT (CFA's code: attack in train mode, clean forward after the step) and MART (uniform
/// and class-β), from the initial weights.
fn pgd_at_and_mart() -> Vec<Case> {
    let at = Method::PgdAt(PgdAt {
        // Madry's PGD-10 on CE from a uniform start (CFA's training attack).
        attack: Pgd::ce(10, STEP),
        attack_train_mode: true,
    });
    let mart = Method::Mart(Mart {
        // MART's attack: CE from x + 0.001·N(0, I) (`YisenWang/MART:mart.py`).
        attack: Pgd {
            start: Start::Normal { std: 0.001 },
            ..Pgd::ce(10, STEP)
        },
    });
    let ccm = ClassPlan {
        beta: vec![6.0; K],
        ..class_wise(EPS)
    };
    let uniform = ClassPlan::uniform(K, EPS, 6.0);
    vec![
        Case::new("pgd-at-cfa", at.clone(), uniform.clone(), kind("uniform")).forward_after(),
        Case::new("pgd-at-ccm", at, ccm, kind("cfa")).forward_after(),
        Case::new("mart", mart.clone(), uniform, kind("uniform")),
        Case::new("mart-class-beta", mart, tian_beta(), kind("class-beta")),
    ]
}

/// TRADES with plans written by hand, from the initial weights, and a control.
fn trades_by_hand() -> Vec<Case> {
    let uniform = ClassPlan::uniform(K, EPS, 6.0);
    let tian = ClassPlan {
        eps: vec![EPS; K],
        ..class_wise(EPS)
    };
    let cfa = |second| trades(TradesScaling::Reference, second);
    let paper = trades(TradesScaling::Paper, true);
    vec![
        Case::new("trades-cfa", cfa(true), uniform.clone(), kind("uniform")).forward_after(),
        Case::new(
            "trades-cfa-ccm-ccr",
            cfa(true),
            class_wise(EPS),
            kind("cfa"),
        )
        .forward_after(),
        // A control: classwise's defaults (one clean forward, none after the step) against
        // CFA's code, which makes both: expected to differ in the BatchNorm statistics only.
        Case::new(
            "control-trades-cfa-defaults",
            cfa(false),
            uniform.clone(),
            kind("uniform"),
        ),
        Case::new("trades-paper", paper.clone(), uniform, kind("uniform")),
        Case::new("trades-class-beta", paper, tian, kind("class-beta")),
    ]
}

/// FAT with τ = `tau`, `steps` steps of [`STEP_WIDE`] from a uniform start on CE.
fn fat_attack(variant: EarlyStopVariant, tau: usize, step_noise: f64) -> EarlyStoppedPgd {
    EarlyStoppedPgd {
        steps: 10,
        step: StepSize::Absolute(STEP_WIDE),
        start: Start::Uniform,
        loss: AttackLoss::CrossEntropy,
        tau,
        variant,
        step_noise,
    }
}

/// BAT (Algorithm 1; α = 1, β = 6) with the ablation's source and uniform points.
fn bat(source: BatSource, uniform_on: Vec<BatPoint>, scaling: TradesScaling) -> Method {
    Method::Bat(Bat {
        attack: Pgd::trades(10, STEP_WIDE),
        alpha: 1.0,
        source,
        uniform_on,
        scaling,
    })
}

/// CFA's FAT (τ = 3, no ω, no schedule) with the attack in train mode (CFA's code) or eval mode.
fn fat_cfa(attack_train_mode: bool) -> Method {
    Method::Fat(Fat {
        attack: fat_attack(EarlyStopVariant::CfaRepo, 3, 0.0),
        tau_schedule: Vec::new(),
        attack_train_mode,
    })
}

/// FAT from weights fitted to the batch: CFA's variant (τ = 3, forward after the step) with the
/// attack in train mode at [`EPS_FAT_CFA`], uniform and class-wise, and in eval mode at
/// class-wise budgets around [`EPS_WIDE`] (where the fitted model stops at various steps); the
/// original (ω = 0.001, eval-mode attack, τ from `adjust_tau`: 0-based epochs 0, 60, 95 give
/// τ = 0, 1, 2) at [`EPS_WIDE`], with CSL's class weights on the CE.
fn fat() -> Result<Vec<Case>> {
    let cfa = fat_cfa(true);
    let original = Method::Fat(Fat {
        attack: fat_attack(EarlyStopVariant::Original, 0, 0.001),
        tau_schedule: vec![[50, 1], [90, 2]],
        attack_train_mode: false,
    });
    let ccm = ClassPlan {
        beta: vec![0.0; K],
        ..class_wise(EPS_FAT_CFA)
    };
    let uniform = ClassPlan::uniform(K, EPS_WIDE, 0.0);
    let weighted = ClassPlan {
        natural_weight: ramp(1.5, 0.5),
        ..uniform.clone()
    };
    let csl = to_json("rule", &RuleConfig::Csl(CslSettings { gamma: 0.05 }))?;
    let cfa_uniform = ClassPlan::uniform(K, EPS_FAT_CFA, 0.0);
    let ccm_wide = ClassPlan {
        beta: vec![0.0; K],
        ..class_wise(EPS_WIDE)
    };
    Ok(vec![
        Case::new("fat-cfa", cfa.clone(), cfa_uniform, kind("uniform"))
            .forward_after()
            .fitted(0),
        Case::new("fat-cfa-ccm", cfa, ccm, kind("cfa"))
            .forward_after()
            .fitted(0),
        Case::new("fat-cfa-eval-ccm", fat_cfa(false), ccm_wide, kind("cfa"))
            .forward_after()
            .fitted(0),
        Case::new("fat-original", original.clone(), uniform, kind("uniform")).fitted(0),
        Case::new(
            "fat-original-tau1-csl",
            original.clone(),
            weighted.clone(),
            csl.clone(),
        )
        .fitted(60),
        Case::new("fat-original-tau2-csl", original, weighted, csl).fitted(95),
    ])
}

/// BAT from weights fitted to the batch at [`EPS_WIDE`]: eq. (7) with a uniform plan and with
/// a plan written by hand (ε, β and both weights vary by class), and the ablation of BAT
/// Tables 2-3 with TRADES' source on the full x' and the uniform term there, CFA's scaling.
fn bat_cases() -> Vec<Case> {
    let pair = || vec![BatPoint::LastCorrect, BatPoint::FirstWrong];
    let uniform = ClassPlan::uniform(K, EPS_WIDE, 6.0);
    let by_hand = json!({ "kind": "hand-written" });
    let paper = |on| bat(BatSource::Boundary, on, TradesScaling::Paper);
    let ablation = bat(
        BatSource::Trades,
        vec![BatPoint::Fixed],
        TradesScaling::Reference,
    );
    vec![
        Case::new("bat", paper(pair()), uniform.clone(), kind("uniform")).fitted(0),
        Case::new(
            "bat-class-wise",
            paper(pair()),
            class_wise(EPS_WIDE),
            by_hand,
        )
        .fitted(0),
        Case::new(
            "bat-ablation-trades-fixed",
            ablation,
            uniform,
            kind("uniform"),
        )
        .fitted(0),
    ]
}

/// TRADES under WAT, FRL (RW, RWRM) and CSL, with the plans the rules made after a few epochs
/// of the rule files' statistics (and WAT's Hedge weights as `reference_inputs`).
fn ruled() -> Result<Vec<Case>> {
    let ctx = context(Base::TRADES, Some(6.0));
    let csl = RuleConfig::Csl(CslSettings { gamma: 0.5 });
    let mut cases = Vec::new();
    for (name, config, second) in [
        ("trades-wat", wat_config(WatLossScale::AsWritten), false),
        ("trades-frl-rw", frl_config(false, 0), true),
        ("trades-frl-rwrm", frl_config(true, 0), true),
        ("trades-csl", csl, true),
    ] {
        let (updates, rule) = run_rule(&config, ctx, 4, Stats::Random(1000))?;
        let last = updates.last().map(|u| u.plan.clone());
        let plan = last.ok_or_else(|| classwise_trainer::error::invalid("epochs", 0, ">= 1"))?;
        let method = trades(TradesScaling::Paper, second);
        let mut case = Case::new(name, method, plan, to_json("rule", &config)?);
        if config.name() == "wat" {
            case.reference_inputs = Some(json!({ "wat_weights": rule.snapshot()?["weights"] }));
        }
        cases.push(case);
    }
    Ok(cases)
}
