//! Class-wise robust accuracy bars of every method, then the worst class and the average (CFA
//! Fig. 6, WAT Fig. 2).

use std::ops::Range;

use classwise_core::aggregate::MeanStd;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Method, Selection, method_entries};
use crate::bars::{self, BarLayout, BarSeries};
use crate::compare::load::AttackKey;
use crate::compare::stats::Comparison;
use crate::error::Result;
use crate::legend;
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

/// Class-wise robust accuracy bars of every method (CFA Fig. 6, WAT Fig. 2).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassBars(pub Selection);

/// The worst class of per-class means.
fn argmin(v: &[f64]) -> usize {
    v.iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i)
}

fn std_or_zero(m: &MeanStd) -> f64 {
    m.std.unwrap_or(0.0)
}

impl ClassBars {
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        Selection::new(c, model, key).map(ClassBars)
    }

    /// Per class, then the worst class (mean over seeds of each run's worst) and the average.
    fn values(&self, m: &Method) -> (Vec<f64>, Vec<f64>) {
        let s = &m.stats;
        let mut v: Vec<f64> = s.robust_per_class.iter().map(|x| x.mean).collect();
        let mut e: Vec<f64> = s.robust_per_class.iter().map(std_or_zero).collect();
        for name in ["robust_worst", "robust_avg"] {
            v.push(s.get(name).mean);
            e.push(std_or_zero(&s.get(name)));
        }
        (v, e)
    }

    /// The bars of each method; one run has no standard deviation to draw.
    fn series(&self) -> Vec<BarSeries> {
        let k = self.0.class_names.len();
        self.0
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let (values, errors) = self.values(m);
                BarSeries {
                    color: style::color(i),
                    outlined: Some(argmin(&values[..k])),
                    values,
                    errors: (m.stats.runs.len() > 1).then_some(errors),
                    lower: None,
                }
            })
            .collect()
    }

    /// The y axis drawn, and whether it starts above 0 ([`bars::accuracy_range`] over every bar
    /// and its error bar, as drawn).
    pub fn y_range(&self) -> (Range<f64>, bool) {
        bars::accuracy_range(self.series().iter().flat_map(BarSeries::bars))
    }

    /// Two lines under each group: the class index and name, then the worst class and the
    /// average.
    fn labels(&self) -> Vec<(String, String)> {
        let mut labels = self.0.class_labels();
        labels.push(("worst".into(), "class".into()));
        labels.push(("average".into(), String::new()));
        labels
    }
}

const BAR_AXES: [&str; 2] = [
    "class, then the worst class and the average",
    "robust accuracy on the test set",
];

impl Figure for ClassBars {
    fn id(&self) -> &'static str {
        "compare-class-bars"
    }

    fn title(&self) -> String {
        format!(
            "Robust accuracy per class of each method (model `{}`)",
            self.0.model
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Fig. 6 and WAT Fig. 2: class-wise robust accuracy of the methods compared"
    }

    fn look_at(&self) -> &'static str {
        "Which classes each method gains or loses on, whether the worst class (outlined) is the \
         same for every method, and what the worst-class gain costs in average robustness; \
         error bars are one standard deviation over seeds."
    }

    fn size(&self) -> (u32, u32) {
        (1600, 820)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("", &["method", "group", "class", "mean", "std", "n"]);
        let k = self.0.class_names.len();
        for m in &self.0.methods {
            let (v, e) = self.values(m);
            for (g, (value, err)) in v.iter().zip(&e).enumerate() {
                let label = match g.checked_sub(k) {
                    None => self.0.class_names[g].clone(),
                    Some(0) => "worst class".into(),
                    Some(_) => "average".into(),
                };
                t.push(vec![
                    Cell::from(m.name.as_str()),
                    Cell::from(g),
                    Cell::from(label),
                    Cell::from(*value),
                    Cell::from(*err),
                    Cell::from(m.stats.runs.len()),
                ])
                .expect("six cells");
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        BAR_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let rows = legend::wrap(area, vec![method_entries(&self.0.methods)]);
        let (plot, strip) = legend::split(area, rows.len());
        let axis = self.y_range();
        let caption = format!(
            "{}{}; worst class of the means outlined",
            self.0.key.describe(),
            bars::truncation_note(&axis)
        );
        bars::draw_grouped(
            &plot,
            &BarLayout {
                caption,
                axes: BAR_AXES,
                labels: self.labels(),
                separator_after: Some(self.0.class_names.len()),
                y: axis.0,
            },
            &self.series(),
        )?;
        legend::draw_rows(&strip, &rows)
    }
}
