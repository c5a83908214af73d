//! Which attacks AutoAttack runs, with which settings: the attacks by the reference's names
//! ([`AaAttack`]), its versions ([`Version`], `set_version` in
//! `fra31/auto-attack:autoattack/autoattack.py`) and a run's choice of them
//! ([`AutoAttackSpec`]), parsed, validated and turned into the cascade's steps.

use serde::{Deserialize, Serialize};

use super::step::Step;
use crate::attack::{Apgd, Attack, Fab, Square};
use crate::error::{Result, invalid};

/// One of AutoAttack's attacks, by the reference's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AaAttack {
    ApgdCe,
    ApgdDlr,
    ApgdT,
    Fab,
    FabT,
    Square,
}

impl AaAttack {
    pub const ALL: [AaAttack; 6] = [
        AaAttack::ApgdCe,
        AaAttack::ApgdDlr,
        AaAttack::ApgdT,
        AaAttack::Fab,
        AaAttack::FabT,
        AaAttack::Square,
    ];

    /// `apgd-ce`, `apgd-dlr`, `apgd-t`, `fab`, `fab-t`, `square`.
    pub fn name(self) -> &'static str {
        match self {
            AaAttack::ApgdCe => "apgd-ce",
            AaAttack::ApgdDlr => "apgd-dlr",
            AaAttack::ApgdT => "apgd-t",
            AaAttack::Fab => "fab",
            AaAttack::FabT => "fab-t",
            AaAttack::Square => "square",
        }
    }

    /// The attack with the settings `version` gives it (a custom list: `standard`'s).
    pub fn build(self, version: Option<Version>) -> Box<dyn Attack> {
        let restarts = if version == Some(Version::Plus) { 5 } else { 1 };
        let eot_iter = if version == Some(Version::Rand) {
            20
        } else {
            1
        };
        match self {
            AaAttack::ApgdCe => Box::new(Apgd {
                restarts,
                eot_iter,
                ..Apgd::ce()
            }),
            AaAttack::ApgdDlr => Box::new(Apgd {
                restarts,
                eot_iter,
                ..Apgd::dlr()
            }),
            AaAttack::ApgdT => Box::new(Apgd {
                eot_iter,
                ..Apgd::targeted()
            }),
            AaAttack::Fab => Box::new(Fab {
                restarts,
                ..Fab::untargeted()
            }),
            AaAttack::FabT => Box::new(Fab::targeted()),
            AaAttack::Square => Box::new(Square::autoattack()),
        }
    }
}

impl std::str::FromStr for AaAttack {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
                format!("unknown attack `{s}`: expected one of {}", names.join(", "))
            })
    }
}

/// AutoAttack's versions (`set_version` in `fra31/auto-attack:autoattack/autoattack.py`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Version {
    #[default]
    Standard,
    Plus,
    Rand,
}

impl Version {
    pub const ALL: [Version; 3] = [Version::Standard, Version::Plus, Version::Rand];

    pub fn name(self) -> &'static str {
        match self {
            Version::Standard => "standard",
            Version::Plus => "plus",
            Version::Rand => "rand",
        }
    }

    /// The attacks it runs, in order.
    pub fn attacks(self) -> Vec<AaAttack> {
        use AaAttack::*;
        match self {
            Version::Standard => vec![ApgdCe, ApgdT, FabT, Square],
            Version::Plus => vec![ApgdCe, ApgdDlr, Fab, Square, ApgdT, FabT],
            Version::Rand => vec![ApgdCe, ApgdDlr],
        }
    }
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown version `{s}`: expected standard, plus or rand"))
    }
}

/// Which attacks AutoAttack runs: a version, or a custom list (with `standard`'s settings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoAttackSpec {
    #[serde(default)]
    pub version: Version,
    /// A custom list of attacks, run in this order, instead of the version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacks: Option<Vec<AaAttack>>,
}

impl AutoAttackSpec {
    pub fn version(version: Version) -> Self {
        AutoAttackSpec {
            version,
            attacks: None,
        }
    }

    /// Checks a custom list: not empty, no attack twice.
    pub fn validate(&self) -> Result<()> {
        if let Some(list) = &self.attacks {
            if list.is_empty() {
                return Err(invalid("attacks", "[]", "at least one attack"));
            }
            for (i, a) in list.iter().enumerate() {
                if list[..i].contains(a) {
                    return Err(invalid("attacks", a.name(), "each attack at most once"));
                }
            }
        }
        Ok(())
    }

    /// The attacks in order.
    pub fn attacks(&self) -> Vec<AaAttack> {
        self.attacks
            .clone()
            .unwrap_or_else(|| self.version.attacks())
    }

    /// `standard`, `plus`, `rand` or `custom`.
    pub fn label(&self) -> &'static str {
        if self.attacks.is_some() {
            "custom"
        } else {
            self.version.name()
        }
    }

    /// The cascade's steps with their settings.
    pub fn steps(&self) -> Vec<Step> {
        let version = self.attacks.is_none().then_some(self.version);
        self.attacks()
            .into_iter()
            .map(|a| Step {
                name: a.name().to_string(),
                attack: a.build(version),
            })
            .collect()
    }

    /// Whether the model is expected to be randomised (the `rand` version skips that check).
    pub fn randomized(&self) -> bool {
        self.attacks.is_none() && self.version == Version::Rand
    }

    /// AutoAttack's `check_n_classes` for a model with `k` classes: the DLR losses need 3
    /// (untargeted) or 4 (targeted) classes (the attacks refuse fewer), and a targeted attack
    /// has at most k − 1 targets (the extra ones are skipped).
    pub fn class_warnings(&self, k: usize) -> Vec<String> {
        let mut out = Vec::new();
        for a in self.attacks() {
            let min = match a {
                AaAttack::ApgdDlr => 3,
                AaAttack::ApgdT => 4,
                _ => 2,
            };
            if k < min {
                out.push(format!(
                    "{}: needs at least {min} classes, the model has {k}",
                    a.name()
                ));
            }
            if matches!(a, AaAttack::ApgdT | AaAttack::FabT) && k < 10 {
                out.push(format!(
                    "{}: 9 target classes but only {} wrong classes; the extra targets are skipped",
                    a.name(),
                    k.saturating_sub(1)
                ));
            }
        }
        out
    }

    /// E.g. `autoattack standard (apgd-ce, apgd-t, fab-t, square)`.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.attacks().iter().map(|a| a.name()).collect();
        format!("autoattack {} ({})", self.label(), names.join(", "))
    }
}
