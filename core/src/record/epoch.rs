//! The records of a run's `metrics.jsonl`: one JSON line per epoch, written by the trainer
//! (`trainer/src/run/log.rs`) and read back by the figures (`figures/src/run/log.rs`).
//!
//! Every line names its version in `schema` ([`METRICS_SCHEMA`]). [`EpochRecord::parse`] reads
//! the current schema and every older one, converting older lines to the current records, and
//! refuses a newer schema instead of misreading it.
//!
//! # Versions
//!
//! * Schema 1: lines without a `schema` field. They were written while the trainer had one
//!   class-wise rule, the uniform plan of the baselines, and a plan of ε_k, β_k and one loss
//!   weight w_k per class (`{"eps", "beta", "weight"}`) that multiplied the whole per-sample
//!   loss. The line grew during that version: `ema_test` came with the weight average, and
//!   `train_seconds`, `train_images_per_second`, `eval_seconds` and `eps_warmup` replaced the
//!   first lines' `images_per_second`.
//! * Schema 2: adds `schema`, `rule`, `fawa_test` and `averaging`; the plan is a [`ClassPlan`]
//!   (separate weights of the natural and the boundary term, an optional attack step). Later
//!   schema-2 lines add the optional `rule_state`.
//! * Schema 3 ([`METRICS_SCHEMA`]): adds the optional `train_attack_steps` (per class, the mean
//!   steps of an early-stopped training attack, BAT Fig. 2b) and `train_confusion` (the
//!   confusion counts of the training inputs, BAT Fig. 3, written when `[train]
//!   log_confusion` asks for them).
//!
//! A schema-2 line reads as a schema-3 record without the two new fields: schema 2 never
//! logged them.
//!
//! A schema-1 line is converted as follows: `rule` is `uniform` (the only rule then); the plan
//! keeps ε_k and β_k and its w_k becomes both the natural and the boundary weight (a factor of
//! the whole loss is a factor of each term), with the attack's own step; `fawa_test` is absent
//! (there was no FAWA); `averaging` is empty (the decisions of the weight average were not
//! logged, even when the run had one); timings the line lacks are `None`.

use classwise_theory::calibration::AverageAction;
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result, invalid};
use crate::plan::ClassPlan;

/// The version of the records written now, in every line as `schema`. Lines without `schema`
/// are version 1 (see the [module docs](self)).
pub const METRICS_SCHEMA: u32 = 3;

/// The versions [`EpochRecord::parse`] reads.
pub const READABLE_SCHEMAS: [u32; 3] = [1, 2, 3];

/// Class-wise accuracies of one split (validation, test subset) at one epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitRecord {
    /// Clean accuracy per class.
    pub clean: Vec<f64>,
    /// Robust accuracy per class (under the evaluation attack).
    pub robust: Vec<f64>,
    /// Clean accuracy over all samples (the class mean when the split was not counted whole).
    pub clean_avg: f64,
    /// Robust accuracy over all samples (the class mean when the split was not counted whole).
    pub robust_avg: f64,
    /// The worst class's robust accuracy.
    pub robust_worst: f64,
    /// The worst class.
    pub robust_worst_class: usize,
    /// The coefficient of variation of the class-wise robust accuracy (as a fraction²).
    pub robust_cv: f64,
    /// The largest difference between two classes' robust accuracies.
    pub robust_mcd: f64,
}

impl SplitRecord {
    /// The checkpoint score: average + worst-class robust accuracy (CFA §5.1, "Metrics").
    pub fn score(&self) -> f64 {
        self.robust_avg + self.robust_worst
    }
}

/// What a weight average (`[ema]`, `[fawa]`) did after an epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AveragingRecord {
    /// `ema` or `fawa`.
    pub name: String,
    /// `Keep`, `Copy` or `{"Average": {"alpha": α}}`.
    pub action: AverageAction,
    /// FAWA's gate value (the worst class's validation robust accuracy, or the worst-fraction
    /// mean) compared with δ.
    pub gate_value: Option<f64>,
    /// Epochs that changed the average so far.
    pub updates: usize,
}

/// One line of `metrics.jsonl`. Read lines with [`EpochRecord::parse`] (which checks and
/// converts the schema) and write them with [`EpochRecord::to_line`] (which refuses numbers
/// JSON cannot hold).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochRecord {
    /// [`METRICS_SCHEMA`]; also for records [`EpochRecord::parse`] converted from an older
    /// line ([`schema_of`] tells a line's own version).
    pub schema: u32,
    /// 0-based.
    pub epoch: usize,
    /// The class-wise rule (`uniform`, `cfa`, …) whose plan is below.
    pub rule: String,
    pub lr: f64,
    /// The mean training loss of the epoch.
    pub train_loss: f64,
    /// t_k: class k's robust accuracy on the adversarial examples trained on, counted during
    /// the epoch (CFA §4.1).
    pub train_robust: Vec<f64>,
    /// Per class: the mean number of ascent steps the training attack took on the class's
    /// training images, for the early-stopped attacks (FAT, BAT) whose count varies per
    /// sample (BAT Fig. 2b, "the average number of attack steps of source-class"); absent for
    /// the other methods and before schema 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_attack_steps: Option<Vec<f64>>,
    /// The confusion counts of the training inputs the epoch trained on (x' for the adversarial
    /// methods; rows true classes, columns the predictions of the loss forward, before each
    /// update; BAT Fig. 3): its diagonal over its row sums is `train_robust`. Written only when
    /// `[train] log_confusion` is set (K² numbers per line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_confusion: Option<Vec<Vec<u64>>>,
    /// The epoch's plan (at the full ε during an ε warm-up).
    pub plan: ClassPlan,
    /// The class-wise rule's state after this epoch's observation
    /// (`ClassRule::snapshot`: CFA's t_k, WAT's Hedge weights and last costs, FRL's
    /// multipliers, CSL's weights); absent for the stateless rules and in older lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_state: Option<serde_json::Value>,
    /// The validation split, when evaluated this epoch.
    pub val: Option<SplitRecord>,
    /// The test subset, when evaluated this epoch.
    pub test: Option<SplitRecord>,
    /// The weight-averaged model (`[ema]`) on the test subset, as CFA's code logs it
    /// (`PKU-ML/CFA:train.py`).
    pub ema_test: Option<SplitRecord>,
    /// The FAWA model (`[fawa]`) on the test subset, once it holds weights.
    pub fawa_test: Option<SplitRecord>,
    /// The decisions of the averages after this epoch.
    pub averaging: Vec<AveragingRecord>,
    /// The ε warm-up factor of the epoch's first and last batch (`train.eps_warmup_epochs`),
    /// when it is below 1 in this epoch; the plan above holds the full ε.
    pub eps_warmup: Option<[f64; 2]>,
    /// Wall time of the whole epoch: training, evaluations and checkpoint.
    pub seconds: f64,
    /// Wall time of the training batches alone (`None` in the first schema-1 lines).
    pub train_seconds: Option<f64>,
    /// Training throughput: training images / `train_seconds` (`None` in the first schema-1
    /// lines).
    pub train_images_per_second: Option<f64>,
    /// Wall time of this epoch's evaluations (validation, test and the averaged models; `None`
    /// in the first schema-1 lines).
    pub eval_seconds: Option<f64>,
}

/// The version of a `metrics.jsonl` line: its `schema` field, or 1 when it has none. Errors if
/// the line is not a JSON object or `schema` is not a whole number.
pub fn schema_of(line: &str) -> Result<u32> {
    #[derive(Deserialize)]
    struct Version {
        schema: Option<u32>,
    }
    let version: Version = serde_json::from_str(line).map_err(|e| CoreError::Record {
        schema: None,
        message: e.to_string(),
    })?;
    Ok(version.schema.unwrap_or(1))
}

impl EpochRecord {
    /// Reads one line of `metrics.jsonl` of any schema in [`READABLE_SCHEMAS`], converting an
    /// older line to the current records (see the [module docs](self)). A newer schema is a
    /// [`CoreError::UnsupportedSchema`]; a line that does not match its schema a
    /// [`CoreError::Record`] naming the field.
    pub fn parse(line: &str) -> Result<EpochRecord> {
        let schema = schema_of(line)?;
        let record_error = |e: serde_json::Error| CoreError::Record {
            schema: Some(schema),
            message: e.to_string(),
        };
        match schema {
            1 => Ok(serde_json::from_str::<EpochV1>(line)
                .map_err(record_error)?
                .into_current()),
            2 | 3 => {
                let record: EpochRecord = serde_json::from_str(line).map_err(record_error)?;
                record.check_counts()?;
                Ok(EpochRecord {
                    schema: METRICS_SCHEMA,
                    ..record
                })
            }
            _ => Err(CoreError::UnsupportedSchema {
                schema,
                readable: READABLE_SCHEMAS
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Checks that the per-class fields added in schema 3 have one entry per class of
    /// `train_robust` (a confusion matrix K rows of K counts).
    fn check_counts(&self) -> Result<()> {
        let k = self.train_robust.len();
        let rows = self.train_confusion.iter().flatten().map(Vec::len);
        let lengths = [
            (
                "train_attack_steps",
                self.train_attack_steps.as_ref().map(Vec::len),
            ),
            (
                "train_confusion",
                self.train_confusion.as_ref().map(Vec::len),
            ),
        ]
        .into_iter()
        .chain(rows.map(|n| ("train_confusion row", Some(n))));
        for (field, len) in lengths {
            if let Some(len) = len.filter(|&len| len != k) {
                return Err(invalid(
                    format!("metrics.{field}"),
                    format!("{len} entries in epoch {}", self.epoch),
                    format!("{k}, one per class of train_robust"),
                ));
            }
        }
        Ok(())
    }

    /// The record as one line of JSON (without the newline), in schema [`METRICS_SCHEMA`]
    /// (another `schema` is an error). serde_json writes NaN and the
    /// infinities as `null`, which would read back as a missing value or not at all; a number
    /// that is not finite is therefore an error naming its field, and `null` appears only
    /// where the record holds `None`.
    pub fn to_line(&self) -> Result<String> {
        if self.schema != METRICS_SCHEMA {
            return Err(invalid(
                "metrics.schema",
                self.schema,
                format!("{METRICS_SCHEMA}, the schema of the records written now"),
            ));
        }
        self.check_counts()?;
        let mut value = serde_json::to_value(self).map_err(|e| CoreError::Record {
            schema: Some(self.schema),
            message: e.to_string(),
        })?;
        // Drop the legitimate nulls (the `None`s); any null left was a number.
        if let Some(fields) = value.as_object_mut() {
            for (key, none) in [
                ("val", self.val.is_none()),
                ("test", self.test.is_none()),
                ("ema_test", self.ema_test.is_none()),
                ("fawa_test", self.fawa_test.is_none()),
                ("eps_warmup", self.eps_warmup.is_none()),
                ("train_seconds", self.train_seconds.is_none()),
                (
                    "train_images_per_second",
                    self.train_images_per_second.is_none(),
                ),
                ("eval_seconds", self.eval_seconds.is_none()),
            ] {
                if none {
                    fields.remove(key);
                }
            }
            if let Some(serde_json::Value::Array(averages)) = fields.get_mut("averaging") {
                for (a, record) in averages.iter_mut().zip(&self.averaging) {
                    if let (Some(a), None) = (a.as_object_mut(), record.gate_value) {
                        a.remove("gate_value");
                    }
                }
            }
        }
        if let Some(path) = null_path(&value) {
            return Err(invalid(
                format!("metrics.{path}"),
                format!("NaN or infinite in epoch {}", self.epoch),
                "a finite number (JSON would hold null)",
            ));
        }
        serde_json::to_string(self).map_err(|e| CoreError::Record {
            schema: Some(self.schema),
            message: e.to_string(),
        })
    }
}

/// The path (`test.robust[2]`) of the first null in a JSON value.
fn null_path(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => Some(String::new()),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| null_path(x).map(|p| format!("[{i}]{}", dotted(&p)))),
        serde_json::Value::Object(o) => o
            .iter()
            .find_map(|(k, x)| null_path(x).map(|p| format!("{k}{}", dotted(&p)))),
        _ => None,
    }
}

/// `.rest` for a field path below, `[i]…` and the empty path as they are.
fn dotted(rest: &str) -> String {
    if rest.is_empty() || rest.starts_with('[') {
        rest.to_owned()
    } else {
        format!(".{rest}")
    }
}

/// A schema-1 line (see the module docs); fields added during that version are optional.
#[derive(Deserialize)]
struct EpochV1 {
    epoch: usize,
    lr: f64,
    train_loss: f64,
    train_robust: Vec<f64>,
    plan: PlanV1,
    val: Option<SplitRecord>,
    test: Option<SplitRecord>,
    ema_test: Option<SplitRecord>,
    eps_warmup: Option<[f64; 2]>,
    seconds: f64,
    train_seconds: Option<f64>,
    train_images_per_second: Option<f64>,
    eval_seconds: Option<f64>,
}

/// The schema-1 plan: ε_k, β_k and w_k, the weight of class k's whole per-sample loss.
#[derive(Deserialize)]
struct PlanV1 {
    eps: Vec<f64>,
    beta: Vec<f64>,
    weight: Vec<f64>,
}

impl EpochV1 {
    fn into_current(self) -> EpochRecord {
        EpochRecord {
            schema: METRICS_SCHEMA,
            epoch: self.epoch,
            rule: "uniform".to_owned(),
            lr: self.lr,
            train_loss: self.train_loss,
            train_robust: self.train_robust,
            train_attack_steps: None,
            train_confusion: None,
            plan: ClassPlan {
                eps: self.plan.eps,
                beta: self.plan.beta,
                natural_weight: self.plan.weight.clone(),
                boundary_weight: self.plan.weight,
                step_size: None,
            },
            rule_state: None,
            val: self.val,
            test: self.test,
            ema_test: self.ema_test,
            fawa_test: None,
            averaging: Vec::new(),
            eps_warmup: self.eps_warmup,
            seconds: self.seconds,
            train_seconds: self.train_seconds,
            train_images_per_second: self.train_images_per_second,
            eval_seconds: self.eval_seconds,
        }
    }
}
