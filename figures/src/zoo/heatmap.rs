//! Robust accuracy by model (rows, best average first) and class (columns).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use classwise_core::record::Leaderboard;

use crate::compare::figures::matrix::heat;
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

const AXES: [&str; 2] = ["class", "model (best average first)"];

/// The heat map of a leaderboard.
#[derive(Clone, Debug)]
pub struct ZooHeatmap {
    pub board: Leaderboard,
}

impl ZooHeatmap {
    pub fn new(board: Leaderboard) -> Self {
        ZooHeatmap { board }
    }
}

impl Figure for ZooHeatmap {
    fn id(&self) -> &'static str {
        "zoo-heatmap"
    }

    fn title(&self) -> String {
        format!(
            "Robust accuracy (%) by model and class, {} at eps = {}",
            self.board.dataset, self.board.eps_text
        )
    }

    fn reproduces(&self) -> &'static str {
        "Tian et al. §4.3, Table 1 (robustness per class of several defences), for any list of models"
    }

    fn look_at(&self) -> &'static str {
        "Whether the same classes are dark for every model (a property of the data set, as Tian \
         et al. find for CIFAR-10's cat, bird, deer and dog) and whether a better average \
         lifts the weakest classes or only the strong ones."
    }

    fn size(&self) -> (u32, u32) {
        let rows = self.board.models.len() as u32;
        (1400, (320 + 70 * rows).clamp(560, 1600))
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &[
                "model",
                "rank_by_average",
                "class",
                "class_name",
                "clean",
                "robust",
            ],
        );
        for r in &self.board.models {
            for (k, name) in self.board.class_names.iter().enumerate() {
                let row = vec![
                    Cell::from(r.name.as_str()),
                    Cell::from(r.rank_by_average),
                    Cell::from(k),
                    Cell::from(name.as_str()),
                    Cell::from(r.clean_per_class[k]),
                    Cell::from(r.robust_per_class[k]),
                ];
                t.push(row).expect("six columns");
            }
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.iter().map(|s| s.to_string()).collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (k, m) = (self.board.class_names.len(), self.board.models.len());
        let names: Vec<String> = self.board.models.iter().map(|r| r.name.clone()).collect();
        let classes = &self.board.class_names;
        let mut chart = ChartBuilder::on(area)
            .margin(18)
            .x_label_area_size(90)
            .y_label_area_size(280)
            .build_cartesian_2d(-0.5..k as f64 - 0.5, m as f64 - 0.5..-0.5)?;
        let x_fmt = |v: &f64| label(classes, *v);
        let y_fmt = |v: &f64| label(&names, *v);
        style::mesh_style(&mut chart, AXES[0], AXES[1])
            .disable_mesh()
            .x_labels(k.min(20))
            .y_labels(m)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .draw()?;
        for (i, r) in self.board.models.iter().enumerate() {
            for (j, &v) in r.robust_per_class.iter().enumerate() {
                cell(&mut chart, (i, j), v, k <= 12)?;
            }
        }
        Ok(())
    }
}

/// The name at a whole tick `v` (empty between ticks).
fn label(names: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    names.get(i as usize).cloned().unwrap_or_default()
}

/// One cell: shaded by the accuracy, with its percentage when `numbers`.
fn cell<DB: DrawingBackend>(
    chart: &mut style::Chart<'_, DB>,
    (i, j): (usize, usize),
    v: f64,
    numbers: bool,
) -> DrawResult<(), DB> {
    let (x, y) = (j as f64, i as f64);
    let corners = [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)];
    chart.draw_series(std::iter::once(Rectangle::new(corners, heat(v).filled())))?;
    if numbers {
        let color = if v > 0.45 { WHITE } else { BLACK };
        let font = (style::FAMILY, 16)
            .into_font()
            .color(&color)
            .pos(Pos::new(HPos::Center, VPos::Center));
        chart.draw_series(std::iter::once(Text::new(
            format!("{:.1}", 100.0 * v),
            (x, y),
            font,
        )))?;
    }
    Ok(())
}
