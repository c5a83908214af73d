//! Per-class diagnostics of the papers' analyses, as grouped bars of each method:
//!
//! * [`ATTACK_STEPS`]: the attack steps each source class needed before its images were
//!   misclassified, and each class's share of the misclassified predictions, the target-class
//!   distribution (BAT §3, Fig. 2b), from `classwise eval --attack flip-steps`;
//! * [`CVC`]: the class-wise variance of confidence (Tian et al. Def. 5.1, Fig. 3a), which every
//!   PGD evaluation report carries.

use std::ops::Range;

use classwise_core::aggregate::MeanStd;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::figures::{Method, Selection, method_entries};
use super::load::AttackKey;
use super::stats::{Comparison, Stats};
use crate::bars::{self, BarLayout, BarSeries};
use crate::error::{Result, invalid};
use crate::legend;
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

/// Reads a per-class list of a method's [`Stats`].
type Pick = fn(&Stats) -> Option<&Vec<MeanStd>>;

/// One panel: the quantity on the y axis and where it is read.
#[derive(Debug)]
pub struct Panel {
    /// The y axis, e.g. `mean attack steps to misclassification`.
    pub y: &'static str,
    /// The column name in the CSV.
    pub column: &'static str,
    pub pick: Pick,
    /// The top of the y axis for a method's statistics (`None`: from the data).
    pub top: Option<fn(&Stats) -> f64>,
}

/// What a [`ClassDiagnostic`] draws.
#[derive(Debug)]
pub struct Diagnostic {
    pub id: &'static str,
    pub title: &'static str,
    pub reproduces: &'static str,
    pub look_at: &'static str,
    pub panels: &'static [Panel],
    /// Why a comparison may lack it (for the list of figures not drawn).
    pub needs: &'static str,
    /// The first panel's caption, from the evaluation drawn.
    pub caption: fn(&AttackKey) -> String,
}

/// BAT Fig. 2b.
pub const ATTACK_STEPS: Diagnostic = Diagnostic {
    id: "compare-attack-steps",
    title: "Source-class and target-class fairness: attack steps and target classes",
    reproduces: "BAT Fig. 2b: the average number of attack steps per source class and the \
                 distribution of the target classes",
    look_at: "Whether the classes that need the fewest steps to be misclassified are the least \
              robust ones, and whether the misclassified images land mostly in those same \
              classes (BAT: the target distribution is far from uniform and inversely related \
              to the class's robustness).",
    panels: &[
        Panel {
            y: "mean attack steps to misclassification",
            column: "steps",
            pick: |s| s.flip_steps.as_ref(),
            top: Some(|s| s.max_steps.unwrap_or(1) as f64),
        },
        Panel {
            y: "share of the misclassified predictions",
            column: "target_share",
            pick: |s| s.target_share.as_ref(),
            top: None,
        },
    ],
    needs: "an evaluation with attack steps in every group (`classwise eval --attack \
            flip-steps`)",
    caption: |k| k.describe(),
};

/// Tian et al. Fig. 3a.
pub const CVC: Diagnostic = Diagnostic {
    id: "compare-cvc",
    title: "Class-wise variance of confidence (CVC) on the clean test images",
    reproduces: "Tian et al. Fig. 3a and Table 2: the class-wise variance of confidence of each \
                 defence",
    look_at: "Whether the least robust classes have the smallest CVC, i.e. the flattest \
              softmax (Tian et al.: their images lie near the decision boundary), and how the \
              methods compare overall.",
    panels: &[Panel {
        y: "CVC (variance of the softmax vector)",
        column: "cvc",
        pick: |s| s.cvc.as_ref(),
        top: None,
    }],
    needs: "an evaluation report with `cvc` in every group (every `classwise train` and \
            `classwise eval` report written since CVC was added; not AutoAttack's)",
    caption: |k| {
        format!(
            "the clean images of the evaluation on {} images (the attack plays no part)",
            k.n_samples
        )
    },
};

/// A [`Diagnostic`] of the methods of a comparison.
#[derive(Debug, PartialEq)]
pub struct ClassDiagnostic {
    pub what: &'static Diagnostic,
    pub selection: Selection,
}

impl PartialEq for Diagnostic {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl ClassDiagnostic {
    /// The methods of `c` evaluated as `model` under the first evaluation (the `preferred` one
    /// first) whose statistics have every panel's list in every group; an error naming what
    /// is missing otherwise.
    pub fn new(
        c: &Comparison,
        model: &str,
        preferred: Option<&AttackKey>,
        what: &'static Diagnostic,
    ) -> Result<Self> {
        let has = |k: &AttackKey| {
            c.groups.iter().all(|g| {
                g.get(model, k)
                    .is_some_and(|s| what.panels.iter().all(|p| (p.pick)(s).is_some()))
            })
        };
        let key = preferred
            .into_iter()
            .chain(&c.keys)
            .find(|k| has(k))
            .ok_or_else(|| invalid(format!("model `{model}`"), "no such evaluation", what.needs))?;
        Ok(ClassDiagnostic {
            what,
            selection: Selection::new(c, model, key)?,
        })
    }

    /// The bars of `p`, one series per method; one run has no standard deviation to draw.
    fn series(&self, p: &Panel) -> Vec<BarSeries> {
        self.selection
            .methods
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let (values, errors) = self.values(m, p);
                BarSeries {
                    color: style::color(j),
                    outlined: None,
                    values,
                    errors: (m.stats.runs.len() > 1).then_some(errors),
                    lower: None,
                }
            })
            .collect()
    }

    /// The y axis of panel `panel`: from 0 to the panel's fixed top (e.g. the attack's step
    /// count) or, without one, a tenth above the highest error bar; never below any bar's top.
    pub fn y_range(&self, panel: usize) -> Range<f64> {
        let p = &self.what.panels[panel];
        let data_top = self
            .series(p)
            .iter()
            .flat_map(BarSeries::bars)
            .map(|(v, e)| v + e)
            .fold(0.0, f64::max);
        let top = match p.top {
            Some(top) => self
                .selection
                .methods
                .iter()
                .map(|m| top(&m.stats))
                .fold(data_top, f64::max),
            None => data_top * 1.1,
        };
        0.0..top.max(1e-9)
    }

    fn values(&self, m: &Method, p: &Panel) -> (Vec<f64>, Vec<f64>) {
        let v = (p.pick)(&m.stats).expect("checked in new");
        (
            v.iter().map(|x| x.mean).collect(),
            v.iter().map(|x| x.std.unwrap_or(0.0)).collect(),
        )
    }
}

impl Figure for ClassDiagnostic {
    fn id(&self) -> &'static str {
        self.what.id
    }

    fn title(&self) -> String {
        format!("{} (model `{}`)", self.what.title, self.selection.model)
    }

    fn reproduces(&self) -> &'static str {
        self.what.reproduces
    }

    fn look_at(&self) -> &'static str {
        self.what.look_at
    }

    fn size(&self) -> (u32, u32) {
        (1600, 560 * self.what.panels.len() as u32 + 120)
    }

    fn tables(&self) -> Vec<Table> {
        let mut header = vec!["method", "class", "name"];
        for p in self.what.panels {
            header.push(p.column);
            header.push("std");
        }
        header.push("n");
        let mut t = Table::new("", &header);
        for m in &self.selection.methods {
            let columns: Vec<_> = self.what.panels.iter().map(|p| self.values(m, p)).collect();
            for (c, name) in self.selection.class_names.iter().enumerate() {
                let mut row = vec![
                    Cell::from(m.name.as_str()),
                    Cell::from(c),
                    Cell::from(name.as_str()),
                ];
                for (v, e) in &columns {
                    row.push(Cell::from(v[c]));
                    row.push(Cell::from(e[c]));
                }
                row.push(Cell::from(m.stats.runs.len()));
                t.push(row).expect("one cell per column");
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        self.what
            .panels
            .iter()
            .flat_map(|p| ["class", p.y])
            .map(String::from)
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let legend_rows = legend::wrap(area, vec![method_entries(&self.selection.methods)]);
        let (plot, strip) = legend::split(area, legend_rows.len());
        let rows = plot.split_evenly((self.what.panels.len(), 1));
        for (i, (p, row)) in self.what.panels.iter().zip(&rows).enumerate() {
            let text = if i == 0 {
                (self.what.caption)(&self.selection.key)
            } else {
                p.y.to_owned()
            };
            // Panels are lettered when there are several.
            let caption = match self.what.panels.len() {
                1 => text,
                _ => format!("({}) {text}", (b'a' + i as u8) as char),
            };
            bars::draw_grouped(
                row,
                &BarLayout {
                    caption,
                    axes: ["class", p.y],
                    labels: self.selection.class_labels(),
                    separator_after: None,
                    y: self.y_range(i),
                },
                &self.series(p),
            )?;
        }
        legend::draw_rows(&strip, &legend_rows)
    }
}
