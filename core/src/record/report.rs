//! The class-wise report of one model under one attack: `report.json` (and `report-*.json`,
//! `eval-*.json`), written by the trainer and read by `compare`, the figures and the sweep
//! summaries, and embedded in AutoAttack's and the evaluation protocol's reports.
//!
//! One type, [`Report`], is both written and read. Every report names its version in `schema`
//! ([`REPORT_SCHEMA`]); [`Report::parse`] reads every version and refuses a newer one.
//!
//! # Versions
//!
//! * Schema 1: reports without a `schema` field (2026-11-22 to 2026-11-27). The first ones
//!   had no `robust_counting` (added 2026-11-23; until then every sample was counted robust
//!   only when correct clean and under attack, so it reads as
//!   [`RobustCounting::CleanAndAdversarial`]) and none had `precision` (added 2026-11-27;
//!   fp32 was the only arithmetic before, so it reads as [`Precision::Fp32`]). `cvc` and
//!   `steps_to_flip` are optional in every version.
//! * Schema 2 ([`REPORT_SCHEMA`]): adds `schema` and, for attacks that attack every image,
//!   `robust_other_counting` (the robust accuracy under the other counting, so that one
//!   evaluation serves both); every field of a schema-1 report is written.
//!
//! Of the two accuracy summaries only `per_class` and `overall` are read; the statistics
//! derived from them are computed again on reading
//! (`classwise_theory::metrics::ClassAccuracySummary`).

use classwise_theory::metrics::{
    ClassAccuracy, ClassAccuracySummary, ClassErrors, ConfusionMatrix,
};
use serde::{Deserialize, Serialize};

use super::first_schema;
use super::predictions::{PREDICTIONS_SCHEMA, PredictionsRecord};
use crate::error::{CoreError, Result, invalid};
use crate::eval::{Precision, RobustCounting};

/// The version of [`Report`] written now.
pub const REPORT_SCHEMA: u32 = 2;

/// The class-wise report of one model under one attack (CFA Table 1, WAT Tables 1-5, BAT
/// Table 1, Tian et al. §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`REPORT_SCHEMA`] when written; 1 for a report without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    pub attack: String,
    pub eps: f64,
    /// How robust samples were counted (see the [module docs](self) for reports without it).
    #[serde(default)]
    pub robust_counting: RobustCounting,
    pub n_samples: usize,
    pub class_names: Vec<String>,
    pub clean: ClassAccuracySummary,
    /// Robust accuracy under `robust_counting`.
    pub robust: ClassAccuracySummary,
    /// Robust accuracy under the other counting, from the same adversarial examples: written
    /// for attacks that attack every image (not AutoAttack, which attacks only the images
    /// classified correctly when clean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robust_other_counting: Option<Counted>,
    /// Mean robust accuracy of the worst 20% of classes (CFA App. C.1, its Tiny-ImageNet
    /// metric).
    pub robust_worst_20_percent: f64,
    /// Standard, boundary and robust error per class (FRL, BAT Table 1).
    pub errors: ClassErrors,
    /// Rows: true classes; columns: predictions on the adversarial examples (Tian et al.
    /// Fig. 2).
    pub confusion_under_attack: ConfusionMatrix,
    /// The class-wise variance of confidence of Tian et al. Def. 5.1 (their Fig. 3a, Table 2):
    /// per class, the mean over its test images of the variance of the softmax vector on the
    /// clean image (absent from AutoAttack's reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cvc: Option<Vec<f64>>,
    /// The attack steps each class needed (BAT §3, Fig. 2), for attacks that stop a sample at
    /// its first misclassification (`classwise eval --attack flip-steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_to_flip: Option<FlipSteps>,
    /// What the evaluation's sanity checks found (a randomised model, logits that depend on
    /// the batch size).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The arithmetic of the model's forward passes (see the [module docs](self) for reports
    /// without it).
    #[serde(default)]
    pub precision: Precision,
    /// What was decided for each test image; written beside the report as
    /// `predictions/<report>.json` ([`Report::predictions`]), not into it, so empty in a
    /// report read from a file.
    #[serde(skip)]
    pub per_image: PerImage,
}

/// Robust accuracy under a named counting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    pub robust_counting: RobustCounting,
    pub robust: ClassAccuracySummary,
}

/// Per test image, in evaluation order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerImage {
    pub labels: Vec<usize>,
    /// The prediction on the adversarial example.
    pub adversarial: Vec<usize>,
    /// Whether the image counts as robust under the evaluation's counting.
    pub robust: Vec<bool>,
}

/// Per class, how many ascent steps the attack needed to misclassify an image (BAT §3, the
/// "source-class" measure of Fig. 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipSteps {
    /// The attack's step count K.
    pub max_steps: usize,
    /// The mean over the class's images of the steps taken: 0 for an image misclassified at
    /// the random start, K for one never misclassified within K steps (so a lower bound of the
    /// mean when `flipped` < 1).
    pub mean: Vec<f64>,
    /// The fraction of the class's images misclassified within K steps.
    pub flipped: Vec<f64>,
}

impl FlipSteps {
    /// From each sample's steps taken, label and final misclassification, for `k` classes and
    /// an attack of `max` steps. A class without samples gets 0 for both.
    pub fn of(steps: &[usize], labels: &[usize], wrong: &[bool], k: usize, max: usize) -> Self {
        let mut sum = vec![0.0; k];
        let mut flipped = vec![0.0; k];
        let mut n = vec![0.0; k];
        for ((&s, &y), &w) in steps.iter().zip(labels).zip(wrong) {
            sum[y] += s as f64;
            flipped[y] += f64::from(u8::from(w));
            n[y] += 1.0;
        }
        let per = |v: Vec<f64>| {
            v.iter()
                .zip(&n)
                .map(|(x, n)| if *n > 0.0 { x / n } else { 0.0 })
                .collect()
        };
        FlipSteps {
            max_steps: max,
            mean: per(sum),
            flipped: per(flipped),
        }
    }
}

impl Report {
    /// Reads a report from its JSON text and checks it ([`Report::check`]); `what` names the
    /// file in errors. A report of a newer schema is refused.
    pub fn parse(text: &str, what: &str) -> Result<Report> {
        super::parse_json::<Report>(text, what, "a class-wise report")?.checked(what)
    }

    /// The report checked ([`Report::check`]), its worst 20 % derived again: what every reader
    /// of a report (alone or embedded in another record) goes through.
    pub fn checked(mut self, what: &str) -> Result<Report> {
        self.check(what)?;
        // Derived like the summaries' statistics: recomputed from the per-class accuracies, so
        // that a file cannot carry a worst 20 % that disagrees with them.
        self.robust_worst_20_percent =
            ClassAccuracy::from_values(self.robust.per_class.clone())?.worst_fraction_mean(0.2)?;
        Ok(self)
    }

    /// The report as pretty JSON text, in field order, ending with a newline: what the trainer
    /// writes.
    pub fn to_pretty(&self) -> Result<String> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| CoreError::File {
            what: self.attack.clone(),
            kind: "a class-wise report",
            message: e.to_string(),
        })?;
        text.push('\n');
        Ok(text)
    }

    /// The robust accuracy under `counting`: `robust` when the report counted so, the other
    /// counting's when the report has it, else `None`.
    pub fn robust_under(&self, counting: RobustCounting) -> Option<&ClassAccuracySummary> {
        if self.robust_counting == counting {
            return Some(&self.robust);
        }
        let other = self.robust_other_counting.as_ref()?;
        (other.robust_counting == counting).then_some(&other.robust)
    }

    /// The per-image record written as `predictions/<report>`, for the report file `report`
    /// (Tian et al. §6, the homing matrix of their Fig. 4b, follows single images).
    pub fn predictions(&self, report: &str) -> PredictionsRecord {
        PredictionsRecord {
            schema: PREDICTIONS_SCHEMA,
            report: report.to_owned(),
            attack: self.attack.clone(),
            eps: self.eps,
            robust_counting: self.robust_counting.name().to_owned(),
            labels: self.per_image.labels.clone(),
            adversarial: self.per_image.adversarial.clone(),
            robust: self.per_image.robust.clone(),
        }
    }

    /// Checks the version, that every per-class list has one entry per class name, that the
    /// accuracies lie in [0, 1] and that the confusion counts are a square of that size. `what`
    /// names the file.
    pub fn check(&self, what: &str) -> Result<()> {
        super::check_schema(what, self.schema, REPORT_SCHEMA, "report")?;
        let k = self.class_names.len();
        if k == 0 {
            return Err(invalid(
                format!("{what}: class_names"),
                "[]",
                "at least one class",
            ));
        }
        self.check_lengths(what, k)?;
        let counted: u64 = self.errors.totals.iter().sum();
        if counted != self.n_samples as u64 {
            return Err(invalid(
                format!("{what}: errors.totals"),
                format!("{counted} images"),
                format!("n_samples = {}", self.n_samples),
            ));
        }
        if !(0.0..=1.0).contains(&self.robust_worst_20_percent) {
            return Err(invalid(
                format!("{what}: robust_worst_20_percent"),
                self.robust_worst_20_percent,
                "an accuracy in [0, 1]",
            ));
        }
        self.check_optional(what, k)
    }

    /// Every per-class list of the summaries, the errors and the confusion matrix has `k`
    /// entries (the summaries' values are checked when they are read).
    fn check_lengths(&self, what: &str, k: usize) -> Result<()> {
        let e = &self.errors;
        let lengths = [
            ("clean.per_class", self.clean.per_class.len()),
            ("robust.per_class", self.robust.per_class.len()),
            ("errors.standard", e.standard.len()),
            ("errors.boundary", e.boundary.len()),
            ("errors.robust", e.robust.len()),
            ("errors.totals", e.totals.len()),
            (
                "errors.clean_wrong_robust_correct",
                e.clean_wrong_robust_correct.len(),
            ),
            (
                "confusion_under_attack.n_classes",
                self.confusion_under_attack.n_classes(),
            ),
        ];
        for (field, len) in lengths {
            if len != k {
                return Err(invalid(
                    format!("{what}: {field}"),
                    format!("{len} entries"),
                    format!("{k}, one per class name"),
                ));
            }
        }
        Ok(())
    }

    /// `cvc`, `steps_to_flip` and the other counting's accuracies, when present: one finite
    /// value ≥ 0 per class; the other counting is not the report's own.
    fn check_optional(&self, what: &str, k: usize) -> Result<()> {
        let other = self.robust_other_counting.as_ref();
        if let Some(o) = other
            && o.robust_counting == self.robust_counting
        {
            return Err(invalid(
                format!("{what}: robust_other_counting.robust_counting"),
                o.robust_counting,
                format!(
                    "the counting other than the report's ({})",
                    self.robust_counting
                ),
            ));
        }
        let flips = self.steps_to_flip.as_ref();
        let lists = [
            (
                "robust_other_counting.robust.per_class",
                other.map(|o| &o.robust.per_class),
            ),
            ("cvc", self.cvc.as_ref()),
            ("steps_to_flip.mean", flips.map(|s| &s.mean)),
            ("steps_to_flip.flipped", flips.map(|s| &s.flipped)),
        ];
        for (field, list) in lists {
            let Some(v) = list else { continue };
            if v.len() != k {
                return Err(invalid(
                    format!("{what}: {field}"),
                    format!("{} entries", v.len()),
                    format!("{k}, one per class name"),
                ));
            }
            if let Some(x) = v.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
                return Err(invalid(format!("{what}: {field}"), x, "finite values >= 0"));
            }
        }
        Ok(())
    }
}

/// The final reports a run writes, by the model they evaluate: `last` (the final model), `best`
/// (the selected one), `ema` and `fawa` (the weight averages of the last epoch) and their
/// selections. The same names select a model in `classwise eval --checkpoint`.
pub const REPORT_FILES: [(&str, &str); 6] = [
    ("last", "report.json"),
    ("best", "report-best.json"),
    ("ema", "report-ema.json"),
    ("best-ema", "report-best-ema.json"),
    ("fawa", "report-fawa.json"),
    ("best-fawa", "report-best-fawa.json"),
];
