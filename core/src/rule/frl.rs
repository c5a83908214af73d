//! FRL (Xu et al., ICML 2021): Lagrange multipliers on the validation standard and boundary
//! errors (`frl_train` in `hannxu123/fair_robust:utils_frl.py`), turned into class weights of the
//! CE and KL terms and, with remargin, ε multipliers.

use classwise_theory::calibration::{
    FrlConfig, FrlMultipliers, FrlVariant, frl_rate1, frl_update, frl_violations, frl_weights,
};
use serde::{Deserialize, Serialize};

use super::{ClassRule, RuleContext, parse_state, to_state};
use crate::error::{Bound, CoreError, Result, check, invalid};
use crate::plan::{ClassPlan, ClassStats, Needs};

/// FRL's settings (`[rule] kind = "frl"`; defaults of `hannxu123/fair_robust`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrlSettings {
    /// Reweight + Remargin (true) or Reweight only.
    pub remargin: bool,
    #[serde(default = "frl_005")]
    pub tau1: f64,
    #[serde(default = "frl_005")]
    pub tau2: f64,
    #[serde(default = "frl_005")]
    pub alpha1: f64,
    #[serde(default = "frl_02")]
    pub alpha2: f64,
    #[serde(default = "frl_05")]
    pub lim: f64,
    #[serde(default = "frl_3")]
    pub eps_multiplier_max: f64,
    /// α₁ halves every `halve_every` FRL epochs, counted from `begin`.
    pub halve_every: usize,
    /// First 0-based epoch trained with FRL weights (the epochs before are plain TRADES). With
    /// 0 (the default), the multipliers of epoch 0 come from the initial model's validation
    /// errors, as FRL evaluates its pretrained start before its first epoch (`frl_train` in
    /// `hannxu123/fair_robust:utils_frl.py`); start from a trained run with `init_from`.
    #[serde(default)]
    pub begin: usize,
}

fn frl_005() -> f64 {
    0.05
}
fn frl_02() -> f64 {
    0.2
}
fn frl_05() -> f64 {
    0.5
}
fn frl_3() -> f64 {
    3.0
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

/// The FRL rule.
///
/// The reference code normalises the weights per batch (Σ_i w_{y_i}·CE_i / Σ_i w_{y_i}); here
/// the per-class weights are K·w_y, the same in expectation on a class-balanced batch. FRL
/// evaluates before each epoch: the multipliers of 0-based epoch e come from the validation
/// errors measured after epoch e − 1 (of the initial model for e = 0), from e = `begin` on.
pub struct Frl {
    ctx: RuleContext,
    settings: FrlSettings,
    config: FrlConfig,
    beta: f64,
    multipliers: FrlMultipliers,
}

impl Frl {
    pub fn new(s: FrlSettings, ctx: RuleContext) -> Result<Self> {
        ctx.require_trades(
            "frl",
            "FRL's constraints weigh the natural and boundary terms of the TRADES loss (Xu et al. \
             2021, §4)",
        )?;
        let beta = ctx.require_beta("rule.kind", "frl")?;
        for (name, v) in [
            ("rule.tau1", s.tau1),
            ("rule.tau2", s.tau2),
            ("rule.alpha1", s.alpha1),
            ("rule.alpha2", s.alpha2),
        ] {
            check(name, v, Bound::NonNegative)?;
        }
        if !(s.lim > 0.0 && s.lim < 1.0) {
            return Err(invalid("rule.lim", s.lim, "in (0, 1)"));
        }
        if !(s.eps_multiplier_max.is_finite() && s.eps_multiplier_max >= 0.98) {
            return Err(invalid(
                "rule.eps_multiplier_max",
                s.eps_multiplier_max,
                "finite and >= 0.98",
            ));
        }
        if s.halve_every == 0 {
            return Err(invalid("rule.halve_every", 0, ">= 1"));
        }
        Ok(Frl {
            config: s.to_theory(),
            settings: s,
            beta,
            multipliers: FrlMultipliers::zeros(ctx.n_classes)?,
            ctx,
        })
    }
}

impl Frl {
    /// The multiplier update FRL runs before 0-based epoch `next` (`frl_train` in
    /// `hannxu123/fair_robust:utils_frl.py`), from the validation errors in `stats`.
    fn update(&mut self, next: usize, stats: &ClassStats) -> Result<()> {
        let e = stats.val_errors.as_ref().ok_or(if next == 0 {
            CoreError::MissingInitial {
                rule: "frl",
                what: "the initial model's validation standard and boundary errors",
            }
        } else {
            CoreError::Missing {
                rule: "frl",
                what: "the validation standard and boundary errors",
                epoch: next - 1,
            }
        })?;
        let (g0, g1) = frl_violations(
            &e.standard,
            &e.boundary,
            e.overall_standard,
            e.overall_boundary,
            self.config.tau1,
            self.config.tau2,
        )?;
        // The rate in force for FRL's (1-based) epoch next − begin + 1: the code counts its
        // epochs from its hot start (`now_epoch` from 1 in `hannxu123/fair_robust:frlrw.py`),
        // not from the run's first TRADES epoch.
        let frl_epoch = next + 1 - self.settings.begin;
        let rate = frl_rate1(self.config.alpha1, frl_epoch, self.config.halve_every)?;
        self.multipliers = frl_update(&self.config, &self.multipliers, &g0, &g1, rate)?;
        Ok(())
    }
}

impl ClassRule for Frl {
    fn name(&self) -> &'static str {
        "frl"
    }

    fn plan(&mut self, _epoch: usize) -> Result<ClassPlan> {
        let w = frl_weights(&self.config, &self.multipliers)?;
        let k = self.ctx.n_classes as f64;
        let eps: Vec<f64> = w.eps_multiplier.iter().map(|m| m * self.ctx.eps).collect();
        // RWRM's step is max_i ε_i / 4 whatever the configured step (`trades_adv` in
        // `hannxu123/fair_robust:utils_frl2.py`, which overwrites its `step_size` argument;
        // with every multiplier at its 0.98 floor it is 0.98·ε/4). RW keeps the configured step.
        let step_size = self
            .settings
            .remargin
            .then(|| eps.iter().copied().fold(0.0, f64::max) / 4.0);
        Ok(ClassPlan {
            eps,
            beta: vec![self.beta; self.ctx.n_classes],
            natural_weight: w.natural.iter().map(|w0| k * w0).collect(),
            boundary_weight: w.boundary.iter().map(|w1| k * w1).collect(),
            step_size,
        })
    }

    fn needs_initial(&self) -> Needs {
        Needs {
            val_errors: self.settings.begin == 0,
            ..Needs::default()
        }
    }

    fn observe_initial(&mut self, stats: &ClassStats) -> Result<()> {
        if self.settings.begin == 0 {
            self.update(0, stats)?;
        }
        Ok(())
    }

    fn needs(&self, epoch: usize) -> Needs {
        Needs {
            val_errors: epoch + 1 >= self.settings.begin,
            ..Needs::default()
        }
    }

    fn observe(&mut self, epoch: usize, stats: &ClassStats) -> Result<()> {
        if epoch + 1 < self.settings.begin {
            return Ok(());
        }
        self.update(epoch + 1, stats)
    }

    fn state(&self) -> Result<serde_json::Value> {
        to_state("frl", &self.multipliers)
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        self.multipliers = parse_state("frl", state)?;
        Ok(())
    }
}
