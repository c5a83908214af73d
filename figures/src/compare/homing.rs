//! Tian et al.'s homing matrix (§6, Definition 6.1, Fig. 4): which adversarial errors of a
//! model go away when the class they are pushed into is removed from training.
//!
//! The inputs are runs of one configuration that differ only in `data.drop_classes`: a *full*
//! run (no class dropped) and, for each class j, a run retrained without class j (its training
//! images removed, the model keeping all K outputs). A sweep plans them with a grid
//! `"data.drop_classes" = [[], [0], [1], …]`; their groups then differ only in that coordinate.
//! Every run's final report must have its per-image predictions (`predictions/<report>`), on
//! the same test images under the same attack.
//!
//! For a true class i and a confound class j ≠ i:
//! * the misclassified count M[i][j] (Fig. 4a) is the number of class-i test images whose
//!   adversarial example the full model predicts as j;
//! * the homing count H[i][j] (Fig. 4b) is the number of those images that are robust (correct
//!   under attack, attacked afresh) for the model retrained without class j.
//!
//! So H[i][j] ≤ M[i][j]. With several seeds, each full run is paired with the retrained runs of
//! its own seed and both matrices are the means over the seeds.

use plotters::coord::Shift;
use plotters::prelude::*;

use classwise_core::record::PredictionsRecord;
use classwise_theory::metrics::ConfusionMatrix;

use super::figures::{MatrixCells, draw_matrix, push_matrices};
use super::load::RunResults;
use super::param::GridPoint;
use crate::error::{Result, invalid};
use crate::render::Figure;
use crate::style::DrawResult;
use crate::table::{Cell, Table};

/// The configuration key (and sweep-grid coordinate) of the classes a run trained without.
pub const DROP_KEY: &str = "data.drop_classes";

/// The two matrices of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct HomingPanel {
    /// The group without its `data.drop_classes` coordinate.
    pub base: String,
    /// How many full runs (seeds) the matrices average.
    pub seeds: usize,
    /// M[i][j]: class-i images the full model predicts as j under attack (the diagonal 0).
    pub misclassified: Vec<Vec<f64>>,
    /// H[i][j]: those of them robust after retraining without j; NaN in the columns of the
    /// classes without a retrained run for every seed.
    pub homing: Vec<Vec<f64>>,
    /// The classes without a retrained run for some seed.
    pub missing: Vec<usize>,
}

/// Tian et al. Fig. 4: the misclassified and the homing matrix of each configuration compared
/// with its runs retrained without one class.
#[derive(Clone, Debug, PartialEq)]
pub struct Homing {
    pub model: String,
    pub class_names: Vec<String>,
    pub panels: Vec<HomingPanel>,
}

/// The group of `r` without its `data.drop_classes` coordinate.
fn base_of(r: &RunResults) -> String {
    let point = GridPoint::parse(&r.input.group);
    match point.coords.iter().position(|(k, _)| k == DROP_KEY) {
        Some(i) => point.without(i),
        None => r.input.group.clone(),
    }
}

/// `r` with the per-image predictions of its `model`, when it has them.
fn with_predictions<'a>(
    r: &'a RunResults,
    model: &str,
) -> Option<(&'a RunResults, &'a PredictionsRecord)> {
    r.predictions
        .iter()
        .find(|(m, _)| m == model)
        .map(|(_, p)| (r, p))
}

/// Adds to column j of `h` the images that `full` sends to j under attack (j not being their
/// class) and that are robust for `retrained`, the model trained without j.
fn add_homed(
    h: &mut [Vec<f64>],
    j: usize,
    full: &PredictionsRecord,
    retrained: &PredictionsRecord,
) {
    let images = full
        .labels
        .iter()
        .zip(&full.adversarial)
        .zip(&retrained.robust);
    for ((&y, &a), &robust) in images {
        if a == j && y != j && robust {
            h[y][j] += 1.0;
        }
    }
}

/// The panel of configuration `base`: its full runs (with predictions of `model`), each paired
/// with the retrained runs of its own seed; `None` without a full run or a retrained run.
fn panel(runs: &[RunResults], base: String, model: &str, k: usize) -> Result<Option<HomingPanel>> {
    let of_base = |r: &&RunResults| base_of(r) == base;
    let fulls: Vec<_> = runs
        .iter()
        .filter(of_base)
        .filter(|r| r.dropped_classes.is_empty())
        .filter_map(|r| with_predictions(r, model))
        .collect();
    if fulls.is_empty() {
        return Ok(None);
    }
    let mut m = vec![vec![0.0; k]; k];
    let mut h = vec![vec![0.0; k]; k];
    let mut measured = vec![true; k];
    for &(full, f) in &fulls {
        let counts = ConfusionMatrix::from_predictions(&f.adversarial, &f.labels, k)?;
        for (row, counts) in m.iter_mut().zip(counts.misclassified()) {
            row.iter_mut().zip(counts).for_each(|(v, c)| *v += c as f64);
        }
        for (j, measured) in measured.iter_mut().enumerate() {
            let retrained = runs
                .iter()
                .filter(of_base)
                .filter(|r| r.dropped_classes == [j] && r.input.seed == full.input.seed)
                .find_map(|r| with_predictions(r, model));
            match retrained {
                None => *measured = false,
                Some(r) => {
                    check_same_images((full, f), r)?;
                    add_homed(&mut h, j, f, r.1);
                }
            }
        }
    }
    if !measured.contains(&true) {
        return Ok(None);
    }
    let n = fulls.len() as f64;
    for (row_m, row_h) in m.iter_mut().zip(&mut h) {
        for (j, (vm, vh)) in row_m.iter_mut().zip(row_h.iter_mut()).enumerate() {
            *vm /= n;
            *vh = if measured[j] { *vh / n } else { f64::NAN };
        }
    }
    Ok(Some(HomingPanel {
        base,
        seeds: fulls.len(),
        misclassified: m,
        homing: h,
        missing: (0..k).filter(|&j| !measured[j]).collect(),
    }))
}

/// For the run `retrained` (trained without some classes): of the class-`i` test images that
/// the full run of its configuration and seed sends to class `j` under attack, the share that
/// are robust for `retrained` (a cell of H over M of Fig. 4, for one seed; Tian et al. §6.1
/// "119 of 200 examples will home"). `Ok(None)` when there is no such full run with predictions
/// of `model`, or it sends no class-`i` image to `j`.
pub fn homing_share(
    runs: &[RunResults],
    retrained: &RunResults,
    model: &str,
    (i, j): (usize, usize),
) -> Result<Option<f64>> {
    let Some(r) = with_predictions(retrained, model) else {
        return Ok(None);
    };
    let base = base_of(retrained);
    let full = runs
        .iter()
        .filter(|f| base_of(f) == base && f.dropped_classes.is_empty())
        .filter(|f| f.input.seed == retrained.input.seed)
        .find_map(|f| with_predictions(f, model));
    let Some(full) = full else {
        return Ok(None);
    };
    check_same_images(full, r)?;
    let f = full.1;
    let sent: Vec<usize> = (0..f.labels.len())
        .filter(|&n| f.labels[n] == i && f.adversarial[n] == j)
        .collect();
    if sent.is_empty() {
        return Ok(None);
    }
    let homed = sent.iter().filter(|&&n| r.1.robust[n]).count();
    Ok(Some(homed as f64 / sent.len() as f64))
}

/// `retrained` was evaluated on the images of `full`, in the same order, under the same attack.
fn check_same_images(
    full: (&RunResults, &PredictionsRecord),
    retrained: (&RunResults, &PredictionsRecord),
) -> Result<()> {
    let (f, r) = (full.1, retrained.1);
    if r.labels != f.labels || r.attack != f.attack || r.eps != f.eps {
        return Err(invalid(
            format!(
                "{}: predictions/{}",
                retrained.0.input.dir.display(),
                r.report
            ),
            format!(
                "{} images under {} at ε = {}",
                r.labels.len(),
                r.attack,
                r.eps
            ),
            format!(
                "the test images (same labels in the same order) and attack of {} ({} images \
                 under {} at ε = {})",
                full.0.input.dir.display(),
                f.labels.len(),
                f.attack,
                f.eps
            ),
        ));
    }
    Ok(())
}

impl Homing {
    /// The panels of every configuration with a full run and at least one run without a single
    /// class, from the per-image predictions of `model`'s final reports. Fails when there is
    /// none, or when a retrained run was evaluated on other images than its full run.
    pub fn new(runs: &[RunResults], model: &str) -> Result<Self> {
        let Some(first) = runs.first() else {
            return Err(invalid("runs", "none", "at least one run directory"));
        };
        let k = first.class_names.len();
        let mut bases: Vec<String> = Vec::new();
        for r in runs.iter().filter(|r| r.dropped_classes.len() == 1) {
            let base = base_of(r);
            if !bases.contains(&base) {
                bases.push(base);
            }
        }
        let mut panels = Vec::new();
        for base in bases {
            panels.extend(panel(runs, base, model, k)?);
        }
        if panels.is_empty() {
            return Err(invalid(
                "runs",
                format!("no full run of model `{model}` beside runs without one class"),
                "runs of one configuration that differ in `data.drop_classes` only (e.g. a \
                 sweep grid \"data.drop_classes\" = [[], [0], [1], …]), with \
                 predictions/<report> beside their reports",
            ));
        }
        Ok(Homing {
            model: model.to_owned(),
            class_names: first.class_names.clone(),
            panels,
        })
    }
}

const HOMING_AXES: [&str; 2] = ["confound class j (predicted under attack)", "true class i"];

impl Figure for Homing {
    fn id(&self) -> &'static str {
        "compare-homing"
    }

    fn title(&self) -> String {
        format!(
            "Misclassified and homing adversarial examples (model `{}`)",
            self.model
        )
    }

    fn reproduces(&self) -> &'static str {
        "Tian et al. Fig. 4: (a) the misclassified confusion matrix of the full model, (b) the \
         homing confusion matrix (how many of those examples become robust when the model is \
         retrained without the confound class j)"
    }

    fn look_at(&self) -> &'static str {
        "Each homing cell against the misclassified cell beside it: the share of a class's \
         errors into j that it wins back once j is gone (Tian: 119 of 200 cat→dog errors); a \
         much smaller share means the examples found another confound class."
    }

    fn size(&self) -> (u32, u32) {
        (60 + 620 * 2, 800 * self.panels.len().max(1) as u32)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &[
                "configuration",
                "seeds",
                "true",
                "predicted",
                "misclassified",
                "homing",
            ],
        );
        for p in &self.panels {
            let prefix = [Cell::from(p.base.as_str()), Cell::from(p.seeds)];
            push_matrices(&mut t, &prefix, &[&p.misclassified, &p.homing]);
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        HOMING_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let rows = area.split_evenly((self.panels.len().max(1), 2));
        for (pair, p) in rows.chunks(2).zip(&self.panels) {
            // One scale for both: H ≤ M cell by cell.
            let cells = MatrixCells::counts(p.misclassified.iter().flatten().copied());
            let seeds = match p.seeds {
                1 => String::new(),
                n => format!(", mean of {n} seeds"),
            };
            draw_matrix(
                &pair[0],
                &format!("{} — misclassified{seeds}", p.base),
                &p.misclassified,
                cells,
                HOMING_AXES,
            )?;
            draw_matrix(
                &pair[1],
                &format!("homing: robust after retraining without j{seeds}"),
                &p.homing,
                cells,
                HOMING_AXES,
            )?;
        }
        Ok(())
    }
}
