//! Robust error per class of every method, split into standard error and boundary error (BAT
//! Fig. 5, FRL's decomposition).

use std::ops::Range;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{Method, Selection};
use crate::bars::{self, BarLayout, BarSeries};
use crate::compare::load::AttackKey;
use crate::compare::stats::Comparison;
use crate::error::Result;
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

/// Robust error per class split into standard error (lighter, below) and boundary error (BAT
/// Fig. 5, FRL's decomposition).
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorBars(pub Selection);

impl ErrorBars {
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        Selection::new(c, model, key).map(ErrorBars)
    }

    /// (standard error, robust error) per class, means over seeds.
    fn errors(m: &Method) -> (Vec<f64>, Vec<f64>) {
        let s = &m.stats;
        (
            s.clean_per_class.iter().map(|c| 1.0 - c.mean).collect(),
            s.robust_per_class.iter().map(|r| 1.0 - r.mean).collect(),
        )
    }

    /// One bar per class of each method: the robust error, its standard part lighter, the
    /// worst class outlined.
    fn series(&self) -> Vec<BarSeries> {
        self.0
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let (std_err, rob_err) = Self::errors(m);
                let worst = rob_err
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .map(|(c, _)| c);
                BarSeries {
                    color: style::color(i),
                    values: rob_err,
                    errors: None,
                    lower: Some(std_err),
                    outlined: worst,
                }
            })
            .collect()
    }

    /// The y axis drawn: from 0 (a bar is the sum of its two parts) to above the largest robust
    /// error ([`bars::from_zero`]).
    pub fn y_range(&self) -> Range<f64> {
        bars::from_zero(self.series().iter().flat_map(|s| s.values.clone()), 0.05)
    }

    /// The legend: the light (standard error) and the full-colour (boundary error) box of each
    /// method, one row each.
    fn legend_rows(&self) -> [Vec<Entry>; 2] {
        let methods = self.0.methods.iter().enumerate();
        let light = methods.clone().map(|(i, m)| {
            Entry::boxed(
                style::tint(style::color(i), bars::LOWER_TINT),
                format!("{}: standard error", m.name),
            )
        });
        let dark = methods
            .map(|(i, m)| Entry::boxed(style::color(i), format!("{}: + boundary error", m.name)));
        [light.collect(), dark.collect()]
    }
}

const ERROR_AXES: [&str; 2] = ["class", "error on the test set"];

impl Figure for ErrorBars {
    fn id(&self) -> &'static str {
        "compare-class-errors"
    }

    fn title(&self) -> String {
        format!(
            "Standard and boundary error per class of each method (model `{}`)",
            self.0.model
        )
    }

    fn reproduces(&self) -> &'static str {
        "BAT Fig. 5 (and FRL's decomposition): robust error = standard error (light) + boundary \
         error (dark) per class"
    }

    fn look_at(&self) -> &'static str {
        "Whether a method lowers the worst class's robust error by fixing its clean mistakes \
         (the light part) or its boundary errors (the dark part)."
    }

    fn size(&self) -> (u32, u32) {
        (1600, 820)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &["method", "class", "name", "standard", "boundary", "robust"],
        );
        for m in &self.0.methods {
            let (std_err, rob_err) = Self::errors(m);
            for (c, name) in self.0.class_names.iter().enumerate() {
                t.push(vec![
                    Cell::from(m.name.as_str()),
                    Cell::from(c),
                    Cell::from(name.as_str()),
                    Cell::from(std_err[c]),
                    Cell::from(rob_err[c] - std_err[c]),
                    Cell::from(rob_err[c]),
                ])
                .expect("six cells");
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        ERROR_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let rows = legend::wrap(area, self.legend_rows().into());
        let (plot, strip) = legend::split(area, rows.len());
        bars::draw_grouped(
            &plot,
            &BarLayout {
                caption: format!(
                    "{}; each bar: standard error (light) under boundary error (full colour); \
                     the worst class outlined",
                    self.0.key.describe()
                ),
                axes: ERROR_AXES,
                labels: self.0.class_labels(),
                separator_after: None,
                y: self.y_range(),
            },
            &self.series(),
        )?;
        legend::draw_rows(&strip, &rows)
    }
}
