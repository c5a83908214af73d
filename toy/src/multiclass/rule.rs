//! Class-wise rules: what each class gets in the next epoch (budget ε_k, loss weights), decided
//! from what was observed in the previous ones. The arithmetic of every rule lives in
//! [`classwise_theory::calibration`]; this module only wires it to the toy's epoch loop.
//!
//! A rule is a [`ClassRule`]: [`ClassRule::plan`] before an epoch returns an [`EpochPlan`], and
//! [`ClassRule::observe`] after it receives an [`EpochObservation`]. The plan's weights are
//! interpreted by the base loss ([`super::loss`]), so every rule composes with every base
//! (CFA's CCM on AT, TRADES and FAT without copies).

use classwise_theory::calibration::{
    CfaConfig, FrlConfig, FrlMultipliers, FrlVariant, WatNormalization, cfa_epoch_config,
    frl_rate1, frl_update, frl_violations, frl_weights, wat_sample_weight,
    wat_weights_from_history,
};
use classwise_theory::metrics::ClassErrors;
use serde::{Deserialize, Serialize};

use super::loss::Base;
use crate::error::{Result, ToyError, require};

/// The per-class training configuration of one epoch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochPlan {
    /// Per-class training budget ε_k (sample i is attacked with ε_{y_i}, CFA eq. (6)).
    pub epsilon: Vec<f64>,
    /// Per-class TRADES β_k in force (TRADES base only).
    pub beta: Option<Vec<f64>>,
    /// u_y: weight of the CE term (CE on x for natural/TRADES, on x' for AT/FAT).
    pub natural_weight: Vec<f64>,
    /// v_y: weight of the KL term (TRADES only; 0 otherwise).
    pub boundary_weight: Vec<f64>,
    /// PGD step size in force (FRL remargin enlarges it to max_k ε_k / 4).
    pub step_size: f64,
}

/// What a rule sees after epoch `t` (0-based).
#[derive(Debug, Clone, Copy)]
pub struct EpochObservation<'a> {
    /// t_k: class-k robust accuracy on the epoch's own adversarial training examples, counted
    /// on the fly before each optimiser step, with per-class denominators (CFA §4.1;
    /// `PKU-ML/CFA:train.py`).
    pub train_robust: &'a [f64],
    /// Class-wise standard / boundary errors on the validation set at the plain ε (FRL).
    pub val_errors: &'a ClassErrors,
    /// WAT's validation cost vector (K + 1 entries, class TRADES losses then the average).
    pub val_costs: &'a [f64],
}

/// A class-wise rule (see the module docs).
pub trait ClassRule {
    /// The plan of 0-based epoch `epoch`.
    fn plan(&mut self, epoch: usize) -> Result<EpochPlan>;
    /// Observations after 0-based epoch `epoch`.
    fn observe(&mut self, epoch: usize, observation: &EpochObservation<'_>) -> Result<()>;
}

/// The rule and its hyper-parameters, as stored in a run configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Rule {
    /// The same ε and weights for every class (plain AT / TRADES / FAT / natural).
    Uniform,
    Cfa(CfaSettings),
    Wat(WatSettings),
    Frl(FrlSettings),
}

impl Rule {
    pub fn name(&self) -> &'static str {
        match self {
            Rule::Uniform => "uniform",
            Rule::Cfa(_) => "cfa",
            Rule::Wat(_) => "wat",
            Rule::Frl(_) => "frl",
        }
    }
}

/// CFA (Wei et al. 2023) hyper-parameters: CCM (eq. 6), CCR (eq. 7).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CfaSettings {
    /// λ₁ of eq. (6): 0.5 for AT, 0.3 for TRADES, 0.7 for FAT.
    pub lambda1: f64,
    /// λ₂ of eq. (7): 0.5.
    pub lambda2: f64,
    /// First 0-based calibrated epoch (the reference code's `--begin`, 10 of 200 epochs).
    pub begin: usize,
    pub ccm: bool,
    /// CCR; only valid with the TRADES base.
    pub ccr: bool,
}

impl CfaSettings {
    /// The paper's values for `base` (CCR with TRADES only) with warm-up `begin`.
    pub fn for_base(base: &Base, begin: usize) -> Self {
        let lambda1 = match base {
            Base::Trades { .. } => 0.3,
            Base::Fat { .. } => 0.7,
            Base::PgdAt | Base::Natural => 0.5,
        };
        Self {
            lambda1,
            lambda2: 0.5,
            begin,
            ccm: true,
            ccr: base.trades_beta().is_some(),
        }
    }
}

/// WAT (Li et al. 2023) hyper-parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WatSettings {
    /// Hedge step η (0.1 in WAT's main results).
    pub eta: f64,
}

/// FRL (Xu et al. 2021) hyper-parameters (`hannxu123/fair_robust`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FrlSettings {
    /// Reweight + Remargin (true) or Reweight only.
    pub remargin: bool,
    pub tau1: f64,
    pub tau2: f64,
    pub alpha1: f64,
    pub alpha2: f64,
    pub lim: f64,
    pub eps_multiplier_max: f64,
    /// α₁ halves every `halve_every` epochs.
    pub halve_every: usize,
    /// First 0-based epoch trained with FRL weights (the epochs before stand in for FRL's
    /// pretrained hot start; they are plain TRADES).
    pub begin: usize,
}

impl FrlSettings {
    /// FRL-RWRM as re-run by WAT (τ = α = 0.05) with the code's α₂ = 0.2, lim 0.5 and ε clamp 3.
    pub fn reweight_remargin(begin: usize, halve_every: usize) -> Self {
        Self {
            remargin: true,
            tau1: 0.05,
            tau2: 0.05,
            alpha1: 0.05,
            alpha2: 0.2,
            lim: 0.5,
            eps_multiplier_max: 3.0,
            halve_every,
            begin,
        }
    }

    fn to_theory(self) -> FrlConfig {
        FrlConfig {
            variant: if self.remargin {
                FrlVariant::ReweightRemargin
            } else {
                FrlVariant::Reweight
            },
            tau1: self.tau1,
            tau2: self.tau2,
            alpha1: self.alpha1,
            alpha2: self.alpha2,
            lim: self.lim,
            eps_multiplier_max: self.eps_multiplier_max,
            halve_every: self.halve_every,
        }
    }
}

/// The settings every rule shares with the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleContext {
    pub base: Base,
    pub n_classes: usize,
    pub epsilon: f64,
    pub step_size: f64,
}

/// Builds the rule of a run configuration; checks that the rule fits the base.
pub fn build_rule(rule: &Rule, ctx: RuleContext) -> Result<Box<dyn ClassRule>> {
    Ok(match rule {
        Rule::Uniform => Box::new(Uniform { ctx }),
        Rule::Cfa(s) => Box::new(Cfa::new(*s, ctx)?),
        Rule::Wat(s) => Box::new(Wat::new(*s, ctx)?),
        Rule::Frl(s) => Box::new(Frl::new(*s, ctx)?),
    })
}

/// (u, v) of the base loss for a class with TRADES β_k: CFA eq. (8)'s 1/(1 + β_k) and
/// β_k/(1 + β_k) for TRADES (the reference code scales vanilla TRADES by 1/(1 + β) too,
/// `PKU-ML/CFA:train.py`), (1, 0) for the other bases.
fn base_weights(base: &Base, beta_k: f64) -> (f64, f64) {
    match base {
        Base::Trades { .. } => (1.0 / (1.0 + beta_k), beta_k / (1.0 + beta_k)),
        _ => (1.0, 0.0),
    }
}

/// The uniform plan scaled per class by `class_weight` (mean 1 keeps the loss scale).
fn scaled_plan(ctx: &RuleContext, epsilon: Vec<f64>, class_weight: &[f64]) -> EpochPlan {
    let beta = ctx.base.trades_beta();
    let (u, v) = base_weights(&ctx.base, beta.unwrap_or(0.0));
    EpochPlan {
        epsilon,
        beta: beta.map(|b| vec![b; ctx.n_classes]),
        natural_weight: class_weight.iter().map(|s| s * u).collect(),
        boundary_weight: class_weight.iter().map(|s| s * v).collect(),
        step_size: ctx.step_size,
    }
}

fn require_trades(ctx: &RuleContext, name: &'static str) -> Result<f64> {
    ctx.base.trades_beta().ok_or(ToyError::InvalidParameter {
        name,
        value: f64::NAN,
        expected: "the TRADES base (this rule is defined on the TRADES loss)",
    })
}

fn non_negative(name: &'static str, v: f64) -> Result<f64> {
    require(name, v, v.is_finite() && v >= 0.0, "finite and >= 0")
}

/// No class-wise rule.
struct Uniform {
    ctx: RuleContext,
}

impl ClassRule for Uniform {
    fn plan(&mut self, _epoch: usize) -> Result<EpochPlan> {
        let ones = vec![1.0; self.ctx.n_classes];
        Ok(scaled_plan(
            &self.ctx,
            vec![self.ctx.epsilon; self.ctx.n_classes],
            &ones,
        ))
    }

    fn observe(&mut self, _epoch: usize, _observation: &EpochObservation<'_>) -> Result<()> {
        Ok(())
    }
}

/// CFA's CCM (eq. 6) and CCR (eq. 7–8) driven by the previous epoch's train robust accuracy
/// (CFA §4.1-4.2; the epoch loop of `PKU-ML/CFA:train.py`). FAWA is run by the epoch loop (it
/// acts on the model, not on the loss).
struct Cfa {
    ctx: RuleContext,
    config: CfaConfig,
    prev_train_robust: Option<Vec<f64>>,
}

impl Cfa {
    fn new(s: CfaSettings, ctx: RuleContext) -> Result<Self> {
        non_negative("rule.lambda1", s.lambda1)?;
        non_negative("rule.lambda2", s.lambda2)?;
        if s.ccr {
            require_trades(&ctx, "rule.ccr")?;
        }
        Ok(Self {
            config: CfaConfig {
                epsilon: ctx.epsilon,
                beta: ctx.base.trades_beta().unwrap_or(0.0),
                lambda1: s.lambda1,
                lambda2: s.lambda2,
                begin: s.begin,
                ccm: s.ccm,
                ccr: s.ccr,
            },
            ctx,
            prev_train_robust: None,
        })
    }
}

impl ClassRule for Cfa {
    fn plan(&mut self, epoch: usize) -> Result<EpochPlan> {
        let c = cfa_epoch_config(
            &self.config,
            epoch,
            self.ctx.n_classes,
            self.prev_train_robust.as_deref(),
        )?;
        let (natural_weight, boundary_weight) = c
            .beta
            .iter()
            .map(|&b| base_weights(&self.ctx.base, b))
            .unzip();
        Ok(EpochPlan {
            epsilon: c.epsilon,
            beta: self.ctx.base.trades_beta().map(|_| c.beta),
            natural_weight,
            boundary_weight,
            step_size: self.ctx.step_size,
        })
    }

    fn observe(&mut self, _epoch: usize, observation: &EpochObservation<'_>) -> Result<()> {
        self.prev_train_robust = Some(observation.train_robust.to_vec());
        Ok(())
    }
}

/// WAT: Hedge over the K class losses and the average loss on the validation costs (WAT eq.
/// (12), normalisation of `boqili/WAT:worst_class_adversarial_train.py`), updated once per
/// epoch.
///
/// Sample i is weighted by s_{y_i} = w_{y_i} + w_K ([`wat_sample_weight`]). **Toy choice:** the
/// s_k are rescaled to class-mean 1, so the loss scale (and hence the effective learning rate)
/// equals the base method's; the reference code's first epoch is 2× TRADES instead. With
/// uniform weights this rule is exactly the base method.
struct Wat {
    ctx: RuleContext,
    eta: f64,
    history: Vec<Vec<f64>>,
}

impl Wat {
    fn new(s: WatSettings, ctx: RuleContext) -> Result<Self> {
        non_negative("rule.eta", s.eta)?;
        Ok(Self {
            ctx,
            eta: s.eta,
            history: Vec::new(),
        })
    }
}

impl ClassRule for Wat {
    fn plan(&mut self, _epoch: usize) -> Result<EpochPlan> {
        let k = self.ctx.n_classes;
        let w = wat_weights_from_history(&self.history, k, self.eta, WatNormalization::Code)?;
        let s = (0..k)
            .map(|y| wat_sample_weight(&w, y))
            .collect::<std::result::Result<Vec<f64>, _>>()?;
        let mean = s.iter().sum::<f64>() / k as f64;
        let s: Vec<f64> = s.iter().map(|v| v / mean).collect();
        Ok(scaled_plan(&self.ctx, vec![self.ctx.epsilon; k], &s))
    }

    fn observe(&mut self, _epoch: usize, observation: &EpochObservation<'_>) -> Result<()> {
        self.history.push(observation.val_costs.to_vec());
        Ok(())
    }
}

/// FRL: Lagrange multipliers on the validation standard and boundary errors (`frl_train` in
/// `hannxu123/fair_robust:utils_frl.py`), turned
/// into class weights of the CE and KL terms and (remargin) ε multipliers.
///
/// **Toy choices:** the reference code normalises the weights per batch (Σ_i w_{y_i}·CE_i /
/// Σ_i w_{y_i}); here the per-class weights are K·w_y, which is the same in expectation on a
/// class-balanced batch, times the base TRADES weights 1/(1 + β), β/(1 + β) so the loss scale
/// matches the other TRADES runs. The multipliers are updated after each epoch from epoch
/// `begin − 1` on (FRL evaluates before each epoch; the toy has no pretrained hot start).
struct Frl {
    ctx: RuleContext,
    settings: FrlSettings,
    config: FrlConfig,
    beta: f64,
    multipliers: FrlMultipliers,
}

impl Frl {
    fn new(s: FrlSettings, ctx: RuleContext) -> Result<Self> {
        let beta = require_trades(&ctx, "base")?;
        for (name, v) in [
            ("rule.tau1", s.tau1),
            ("rule.tau2", s.tau2),
            ("rule.alpha1", s.alpha1),
            ("rule.alpha2", s.alpha2),
        ] {
            non_negative(name, v)?;
        }
        require("rule.lim", s.lim, s.lim > 0.0 && s.lim < 1.0, "in (0, 1)")?;
        require(
            "rule.eps_multiplier_max",
            s.eps_multiplier_max,
            s.eps_multiplier_max.is_finite() && s.eps_multiplier_max >= 0.98,
            "finite and >= 0.98",
        )?;
        crate::error::require_count("rule.halve_every", s.halve_every, 1)?;
        Ok(Self {
            config: s.to_theory(),
            settings: s,
            beta,
            multipliers: FrlMultipliers::zeros(ctx.n_classes)?,
            ctx,
        })
    }
}

impl ClassRule for Frl {
    fn plan(&mut self, _epoch: usize) -> Result<EpochPlan> {
        let w = frl_weights(&self.config, &self.multipliers)?;
        let k = self.ctx.n_classes as f64;
        let (u, v) = base_weights(&self.ctx.base, self.beta);
        let epsilon: Vec<f64> = w
            .eps_multiplier
            .iter()
            .map(|m| m * self.ctx.epsilon)
            .collect();
        // RWRM's step is max_i ε_i / 4 (`trades_adv` in `hannxu123/fair_robust:utils_frl2.py`),
        // never below the configured step; RW keeps the configured step.
        let step_size = if self.settings.remargin {
            epsilon
                .iter()
                .fold(self.ctx.step_size, |a, &e| a.max(e / 4.0))
        } else {
            self.ctx.step_size
        };
        Ok(EpochPlan {
            epsilon,
            beta: Some(vec![self.beta; self.ctx.n_classes]),
            natural_weight: w.natural.iter().map(|w0| k * w0 * u).collect(),
            boundary_weight: w.boundary.iter().map(|w1| k * w1 * v).collect(),
            step_size,
        })
    }

    fn observe(&mut self, epoch: usize, observation: &EpochObservation<'_>) -> Result<()> {
        if epoch + 1 < self.settings.begin {
            return Ok(());
        }
        let e = observation.val_errors;
        let (g0, g1) = frl_violations(
            &e.standard,
            &e.boundary,
            e.overall_standard,
            e.overall_boundary,
            self.config.tau1,
            self.config.tau2,
        )?;
        // The rate in force for the next (1-based: epoch + 2) training epoch.
        let rate = frl_rate1(self.config.alpha1, epoch + 2, self.config.halve_every)?;
        self.multipliers = frl_update(&self.config, &self.multipliers, &g0, &g1, rate)?;
        Ok(())
    }
}
