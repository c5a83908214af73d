//! The records of `metrics.jsonl`, one flushed line per epoch.

use std::io::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::error::{IoContext, Result, TrainerError, invalid};
use crate::eval::Evaluation;
use crate::train::ClassPlan;
use classwise_theory::calibration::AverageAction;

/// Class-wise accuracies of one split at one epoch.
#[derive(Clone, Debug, Serialize)]
pub struct SplitLog {
    pub clean: Vec<f64>,
    pub robust: Vec<f64>,
    pub clean_avg: f64,
    pub robust_avg: f64,
    pub robust_worst: f64,
    pub robust_worst_class: usize,
    pub robust_cv: f64,
    pub robust_mcd: f64,
}

impl SplitLog {
    pub(crate) fn of(e: &Evaluation) -> Self {
        let avg =
            |s: &classwise_theory::metrics::ClassAccuracySummary| s.overall.unwrap_or(s.class_mean);
        SplitLog {
            clean: e.clean.per_class.clone(),
            robust: e.robust.per_class.clone(),
            clean_avg: avg(&e.clean),
            robust_avg: avg(&e.robust),
            robust_worst: e.robust.worst.value,
            robust_worst_class: e.robust.worst.class,
            robust_cv: e.robust.cv_fraction2,
            robust_mcd: e.robust.mcd,
        }
    }

    /// The checkpoint score: avg + worst-class robust accuracy (CFA §5.1, "Metrics").
    pub fn score(&self) -> f64 {
        self.robust_avg + self.robust_worst
    }
}

/// The version of the `metrics.jsonl` records, written in every line as `schema`. Version 2
/// added `schema`, `rule`, `fawa_test` and `averaging`; lines without `schema` are version 1.
pub const METRICS_SCHEMA: u32 = 2;

/// What an average (`[ema]`, `[fawa]`) did after an epoch.
#[derive(Clone, Debug, Serialize)]
pub struct AveragingLog {
    /// `ema` or `fawa`.
    pub name: &'static str,
    /// `Keep`, `Copy` or `{"Average": {"alpha": α}}`.
    pub action: AverageAction,
    /// FAWA's gate value (the worst class's validation robust accuracy, or the worst-fraction
    /// mean) compared with δ.
    pub gate_value: Option<f64>,
    /// Epochs that changed the average so far.
    pub updates: usize,
}

/// One line of `metrics.jsonl`.
#[derive(Clone, Debug, Serialize)]
pub struct EpochLog {
    /// [`METRICS_SCHEMA`].
    pub schema: u32,
    pub epoch: usize,
    /// The class-wise rule (`uniform`, `cfa`, …) whose plan is below.
    pub rule: &'static str,
    pub lr: f64,
    pub train_loss: f64,
    /// t_k (CFA §4.1).
    pub train_robust: Vec<f64>,
    pub plan: ClassPlan,
    pub val: Option<SplitLog>,
    pub test: Option<SplitLog>,
    /// The weight-averaged model (`[ema]`) on the test subset, as CFA's code logs it.
    pub ema_test: Option<SplitLog>,
    /// The FAWA model (`[fawa]`) on the test subset, once it holds weights.
    pub fawa_test: Option<SplitLog>,
    /// The decisions of the averages after this epoch.
    pub averaging: Vec<AveragingLog>,
    /// The ε warm-up factor of the epoch's first and last batch (`train.eps_warmup_epochs`),
    /// when it is below 1 in this epoch; the plan above holds the full ε.
    pub eps_warmup: Option<[f64; 2]>,
    /// Wall time of the whole epoch: training, evaluations and checkpoint.
    pub seconds: f64,
    /// Wall time of the training batches alone.
    pub train_seconds: f64,
    /// Training throughput: training images / `train_seconds`.
    pub train_images_per_second: f64,
    /// Wall time of this epoch's evaluations (validation, test and the averaged model).
    pub eval_seconds: f64,
}

/// Whether a JSON value holds a null anywhere.
fn contains_null(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => a.iter().any(contains_null),
        serde_json::Value::Object(o) => o.values().any(contains_null),
        _ => false,
    }
}

/// Appends one line to `metrics.jsonl`, flushed and synced.
pub(crate) fn append_metrics(path: &Path, log: &EpochLog) -> Result<()> {
    // serde_json writes NaN and infinities as null; only `val`, `test`, `ema_test` and
    // `fawa_test` (no evaluation that epoch) and `eps_warmup` (no warm-up) may be null, and a
    // gate value inside `averaging`.
    let value = serde_json::to_value(log).map_err(|source| TrainerError::Json {
        what: "metrics line",
        source,
    })?;
    let bad = value.as_object().is_some_and(|o| {
        o.iter()
            .filter(|(k, _)| k.as_str() != "averaging")
            .any(|(k, v)| {
                !(v.is_null()
                    && matches!(
                        k.as_str(),
                        "val" | "test" | "ema_test" | "fawa_test" | "eps_warmup"
                    ))
                    && contains_null(v)
            })
    });
    if bad {
        return Err(invalid(
            "metrics",
            format!("epoch {}", log.epoch),
            "finite numbers (a NaN or infinity would be written as null)",
        ));
    }
    let line = value.to_string();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .at("opening", path)?;
    writeln!(f, "{line}").at("appending to", path)?;
    f.sync_all().at("syncing", path)
}

/// Keeps the first `epochs` lines of `metrics.jsonl` (a resume drops lines of unfinished epochs).
pub(crate) fn truncate_metrics(path: &Path, epochs: usize) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let text = std::fs::read_to_string(path).at("reading", path)?;
    let kept: String = text
        .lines()
        .take(epochs)
        .map(|l| format!("{l}\n"))
        .collect();
    crate::io::write_atomic(path, kept.as_bytes())
}

/// The one-line summary of an epoch on stderr (`--verbose`).
pub(crate) fn print_epoch(epochs: usize, log: &EpochLog) {
    let summary = log
        .test
        .as_ref()
        .map(|t| {
            format!(
                " | test clean {:.2}% robust {:.2}% worst {:.2}% (class {})",
                100.0 * t.clean_avg,
                100.0 * t.robust_avg,
                100.0 * t.robust_worst,
                t.robust_worst_class
            )
        })
        .unwrap_or_default();
    let warmup = log
        .eps_warmup
        .map(|[a, b]| format!(" eps x{a:.2}..{b:.2}"))
        .unwrap_or_default();
    let averaging: String = log
        .averaging
        .iter()
        .map(|a| format!(" {} {:?}", a.name, a.action))
        .collect();
    eprintln!(
        "epoch {}/{} lr {}{warmup} loss {:.4} train {:.1} s ({:.0} img/s) eval {:.1} s{summary}{averaging}",
        log.epoch + 1,
        epochs,
        log.lr,
        log.train_loss,
        log.train_seconds,
        log.train_images_per_second,
        log.eval_seconds
    );
}
