//! A toy run's configuration: the methods, their presets (with the papers' settings) and the
//! validation of every field.

use std::fmt;
use std::str::FromStr;

use classwise_core::average::{Averager, Averaging, EmaSettings, FawaGate, FawaSettings};
use classwise_core::rule::{CfaSettings, CslSettings, FrlSettings, WatSettings};
use classwise_core::{RuleConfig, RuleContext};
use classwise_theory::calibration::FawaComparison;
use serde::{Deserialize, Serialize};

use super::attack::PgdConfig;
use super::data::ToyData;
use super::loss::Base;
use crate::error::{Bound, Result, ToyError, check, require, require_count};

/// The methods of the CLI (`natural|at|trades|fat|cfa|cfa-at|cfa-trades|cfa-fat|wat|frl|csl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    Natural,
    At,
    Trades,
    Fat,
    /// CFA (CCM, CCR with TRADES, FAWA) on the given base; `cfa` alone means
    /// [`CfaBase::Trades`], the paper's headline "TRADES + CFA".
    Cfa(CfaBase),
    /// WAT on TRADES (η = 0.1).
    Wat,
    /// FRL-RWRM on TRADES.
    Frl,
    /// CSL (WAT's cost-sensitive baseline, a reconstruction) on TRADES.
    Csl,
}

/// The base a CFA run calibrates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CfaBase {
    At,
    Trades,
    Fat,
}

/// The strings [`Method::from_str`] accepts.
pub const METHODS: &[&str] = &[
    "natural",
    "at",
    "trades",
    "fat",
    "cfa",
    "cfa-at",
    "cfa-trades",
    "cfa-fat",
    "wat",
    "frl",
    "csl",
];

/// An unknown method name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown multiclass method `{0}`; expected one of natural, at, trades, fat, cfa, cfa-at, cfa-trades, cfa-fat, wat, frl, csl"
)]
pub struct ParseMethodError(pub String);

impl FromStr for Method {
    type Err = ParseMethodError;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "natural" => Method::Natural,
            "at" | "pgd-at" => Method::At,
            "trades" => Method::Trades,
            "fat" => Method::Fat,
            "cfa" | "cfa-trades" => Method::Cfa(CfaBase::Trades),
            "cfa-at" => Method::Cfa(CfaBase::At),
            "cfa-fat" => Method::Cfa(CfaBase::Fat),
            "wat" => Method::Wat,
            "frl" => Method::Frl,
            "csl" => Method::Csl,
            _ => return Err(ParseMethodError(s.to_string())),
        })
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Natural => "natural",
            Method::At => "at",
            Method::Trades => "trades",
            Method::Fat => "fat",
            Method::Cfa(CfaBase::At) => "cfa-at",
            Method::Cfa(CfaBase::Trades) => "cfa-trades",
            Method::Cfa(CfaBase::Fat) => "cfa-fat",
            Method::Wat => "wat",
            Method::Frl => "frl",
            Method::Csl => "csl",
        })
    }
}

/// Everything a run needs. Build one with [`RunConfig::preset`] and adjust fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub data: ToyData,
    pub seed: u64,
    pub epochs: usize,
    /// Initial learning rate.
    pub lr: f64,
    /// 0-based epochs at which the learning rate is multiplied by 0.1.
    pub lr_milestones: Vec<usize>,
    pub momentum: f64,
    pub weight_decay: f64,
    pub batch_size: usize,
    /// Weights start as `init_scale`·N(0, 1), biases 0.
    pub init_scale: f64,
    /// The threat model's ε (evaluation, and training before any class-wise calibration).
    pub epsilon: f64,
    /// Training attack (step size not scaled per class, as in `PKU-ML/CFA:attack.py`).
    pub attack: PgdConfig,
    /// The TRADES KL attack of the validation costs (WAT; `validate` in
    /// `boqili/WAT:worst_class_adversarial_train.py`).
    pub cost_attack: PgdConfig,
    /// β of the validation TRADES cost (WAT's costs and its model-selection rule).
    pub cost_beta: f64,
    pub base: Base,
    /// The class-wise rule ([`classwise_core::rule`]), in the context of `base`, `epsilon` and
    /// `attack.step_size` ([`RunConfig::rule_context`]).
    pub rule: RuleConfig,
    /// Fairness-aware weight averaging (CFA, [`classwise_core::average`]), decided after each
    /// epoch from the class-wise validation robust accuracy at ε; `None` disables it.
    pub fawa: Option<FawaSettings>,
    /// Plain EMA decay, from epoch 0 (a control for FAWA: averaging without the fairness gate);
    /// `None` disables it.
    pub ema_alpha: Option<f64>,
}

/// Epochs of the presets.
pub const PRESET_EPOCHS: usize = 40;

impl RunConfig {
    /// A run configuration from a JSON file (the `config` field of a report `toy multiclass`
    /// wrote), checked.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let failed = |reason: String| ToyError::File {
            path: path.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
        let config: RunConfig = serde_json::from_str(&text)
            .map_err(|e| failed(format!("not a toy run configuration: {e}")))?;
        config.validate()?;
        Ok(config)
    }
}

impl RunConfig {
    /// The preset of a method on the `"default"` toy data, seed 0. Common settings: 40 epochs,
    /// lr 0.05 (×0.1 at epochs 20 and 30, CFA's 50%/75% schedule), momentum 0.9, weight decay
    /// 5e-4, batch 64, ε = 0.3, PGD-10 with step ε/4, β = 6.
    ///
    /// Method-specific settings: CFA's warm-up `begin` = 2 (10 of 200 epochs in the reference
    /// code, i.e. 5%) and FAWA with α = 0.85, start at epoch 10 (50 of 200), δ = 0.45 (the
    /// paper's δ = 0.2 sits a little below CIFAR-10's worst-class robust accuracy; on this toy
    /// the worst class reaches about 0.5 on validation, so 0.45 plays that role); WAT η = 0.1;
    /// FRL-RWRM with τ = α₁ = 0.05, α₂ = 0.2, FRL weights from epoch 10 (the plain TRADES epochs
    /// before stand in for FRL's pretrained start); CSL with γ = 0.05 (WAT's CIFAR-10 value).
    pub fn preset(method: Method) -> Self {
        Self::preset_with_epochs(method, PRESET_EPOCHS)
    }

    /// [`RunConfig::preset`] trained for `epochs` instead of [`PRESET_EPOCHS`], with every
    /// epoch-relative setting scaled with it: learning-rate drops at 1/2 and 3/4, FAWA and FRL
    /// from 1/4, FRL's α₁ halving every `epochs`. For short runs (tests, quick figures).
    pub fn preset_with_epochs(method: Method, epochs: usize) -> Self {
        let epsilon = 0.3;
        let trades = Base::Trades { beta: 6.0 };
        let (base, rule) = match method {
            Method::Natural => (Base::Natural, RuleConfig::Uniform),
            Method::At => (Base::PgdAt, RuleConfig::Uniform),
            Method::Trades => (trades, RuleConfig::Uniform),
            Method::Fat => (Base::Fat { tau: 3 }, RuleConfig::Uniform),
            Method::Cfa(b) => {
                let base = match b {
                    CfaBase::At => Base::PgdAt,
                    CfaBase::Trades => trades,
                    CfaBase::Fat => Base::Fat { tau: 3 },
                };
                (base, RuleConfig::Cfa(cfa_paper_settings(&base, 2)))
            }
            Method::Wat => (trades, RuleConfig::Wat(WatSettings::new(0.1))),
            Method::Csl => (trades, RuleConfig::Csl(CslSettings { gamma: 0.05 })),
            Method::Frl => (
                trades,
                RuleConfig::Frl(FrlSettings::reweight_remargin(epochs / 4, epochs)),
            ),
        };
        let fawa = matches!(method, Method::Cfa(_)).then_some(FawaSettings {
            alpha: 0.85,
            delta: 0.45,
            start_epoch: epochs / 4,
            comparison: FawaComparison::AtLeast,
            gate: FawaGate::WorstClass,
        });
        let attack = PgdConfig {
            steps: 10,
            step_size: epsilon / 4.0,
        };
        Self {
            data: ToyData::preset("default").unwrap_or_else(default_data),
            seed: 0,
            epochs,
            lr: 0.05,
            lr_milestones: vec![epochs / 2, 3 * epochs / 4],
            momentum: 0.9,
            weight_decay: 5e-4,
            batch_size: 64,
            init_scale: 0.01,
            epsilon,
            attack,
            cost_attack: attack,
            cost_beta: 6.0,
            base,
            rule,
            fawa,
            ema_alpha: Some(0.85),
        }
    }

    /// [`RunConfig::preset`] from a method name.
    pub fn preset_named(method: &str) -> std::result::Result<Self, ParseMethodError> {
        Ok(Self::preset(method.parse()?))
    }

    /// Learning rate of 0-based `epoch`.
    pub fn lr_at(&self, epoch: usize) -> f64 {
        let drops = self.lr_milestones.iter().filter(|&&m| epoch >= m).count();
        self.lr * 0.1f64.powi(i32::try_from(drops).unwrap_or(i32::MAX))
    }

    /// Checks every field; errors name the field.
    pub fn validate(&self) -> Result<()> {
        self.data.validate()?;
        require_count("epochs", self.epochs, 1)?;
        check("lr", self.lr, Bound::Positive)?;
        require(
            "momentum",
            self.momentum,
            (0.0..1.0).contains(&self.momentum),
            "in [0, 1)",
        )?;
        check("weight_decay", self.weight_decay, Bound::NonNegative)?;
        require_count("batch_size", self.batch_size, 1)?;
        check("init_scale", self.init_scale, Bound::NonNegative)?;
        check("epsilon", self.epsilon, Bound::NonNegative)?;
        self.attack.validate("attack.step_size")?;
        self.cost_attack.validate("cost_attack.step_size")?;
        check("cost_beta", self.cost_beta, Bound::NonNegative)?;
        self.base.validate()?;
        // Building the rule checks its settings and that it fits the base.
        // The toy's name for the base is `base` (the trainer's is `train.method`).
        self.rule.build(self.rule_context()).map_err(|e| match e {
            classwise_core::CoreError::Invalid {
                field,
                value,
                expected,
            } if field == "train.method" => classwise_core::CoreError::Invalid {
                field: "base".to_owned(),
                value,
                expected,
            },
            other => other,
        })?;
        if let Some(f) = self.fawa {
            Averaging::Fawa(f).validate()?;
        }
        if let Some(a) = self.ema_alpha {
            check("ema_alpha", a, Bound::Unit)?;
        }
        Ok(())
    }

    /// What the class-wise rule shares with the run: K, the plain ε, the TRADES β (none for the
    /// other bases) and the training attack's step.
    pub fn rule_context(&self) -> RuleContext {
        RuleContext {
            base: self.base.kind(),
            n_classes: self.data.n_classes,
            eps: self.epsilon,
            beta: self.base.trades_beta(),
            step_size: self.attack.step_size,
        }
    }

    /// The FAWA and EMA deciders of a run (either may be off).
    pub(crate) fn averagers(&self) -> Result<(Option<Averager>, Option<Averager>)> {
        let fawa = self
            .fawa
            .map(|f| Averager::new(Averaging::Fawa(f)))
            .transpose()?;
        let ema = self
            .ema_alpha
            .map(|alpha| {
                Averager::new(Averaging::Ema(EmaSettings {
                    alpha,
                    start_epoch: 0,
                }))
            })
            .transpose()?;
        Ok((fawa, ema))
    }
}

/// CFA's settings from the paper for a run on `base` (CFA §5.1): CCM with λ₁ = 0.5 on PGD-AT
/// (and natural training), 0.7 on FAT; λ₁ = 0.3 with CCR (λ₂ = 0.5) on TRADES; calibrated from
/// 0-based epoch `begin`.
pub fn cfa_paper_settings(base: &Base, begin: usize) -> CfaSettings {
    let lambda1 = match base {
        Base::Fat { .. } => 0.7,
        Base::Trades { .. } | Base::PgdAt | Base::Natural => 0.5,
    };
    CfaSettings::paper(lambda1, base.trades_beta().is_some(), begin)
}

fn default_data() -> ToyData {
    // Unreachable: "default" is a preset name. Kept so that the preset never panics.
    ToyData {
        n_classes: 2,
        block: 1,
        robust_scale: 1.0,
        eta: 0.5,
        reliability: vec![0.9, 0.8],
        noise: vec![1.0, 1.0],
        n_train: 100,
        n_val: 50,
        n_test: 100,
    }
}
