//! Rule files (STEP_FORMAT.md, "Rule files"): classwise's rules (`classwise_core::rule`) run
//! over a few epochs of made-up, non-uniform statistics, as the training loop drives them
//! (`classwise_core::driver`: `observe_initial` before epoch 0, `plan(e)` before epoch e,
//! `observe(e)` after it); each update is written with the inputs it saw and the plan it made.

use std::path::Path;

use classwise_core::rule::{
    Base, CfaSettings, ClassBetaSettings, ClassRule, CslSettings, FrlSettings, WatLossScale,
    WatSettings,
};
use classwise_theory::calibration::WatNormalization;
use classwise_theory::metrics::{ClassErrors, class_errors};
use classwise_trainer::Result;
use classwise_trainer::io::write_json;
use classwise_trainer::train::{ClassPlan, ClassStats, RuleConfig, RuleContext};
use serde_json::{Value, json};

use crate::common::{EPS, K, STEP, Written, settings, to_json, uniform_values};

/// Training samples per class behind t_k (a balanced training set, so that the code's
/// K·correct_k/N is classwise's correct_k/n_k).
const TRAIN_PER_CLASS: usize = 50;

/// The statistics measured after an epoch (or on the initial model), from `seed`: t_k from
/// balanced counts; validation errors from per-image flags on an unbalanced validation set of
/// 20 + 2k images of class k, clean and robust correctness drawn independently (so that some
/// images are wrong clean and right under attack, which FRL's boundary error acc − acc_adv
/// counts); WAT's K + 1 costs (the last the sample mean).
fn stats(seed: i64) -> Result<ClassStats> {
    let p_clean = uniform_values(seed + 1, K, 0.5, 0.95)?;
    let p_robust = uniform_values(seed + 2, K, 0.15, 0.6)?;
    let labels: Vec<usize> = (0..K).flat_map(|k| vec![k; 20 + 2 * k]).collect();
    let r_clean = uniform_values(seed + 3, labels.len(), 0.0, 1.0)?;
    let r_robust = uniform_values(seed + 4, labels.len(), 0.0, 1.0)?;
    let clean: Vec<bool> = labels
        .iter()
        .zip(&r_clean)
        .map(|(&k, r)| *r < p_clean[k])
        .collect();
    let robust: Vec<bool> = labels
        .iter()
        .zip(&r_robust)
        .map(|(&k, r)| *r < p_robust[k])
        .collect();
    measured(seed, class_errors(&clean, &robust, &labels, K)?)
}

/// Validation images per class behind [`boundary_stats`] (a balanced validation set).
const VAL_PER_CLASS: usize = 50;

/// Statistics whose validation boundary errors are `boundary` exactly (FRL's remargin acts on
/// them alone): of class k's [`VAL_PER_CLASS`] images the first c_k are right clean (c_k/50
/// drawn from [0.9, 1) with `seed`) and the first c_k − 50·b_k of them right under attack, so
/// that b_k = clean_acc_k − robust_acc_k; t_k and WAT's costs as in [`stats`].
fn boundary_stats(seed: i64, boundary: &[f64; K]) -> Result<ClassStats> {
    let n = VAL_PER_CLASS;
    let count = |p: f64| (p * n as f64).round() as usize;
    let clean_n: Vec<usize> = uniform_values(seed + 1, K, 0.9, 1.0)?
        .into_iter()
        .map(count)
        .collect();
    let robust_n: Vec<usize> = clean_n
        .iter()
        .zip(boundary)
        .map(|(&c, &b)| c.saturating_sub(count(b)))
        .collect();
    let labels: Vec<usize> = (0..K).flat_map(|k| vec![k; n]).collect();
    let first = |counts: &[usize]| -> Vec<bool> {
        (0..labels.len()).map(|i| i % n < counts[i / n]).collect()
    };
    let errors = class_errors(&first(&clean_n), &first(&robust_n), &labels, K)?;
    measured(seed, errors)
}

/// The statistics of an epoch with validation errors `errors`: t_k from balanced counts and
/// WAT's K + 1 costs (the last the sample mean), drawn from `seed`.
fn measured(seed: i64, errors: ClassErrors) -> Result<ClassStats> {
    let train_robust = uniform_values(seed, K, 0.2, 0.9)?
        .iter()
        .map(|t| (t * TRAIN_PER_CLASS as f64).round() / TRAIN_PER_CLASS as f64)
        .collect();
    let mut costs = uniform_values(seed + 5, K, 0.5, 3.0)?;
    costs.push(costs.iter().sum::<f64>() / K as f64);
    Ok(ClassStats {
        train_robust,
        val_clean: Some(errors.standard.iter().map(|e| 1.0 - e).collect()),
        val_robust: Some(errors.robust.iter().map(|e| 1.0 - e).collect()),
        val_errors: Some(errors),
        val_costs: Some(costs),
    })
}

/// Where a run's statistics come from: [`stats`] or [`boundary_stats`], the seed stepped by
/// 10 per epoch.
#[derive(Clone, Copy)]
pub enum Stats {
    Random(i64),
    Boundary(i64, [f64; K]),
}

impl Stats {
    /// The statistics measured before 0-based `epoch`.
    fn before(self, epoch: usize) -> Result<ClassStats> {
        let step = 10 * epoch as i64;
        match self {
            Stats::Random(seed) => stats(seed + step),
            Stats::Boundary(seed, b) => boundary_stats(seed + step, &b),
        }
    }
}

/// One update of a rule, as a rule file records it.
pub struct Update {
    pub epoch: usize,
    /// What this update observed: measured after epoch − 1 (on the initial model for epoch 0,
    /// when the rule asks for it).
    pub observed: Option<ClassStats>,
    /// Everything observed up to this update, in order (WAT's cost history).
    pub history: Vec<ClassStats>,
    /// The rule's state before and after the update (`ClassRule::state`).
    pub state_before: Value,
    pub state_after: Value,
    /// `ClassRule::snapshot` after the update (WAT's Hedge weights).
    pub snapshot: Value,
    pub plan: ClassPlan,
}

/// Runs `config` for epochs 0..epochs with the statistics of `source` and returns every update,
/// and the rule.
pub fn run_rule(
    config: &RuleConfig,
    ctx: RuleContext,
    epochs: usize,
    source: Stats,
) -> Result<(Vec<Update>, Box<dyn ClassRule>)> {
    let mut rule = config.build(ctx)?;
    let mut history = Vec::new();
    let mut updates = Vec::new();
    for epoch in 0..epochs {
        let state_before = rule.state()?;
        let observed = match epoch {
            0 if rule.needs_initial().any() => Some(source.before(0)?),
            0 => None,
            e => Some(source.before(e)?),
        };
        if let Some(s) = &observed {
            match epoch {
                0 => rule.observe_initial(s)?,
                e => rule.observe(e - 1, s)?,
            }
            history.push(s.clone());
        }
        let plan = rule.plan(epoch)?;
        updates.push(Update {
            epoch,
            observed,
            history: history.clone(),
            state_before,
            state_after: rule.state()?,
            snapshot: rule.snapshot()?,
            plan,
        });
    }
    Ok((updates, rule))
}

/// The rule context of a TRADES run with β (or of PGD-AT without) at CFA's ε and step.
pub fn context(base: Base, beta: Option<f64>) -> RuleContext {
    RuleContext {
        base,
        n_classes: K,
        eps: EPS,
        beta,
        step_size: STEP,
    }
}

/// An update's `inputs` and its `outputs` besides the plan.
type Describe = fn(&Update) -> Result<(Value, Value)>;

/// A set of rule files: one rule, its context and what each update's file holds.
struct Files<'a> {
    stem: &'a str,
    config: RuleConfig,
    ctx: RuleContext,
    /// The first and last 0-based epochs written.
    epochs: [usize; 2],
    stats: Stats,
    describe: Describe,
}

/// Writes one file per update of `files.epochs`.
fn write_files(out: &Path, files: &Files<'_>) -> Result<Vec<Written>> {
    let (updates, _) = run_rule(&files.config, files.ctx, files.epochs[1] + 1, files.stats)?;
    let ctx = &files.ctx;
    let mut written = Vec::new();
    for u in updates.iter().filter(|u| u.epoch >= files.epochs[0]) {
        let (inputs, mut outputs) = (files.describe)(u)?;
        outputs["plan"] = to_json("plan", &u.plan)?;
        let file = json!({
            "format": "classwise-rule/1",
            "rule": files.config.name(),
            "settings": settings("rule settings", &files.config)?,
            "context": { "n_classes": ctx.n_classes, "eps": ctx.eps, "beta": ctx.beta, "step_size": ctx.step_size },
            "epoch": u.epoch,
            "inputs": inputs,
            "outputs": outputs,
            "source": "trainer/examples/crosscheck_steps (rules.rs)",
        });
        let path = out.join(format!("{}-e{}.json", files.stem, u.epoch));
        write_json(&path, "rule file", &file)?;
        written.push((path, String::new()));
    }
    Ok(written)
}

/// The statistics an update observed, or an error naming what is missing.
fn observed(u: &Update) -> Result<&ClassStats> {
    u.observed.as_ref().ok_or_else(|| {
        classwise_trainer::error::invalid("epoch", u.epoch, "an update that observed statistics")
    })
}

/// CFA: t_k of the previous epoch, with the counts behind it.
fn cfa_io(u: &Update) -> Result<(Value, Value)> {
    let t = &observed(u)?.train_robust;
    let correct: Vec<u64> = t
        .iter()
        .map(|t| (t * TRAIN_PER_CLASS as f64).round() as u64)
        .collect();
    let inputs = json!({ "train_robust": t, "train_correct": correct, "train_total": vec![TRAIN_PER_CLASS; K] });
    Ok((inputs, json!({})))
}

/// WAT: every epoch's validation costs so far; the Hedge weights.
fn wat_io(u: &Update) -> Result<(Value, Value)> {
    let costs: Vec<&Vec<f64>> = u
        .history
        .iter()
        .filter_map(|s| s.val_costs.as_ref())
        .collect();
    Ok((
        json!({ "val_costs": costs }),
        json!({ "weights": u.snapshot["weights"] }),
    ))
}

/// FRL: the multipliers before and after, the validation errors the update saw.
fn frl_io(u: &Update) -> Result<(Value, Value)> {
    let lambda = |s: &Value| -> Vec<Value> {
        ["lambda0", "lambda1", "lambda2"]
            .iter()
            .flat_map(|k| s[*k].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let e = observed(u)?.val_errors.as_ref().ok_or_else(|| {
        classwise_trainer::error::invalid("stats", "no val_errors", "FRL's validation errors")
    })?;
    let inputs = json!({
        "lambda": lambda(&u.state_before),
        "val_clean_error": e.standard, "val_boundary_error": e.boundary,
        "total_clean_error": e.overall_standard, "total_boundary_error": e.overall_boundary,
    });
    Ok((inputs, json!({ "lambda": lambda(&u.state_after) })))
}

/// CSL: the weights before and after, the validation robust errors.
fn csl_io(u: &Update) -> Result<(Value, Value)> {
    let robust = observed(u)?.val_errors.as_ref().map(|e| e.robust.clone());
    let inputs = json!({ "weights": u.state_before["weights"], "val_robust_error": robust });
    Ok((inputs, json!({ "weights": u.state_after["weights"] })))
}

/// No inputs (a fixed plan).
fn no_io(_: &Update) -> Result<(Value, Value)> {
    Ok((json!({}), json!({})))
}

/// WAT as the code runs it (`code`, `as-written`) or with classwise's defaults.
pub fn wat_config(loss_scale: WatLossScale) -> RuleConfig {
    RuleConfig::Wat(WatSettings {
        eta: 0.1,
        normalization: WatNormalization::Code,
        loss_scale,
    })
}

/// FRL with the code's rates and a short halving period (so that halving happens within the
/// written epochs).
pub fn frl_config(remargin: bool, begin: usize) -> RuleConfig {
    RuleConfig::Frl(FrlSettings {
        remargin,
        ..FrlSettings::reweight_remargin(begin, 2)
    })
}

fn cfa_config(lambda1: f64, begin: usize, ccr: bool) -> RuleConfig {
    RuleConfig::Cfa(CfaSettings::calibrated(lambda1, begin, ccr))
}

/// A set of files: (file stem, rule, context, first and last epoch written, statistics,
/// contents).
type Set = (
    &'static str,
    RuleConfig,
    RuleContext,
    [usize; 2],
    Stats,
    Describe,
);

/// CFA on TRADES (CCM and CCR, `begin` 2: an epoch before it) and on PGD-AT (CCM only).
fn cfa_sets() -> Vec<Set> {
    let trades = context(Base::TRADES, Some(6.0));
    let at = context(Base::PGD_AT, None);
    vec![
        (
            "rule-cfa-trades",
            cfa_config(0.3, 2, true),
            trades,
            [1, 4],
            Stats::Random(100),
            cfa_io,
        ),
        (
            "rule-cfa-at",
            cfa_config(0.5, 0, false),
            at,
            [1, 2],
            Stats::Random(200),
            cfa_io,
        ),
    ]
}

/// WAT with the code's scaling over five epochs, and a control with classwise's default loss
/// scale (class-mean one) against the code's weights as written.
fn wat_sets() -> Vec<Set> {
    let trades = context(Base::TRADES, Some(6.0));
    let code = wat_config(WatLossScale::AsWritten);
    let default = wat_config(WatLossScale::ClassMeanOne);
    vec![
        ("rule-wat", code, trades, [0, 4], Stats::Random(300), wat_io),
        (
            "control-rule-wat-class-mean-one",
            default,
            trades,
            [3, 3],
            Stats::Random(300),
            wat_io,
        ),
    ]
}

/// FRL RW and RWRM from epoch 0 (halving α₁ every 2 epochs), RWRM from `begin` 2, and RWRM at
/// its clamps ([`frl_clamp_sets`]).
fn frl_sets() -> Vec<Set> {
    let trades = context(Base::TRADES, Some(6.0));
    let (rw, rwrm, late) = (
        frl_config(false, 0),
        frl_config(true, 0),
        frl_config(true, 2),
    );
    let mut sets: Vec<Set> = vec![
        (
            "rule-frl-rw",
            rw,
            trades,
            [0, 3],
            Stats::Random(400),
            frl_io,
        ),
        (
            "rule-frl-rwrm",
            rwrm,
            trades,
            [0, 3],
            Stats::Random(500),
            frl_io,
        ),
        (
            "rule-frl-rwrm-begin2",
            late,
            trades,
            [2, 5],
            Stats::Random(600),
            frl_io,
        ),
    ];
    sets.extend(frl_clamp_sets());
    sets
}

/// RWRM where the ε multiplier clamp(exp(2·λ₂), 0.98, 3) binds (`utils_frl2.py:94`):
///
/// * `step-floor`: every class's boundary error within τ₂ of the mean (0.30 and 0.32), so every
///   γ₁ < 0 and every λ₂ falls: all multipliers below 1 (0.98 at the floor by epoch 1), and
///   max_k ε_k/4 below the configured step ε/4 (the step the reference takes, `:162`);
/// * `eps-cap`: class 3's boundary error 0.9 against 0.2: its λ₂ grows by 0.2·0.58 an epoch
///   and its multiplier reaches the cap 3 at epoch 4 (2.53 at epoch 3), the others 0.98.
fn frl_clamp_sets() -> Vec<Set> {
    let trades = context(Base::TRADES, Some(6.0));
    let rwrm = frl_config(true, 0);
    let fair: [f64; K] = std::array::from_fn(|k| 0.30 + 0.02 * (k % 2) as f64);
    let hard: [f64; K] = std::array::from_fn(|k| if k == 3 { 0.9 } else { 0.2 });
    vec![
        (
            "rule-frl-rwrm-step-floor",
            rwrm.clone(),
            trades,
            [0, 1],
            Stats::Boundary(1100, fair),
            frl_io,
        ),
        (
            "rule-frl-rwrm-eps-cap",
            rwrm,
            trades,
            [3, 5],
            Stats::Boundary(1200, hard),
            frl_io,
        ),
    ]
}

/// CSL at WAT's γ and at a γ large enough to clip weights at 0; class-β as Tian et al. §5.2
/// (β of class 5, dog, lowered from 6 to 0.5).
fn csl_and_class_beta_sets() -> Vec<Set> {
    let trades = context(Base::TRADES, Some(6.0));
    let csl = |gamma| RuleConfig::Csl(CslSettings { gamma });
    let tian = RuleConfig::ClassBeta(ClassBetaSettings {
        beta: (0..K).map(|k| if k == 5 { 0.5 } else { 6.0 }).collect(),
    });
    vec![
        (
            "rule-csl",
            csl(0.05),
            trades,
            [1, 3],
            Stats::Random(700),
            csl_io,
        ),
        (
            "rule-csl-clipped",
            csl(4.0),
            trades,
            [1, 3],
            Stats::Random(800),
            csl_io,
        ),
        (
            "rule-class-beta",
            tian,
            trades,
            [0, 0],
            Stats::Random(900),
            no_io,
        ),
    ]
}

/// Every rule file.
pub fn write_all(out: &Path) -> Result<Vec<Written>> {
    let sets = [
        cfa_sets(),
        wat_sets(),
        frl_sets(),
        csl_and_class_beta_sets(),
    ];
    let mut written = Vec::new();
    for (stem, config, ctx, epochs, stats, describe) in sets.into_iter().flatten() {
        let files = Files {
            stem,
            config,
            ctx,
            epochs,
            stats,
            describe,
        };
        written.extend(write_files(out, &files)?);
    }
    Ok(written)
}
