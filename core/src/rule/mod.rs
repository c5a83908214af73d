//! Class-wise rules: what each class gets in the next epoch (ε_k, β_k, loss weights, step
//! size), decided from what was observed in the previous ones.
//!
//! A rule is a [`ClassRule`]: [`ClassRule::plan`] before an epoch returns a [`ClassPlan`],
//! [`ClassRule::needs`] says which validation statistics it wants after that epoch, and
//! [`ClassRule::observe`] receives them as [`ClassStats`]. Its state goes into checkpoints
//! ([`ClassRule::state`], [`ClassRule::restore`]), so a resumed run continues it exactly.
//!
//! The same implementations drive the multi-class toy (`classwise_toy::multiclass`) and the
//! libtorch trainer (`classwise_trainer`): the plan's weights are interpreted by each backend's
//! objective, so every rule composes with every base loss (CFA's CCM on AT, TRADES and FAT
//! without copies). The arithmetic is in [`classwise_theory::calibration`].
//!
//! * [`Uniform`]: the baselines (the same plan every epoch);
//! * [`Cfa`]: CCM (CFA eq. (6)) and CCR (eqs. (7)-(8));
//! * [`Wat`]: Hedge weights over the K + 1 validation costs (WAT eq. (12));
//! * [`Frl`]: FRL's reweighting and remargin multipliers (Xu et al. 2021).

mod cfa;
mod frl;
mod uniform;
mod wat;

pub use cfa::{Cfa, CfaSettings};
pub use frl::{Frl, FrlSettings};
pub use uniform::Uniform;
pub use wat::{Wat, WatSettings};

use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid, non_negative};
use crate::plan::{ClassPlan, ClassStats, Needs};

/// A class-wise rule (see the module docs).
pub trait ClassRule: Send {
    /// The rule's name (`uniform`, `cfa`, `wat`, `frl`).
    fn name(&self) -> &'static str;
    /// The plan of 0-based epoch `epoch`.
    fn plan(&mut self, epoch: usize) -> Result<ClassPlan>;
    /// The validation statistics [`ClassRule::observe`] needs after 0-based epoch `epoch`.
    fn needs(&self, _epoch: usize) -> Needs {
        Needs::default()
    }
    /// What was measured in 0-based epoch `epoch`, after it ran.
    fn observe(&mut self, epoch: usize, stats: &ClassStats) -> Result<()>;
    /// The rule's state, for checkpoints.
    fn state(&self) -> Result<serde_json::Value>;
    /// Restores [`ClassRule::state`].
    fn restore(&mut self, state: &serde_json::Value) -> Result<()>;
}

/// What every rule shares with the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleContext {
    pub n_classes: usize,
    /// The training budget ε before any class-wise change.
    pub eps: f64,
    /// The objective's trade-off β, when it has one (TRADES); `None` for AT, FAT, natural.
    pub beta: Option<f64>,
    /// The training attack's absolute step at ε (FRL's remargin never goes below it).
    pub step_size: f64,
}

impl RuleContext {
    /// The uniform plan of the context.
    pub fn uniform_plan(&self) -> ClassPlan {
        ClassPlan::uniform(self.n_classes, self.eps, self.beta.unwrap_or(0.0))
    }

    fn validate(&self) -> Result<()> {
        if self.n_classes == 0 {
            return Err(invalid("n_classes", 0, ">= 1"));
        }
        non_negative("eps", self.eps)?;
        non_negative("step_size", self.step_size)?;
        if let Some(b) = self.beta {
            non_negative("beta", b)?;
        }
        Ok(())
    }

    /// β, or an error naming `field` when the objective has none.
    fn require_beta(&self, field: &str, rule: &str) -> Result<f64> {
        self.beta.ok_or_else(|| {
            invalid(
                field,
                rule,
                "an objective with a trade-off β (TRADES): this rule is defined on the TRADES \
                 loss",
            )
        })
    }
}

/// The rule of a run and its settings, as written in a run configuration (`[rule]` with
/// `kind = "uniform" | "cfa" | "wat" | "frl"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RuleConfig {
    /// The same ε and weights for every class (plain AT / TRADES / FAT / natural).
    #[default]
    Uniform,
    Cfa(CfaSettings),
    Wat(WatSettings),
    Frl(FrlSettings),
}

impl RuleConfig {
    pub fn name(&self) -> &'static str {
        match self {
            RuleConfig::Uniform => "uniform",
            RuleConfig::Cfa(_) => "cfa",
            RuleConfig::Wat(_) => "wat",
            RuleConfig::Frl(_) => "frl",
        }
    }

    /// Builds the rule; checks its settings and that it fits the objective (`ctx`).
    pub fn build(&self, ctx: RuleContext) -> Result<Box<dyn ClassRule>> {
        ctx.validate()?;
        Ok(match self {
            RuleConfig::Uniform => Box::new(Uniform::new(ctx)),
            RuleConfig::Cfa(s) => Box::new(Cfa::new(*s, ctx)?),
            RuleConfig::Wat(s) => Box::new(Wat::new(*s, ctx)?),
            RuleConfig::Frl(s) => Box::new(Frl::new(*s, ctx)?),
        })
    }
}

/// Deserialises a rule state, naming the rule on failure.
pub(crate) fn parse_state<T: serde::de::DeserializeOwned>(
    rule: &'static str,
    state: &serde_json::Value,
) -> Result<T> {
    serde_json::from_value(state.clone()).map_err(|e| {
        invalid(
            format!("{rule} rule state"),
            state,
            format!("the state the `{rule}` rule writes ({e})"),
        )
    })
}

/// Serialises a rule state.
pub(crate) fn to_state<T: Serialize>(rule: &'static str, state: &T) -> Result<serde_json::Value> {
    serde_json::to_value(state)
        .map_err(|e| invalid(format!("{rule} rule state"), e, "a serialisable state"))
}
