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
//! * [`uniform`]: the baselines (the same plan every epoch, a [`Fixed`] rule);
//! * [`Cfa`]: CCM (CFA eq. (6)) and CCR (eqs. (7)-(8));
//! * [`Wat`]: Hedge weights over the K + 1 validation costs (WAT eq. (12));
//! * [`Frl`]: FRL's reweighting and remargin multipliers (Xu et al. 2021);
//! * [`Csl`]: cost-sensitive class weights from the validation robust errors (WAT's CSL
//!   baseline, a reconstruction);
//! * [`class_beta`]: a fixed β per class (Tian et al. 2021, eq. (5));
//! * [`class_weight`]: a fixed loss weight for one class (WAT §3.2, Fig. 3).
//!
//! Which rule fits which base objective is decided here, once, from [`RuleContext::base`]:
//! a rule refuses a base its paper does not define it on, with a message naming both.

mod cfa;
mod class_beta;
mod class_weight;
mod csl;
mod frl;
mod uniform;
mod wat;

pub use cfa::{Cfa, CfaSettings};
pub use class_beta::{ClassBetaSettings, class_beta};
pub use class_weight::{ClassWeightSettings, class_weight, class_weights};
pub use csl::{Csl, CslSettings};
pub use frl::{Frl, FrlSettings};
pub use uniform::{Fixed, uniform};
pub use wat::{Wat, WatLossScale, WatSettings};

use serde::{Deserialize, Serialize};

use crate::error::{Bound, Result, check, invalid};
use crate::plan::{ClassPlan, ClassStats, Needs};

/// A class-wise rule (see the module docs).
pub trait ClassRule: Send {
    /// The rule's name (`uniform`, `cfa`, `wat`, `frl`, `csl`, `class-beta`, `class-weight`).
    fn name(&self) -> &'static str;
    /// The plan of 0-based epoch `epoch`.
    fn plan(&mut self, epoch: usize) -> Result<ClassPlan>;
    /// The validation statistics [`ClassRule::observe_initial`] needs from the initial model,
    /// before the first epoch (FRL evaluates its starting model before epoch 1).
    fn needs_initial(&self) -> Needs {
        Needs::default()
    }
    /// What was measured on the initial model (only the validation statistics
    /// [`ClassRule::needs_initial`] asked for; `train_robust` is empty).
    fn observe_initial(&mut self, _stats: &ClassStats) -> Result<()> {
        Ok(())
    }
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
    /// The rule's current per-class state for the metrics line (`rule_state` in
    /// `metrics.jsonl`): by default [`ClassRule::state`]; rules whose state grows with the run
    /// (WAT's cost history) report what they currently decide from instead.
    fn snapshot(&self) -> Result<serde_json::Value> {
        self.state()
    }
}

/// The base objective a rule is applied to, as the rules see it: its name and what a rule can
/// require of it. Each objective describes itself (`Objective::base` in the trainer's objective
/// files, `Base::kind` in the toy), so that a new method needs no change here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Base {
    /// The method's name in messages (`pgd-at`, `trades`, ...).
    pub name: &'static str,
    /// Whether it trains on attacked inputs (so that a class budget ε_k means something).
    pub adversarial: bool,
    /// Whether it is TRADES (CE on x plus β·KL(p(x) ‖ p(x'))), the objective whose two terms
    /// WAT and FRL weigh per class.
    pub trades: bool,
}

impl Base {
    /// Natural training: no attack, no β.
    pub const NATURAL: Base = Base {
        name: "natural",
        adversarial: false,
        trades: false,
    };
    /// PGD-AT (Madry et al.): CE on x'.
    pub const PGD_AT: Base = Base::adversarial("pgd-at");
    /// TRADES: CE on x plus β·KL(p(x) ‖ p(x')).
    pub const TRADES: Base = Base {
        name: "trades",
        adversarial: true,
        trades: true,
    };
    /// FAT: CE on early-stopped x̃.
    pub const FAT: Base = Base::adversarial("fat");

    /// An adversarial objective other than TRADES.
    pub const fn adversarial(name: &'static str) -> Base {
        Base {
            name,
            adversarial: true,
            trades: false,
        }
    }

    pub fn name(self) -> &'static str {
        self.name
    }

    /// Whether the base trains on attacked inputs (so that a class budget ε_k means something).
    pub fn is_adversarial(self) -> bool {
        self.adversarial
    }
}

/// What every rule shares with the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RuleContext {
    /// The base objective the rule's plan acts on.
    pub base: Base,
    pub n_classes: usize,
    /// The training budget ε before any class-wise change.
    pub eps: f64,
    /// The objective's trade-off β, when it has one (TRADES); `None` for AT, FAT, natural.
    pub beta: Option<f64>,
    /// The training attack's absolute step at ε (FRL's remargin replaces it by max_k ε_k / 4).
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
        check("eps", self.eps, Bound::NonNegative)?;
        check("step_size", self.step_size, Bound::NonNegative)?;
        if let Some(b) = self.beta {
            check("beta", b, Bound::NonNegative)?;
        }
        Ok(())
    }

    /// β, or an error naming `field` when the objective has none.
    fn require_beta(&self, field: &str, rule: &str) -> Result<f64> {
        self.beta.ok_or_else(|| {
            invalid(
                field,
                rule,
                format!(
                    "an objective with a trade-off β (TRADES, MART, BAT), not {}",
                    self.base.name()
                ),
            )
        })
    }

    /// An error when the base is not TRADES, the base `rule`'s paper defines it on (`why` says
    /// what it needs from it).
    fn require_trades(&self, rule: &str, why: &str) -> Result<()> {
        if self.base.trades {
            return Ok(());
        }
        Err(invalid(
            "train.method",
            self.base.name(),
            format!("trades for the `{rule}` rule: {why}"),
        ))
    }

    /// An error when the base trains without an attack (`what` is the rule's per-class budget).
    fn require_adversarial(&self, rule: &str, what: &str) -> Result<()> {
        if self.base.is_adversarial() {
            return Ok(());
        }
        Err(invalid(
            "train.method",
            "natural",
            format!("an adversarial method for the `{rule}` rule: {what} needs a training attack"),
        ))
    }
}

/// The rule of a run and its settings, as written in a run configuration (`[rule]` with
/// `kind = "uniform" | "cfa" | "wat" | "frl" | "csl" | "class-beta" | "class-weight"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RuleConfig {
    /// The same ε and weights for every class (plain AT / TRADES / FAT / natural).
    #[default]
    Uniform,
    Cfa(CfaSettings),
    Wat(WatSettings),
    Frl(FrlSettings),
    Csl(CslSettings),
    ClassBeta(ClassBetaSettings),
    ClassWeight(ClassWeightSettings),
}

impl RuleConfig {
    pub fn name(&self) -> &'static str {
        match self {
            RuleConfig::Uniform => "uniform",
            RuleConfig::Cfa(_) => "cfa",
            RuleConfig::Wat(_) => "wat",
            RuleConfig::Frl(_) => "frl",
            RuleConfig::Csl(_) => "csl",
            RuleConfig::ClassBeta(_) => "class-beta",
            RuleConfig::ClassWeight(_) => "class-weight",
        }
    }

    /// Builds the rule; checks its settings and that it fits the objective (`ctx`).
    pub fn build(&self, ctx: RuleContext) -> Result<Box<dyn ClassRule>> {
        ctx.validate()?;
        Ok(match self {
            RuleConfig::Uniform => Box::new(uniform(ctx)),
            RuleConfig::Cfa(s) => Box::new(Cfa::new(*s, ctx)?),
            RuleConfig::Wat(s) => Box::new(Wat::new(*s, ctx)?),
            RuleConfig::Frl(s) => Box::new(Frl::new(*s, ctx)?),
            RuleConfig::Csl(s) => Box::new(Csl::new(*s, ctx)?),
            RuleConfig::ClassBeta(s) => Box::new(class_beta(s, ctx)?),
            RuleConfig::ClassWeight(s) => Box::new(class_weight(*s, ctx)?),
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
