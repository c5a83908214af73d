//! `classwise compare`: runs compared the way the papers do, from their run directories.
//!
//! [`load`] reads each run's evaluations (the final reports of `classwise train`, the
//! evaluations of `classwise eval` and `classwise eval --protocol`); [`stats`] groups the runs
//! (one method, several seeds) and computes the papers' class-wise metrics, mean ± std over
//! seeds, with WAT's ρ against a baseline; [`tables`] writes them in the papers' table formats;
//! [`runs`] lists what the means hide, run by run; [`figures`] draws the papers' class-wise
//! figures.

pub mod alike;
pub mod claims;
pub mod diagnostics;
pub mod epochs;
pub mod figures;
pub mod homing;
pub mod load;
pub mod param;
pub mod runs;
pub mod stats;
pub mod tables;

use std::path::{Path, PathBuf};

pub use load::{AttackKey, Evaluated, RunInput, RunResults};
pub use stats::{Comparison, Group, RunMetrics, Stats};

use crate::atomic::write_atomic;
use crate::error::Result;
use crate::render::{Rendered, render};

/// Writes `compare.md`, `compare.csv` and `compare.json` into `out`; returns their paths.
pub fn write_tables(c: &Comparison, model: &str, out: &Path) -> Result<[PathBuf; 3]> {
    std::fs::create_dir_all(out).map_err(|source| crate::error::FigureError::Io {
        action: "creating",
        path: out.to_path_buf(),
        source,
    })?;
    let paths = [
        out.join("compare.md"),
        out.join("compare.csv"),
        out.join("compare.json"),
    ];
    write_atomic(&paths[0], tables::markdown(c, model).as_bytes())?;
    write_atomic(&paths[1], &tables::csv(c)?)?;
    let json = serde_json::to_string_pretty(c).map_err(|e| crate::error::FigureError::Encode {
        what: "compare.json".into(),
        message: e.to_string(),
    })?;
    write_atomic(&paths[2], json.as_bytes())?;
    Ok(paths)
}

/// Writes `runs.md` ([`runs::markdown`]) into `out`; returns its path.
pub fn write_runs(c: &Comparison, model: &str, out: &Path) -> Result<PathBuf> {
    let path = out.join("runs.md");
    write_atomic(&path, runs::markdown(c, model).as_bytes())?;
    Ok(path)
}

/// Renders the figures of the comparison into `out` for `model` under its
/// [primary evaluation](Comparison::primary_key): the class-wise bars, the radar chart, the
/// error decomposition, the confusion matrices (when the reports have them) and the worst class
/// over the epochs (when the runs have their logs). Returns what was rendered and, for each
/// figure left out, why.
pub fn render_all(
    c: &Comparison,
    runs: &[RunResults],
    model: &str,
    out: &Path,
) -> Result<(Vec<Rendered>, Vec<String>)> {
    let mut o = Outputs {
        out,
        rendered: Vec::new(),
        skipped: Vec::new(),
    };
    match c.primary_key(model) {
        None => o.skipped.push(format!(
            "the class-wise figures: no evaluation of model `{model}` common to every group"
        )),
        Some(key) => {
            o.add(
                "the class-wise bars",
                figures::ClassBars::new(c, model, key),
            )?;
            o.add("the radar chart", figures::Radar::new(c, model, key))?;
            o.add("the error bars", figures::ErrorBars::new(c, model, key))?;
            for kind in [
                figures::ConfusionKind::RowNormalised,
                figures::ConfusionKind::Misclassified,
            ] {
                let what = format!("the confusion matrices ({kind:?})");
                o.add(&what, figures::Confusion::new(c, model, key, kind))?;
            }
            o.add(
                "the accuracy against a swept parameter",
                param::ParamSweep::new(c, model, key),
            )?;
        }
    }
    for what in [&diagnostics::ATTACK_STEPS, &diagnostics::CVC] {
        let figure = diagnostics::ClassDiagnostic::new(c, model, c.primary_key(model), what);
        o.add(what.id, figure)?;
    }
    o.add(
        "the worst class over the epochs",
        epochs::WorstOverEpochs::new(c, runs),
    )?;
    o.add(
        "the classes over the epochs",
        epochs::ClassesOverEpochs::new(c, runs),
    )?;
    for view in [&epochs::PLAN, &epochs::TRAINING_ATTACK] {
        o.add(view.id, epochs::PerClassOverEpochs::new(view, c, runs))?;
    }
    o.add(
        "the training confusion matrices",
        epochs::TrainConfusion::new(c, runs),
    )?;
    o.add("the homing matrix", homing::Homing::new(runs, model))?;
    Ok((o.rendered, o.skipped))
}

/// What [`render_all`] has rendered into `out` so far, and why each figure left out was.
struct Outputs<'a> {
    out: &'a Path,
    rendered: Vec<Rendered>,
    skipped: Vec<String>,
}

impl Outputs<'_> {
    /// Renders `figure`, or records `what` was left out and why.
    fn add<F: crate::render::Figure>(&mut self, what: &str, figure: Result<F>) -> Result<()> {
        match figure {
            Ok(f) => self.rendered.push(render(&f, self.out)?),
            Err(e) => self.skipped.push(format!("{what}: {e}")),
        }
        Ok(())
    }
}
