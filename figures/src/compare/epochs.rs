//! The papers' figures over the training epochs, from the `metrics.jsonl` of the first run of
//! each group compared:
//!
//! * [`WorstOverEpochs`]: the worst class of the model and of its weight averages (CFA Fig. 4);
//! * [`ClassesOverEpochs`]: every class's robust accuracy and the gap between the best and the
//!   worst class (Tian et al. Fig. 1);
//! * [`PlanOverEpochs`]: the class-wise plan the rule chose at each epoch, e.g. CFA's calibrated
//!   budgets ε_k (CFA Fig. 5b) or WAT's class weights.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::load::RunResults;
use super::stats::Comparison;
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
        style::WIDE
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
        let (plot, strip) = legend::split(area, 1);
        let all = || self.methods.iter().flat_map(|(_, _, s)| s);
        let last = all()
            .flat_map(|s| s.epochs.iter().copied())
            .fold(1.0, f64::max);
        let top = all()
            .flat_map(|s| s.worst.iter().copied())
            .fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(&plot)
            .margin(18)
            .margin_right(34)
            .x_label_area_size(70)
            .y_label_area_size(95)
            .caption(
                "the first run of each method; evaluated on the run's per-epoch test subset",
                style::caption_font(),
            )
            .build_cartesian_2d(0.0..last + 1.0, 0.0..((top + 0.05) * 10.0).ceil() / 10.0)?;
        let [x_desc, y_desc] = EPOCH_AXES;
        style::mesh_style(&mut chart, x_desc, y_desc)
            .x_labels((last as usize + 2).min(22))
            .x_label_formatter(&style::tick_whole)
            .y_label_formatter(&style::tick_plain)
            .draw()?;
        let mut entries = Vec::new();
        for (i, (name, _, series)) in self.methods.iter().enumerate() {
            let color = style::color(i);
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
        }
        legend::draw_rows(&strip, &[entries])
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
        let cols = self.methods.len().min(2);
        (self.methods.len().div_ceil(cols), cols)
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

/// The per-class quantities of a [`ClassPlan`](classwise_core::plan::ClassPlan), by name.
type PlanPick = fn(&classwise_core::plan::ClassPlan) -> &Vec<f64>;
const PLAN_PARTS: [(&str, PlanPick); 4] = [
    ("training budget ε_k", |p| &p.eps),
    ("trade-off β_k", |p| &p.beta),
    ("weight of the natural term", |p| &p.natural_weight),
    ("weight of the boundary term", |p| &p.boundary_weight),
];

/// The class-wise plan of each method whose rule changes it (its first run): ε_k, β_k and the
/// loss weights of every class at every epoch, the parts that vary (CFA Fig. 5b: the calibrated
/// margins ε_k during training; WAT's Hedge weights; FRL's multipliers).
#[derive(Clone, Debug, PartialEq)]
pub struct PlanOverEpochs {
    pub class_names: Vec<String>,
    /// (method, run directory, rule, 1-based epochs, plan per epoch).
    pub methods: Vec<PlanRun>,
    /// The indices into [`PLAN_PARTS`] drawn: those that vary in some method.
    pub parts: Vec<usize>,
}

/// One method of [`PlanOverEpochs`].
#[derive(Clone, Debug, PartialEq)]
pub struct PlanRun {
    pub method: String,
    pub run: String,
    pub rule: String,
    pub epochs: Vec<f64>,
    pub plans: Vec<classwise_core::plan::ClassPlan>,
}

/// Whether a per-class quantity differs between classes or epochs.
fn varies(values: &[&Vec<f64>]) -> bool {
    let first = values.first().and_then(|v| v.first()).copied();
    values
        .iter()
        .flat_map(|v| v.iter())
        .any(|x| Some(*x) != first)
}

impl PlanOverEpochs {
    /// From the first run of each group; groups whose plan never varies (the uniform baselines)
    /// are left out; an error when none is left.
    pub fn new(c: &Comparison, runs: &[RunResults]) -> Result<Self> {
        let mut methods = Vec::new();
        let mut parts: Vec<usize> = Vec::new();
        let mut class_names = Vec::new();
        for (name, run, log) in first_logs(c, runs) {
            let plans: Vec<_> = log.epochs.iter().map(|e| e.plan.clone()).collect();
            let changing: Vec<usize> = (0..PLAN_PARTS.len())
                .filter(|&i| varies(&plans.iter().map(PLAN_PARTS[i].1).collect::<Vec<_>>()))
                .collect();
            if changing.is_empty() {
                continue;
            }
            for i in changing {
                if !parts.contains(&i) {
                    parts.push(i);
                }
            }
            class_names = log.class_names.clone();
            methods.push(PlanRun {
                method: name,
                run: run.input.dir.display().to_string(),
                rule: log
                    .epochs
                    .last()
                    .map(|e| e.rule.clone())
                    .unwrap_or_default(),
                epochs: log.epochs.iter().map(|e| (e.epoch + 1) as f64).collect(),
                plans,
            });
        }
        if methods.is_empty() {
            return Err(invalid(
                "runs",
                "every plan uniform",
                "a run whose class-wise rule (CFA, WAT, FRL, CSL, class-β) changes ε_k, β_k or \
                 the class weights",
            ));
        }
        parts.sort_unstable();
        Ok(PlanOverEpochs {
            class_names,
            methods,
            parts,
        })
    }
}

impl Figure for PlanOverEpochs {
    fn id(&self) -> &'static str {
        "compare-plan-over-epochs"
    }

    fn title(&self) -> String {
        "The class-wise plan of each rule over the epochs".into()
    }

    fn reproduces(&self) -> &'static str {
        "CFA Fig. 5b: the class-wise calibrated margins ε_k during training (and the class \
         weights of WAT, FRL and CSL the same way)"
    }

    fn look_at(&self) -> &'static str {
        "Which classes the rule gives a smaller budget or a larger weight (CFA: the hard classes \
         get the smaller ε_k), and whether the plan settles or keeps moving."
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
                "method",
                "run",
                "rule",
                "epoch",
                "class",
                "eps",
                "beta",
                "natural_weight",
                "boundary_weight",
            ],
        );
        for m in &self.methods {
            for (e, p) in m.epochs.iter().zip(&m.plans) {
                for c in 0..p.eps.len() {
                    t.push(vec![
                        Cell::from(m.method.as_str()),
                        Cell::from(m.run.as_str()),
                        Cell::from(m.rule.as_str()),
                        Cell::from(*e as usize),
                        Cell::from(c),
                        Cell::from(p.eps[c]),
                        Cell::from(p.beta[c]),
                        Cell::from(p.natural_weight[c]),
                        Cell::from(p.boundary_weight[c]),
                    ])
                    .expect("nine cells");
                }
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        self.methods
            .iter()
            .flat_map(|_| self.parts.iter().flat_map(|&i| ["epoch", PLAN_PARTS[i].0]))
            .map(String::from)
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let lines = ClassLines::new(self.class_names.len());
        let (plot, strip) = legend::split(area, lines.legend_rows(false));
        let panels = plot.split_evenly((self.methods.len(), self.parts.len()));
        for (r, m) in self.methods.iter().enumerate() {
            let last = m.epochs.last().copied().unwrap_or(1.0);
            for (col, &i) in self.parts.iter().enumerate() {
                let (desc, pick) = PLAN_PARTS[i];
                let y = style::padded(m.plans.iter().flat_map(|p| pick(p).iter().copied()), 0.08);
                let caption = format!("{} (rule {})", m.method, m.rule);
                let mut chart = style::chart(
                    &panels[r * self.parts.len() + col],
                    &caption,
                    0.5..last + 0.5,
                    y,
                )?;
                style::mesh_with(
                    &mut chart,
                    "epoch",
                    desc,
                    &style::tick_whole,
                    &style::tick_plain,
                )?;
                for c in 0..self.class_names.len() {
                    let pts: Vec<(f64, f64)> = m
                        .epochs
                        .iter()
                        .zip(&m.plans)
                        .map(|(e, p)| (*e, pick(p)[c]))
                        .collect();
                    lines.draw(&mut chart, &pts, c)?;
                }
            }
        }
        lines.legend(&strip, &self.class_names, Vec::<Entry>::new())
    }
}
