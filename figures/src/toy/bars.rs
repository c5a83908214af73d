//! The multi-class toy (K Gaussian classes of increasing difficulty, CFA eq. (5) generalised):
//! class-wise robust test accuracy of the last iterate of every method of [`super::METHODS`]
//! as grouped bars, then each method's worst class and class mean (the fairness measures of
//! CFA Table 1 and WAT Table 1).

use classwise_toy::multiclass::{RunReport, ToyData};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{MulticlassRuns, Options};
use crate::bars::{self, BarLayout, BarSeries};
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

const AXES: [&str; 2] = [
    "class k (robust-feature reliability p_k, noise σ_k), then the worst class and the class mean",
    "robust test accuracy (exact ℓ∞ attack)",
];
/// Colours of the methods, in [`super::METHODS`] order (grey for natural training).
const COLORS: [RGBColor; 8] = [
    RGBColor(170, 170, 170),
    style::PALETTE[1],
    style::PALETTE[2],
    style::PALETTE[3],
    style::PALETTE[4],
    style::PALETTE[5],
    style::PALETTE[6],
    style::PALETTE[7],
];

/// One method's bars.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodBars {
    pub name: String,
    /// The run's label, e.g. `cfa/trades`.
    pub label: String,
    pub per_class: Vec<f64>,
    pub worst_class: usize,
    pub worst: f64,
    pub class_mean: f64,
}

/// The grouped bars of the multi-class toy.
pub struct MulticlassBars {
    pub data: ToyData,
    pub epochs: usize,
    pub epsilon: f64,
    pub methods: Vec<MethodBars>,
}

impl MulticlassBars {
    /// Runs every method (see [`MulticlassRuns::new`]).
    pub fn new(options: &Options) -> Result<Self> {
        Self::from_runs(&MulticlassRuns::new(options)?)
    }

    /// The bars of finished runs (all on the same toy data).
    pub fn from_runs(runs: &MulticlassRuns) -> Result<Self> {
        let first: &RunReport = &runs
            .runs
            .first()
            .ok_or_else(|| invalid("runs", 0, "at least one run"))?
            .2;
        let methods = runs
            .runs
            .iter()
            .map(|(_, name, r)| {
                let robust = &r.final_model.robust;
                MethodBars {
                    name: (*name).to_owned(),
                    label: r.label.clone(),
                    per_class: robust.per_class.clone(),
                    worst_class: robust.worst.class,
                    worst: robust.worst.value,
                    class_mean: robust.class_mean,
                }
            })
            .collect();
        Ok(MulticlassBars {
            data: first.config.data.clone(),
            epochs: first.config.epochs,
            epsilon: first.config.epsilon,
            methods,
        })
    }

    fn k(&self) -> usize {
        self.data.n_classes
    }

    /// The values of group `g` (classes, then worst, then mean) for method `m`.
    fn value(&self, m: &MethodBars, g: usize) -> f64 {
        match g.checked_sub(self.k()) {
            None => m.per_class[g],
            Some(0) => m.worst,
            Some(_) => m.class_mean,
        }
    }
}

impl Figure for MulticlassBars {
    fn id(&self) -> &'static str {
        "toy-multiclass-bars"
    }

    fn title(&self) -> String {
        format!(
            "Multi-class toy: class-wise robust test accuracy of each method (ε = {}, {} epochs)",
            self.epsilon, self.epochs
        )
    }

    fn reproduces(&self) -> &'static str {
        "The class-wise robust accuracy bars of CFA Fig. 2/Table 1 and WAT Table 1, on the \
         multi-class toy: natural, PGD-AT, TRADES, FAT, CFA on AT and TRADES, WAT, FRL"
    }

    fn look_at(&self) -> &'static str {
        "Every adversarially trained method is most robust on the easy class 0 and least on the \
         hard classes 3-4 (the outlined bar is each method's worst class); compare the \
         worst-class group with the class-mean group to see which methods trade average \
         robustness for the worst class."
    }

    fn tables(&self) -> Vec<Table> {
        let mut header = vec!["method".to_owned(), "label".to_owned()];
        header.extend((0..self.k()).map(|k| format!("class_{k}")));
        header.extend(["worst_class", "worst", "class_mean"].map(String::from));
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new("", &h);
        for m in &self.methods {
            let mut row = vec![Cell::from(m.name.as_str()), Cell::from(m.label.as_str())];
            row.extend(m.per_class.iter().map(|&v| Cell::from(v)));
            row.extend([
                Cell::from(m.worst_class),
                Cell::from(m.worst),
                Cell::from(m.class_mean),
            ]);
            t.push(row).expect("one cell per column");
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn size(&self) -> (u32, u32) {
        (1600, 820)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (plot, strip) = legend::split(area, 2);
        let groups = self.k() + 2;
        let values = self
            .methods
            .iter()
            .flat_map(|m| (0..groups).map(|g| (self.value(m, g), 0.0)));
        // Truncated (and stated in the caption) only when every bar is close to the others.
        let axis = bars::accuracy_range(values);
        let labels = (0..groups)
            .map(|g| match g.checked_sub(self.k()) {
                None => (
                    format!(
                        "class {g}{}",
                        if g == 0 {
                            " (easiest)"
                        } else if g + 1 == self.k() {
                            " (hardest)"
                        } else {
                            ""
                        }
                    ),
                    format!(
                        "p = {}, σ = {}",
                        self.data.reliability.get(g).copied().unwrap_or(f64::NAN),
                        self.data.noise.get(g).copied().unwrap_or(f64::NAN)
                    ),
                ),
                Some(0) => ("worst class".to_owned(), "(outlined bar)".to_owned()),
                Some(_) => ("class mean".to_owned(), String::new()),
            })
            .collect();
        let series: Vec<BarSeries> = self
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| BarSeries {
                color: COLORS[i % COLORS.len()],
                values: (0..groups).map(|g| self.value(m, g)).collect(),
                errors: None,
                lower: None,
                outlined: Some(m.worst_class),
            })
            .collect();
        bars::draw_grouped(
            &plot,
            &BarLayout {
                caption: format!(
                    "last iterate of each run; {} test points per class{}",
                    self.data.n_test,
                    bars::truncation_note(&axis)
                ),
                axes: AXES,
                labels,
                separator_after: Some(self.k()),
                y: axis.0,
            },
            &series,
        )?;
        let entries: Vec<Entry> = self
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| Entry::boxed(COLORS[i % COLORS.len()], m.name.clone()))
            .collect();
        let half = entries.len().div_ceil(2);
        legend::draw_rows(
            &strip,
            &[entries[..half].to_vec(), entries[half..].to_vec()],
        )
    }
}
