//! AutoAttack's report, `eval-<model>-autoattack-….json`, written by `classwise eval --attack
//! autoattack` and `classwise bench --autoattack` (its `classwise.json`), read by `compare`:
//! the robust accuracy per class after each attack of the cascade (the class × attack table of
//! the papers' AutoAttack evaluations, CFA Table 1, WAT Table 2) and the final class-wise
//! [`Report`].
//!
//! # Versions
//!
//! * Schema 1: reports without a `schema` field (2026-11-24 to 2026-11-28).
//! * Schema 2 ([`AUTOATTACK_SCHEMA`]): adds `schema`; every other field as in schema 1.

use serde::{Deserialize, Serialize};

use super::report::Report;
use super::{check_fractions, check_schema, first_schema, parse_json};
use crate::error::Result;

/// The version of [`AutoAttackReport`] written now.
pub const AUTOATTACK_SCHEMA: u32 = 2;

/// Robust accuracy after one attack of the cascade.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    pub attack: String,
    /// The attack with its settings.
    pub settings: String,
    /// Points it attacked (those still robust before it).
    pub attacked: usize,
    /// Points it broke.
    pub broken: usize,
    pub seconds: f64,
    /// Robust accuracy per class after this attack.
    pub robust_per_class: Vec<f64>,
    /// Robust accuracy over all points after this attack.
    pub robust: f64,
}

/// AutoAttack's class-wise result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoAttackReport {
    /// [`AUTOATTACK_SCHEMA`] when written; 1 for a report without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// `standard`, `plus`, `rand` or `custom`.
    pub version: String,
    pub eps: f64,
    pub batch_size: usize,
    pub seed: u64,
    /// Clean accuracy per class (the table's first column).
    pub clean_per_class: Vec<f64>,
    /// The class × attack table, one entry per attack in cascade order.
    pub steps: Vec<StepReport>,
    /// The final class-wise report (robust = survived every attack).
    pub evaluation: Report,
    /// Seconds of the whole evaluation (clean pass included; over all sessions if resumed).
    pub seconds: f64,
    pub seconds_per_image: f64,
    /// Whether the evaluation continued a saved state.
    pub resumed: bool,
}

impl AutoAttackReport {
    /// Reads an AutoAttack report from its JSON text and checks it ([`Self::checked`]); `what`
    /// names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        parse_json::<Self>(text, what, "an AutoAttack report")?.checked(what)
    }

    /// Checks the version, the final report ([`Report::checked`]) and that the table has one
    /// accuracy in [0, 1] per class in every column.
    pub fn checked(mut self, what: &str) -> Result<Self> {
        check_schema(what, self.schema, AUTOATTACK_SCHEMA, "AutoAttack report")?;
        self.evaluation = self.evaluation.checked(&format!("{what}: evaluation"))?;
        let k = self.evaluation.class_names.len();
        check_fractions(what, "clean_per_class", &self.clean_per_class, k)?;
        for (i, step) in self.steps.iter().enumerate() {
            let field = format!("steps[{i}].robust_per_class");
            check_fractions(what, &field, &step.robust_per_class, k)?;
        }
        Ok(self)
    }
}
