//! Figures of a trainer run directory, read from the JSON files `classwise train` writes: the
//! class-wise curves over the epochs and the final class-wise report.

pub mod curves;
pub mod log;
pub mod report;

use std::path::Path;

use crate::error::Result;
use crate::render::{Rendered, render};

pub use curves::RunCurves;
pub use log::RunLog;
pub use report::RunReportBars;

/// Renders the figures of the run in `run_dir` into `out`: the curves, and the report bars once
/// the run has finished.
pub fn render_all(run_dir: &Path, out: &Path) -> Result<Vec<Rendered>> {
    let log = RunLog::read(run_dir)?;
    let mut figures = vec![render(&RunCurves::new(&log)?, out)?];
    if log.report.is_some() {
        figures.push(render(&RunReportBars::new(&log)?, out)?);
    }
    Ok(figures)
}
