//! A trainer run directory read back: `metrics.jsonl` (one line per epoch, read through the
//! versioned records of [`classwise_core::record`], older schemas included) and `report.json`,
//! as `classwise train` writes them (trainer/src/run/mod.rs).

use std::path::{Path, PathBuf};

use classwise_core::record::RunConfigView;
pub use classwise_core::record::{EpochRecord, Report, SplitRecord};

use crate::error::{FigureError, Result, invalid};

/// What the figures of a run need.
#[derive(Clone, Debug, PartialEq)]
pub struct RunLog {
    /// The directory's name.
    pub name: String,
    pub epochs: Vec<EpochRecord>,
    /// `None` while the run is unfinished.
    pub report: Option<Report>,
    /// From the report, else `class 0`, `class 1`, ….
    pub class_names: Vec<String>,
    /// Test images per class of the per-epoch evaluations, from `config.toml` (the smaller of
    /// `data.test_per_class` and `eval.test_per_class`); `None` for the whole test set or
    /// when the run has no config.
    pub epoch_test_per_class: Option<usize>,
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| FigureError::Io {
        action: "reading",
        path: path.to_path_buf(),
        source,
    })
}

impl RunLog {
    /// Reads `dir/metrics.jsonl` (required, at least one line) and `dir/report.json` (if
    /// present). Errors name the file, the line and what was expected.
    pub fn read(dir: &Path) -> Result<RunLog> {
        let metrics: PathBuf = dir.join("metrics.jsonl");
        let text = read(&metrics)?;
        let at_line = |i: usize| format!("{} line {}", metrics.display(), i + 1);
        // (0-based line number, record), blank lines skipped.
        let mut numbered = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let record = EpochRecord::parse(line).map_err(|e| {
                invalid(at_line(i), e, "a metrics line written by `classwise train`")
            })?;
            numbered.push((i, record));
        }
        let Some((first_line, first)) = numbered.first() else {
            return Err(invalid(
                metrics.display().to_string(),
                "no lines",
                "at least one finished epoch",
            ));
        };
        let k = first.train_robust.len();
        for (i, e) in &numbered {
            let splits = [&e.val, &e.test, &e.ema_test, &e.fawa_test];
            let lens = std::iter::once(e.train_robust.len()).chain(
                splits
                    .iter()
                    .filter_map(|s| s.as_ref())
                    .flat_map(|s| [s.clean.len(), s.robust.len()]),
            );
            if let Some(bad) = lens.into_iter().find(|&n| n != k || n == 0) {
                return Err(invalid(
                    at_line(*i),
                    format!("{bad} classes"),
                    format!("{k} classes (as line {}), at least 1", first_line + 1),
                ));
            }
        }
        let epochs: Vec<EpochRecord> = numbered.into_iter().map(|(_, e)| e).collect();
        let report_path = dir.join("report.json");
        let report = if report_path.exists() {
            let r = Report::parse(&read(&report_path)?, &report_path.display().to_string())?;
            let lens = [
                r.class_names.len(),
                r.clean.per_class.len(),
                r.robust.per_class.len(),
            ];
            if lens.iter().any(|&n| n != k) {
                return Err(invalid(
                    report_path.display().to_string(),
                    format!("{lens:?} class names / clean / robust entries"),
                    format!("{k} of each, as metrics.jsonl"),
                ));
            }
            Some(r)
        } else {
            None
        };
        let class_names = match &report {
            Some(r) => r.class_names.clone(),
            None => (0..k).map(|c| format!("class {c}")).collect(),
        };
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        Ok(RunLog {
            name,
            epochs,
            report,
            class_names,
            epoch_test_per_class: (RunConfigView::read(dir)?)
                .and_then(|c| c.epoch_test_per_class()),
        })
    }

    /// The number of classes.
    pub fn num_classes(&self) -> usize {
        self.class_names.len()
    }
}
