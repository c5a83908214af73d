//! The protocol report, `eval-<model>-protocol-eps_<ε>.json`: the paper's final evaluation of
//! one model (a run's `[[eval.protocol]]`: natural accuracy, PGD, AutoAttack, as CFA §5.1, WAT
//! §5.1 and BAT §5.1 evaluate), written by `classwise eval --protocol` and read by `compare`.
//!
//! # Versions
//!
//! * Schema 1: reports without a `schema` field (2026-11-24 to 2026-11-28).
//! * Schema 2 ([`PROTOCOL_SCHEMA`]): adds `schema` (and the embedded AutoAttack reports theirs);
//!   every other field as in schema 1.

use serde::{Deserialize, Serialize};

use super::autoattack::AutoAttackReport;
use super::report::Report;
use super::{check_schema, first_schema, parse_json};
use crate::error::{Result, invalid};

/// The version of [`ProtocolReport`] written now.
pub const PROTOCOL_SCHEMA: u32 = 2;

/// One entry's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntryReport {
    /// E.g. `pgd-100 ce step 0.003 uniform start`, `autoattack standard (…)`, `natural`.
    pub label: String,
    pub eps: f64,
    pub eps_text: String,
    pub evaluation: Report,
    /// The class × attack table of an AutoAttack entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoattack: Option<AutoAttackReport>,
}

/// The whole protocol's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProtocolReport {
    /// [`PROTOCOL_SCHEMA`] when written; 1 for a report without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    pub n_samples: usize,
    pub class_names: Vec<String>,
    pub entries: Vec<EntryReport>,
}

impl ProtocolReport {
    /// Reads a protocol report from its JSON text and checks it ([`Self::checked`]); `what`
    /// names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        parse_json::<Self>(text, what, "a protocol report")?.checked(what)
    }

    /// Checks the version and every entry: its report ([`Report::checked`]) and AutoAttack
    /// table ([`AutoAttackReport::checked`]) on the protocol's classes and images.
    pub fn checked(mut self, what: &str) -> Result<Self> {
        check_schema(what, self.schema, PROTOCOL_SCHEMA, "protocol report")?;
        for (i, entry) in self.entries.iter_mut().enumerate() {
            let here = format!("{what}: entries[{i}]");
            entry.evaluation = entry
                .evaluation
                .clone()
                .checked(&format!("{here}.evaluation"))?;
            if let Some(aa) = entry.autoattack.take() {
                entry.autoattack = Some(aa.checked(&format!("{here}.autoattack"))?);
            }
            let e = &entry.evaluation;
            if e.class_names != self.class_names || e.n_samples != self.n_samples {
                return Err(invalid(
                    format!("{here}.evaluation"),
                    format!("{} images of {:?}", e.n_samples, e.class_names),
                    format!(
                        "the protocol's {} images of {:?}",
                        self.n_samples, self.class_names
                    ),
                ));
            }
        }
        Ok(self)
    }
}
