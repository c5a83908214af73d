//! The papers' figures over the training epochs, from the `metrics.jsonl` of the first run of
//! each group compared:
//!
//! * [`WorstOverEpochs`]: the worst class of the model and of its weight averages (CFA Fig. 4);
//! * [`ClassesOverEpochs`]: every class's robust accuracy and the gap between the best and the
//!   worst class (Tian et al. Fig. 1);
//! * [`PerClassOverEpochs`]: per-class quantities of the epochs' records, as [`PLAN`] the
//!   class-wise plan the rule chose at each epoch, e.g. CFA's calibrated budgets ε_k (CFA Fig.
//!   5b) or WAT's class weights, and as [`TRAINING_ATTACK`] the steps of an early-stopped
//!   training attack per class (BAT Fig. 2b);
//! * [`TrainConfusion`]: the confusion matrix of the training inputs at two epochs (BAT Fig. 3).

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;

use classwise_core::record::EpochRecord;

use super::figures::{MatrixCells, draw_matrix, push_matrices};
use super::load::RunResults;
use super::stats::Comparison;
use crate::bars;
use crate::classes::ClassLines;
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::run::{RunCurves, RunLog};
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

/// The first run of each group with a `metrics.jsonl`: (group, run, log), in group order.
fn first_logs<'a>(
    c: &Comparison,
    runs: &'a [RunResults],
) -> Vec<(String, &'a RunResults, &'a RunLog)> {
    c.groups
        .iter()
        .filter_map(|g| {
            runs.iter()
                .filter(|r| r.input.group == g.name)
                .find_map(|r| r.log.as_ref().map(|l| (g.name.clone(), r, l)))
        })
        .collect()
}

/// (rows, columns) of a grid of `n` panels, two per row.
fn two_columns(n: usize) -> (usize, usize) {
    let cols = n.clamp(1, 2);
    (n.div_ceil(cols), cols)
}

fn no_logs() -> crate::error::FigureError {
    invalid(
        "runs",
        "no metrics.jsonl with test evaluations",
        "run directories written by `classwise train`",
    )
}

/// The worst class's robust test accuracy at every evaluated epoch of each method's first run:
/// the raw model (solid) and its EMA (dashed) and FAWA (dotted) averages (CFA Fig. 4: the worst
/// class fluctuates between epochs, FAWA smooths it).
#[derive(Clone, Debug, PartialEq)]
pub struct WorstOverEpochs {
    /// (method, run directory, series): each series is (label, dash, 1-based epochs, values).
    pub methods: Vec<(String, String, Vec<EpochSeries>)>,
}

/// One line of [`WorstOverEpochs`].
#[derive(Clone, Debug, PartialEq)]
pub struct EpochSeries {
    pub label: &'static str,
    pub dash: Dash,
    pub epochs: Vec<f64>,
    pub worst: Vec<f64>,
}

impl WorstOverEpochs {
    /// The y axis drawn: from 0 to above every worst-class accuracy ([`bars::from_zero`]).
    pub fn y_range(&self) -> Range<f64> {
        bars::from_zero(
            self.methods
                .iter()
                .flat_map(|(_, _, series)| series.iter().flat_map(|s| s.worst.iter().copied())),
            0.05,
        )
    }

    /// From the first run of each group that has `metrics.jsonl`; fails when none has.
    pub fn new(c: &Comparison, runs: &[RunResults]) -> Result<Self> {
        let mut methods = Vec::new();
        for (name, run, log) in first_logs(c, runs) {
            let mut series = Vec::new();
            type Pick = fn(&classwise_core::record::EpochRecord) -> Option<f64>;
            let picks: [(&'static str, Dash, Pick); 3] = [
                ("model", Dash::Solid, |e| {
                    e.test.as_ref().map(|t| t.robust_worst)
                }),
                ("EMA", Dash::Dashed, |e| {
                    e.ema_test.as_ref().map(|t| t.robust_worst)
                }),
                ("FAWA", Dash::Dotted, |e| {
                    e.fawa_test.as_ref().map(|t| t.robust_worst)
                }),
            ];
            for (label, dash, pick) in picks {
                let (epochs, worst): (Vec<f64>, Vec<f64>) = log
                    .epochs
                    .iter()
                    .filter_map(|e| pick(e).map(|v| ((e.epoch + 1) as f64, v)))
                    .unzip();
                if !epochs.is_empty() {
                    series.push(EpochSeries {
                        label,
                        dash,
                        epochs,
                        worst,
                    });
                }
            }
            if !series.is_empty() {
                methods.push((name, run.input.dir.display().to_string(), series));
            }
        }
        if methods.is_empty() {
            return Err(no_logs());
        }
        Ok(WorstOverEpochs { methods })
    }
}

const EPOCH_AXES: [&str; 2] = ["epoch", "worst-class robust accuracy (test subset)"];

impl Figure for WorstOverEpochs {
    fn id(&self) -> &'static str {
        "compare-worst-over-epochs"
    }

    fn title(&self) -> String {
        "Worst-class robust accuracy over the epochs: model and weight averages".into()
    }

    fn reproduces(&self) -> &'static str {
        "CFA Fig. 4 (the worst class fluctuates from epoch to epoch; FAWA keeps it high) and the \
         worst-class curve of Tian et al. Fig. 1"
    }

    fn look_at(&self) -> &'static str {
        "How much the raw model's worst class jumps between consecutive epochs compared with \
         its averages, and which method ends with the highest worst class."
    }

    fn size(&self) -> (u32, u32) {
        // Taller by a legend row for each method past the first.
        let (w, h) = style::WIDE;
        (
            w,
            h + legend::ROW * self.methods.len().saturating_sub(1) as u32,
        )
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("", &["method", "run", "model", "epoch", "worst"]);
        for (name, run, series) in &self.methods {
            for s in series {
                for (e, v) in s.epochs.iter().zip(&s.worst) {
                    t.push(vec![
                        Cell::from(name.as_str()),
                        Cell::from(run.as_str()),
                        Cell::from(s.label),
                        Cell::from(*e as usize),
                        Cell::from(*v),
                    ])
                    .expect("five cells");
                }
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        EPOCH_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        // One legend row per method (its model and averages): a row of every series of
        // several methods overflows the figure's width.
        let (plot, strip) = legend::split(area, self.methods.len());
        let all = || self.methods.iter().flat_map(|(_, _, s)| s);
        let last = all()
            .flat_map(|s| s.epochs.iter().copied())
            .fold(1.0, f64::max);
        let mut chart = ChartBuilder::on(&plot)
            .margin(18)
            .margin_right(34)
            .x_label_area_size(70)
            .y_label_area_size(95)
            .caption(
                "the first run of each method; evaluated on the run's per-epoch test subset",
                style::caption_font(),
            )
            .build_cartesian_2d(0.0..last + 1.0, self.y_range())?;
        let [x_desc, y_desc] = EPOCH_AXES;
        style::mesh_style(&mut chart, x_desc, y_desc)
            .x_labels((last as usize + 2).min(22))
            .x_label_formatter(&style::tick_whole)
            .y_label_formatter(&style::tick_plain)
            .draw()?;
        let mut rows = Vec::new();
        for (i, (name, _, series)) in self.methods.iter().enumerate() {
            let color = style::color(i);
            let mut entries = Vec::new();
            for s in series {
                let pts: Vec<(f64, f64)> = s
                    .epochs
                    .iter()
                    .copied()
                    .zip(s.worst.iter().copied())
                    .collect();
                style::line(&mut chart, &pts, color, s.dash, "")?;
                legend::markers(&mut chart, &pts, legend::Shape::Circle, color, 1.0, true)?;
                entries.push(Entry::line(color, s.dash, format!("{name}: {}", s.label)));
            }
            rows.push(entries);
        }
        legend::draw_rows(&strip, &rows)
    }
}

/// Every class's robust test accuracy over the epochs, one panel per method (its first run),
/// with the band between the best and the worst class shaded (Tian et al. Fig. 1).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassesOverEpochs {
    /// (method, run directory, curves).
    pub methods: Vec<(String, String, RunCurves)>,
}

impl ClassesOverEpochs {
    pub fn new(c: &Comparison, runs: &[RunResults]) -> Result<Self> {
        let methods = first_logs(c, runs)
            .into_iter()
            .map(|(name, run, log)| {
                Ok((
                    name,
                    run.input.dir.display().to_string(),
                    RunCurves::new(log)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        if methods.is_empty() {
            return Err(no_logs());
        }
        Ok(ClassesOverEpochs { methods })
    }

    fn grid(&self) -> (usize, usize) {
        two_columns(self.methods.len())
    }
}

impl Figure for ClassesOverEpochs {
    fn id(&self) -> &'static str {
        "compare-classes-over-epochs"
    }

    fn title(&self) -> String {
        "Class-wise robust accuracy over the epochs, per method".into()
    }

    fn reproduces(&self) -> &'static str {
        "Tian et al. Fig. 1: class-wise robustness at different epochs, the gap between the \
         classes shaded"
    }

    fn look_at(&self) -> &'static str {
        "How wide the shaded gap between the best and the worst class is at every epoch, whether \
         it narrows or widens as training goes on, and whether a fairness method narrows it."
    }

    fn size(&self) -> (u32, u32) {
        let (rows, cols) = self.grid();
        (800 * cols as u32, 620 * rows as u32 + 160)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("", &["method", "run", "epoch", "class", "name", "robust"]);
        for (name, run, curves) in &self.methods {
            for (i, e) in curves.test_epochs.iter().enumerate() {
                for (c, series) in curves.test_robust.iter().enumerate() {
                    t.push(vec![
                        Cell::from(name.as_str()),
                        Cell::from(run.as_str()),
                        Cell::from(*e as usize),
                        Cell::from(c),
                        Cell::from(curves.class_names[c].as_str()),
                        Cell::from(series[i]),
                    ])
                    .expect("six cells");
                }
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        self.methods
            .iter()
            .flat_map(|_| ["epoch", "robust test accuracy (evaluation attack)"])
            .map(String::from)
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let first = &self.methods[0].2;
        let lines = ClassLines::new(first.class_names.len());
        let (plot, strip) = legend::split(area, lines.legend_rows(true));
        let panels = plot.split_evenly(self.grid());
        for ((name, _, curves), panel) in self.methods.iter().zip(&panels) {
            curves.draw_test_panel(panel, name)?;
        }
        lines.legend(&strip, &first.class_names, first.summary_entries())
    }
}

/// A per-class quantity an epoch's record may hold.
#[derive(Debug)]
pub struct EpochQuantity {
    /// Its name in the CSV.
    pub name: &'static str,
    /// The y-axis label.
    pub label: &'static str,
    pub pick: fn(&EpochRecord) -> Option<&Vec<f64>>,
}

/// What a [`PerClassOverEpochs`] figure draws: per-class quantities of the epochs' records, one
/// panel per quantity and method.
#[derive(Debug)]
pub struct EpochView {
    pub id: &'static str,
    pub title: &'static str,
    pub reproduces: &'static str,
    pub look_at: &'static str,
    pub quantities: &'static [EpochQuantity],
    /// A method is drawn when every epoch holds this quantity (an index into `quantities`),
    /// and, with `only_varying`, the quantities that differ between classes or epochs.
    pub anchor: usize,
    pub only_varying: bool,
    /// What a run needs to be drawn (for the error when none is).
    pub needs: &'static str,
}

/// The class-wise plan of each method whose rule changes it: ε_k, β_k and the loss weights of
/// every class at every epoch, the parts that vary (CFA Fig. 5b: the calibrated margins ε_k
/// during training; WAT's Hedge weights; FRL's multipliers).
pub const PLAN: EpochView = EpochView {
    id: "compare-plan-over-epochs",
    title: "The class-wise plan of each rule over the epochs",
    reproduces: "CFA Fig. 5b: the class-wise calibrated margins ε_k during training (and the \
                 class weights of WAT, FRL and CSL the same way)",
    look_at: "Which classes the rule gives a smaller budget or a larger weight (CFA: the hard \
              classes get the smaller ε_k), and whether the plan settles or keeps moving.",
    quantities: &[
        EpochQuantity {
            name: "eps",
            label: "training budget ε_k",
            pick: |e| Some(&e.plan.eps),
        },
        EpochQuantity {
            name: "beta",
            label: "trade-off β_k",
            pick: |e| Some(&e.plan.beta),
        },
        EpochQuantity {
            name: "natural_weight",
            label: "weight of the natural term",
            pick: |e| Some(&e.plan.natural_weight),
        },
        EpochQuantity {
            name: "boundary_weight",
            label: "weight of the boundary term",
            pick: |e| Some(&e.plan.boundary_weight),
        },
    ],
    anchor: 0,
    only_varying: true,
    needs: "a run whose class-wise rule (CFA, WAT, FRL, CSL, class-β) changes ε_k, β_k or the \
            class weights",
};

/// The steps of the early-stopped training attack per class (FAT, BAT) next to the training
/// robust accuracy t_k, at every epoch.
pub const TRAINING_ATTACK: EpochView = EpochView {
    id: "compare-training-attack-steps",
    title: "Steps of the training attack and training robust accuracy per class",
    reproduces: "BAT Fig. 2b (source-class fairness) during training: the average number of \
                 attack steps each class's training images took, next to the class's robust \
                 accuracy on those examples",
    look_at: "Whether the classes that need fewer steps to be misclassified are the ones with \
              the lower training robust accuracy (BAT's correlation), and whether the gap \
              between them closes.",
    quantities: &[
        EpochQuantity {
            name: "attack_steps",
            label: "mean steps of the training attack",
            pick: |e| e.train_attack_steps.as_ref(),
        },
        EpochQuantity {
            name: "train_robust",
            label: "training robust accuracy t_k",
            pick: |e| Some(&e.train_robust),
        },
    ],
    anchor: 0,
    only_varying: false,
    needs: "a run of an early-stopped training attack (FAT, BAT) whose metrics.jsonl logs \
            train_attack_steps (schema 3)",
};

/// Per-class quantities of each method's first run over the epochs (see [`EpochView`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PerClassOverEpochs {
    pub view: &'static EpochView,
    pub class_names: Vec<String>,
    pub methods: Vec<PerClassRun>,
    /// The indices into the view's quantities drawn.
    pub parts: Vec<usize>,
}

impl PartialEq for EpochView {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

/// One method of [`PerClassOverEpochs`].
#[derive(Clone, Debug, PartialEq)]
pub struct PerClassRun {
    pub method: String,
    pub run: String,
    pub rule: String,
    pub epochs: Vec<f64>,
    /// Per quantity of the view, per epoch, per class (`None` when an epoch lacks it).
    pub values: Vec<Option<Vec<Vec<f64>>>>,
}

/// Whether every class has the same value at every epoch (their lines coincide).
fn same_for_every_class(values: &[Vec<f64>]) -> bool {
    values
        .iter()
        .all(|v| v.iter().all(|x| Some(x) == v.first()))
}

/// Whether a per-class quantity is 0 in every class and epoch.
fn all_zero(values: &[Vec<f64>]) -> bool {
    values.iter().flatten().all(|x| *x == 0.0)
}

/// Whether a per-class quantity differs between classes or epochs.
fn varies(values: &[Vec<f64>]) -> bool {
    let first = values.first().and_then(|v| v.first()).copied();
    values
        .iter()
        .flat_map(|v| v.iter())
        .any(|x| Some(*x) != first)
}

impl PerClassOverEpochs {
    /// From the first run of each group with the view's anchor quantity in every epoch
    /// (and, for a view of varying quantities, some quantity that varies); an error when none
    /// is left.
    pub fn new(view: &'static EpochView, c: &Comparison, runs: &[RunResults]) -> Result<Self> {
        let mut methods = Vec::new();
        let mut parts: Vec<usize> = Vec::new();
        let mut class_names = Vec::new();
        for (name, run, log) in first_logs(c, runs) {
            // A quantity other than the anchor that is 0 in every class and epoch is one the
            // method has not (the β of PGD-AT's and FAT's plans): no panel.
            let values: Vec<Option<Vec<Vec<f64>>>> = (view.quantities.iter().enumerate())
                .map(|(i, q)| {
                    let v: Option<Vec<Vec<f64>>> =
                        log.epochs.iter().map(|e| (q.pick)(e).cloned()).collect();
                    v.filter(|v| i == view.anchor || !all_zero(v))
                })
                .collect();
            let drawn: Vec<usize> = (0..values.len())
                .filter(|&i| {
                    values[i]
                        .as_ref()
                        .is_some_and(|v| !view.only_varying || varies(v))
                })
                .collect();
            if values[view.anchor].is_none() || log.epochs.is_empty() || drawn.is_empty() {
                continue;
            }
            for i in drawn {
                if !parts.contains(&i) {
                    parts.push(i);
                }
            }
            class_names = log.class_names.clone();
            methods.push(PerClassRun {
                method: name,
                run: run.input.dir.display().to_string(),
                rule: log
                    .epochs
                    .last()
                    .map(|e| e.rule.clone())
                    .unwrap_or_default(),
                epochs: log.epochs.iter().map(|e| (e.epoch + 1) as f64).collect(),
                values,
            });
        }
        if methods.is_empty() {
            return Err(invalid("runs", format!("none for {}", view.id), view.needs));
        }
        parts.sort_unstable();
        Ok(PerClassOverEpochs {
            view,
            class_names,
            methods,
            parts,
        })
    }
}

impl Figure for PerClassOverEpochs {
    fn id(&self) -> &'static str {
        self.view.id
    }

    fn title(&self) -> String {
        self.view.title.into()
    }

    fn reproduces(&self) -> &'static str {
        self.view.reproduces
    }

    fn look_at(&self) -> &'static str {
        self.view.look_at
    }

    fn size(&self) -> (u32, u32) {
        (
            (620 * self.parts.len() as u32).max(1000),
            520 * self.methods.len() as u32 + 160,
        )
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &[
                "method", "run", "rule", "quantity", "epoch", "class", "value",
            ],
        );
        for m in &self.methods {
            for &q in &self.parts {
                let Some(values) = &m.values[q] else {
                    continue;
                };
                for (e, per_class) in m.epochs.iter().zip(values) {
                    for (c, v) in per_class.iter().enumerate() {
                        t.push(vec![
                            Cell::from(m.method.as_str()),
                            Cell::from(m.run.as_str()),
                            Cell::from(m.rule.as_str()),
                            Cell::from(self.view.quantities[q].name),
                            Cell::from(*e as usize),
                            Cell::from(c),
                            Cell::from(*v),
                        ])
                        .expect("seven cells");
                    }
                }
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        self.methods
            .iter()
            .flat_map(|m| {
                self.parts
                    .iter()
                    .filter(|&&q| m.values[q].is_some())
                    .flat_map(|&q| ["epoch", self.view.quantities[q].label])
            })
            .map(String::from)
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let lines = ClassLines::new(self.class_names.len());
        let (plot, strip) = legend::split(area, lines.legend_rows(false));
        let panels = plot.split_evenly((self.methods.len(), self.parts.len()));
        for (r, m) in self.methods.iter().enumerate() {
            let last = m.epochs.last().copied().unwrap_or(1.0);
            for (col, &q) in self.parts.iter().enumerate() {
                let Some(values) = &m.values[q] else {
                    continue;
                };
                let y = style::padded(values.iter().flatten().copied(), 0.08);
                // Equal classes draw one line over the others: say so.
                let caption = format!(
                    "{} (rule {}){}",
                    m.method,
                    m.rule,
                    if same_for_every_class(values) {
                        ": every class the same"
                    } else {
                        ""
                    }
                );
                let mut chart = style::chart(
                    &panels[r * self.parts.len() + col],
                    &caption,
                    0.5..last + 0.5,
                    y,
                )?;
                style::mesh_with(
                    &mut chart,
                    "epoch",
                    self.view.quantities[q].label,
                    &style::tick_whole,
                    &style::tick_plain,
                )?;
                for c in 0..self.class_names.len() {
                    let pts: Vec<(f64, f64)> = m
                        .epochs
                        .iter()
                        .zip(values)
                        .map(|(e, v)| (*e, v[c]))
                        .collect();
                    lines.draw(&mut chart, &pts, c)?;
                }
            }
        }
        lines.legend(&strip, &self.class_names, Vec::<Entry>::new())
    }
}

/// The confusion matrix of the training inputs (x' for the adversarial methods), rows
/// normalised, at two epochs of each method's first run that logged it (`[train]
/// log_confusion`): the middle and the last logged epoch (BAT Fig. 3 shows epochs 50 and 60).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainConfusion {
    pub class_names: Vec<String>,
    /// (method, run directory, 1-based epoch, row-normalised matrix in fractions).
    pub panels: Vec<(String, String, usize, Vec<Vec<f64>>)>,
}

/// Each count over its row's total (a row without samples, a class left out of training,
/// stays 0).
fn row_fractions(counts: &[Vec<u64>]) -> Vec<Vec<f64>> {
    counts
        .iter()
        .map(|row| {
            let total = row.iter().sum::<u64>().max(1) as f64;
            row.iter().map(|&n| n as f64 / total).collect()
        })
        .collect()
}

const TRAIN_CONFUSION_AXES: [&str; 2] = ["predicted class of the training input", "true class"];

impl TrainConfusion {
    pub fn new(c: &Comparison, runs: &[RunResults]) -> Result<Self> {
        let mut panels = Vec::new();
        let mut class_names = Vec::new();
        for (name, run, log) in first_logs(c, runs) {
            let logged: Vec<_> = log
                .epochs
                .iter()
                .filter_map(|e| e.train_confusion.as_ref().map(|m| (e.epoch + 1, m)))
                .collect();
            let Some(last) = logged.len().checked_sub(1) else {
                continue;
            };
            let mut picked = vec![last / 2, last];
            picked.dedup();
            for i in picked {
                let (epoch, counts) = logged[i];
                panels.push((
                    name.clone(),
                    run.input.dir.display().to_string(),
                    epoch,
                    row_fractions(counts),
                ));
            }
            class_names = log.class_names.clone();
        }
        if panels.is_empty() {
            return Err(invalid(
                "runs",
                "no train_confusion in metrics.jsonl",
                "a run trained with `[train] log_confusion = true`",
            ));
        }
        Ok(TrainConfusion {
            class_names,
            panels,
        })
    }

    fn grid(&self) -> (usize, usize) {
        two_columns(self.panels.len())
    }
}

impl Figure for TrainConfusion {
    fn id(&self) -> &'static str {
        "compare-training-confusion"
    }

    fn title(&self) -> String {
        "Confusion matrix of the training inputs, rows normalised".into()
    }

    fn reproduces(&self) -> &'static str {
        "BAT Fig. 3: the confusion matrix of the training data during adversarial training at \
         two epochs (rows: true classes, columns: predictions on the adversarial examples \
         trained on, percent of the row)"
    }

    fn look_at(&self) -> &'static str {
        "The diagonal (each class's robust accuracy on its training examples) and the columns \
         that collect the errors (BAT's target classes); whether they change between the two \
         epochs."
    }

    fn size(&self) -> (u32, u32) {
        let (rows, cols) = self.grid();
        (60 + 620 * cols as u32, 800 * rows as u32)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &["method", "run", "epoch", "true", "predicted", "fraction"],
        );
        for (name, run, epoch, m) in &self.panels {
            let prefix = [
                Cell::from(name.as_str()),
                Cell::from(run.as_str()),
                Cell::from(*epoch),
            ];
            push_matrices(&mut t, &prefix, &[m]);
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        TRAIN_CONFUSION_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly(self.grid());
        for (panel, (name, _, epoch, m)) in panels.iter().zip(&self.panels) {
            let caption = format!("{name} — epoch {epoch}");
            draw_matrix(
                panel,
                &caption,
                m,
                MatrixCells::FRACTIONS,
                TRAIN_CONFUSION_AXES,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::same_for_every_class;

    #[test]
    fn classes_are_the_same_only_when_equal_at_every_epoch() {
        assert!(same_for_every_class(&[vec![1.0, 1.0], vec![0.5, 0.5]]));
        assert!(!same_for_every_class(&[vec![1.0, 1.0], vec![0.5, 0.6]]));
        assert!(same_for_every_class(&[]));
    }
}
