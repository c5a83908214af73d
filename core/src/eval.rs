//! How an evaluation was made, as its report names it: which samples count as robust, and the
//! arithmetic of the model's forward passes. The trainer evaluates; the figures and `compare`
//! read the names back from the reports.

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, invalid};

/// When a sample counts as robust.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RobustCounting {
    /// Correct on the clean input **and** on its adversarial example, as AutoAttack counts
    /// (`fra31/auto-attack:autoattack/autoattack.py` attacks only the points classified
    /// correctly when clean). Robust accuracy never exceeds clean accuracy, so boundary errors
    /// are never negative.
    #[default]
    CleanAndAdversarial,
    /// Correct on the adversarial example, whatever the clean prediction, as the reference
    /// training codes evaluate (`PKU-ML/CFA`, `boqili/WAT`, `hannxu123/fair_robust`): a clean
    /// error that the attack happens to fix counts as robust. For parity runs with them.
    AdversarialOnly,
}

impl RobustCounting {
    /// Both countings.
    pub const ALL: [RobustCounting; 2] = [
        RobustCounting::CleanAndAdversarial,
        RobustCounting::AdversarialOnly,
    ];

    /// A sentence for reports.
    pub fn describe(self) -> &'static str {
        match self {
            RobustCounting::CleanAndAdversarial => {
                "robust = correct on the clean input and on its adversarial example \
                 (AutoAttack's counting)"
            }
            RobustCounting::AdversarialOnly => {
                "robust = correct on the adversarial example, whatever the clean prediction \
                 (the reference codes' counting)"
            }
        }
    }

    /// The short name used in reports, file names and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RobustCounting::CleanAndAdversarial => "clean-and-adversarial",
            RobustCounting::AdversarialOnly => "adversarial-only",
        }
    }
}

impl std::fmt::Display for RobustCounting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RobustCounting {
    type Err = String;

    /// Parses [`RobustCounting::name`].
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|c| c.name()).collect();
                format!("expected one of {}", names.join(", "))
            })
    }
}

/// The arithmetic of a model's forward passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in float32 (the papers' setting).
    #[default]
    Fp32,
    /// bfloat16 convolutions and linear layers, fp32 weights, losses and attacks.
    Bf16,
}

impl Precision {
    pub const ALL: [Precision; 2] = [Precision::Fp32, Precision::Bf16];

    /// The config and command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Precision {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, CoreError> {
        Precision::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| invalid("precision", s, "\"fp32\" or \"bf16\""))
    }
}
