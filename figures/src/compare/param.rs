//! Class-wise accuracy against a swept training parameter (CFA Figs. 2, 3 and 5a, WAT Fig. 3).
//!
//! A sweep's group names its grid point: `fmnist-at/train.eps=0.15` is the preset `fmnist-at`
//! at `train.eps = 0.15` (the names `classwise sweep plan` gives; a run directory compared with
//! `--label DIR=NAME` may use the same form). Groups that differ in exactly one numeric
//! coordinate form a *series* over that parameter; [`ParamSweep`] draws each series' class-wise
//! robust and clean accuracy against the parameter.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::load::AttackKey;
use super::stats::{Comparison, Stats};
use crate::classes::ClassLines;
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

/// A group name split into its base (preset, variant) and its grid coordinates `key=value`.
#[derive(Clone, Debug, PartialEq)]
pub struct GridPoint {
    /// The segments without `=`, joined by `/`.
    pub base: String,
    /// The `key=value` segments, in order.
    pub coords: Vec<(String, String)>,
}

impl GridPoint {
    /// Splits `group` at `/`; a segment `key=value` is a coordinate.
    pub fn parse(group: &str) -> GridPoint {
        let mut base = Vec::new();
        let mut coords = Vec::new();
        for segment in group.split('/') {
            match segment.split_once('=') {
                Some((k, v)) if !k.is_empty() => coords.push((k.to_owned(), v.to_owned())),
                _ => base.push(segment),
            }
        }
        GridPoint {
            base: base.join("/"),
            coords,
        }
    }

    /// The group without coordinate `i`: what the other points of its series share.
    pub(crate) fn without(&self, i: usize) -> String {
        std::iter::once(self.base.clone())
            .chain(
                self.coords
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, (k, v))| format!("{k}={v}")),
            )
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// One point of a [`Series`]: a group at parameter value `x`.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub group: String,
    pub x: f64,
    pub stats: Stats,
}

/// Groups that differ only in the value of `key`, sorted by it.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The swept parameter, e.g. `train.eps`, `rule.lambda1`.
    pub key: String,
    /// What the points share (the preset, variant and other coordinates).
    pub rest: String,
    pub points: Vec<Point>,
}

/// Class-wise robust (a) and clean (b) accuracy against a swept parameter, one row of panels per
/// series; thin lines are the classes, the thick black ones the average (solid) and the worst
/// class (dashed), means over seeds. A baseline group outside the series is drawn as dotted
/// horizontal lines (CFA Fig. 5a draws vanilla AT so).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSweep {
    pub model: String,
    pub key: AttackKey,
    pub class_names: Vec<String>,
    pub series: Vec<Series>,
    /// The baseline group's name and statistics, when it is not a point of a series.
    pub baseline: Option<(String, Stats)>,
}

impl ParamSweep {
    /// The series of `c` (groups with `model` evaluated under `key`); an error when no two
    /// groups differ in one numeric coordinate only.
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        let mut series: Vec<Series> = Vec::new();
        for g in &c.groups {
            let Some(stats) = g.get(model, key) else {
                continue;
            };
            let point = GridPoint::parse(&g.name);
            for (i, (k, v)) in point.coords.iter().enumerate() {
                let Ok(x) = v.parse::<f64>() else { continue };
                let rest = point.without(i);
                let p = Point {
                    group: g.name.clone(),
                    x,
                    stats: stats.clone(),
                };
                match series.iter_mut().find(|s| s.key == *k && s.rest == rest) {
                    Some(s) => s.points.push(p),
                    None => series.push(Series {
                        key: k.clone(),
                        rest,
                        points: vec![p],
                    }),
                }
            }
        }
        series.retain(|s| s.points.len() >= 2);
        for s in &mut series {
            s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
        if series.is_empty() {
            return Err(invalid(
                "groups",
                c.groups
                    .iter()
                    .map(|g| g.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                "groups named by a sweep grid (`preset/key=value`) with at least two values of \
                 one numeric parameter",
            ));
        }
        let in_series = |name: &str| {
            series
                .iter()
                .any(|s| s.points.iter().any(|p| p.group == name))
        };
        let baseline = c
            .baseline
            .as_deref()
            .filter(|b| !in_series(b))
            .and_then(|b| c.groups.iter().find(|g| g.name == b))
            .and_then(|g| g.get(model, key).map(|s| (g.name.clone(), s.clone())));
        Ok(ParamSweep {
            model: model.to_owned(),
            key: key.clone(),
            class_names: c.class_names(),
            series,
            baseline,
        })
    }
}

/// The two accuracies drawn, by the prefix of their [`Stats`] names.
const SIDES: [(&str, &str); 2] = [("robust", "(a) robust"), ("clean", "(b) clean")];

fn per_class(s: &Stats, side: &str) -> Vec<f64> {
    let v = if side == "robust" {
        &s.robust_per_class
    } else {
        &s.clean_per_class
    };
    v.iter().map(|m| m.mean).collect()
}

impl Figure for ParamSweep {
    fn id(&self) -> &'static str {
        "compare-param-sweep"
    }

    fn title(&self) -> String {
        format!(
            "Class-wise accuracy against the swept training parameter (model `{}`)",
            self.model
        )
    }

    fn reproduces(&self) -> &'static str {
        "CFA Fig. 2 (against the training ε), Fig. 3 (against TRADES' β) and Fig. 5a (against \
         CFA's λ1, vanilla AT dotted), WAT Fig. 3 (against one class's loss weight)"
    }

    fn look_at(&self) -> &'static str {
        "Whether raising the parameter helps every class or only the easy ones (CFA: a larger ε \
         or β lifts the easy classes and can lower the hard ones), and where the worst class \
         (dashed) peaks compared with the average (solid)."
    }

    fn size(&self) -> (u32, u32) {
        (1600, 560 * self.series.len() as u32 + 160)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &[
                "parameter",
                "series",
                "value",
                "group",
                "accuracy",
                "class",
                "mean",
                "std",
                "n",
            ],
        );
        for s in &self.series {
            for p in &s.points {
                for (side, _) in SIDES {
                    let classes = if side == "robust" {
                        &p.stats.robust_per_class
                    } else {
                        &p.stats.clean_per_class
                    };
                    let named = classes
                        .iter()
                        .zip(&self.class_names)
                        .map(|(m, n)| (n.clone(), *m));
                    let summary = ["avg", "worst"]
                        .map(|w| (w.to_owned(), p.stats.get(&format!("{side}_{w}"))));
                    for (class, m) in named.chain(summary) {
                        t.push(vec![
                            Cell::from(s.key.as_str()),
                            Cell::from(s.rest.as_str()),
                            Cell::from(p.x),
                            Cell::from(p.group.as_str()),
                            Cell::from(side),
                            Cell::from(class),
                            Cell::from(m.mean),
                            Cell::from(m.std.unwrap_or(0.0)),
                            Cell::from(p.stats.runs.len()),
                        ])
                        .expect("nine cells");
                    }
                }
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        self.series
            .iter()
            .flat_map(|s| SIDES.map(|(side, _)| [s.key.clone(), format!("{side} accuracy (test)")]))
            .flatten()
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let lines = ClassLines::new(self.class_names.len());
        let (plot, strip) = legend::split(area, lines.legend_rows(true));
        // The evaluation, once, above the panels.
        let (subtitle, plot) = plot.split_vertically(40);
        let (w, h) = subtitle.dim_in_pixel();
        subtitle.draw(&Text::new(
            format!("evaluation: {}", self.key.describe()),
            (w as i32 / 2, h as i32 / 2),
            style::caption_font().pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
        let rows = plot.split_evenly((self.series.len(), 2));
        for (r, s) in self.series.iter().enumerate() {
            let xs: Vec<f64> = s.points.iter().map(|p| p.x).collect();
            let x = style::padded(xs.iter().copied(), 0.05);
            for (col, (side, label)) in SIDES.iter().enumerate() {
                let caption = format!("{label}: {} over {}", s.rest, s.key);
                let mut chart = style::chart(&rows[2 * r + col], &caption, x.clone(), 0.0..1.0)?;
                style::mesh(&mut chart, &s.key, &format!("{side} accuracy (test)"))?;
                for c in 0..self.class_names.len() {
                    let pts: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .map(|p| (p.x, per_class(&p.stats, side)[c]))
                        .collect();
                    lines.draw(&mut chart, &pts, c)?;
                }
                for (what, dash) in [("avg", Dash::Solid), ("worst", Dash::Dashed)] {
                    let name = format!("{side}_{what}");
                    let pts: Vec<(f64, f64)> = s
                        .points
                        .iter()
                        .map(|p| (p.x, p.stats.get(&name).mean))
                        .collect();
                    style::line(&mut chart, &pts, BLACK, dash, "")?;
                    if let Some((_, b)) = &self.baseline {
                        let y = b.get(&name).mean;
                        style::line(
                            &mut chart,
                            &[(x.start, y), (x.end, y)],
                            style::REFERENCE,
                            Dash::Dotted,
                            "",
                        )?;
                    }
                }
            }
        }
        let mut summary = vec![
            Entry::line(BLACK, Dash::Solid, "average"),
            Entry::line(BLACK, Dash::Dashed, "worst class"),
        ];
        if let Some((name, _)) = &self.baseline {
            summary.push(Entry::line(
                style::REFERENCE,
                Dash::Dotted,
                format!("{name}: average and worst class"),
            ));
        }
        lines.legend(&strip, &self.class_names, summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_points() {
        let p = GridPoint::parse("fmnist-at/cfa/train.eps=0.15/rule.lambda1=0.3");
        assert_eq!(p.base, "fmnist-at/cfa");
        assert_eq!(
            p.coords,
            vec![
                ("train.eps".to_owned(), "0.15".to_owned()),
                ("rule.lambda1".to_owned(), "0.3".to_owned())
            ]
        );
        assert_eq!(p.without(0), "fmnist-at/cfa/rule.lambda1=0.3");
        assert_eq!(p.without(1), "fmnist-at/cfa/train.eps=0.15");
        assert_eq!(GridPoint::parse("at").coords, vec![]);
        assert_eq!(GridPoint::parse("=x").base, "=x");
    }
}
