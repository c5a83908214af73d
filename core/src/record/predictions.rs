//! `predictions/<report>.json`, the per-image decisions beside every report.

use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};

/// The version of [`PredictionsRecord`] written now.
pub const PREDICTIONS_SCHEMA: u32 = 1;

/// `predictions/<report>.json`: what an evaluation decided for each test image, in evaluation
/// order, written beside every report of `classwise train` and `classwise eval`
/// (`predictions/report.json` for `report.json`). Tian et al.'s homing matrix (their §6 and
/// Fig. 4b) follows single adversarial examples from one model to another, which the per-class
/// counts of a report cannot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PredictionsRecord {
    /// [`PREDICTIONS_SCHEMA`].
    pub schema: u32,
    /// The report these predictions belong to (a file name in the run directory).
    pub report: String,
    /// The attack as the report names it.
    pub attack: String,
    pub eps: f64,
    /// `clean-and-adversarial` or `adversarial-only`: how `robust` was counted.
    pub robust_counting: String,
    /// The true class of each image.
    pub labels: Vec<usize>,
    /// The prediction on each image's adversarial example.
    pub adversarial: Vec<usize>,
    /// Whether each image counts as robust (the report's robust accuracy is their mean).
    pub robust: Vec<bool>,
}

impl PredictionsRecord {
    /// Reads predictions from their JSON text and checks them ([`Self::check`]) for `k`
    /// classes; `what` names the file in errors.
    pub fn parse(text: &str, what: &str, k: usize) -> Result<Self> {
        let record: Self = super::parse_json(text, what, "per-image predictions")?;
        record.check(what, k)?;
        Ok(record)
    }

    /// Checks the version, that the three lists have one entry per image and that every class
    /// is below `k`. `what` names the file.
    pub fn check(&self, what: &str, k: usize) -> Result<()> {
        if self.schema != PREDICTIONS_SCHEMA {
            return Err(invalid(
                format!("{what}: schema"),
                self.schema,
                format!("{PREDICTIONS_SCHEMA}, the predictions schema this build reads"),
            ));
        }
        let n = self.labels.len();
        for (field, len) in [
            ("adversarial", self.adversarial.len()),
            ("robust", self.robust.len()),
        ] {
            if len != n {
                return Err(invalid(
                    format!("{what}: {field}"),
                    format!("{len} entries"),
                    format!("{n}, one per entry of labels"),
                ));
            }
        }
        for (field, list) in [("labels", &self.labels), ("adversarial", &self.adversarial)] {
            if let Some(c) = list.iter().find(|&&c| c >= k) {
                return Err(invalid(
                    format!("{what}: {field}"),
                    c,
                    format!("classes below {k}, the number of classes of the report"),
                ));
            }
        }
        Ok(())
    }
}
