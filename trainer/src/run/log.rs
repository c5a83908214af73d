//! Writing `metrics.jsonl`, one flushed line per epoch. The records and their schema are those
//! of [`classwise_core::record`] ([`EpochRecord`], versioned by
//! [`METRICS_SCHEMA`](classwise_core::record::METRICS_SCHEMA)), which the figures read back.

use std::io::Write as _;
use std::path::Path;

use classwise_core::record::{EpochRecord, SplitRecord};

use crate::error::{IoContext, Result};
use crate::eval::Report;

/// The class-wise accuracies of an evaluation, as logged for its split.
pub fn split_record(e: &Report) -> SplitRecord {
    SplitRecord {
        clean: e.clean.per_class.clone(),
        robust: e.robust.per_class.clone(),
        clean_avg: e.clean.average(),
        robust_avg: e.robust.average(),
        robust_worst: e.robust.worst.value,
        robust_worst_class: e.robust.worst.class,
        robust_cv: e.robust.cv_fraction2,
        robust_mcd: e.robust.mcd,
    }
}

/// Appends one line to `metrics.jsonl`, flushed and synced. A number that is not finite is an
/// error ([`EpochRecord::to_line`]).
pub(crate) fn append_metrics(path: &Path, record: &EpochRecord) -> Result<()> {
    let line = record.to_line()?;
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
pub(crate) fn print_epoch(epochs: usize, log: &EpochRecord) {
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
        log.train_seconds.unwrap_or(f64::NAN),
        log.train_images_per_second.unwrap_or(f64::NAN),
        log.eval_seconds.unwrap_or(f64::NAN)
    );
}
