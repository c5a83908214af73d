//! The papers' class-wise figures, drawn from a [`Comparison`] of run directories:
//!
//! * [`ClassBars`]: robust accuracy per class of each method, with the worst class and the mean
//!   (CFA Fig. 6, WAT Fig. 2);
//! * [`Radar`]: the same per-class robust accuracies on a radar chart (WAT Figs. 4-6);
//! * [`ErrorBars`]: robust error per class split into standard and boundary error (BAT Fig. 5);
//! * [`Confusion`]: the confusion matrix under attack of each method, row-normalised (Tian et
//!   al. Fig. 2) or as misclassified counts (Tian et al. Fig. 4a).
//!
//! The figures over the epochs are in [`epochs`](super::epochs), those against a swept
//! parameter in [`param`](super::param).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::load::AttackKey;
use super::stats::{Comparison, Stats};
use crate::bars::{self, BarLayout, BarSeries};
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

/// One method (group) of a figure: its name and statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Method {
    pub name: String,
    pub stats: Stats,
}

/// What the per-class figures show: every method (group) of a comparison evaluated as `model`
/// under `key`.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    pub model: String,
    pub key: AttackKey,
    pub class_names: Vec<String>,
    pub methods: Vec<Method>,
}

impl Selection {
    /// The methods of `c` in group order; an error when one lacks that evaluation.
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        let methods = c
            .groups
            .iter()
            .map(|g| {
                g.get(model, key)
                    .map(|s| Method {
                        name: g.name.clone(),
                        stats: s.clone(),
                    })
                    .ok_or_else(|| {
                        invalid(
                            format!("group {}", g.name),
                            format!("no `{model}` evaluation {}", key.describe()),
                            "the same evaluation in every group compared",
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Selection {
            model: model.to_owned(),
            key: key.clone(),
            class_names: c
                .groups
                .first()
                .map(|g| g.class_names.clone())
                .unwrap_or_default(),
            methods,
        })
    }
}

/// The worst class of per-class means.
fn argmin(v: &[f64]) -> usize {
    v.iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i)
}

fn std_or_zero(m: &classwise_core::aggregate::MeanStd) -> f64 {
    m.std.unwrap_or(0.0)
}

/// Class-wise robust accuracy bars of every method (CFA Fig. 6, WAT Fig. 2).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassBars(pub Selection);

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
        let (plot, strip) = legend::split(area, 1);
        let k = self.0.class_names.len();
        let series: Vec<BarSeries> = self
            .0
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let (values, errors) = self.values(m);
                BarSeries {
                    color: style::color(i),
                    outlined: Some(argmin(&values[..k])),
                    values,
                    // One run has no standard deviation to draw.
                    errors: (m.stats.runs.len() > 1).then_some(errors),
                    lower: None,
                }
            })
            .collect();
        let (y, truncated) = bars::accuracy_range(
            series
                .iter()
                .flat_map(|s| s.values.iter().zip(s.errors.iter().flatten()))
                .flat_map(|(v, e)| [v - e, v + e]),
        );
        let mut labels: Vec<(String, String)> = self
            .0
            .class_names
            .iter()
            .enumerate()
            .map(|(c, n)| (c.to_string(), n.clone()))
            .collect();
        labels.push(("worst".into(), "class".into()));
        labels.push(("average".into(), String::new()));
        let caption = format!(
            "{}{}; worst class of the means outlined",
            self.0.key.describe(),
            if truncated {
                format!("; the y axis starts at {}", y.start)
            } else {
                String::new()
            }
        );
        bars::draw_grouped(
            &plot,
            &BarLayout {
                caption,
                axes: BAR_AXES,
                labels,
                separator_after: Some(k),
                y,
            },
            &series,
        )?;
        legend::draw_rows(&strip, &[method_entries(&self.0.methods)])
    }
}

pub(crate) fn method_entries(methods: &[Method]) -> Vec<Entry> {
    methods
        .iter()
        .enumerate()
        .map(|(i, m)| {
            Entry::boxed(
                style::color(i),
                format!(
                    "{} ({} run{})",
                    m.name,
                    m.stats.runs.len(),
                    plural(m.stats.runs.len())
                ),
            )
        })
        .collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

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
        let (plot, strip) = legend::split(area, 2);
        let series: Vec<BarSeries> = self
            .0
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
            .collect();
        let top = series
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .fold(0.0f64, f64::max);
        let labels = self
            .0
            .class_names
            .iter()
            .enumerate()
            .map(|(c, n)| (c.to_string(), n.clone()))
            .collect();
        bars::draw_grouped(
            &plot,
            &BarLayout {
                caption: format!(
                    "{}; each bar: standard error (light) under boundary error (full colour); \
                     the worst class outlined",
                    self.0.key.describe()
                ),
                axes: ERROR_AXES,
                labels,
                separator_after: None,
                y: 0.0..((top + 0.05) * 10.0).ceil().min(10.0) / 10.0,
            },
            &series,
        )?;
        let light: Vec<Entry> = self
            .0
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| {
                Entry::boxed(
                    style::tint(style::color(i), bars::LOWER_TINT),
                    format!("{}: standard error", m.name),
                )
            })
            .collect();
        let dark: Vec<Entry> = self
            .0
            .methods
            .iter()
            .enumerate()
            .map(|(i, m)| Entry::boxed(style::color(i), format!("{}: + boundary error", m.name)))
            .collect();
        legend::draw_rows(&strip, &[light, dark])
    }
}

const RADAR_AXES: [&str; 2] = ["spokes: classes", "radius: robust accuracy"];

/// The per-class robust accuracies of every method on a radar chart (WAT Figs. 4-6).
#[derive(Clone, Debug, PartialEq)]
pub struct Radar(pub Selection);

impl Radar {
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        Selection::new(c, model, key).map(Radar)
    }

    /// The outer ring: the largest accuracy rounded up to a tenth.
    fn outer(&self) -> f64 {
        let top = self
            .0
            .methods
            .iter()
            .flat_map(|m| m.stats.robust_per_class.iter().map(|x| x.mean))
            .fold(0.0f64, f64::max);
        ((top * 10.0).ceil() / 10.0).clamp(0.1, 1.0)
    }
}

impl Figure for Radar {
    fn id(&self) -> &'static str {
        "compare-radar"
    }

    fn title(&self) -> String {
        format!(
            "Robust accuracy per class of each method, radar chart (model `{}`)",
            self.0.model
        )
    }

    fn reproduces(&self) -> &'static str {
        "WAT Figs. 4-6: class-wise robust accuracy of the methods as radar charts"
    }

    fn look_at(&self) -> &'static str {
        "A fairer method has a rounder polygon: look at the dents (the weak classes) and whether \
         a method fills them without shrinking the other spokes."
    }

    fn size(&self) -> (u32, u32) {
        (1200, 1000)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("", &["method", "class", "name", "robust_mean"]);
        for m in &self.0.methods {
            for (c, name) in self.0.class_names.iter().enumerate() {
                t.push(vec![
                    Cell::from(m.name.as_str()),
                    Cell::from(c),
                    Cell::from(name.as_str()),
                    Cell::from(m.stats.robust_per_class[c].mean),
                ])
                .expect("four cells");
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        RADAR_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (plot, strip) = legend::split(area, 1);
        let (w, h) = plot.dim_in_pixel();
        let caption_h = 40;
        plot.draw(&Text::new(
            format!(
                "{}; {}, {} (rings every 0.1 up to {:.1})",
                self.0.key.describe(),
                RADAR_AXES[0],
                RADAR_AXES[1],
                self.outer()
            ),
            (w as i32 / 2, 8),
            style::caption_font().pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
        let center = (w as i32 / 2, caption_h + (h as i32 - caption_h) / 2);
        let radius = ((w.min(h) as i32 - caption_h) / 2 - 90).max(40) as f64;
        let k = self.0.class_names.len().max(1);
        let outer = self.outer();
        let at = |c: usize, r: f64| {
            let angle =
                std::f64::consts::FRAC_PI_2 - 2.0 * std::f64::consts::PI * c as f64 / k as f64;
            let rr = radius * (r / outer).clamp(0.0, 1.0);
            (
                center.0 + (rr * angle.cos()).round() as i32,
                center.1 - (rr * angle.sin()).round() as i32,
            )
        };
        let grid = style::REFERENCE.mix(0.35).stroke_width(1);
        let rings = (outer * 10.0).round() as usize;
        for ring in 1..=rings {
            let r = ring as f64 / 10.0;
            let mut pts: Vec<(i32, i32)> = (0..k).map(|c| at(c, r)).collect();
            pts.push(pts[0]);
            plot.draw(&PathElement::new(pts, grid))?;
            // Along the first spoke, left of it (the class names sit beyond the outer ring).
            plot.draw(&Text::new(
                format!("{r:.1}"),
                {
                    let p = at(0, r);
                    (p.0 - 6, p.1 + 2)
                },
                style::tick_font().pos(Pos::new(HPos::Right, VPos::Top)),
            ))?;
        }
        for (c, name) in self.0.class_names.iter().enumerate() {
            plot.draw(&PathElement::new(vec![center, at(c, outer)], grid))?;
            let (x, y) = at(c, outer * 1.1);
            let h = if x < center.0 - 5 {
                HPos::Right
            } else if x > center.0 + 5 {
                HPos::Left
            } else {
                HPos::Center
            };
            plot.draw(&Text::new(
                format!("{c} {name}"),
                (x, y),
                style::tick_font().pos(Pos::new(h, VPos::Center)),
            ))?;
        }
        for (i, m) in self.0.methods.iter().enumerate() {
            let mut pts: Vec<(i32, i32)> = m
                .stats
                .robust_per_class
                .iter()
                .enumerate()
                .map(|(c, x)| at(c, x.mean))
                .collect();
            pts.push(pts[0]);
            let color = style::color(i);
            plot.draw(&Polygon::new(pts.clone(), color.mix(0.12).filled()))?;
            plot.draw(&PathElement::new(
                pts.clone(),
                color.stroke_width(style::STROKE),
            ))?;
            for p in &pts {
                plot.draw(&Circle::new(*p, 5, color.filled()))?;
            }
        }
        legend::draw_rows(&strip, &[method_entries(&self.0.methods)])
    }
}

/// Which matrix of the reports a [`Confusion`] figure draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfusionKind {
    /// The confusion matrix under attack, each row normalised (Tian et al. Fig. 2).
    RowNormalised,
    /// The confusion counts under attack with the diagonal hidden (Tian et al. Fig. 4a, the
    /// "misclassified confusion matrix").
    Misclassified,
}

/// A confusion matrix under attack of every method, the mean over each method's seeds: row
/// normalised (Tian et al. Fig. 2) or the misclassified counts (Tian et al. Fig. 4a).
#[derive(Clone, Debug, PartialEq)]
pub struct Confusion {
    pub kind: ConfusionKind,
    pub model: String,
    pub key: AttackKey,
    pub class_names: Vec<String>,
    /// (method, matrix): fractions of the row, or counts.
    pub methods: Vec<(String, Vec<Vec<f64>>)>,
}

impl Confusion {
    /// Fails when a method's reports have no confusion counts.
    pub fn new(c: &Comparison, model: &str, key: &AttackKey, kind: ConfusionKind) -> Result<Self> {
        let selection = Selection::new(c, model, key)?;
        let methods = selection
            .methods
            .into_iter()
            .map(|m| {
                let matrix = match kind {
                    ConfusionKind::RowNormalised => m.stats.confusion,
                    ConfusionKind::Misclassified => m.stats.misclassified,
                };
                match matrix {
                    Some(matrix) => Ok((m.name, matrix)),
                    None => Err(invalid(
                        format!("group {}", m.name),
                        format!("`{model}` {} without confusion counts", key.describe()),
                        "reports with confusion_under_attack (written by `classwise train` and \
                         `classwise eval`)",
                    )),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Confusion {
            kind,
            model: selection.model,
            key: selection.key,
            class_names: selection.class_names,
            methods,
        })
    }

    fn cells(&self) -> MatrixCells {
        match self.kind {
            ConfusionKind::RowNormalised => MatrixCells::FRACTIONS,
            ConfusionKind::Misclassified => MatrixCells::counts(
                self.methods
                    .iter()
                    .flat_map(|(_, m)| m.iter().flatten().copied()),
            ),
        }
    }
}

/// White to dark blue.
fn heat(v: f64) -> RGBColor {
    let t = v.clamp(0.0, 1.0).sqrt();
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(255.0, 8.0), lerp(255.0, 48.0), lerp(255.0, 107.0))
}

/// How the cells of a heat-map matrix read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MatrixCells {
    /// The value drawn darkest.
    pub full: f64,
    /// Fractions written as percent (else counts, with one decimal when not whole).
    pub percent: bool,
    /// Grey diagonal cells without numbers (Tian et al. Fig. 4), instead of outlined ones.
    pub hide_diagonal: bool,
}

impl MatrixCells {
    /// Fractions of the row, as percent, the diagonal outlined.
    pub const FRACTIONS: MatrixCells = MatrixCells {
        full: 1.0,
        percent: true,
        hide_diagonal: false,
    };

    /// Counts, darkest at the largest of `values`, the diagonal hidden.
    pub fn counts(values: impl Iterator<Item = f64>) -> MatrixCells {
        MatrixCells {
            full: values.fold(0.0, f64::max).max(1.0),
            percent: false,
            hide_diagonal: true,
        }
    }

    fn text(&self, v: f64) -> String {
        if self.percent {
            format!("{:.0}", 100.0 * v)
        } else if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    }
}

/// Appends one row per cell (i, j) of K × K matrices to `t`: the `prefix` cells, the true
/// class i, the predicted class j, then each matrix's value at (i, j). `t` has exactly these
/// columns.
pub(crate) fn push_matrices(t: &mut Table, prefix: &[Cell], matrices: &[&Vec<Vec<f64>>]) {
    let Some(first) = matrices.first() else {
        return;
    };
    for (i, row) in first.iter().enumerate() {
        for j in 0..row.len() {
            let mut cells = prefix.to_vec();
            cells.extend([Cell::from(i), Cell::from(j)]);
            cells.extend(matrices.iter().map(|m| Cell::from(m[i][j])));
            t.push(cells).expect("the table's columns");
        }
    }
}

/// One heat-map panel of a K × K matrix (rows true classes), numbers in the cells up to 12
/// classes; a NaN cell (not measured) is drawn pale with a dash.
pub(crate) fn draw_matrix<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    caption: &str,
    m: &[Vec<f64>],
    cells: MatrixCells,
    [x_desc, y_desc]: [&str; 2],
) -> DrawResult<(), DB> {
    let k = m.len();
    let mut chart = ChartBuilder::on(panel)
        .margin(14)
        .x_label_area_size(70)
        .y_label_area_size(80)
        .caption(caption, style::caption_font())
        .build_cartesian_2d(-0.5..k as f64 - 0.5, k as f64 - 0.5..-0.5)?;
    style::mesh_style(&mut chart, x_desc, y_desc)
        .disable_mesh()
        .x_labels(k.min(20))
        .y_labels(k.min(20))
        .x_label_formatter(&style::tick_whole)
        .y_label_formatter(&style::tick_whole)
        .draw()?;
    let cell = |x: f64, y: f64| [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)];
    for (i, row) in m.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            let (x, y) = (j as f64, i as f64);
            if i == j && cells.hide_diagonal {
                chart.draw_series(std::iter::once(Rectangle::new(
                    cell(x, y),
                    style::tint(style::REFERENCE, 0.25).filled(),
                )))?;
                continue;
            }
            if v.is_nan() {
                // Not measured: a pale cell with a dash.
                chart.draw_series(std::iter::once(Rectangle::new(
                    cell(x, y),
                    style::tint(style::REFERENCE, 0.08).filled(),
                )))?;
                chart.draw_series(std::iter::once(Text::new(
                    "–",
                    (x, y),
                    ("DejaVu Sans", 15)
                        .into_font()
                        .color(&style::REFERENCE)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )))?;
                continue;
            }
            let shade = v / cells.full;
            chart.draw_series(std::iter::once(Rectangle::new(
                cell(x, y),
                heat(shade).filled(),
            )))?;
            if k <= 12 {
                let color = if shade > 0.45 { WHITE } else { BLACK };
                chart.draw_series(std::iter::once(Text::new(
                    cells.text(v),
                    (x, y),
                    ("DejaVu Sans", 15)
                        .into_font()
                        .color(&color)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )))?;
            }
        }
    }
    if !cells.hide_diagonal {
        for i in 0..k {
            let x = i as f64;
            chart.draw_series(std::iter::once(Rectangle::new(
                cell(x, x),
                style::NEG.stroke_width(2),
            )))?;
        }
    }
    Ok(())
}

const CONFUSION_AXES: [&str; 2] = ["predicted class under attack", "true class"];

impl Figure for Confusion {
    fn id(&self) -> &'static str {
        match self.kind {
            ConfusionKind::RowNormalised => "compare-confusion",
            ConfusionKind::Misclassified => "compare-misclassified",
        }
    }

    fn title(&self) -> String {
        match self.kind {
            ConfusionKind::RowNormalised => format!(
                "Confusion matrix under attack, rows normalised (model `{}`)",
                self.model
            ),
            ConfusionKind::Misclassified => format!(
                "Misclassified adversarial examples by true and predicted class (model `{}`)",
                self.model
            ),
        }
    }

    fn reproduces(&self) -> &'static str {
        match self.kind {
            ConfusionKind::RowNormalised => {
                "Tian et al. Fig. 2: the robust confusion matrix (rows: true classes, columns: \
                 predictions on the adversarial examples, percent of the row)"
            }
            ConfusionKind::Misclassified => {
                "Tian et al. Fig. 4a: the misclassified confusion matrix (counts of adversarial \
                 examples per true and predicted class, the diagonal hidden)"
            }
        }
    }

    fn look_at(&self) -> &'static str {
        match self.kind {
            ConfusionKind::RowNormalised => {
                "The off-diagonal cells that stay dark for every method: the pairs of similar \
                 classes (e.g. shirt, T-shirt and pullover in Fashion-MNIST, cat and dog in \
                 CIFAR-10) that attacks push into each other."
            }
            ConfusionKind::Misclassified => {
                "The few dark cells that hold most errors of a row: a weak class loses its \
                 examples to one or two confound classes (Tian: cat to dog), which is what a \
                 class-wise fix can target."
            }
        }
    }

    fn size(&self) -> (u32, u32) {
        let n = self.methods.len().max(1) as u32;
        (60 + 620 * n, 820)
    }

    fn tables(&self) -> Vec<Table> {
        let value = match self.kind {
            ConfusionKind::RowNormalised => "fraction",
            ConfusionKind::Misclassified => "count",
        };
        let mut t = Table::new("", &["method", "true", "predicted", value]);
        for (name, m) in &self.methods {
            push_matrices(&mut t, &[Cell::from(name.as_str())], &[m]);
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        CONFUSION_AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((1, self.methods.len().max(1)));
        let cells = self.cells();
        for (panel, (name, m)) in panels.iter().zip(&self.methods) {
            let caption = format!("{name} — {}", self.key.attack);
            draw_matrix(panel, &caption, m, cells, CONFUSION_AXES)?;
        }
        Ok(())
    }
}
