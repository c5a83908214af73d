//! Rank by average robust accuracy against rank by worst-class robust accuracy (left), and the
//! two accuracies (right): a model above the diagonal on the left is fairer than its average
//! says; the right panel shows by how much.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use classwise_core::record::Leaderboard;

use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

const AXES: [&str; 4] = [
    "rank by average robust accuracy (1 = best)",
    "rank by worst-class robust accuracy",
    "average robust accuracy (%)",
    "worst-class robust accuracy (%)",
];

/// The rank comparison of a leaderboard.
#[derive(Clone, Debug)]
pub struct ZooRanks {
    pub board: Leaderboard,
}

impl ZooRanks {
    pub fn new(board: Leaderboard) -> Self {
        ZooRanks { board }
    }

    /// (name, x, y) of each model in one panel.
    fn points(&self, ranks: bool) -> Vec<(String, f64, f64)> {
        let rows = self.board.models.iter();
        rows.map(|r| match ranks {
            true => (
                r.name.clone(),
                r.rank_by_average as f64,
                r.rank_by_worst as f64,
            ),
            false => (r.name.clone(), 100.0 * r.robust, 100.0 * r.worst_robust),
        })
        .collect()
    }
}

impl Figure for ZooRanks {
    fn id(&self) -> &'static str {
        "zoo-ranks"
    }

    fn title(&self) -> String {
        format!(
            "Average against worst class, {} at eps = {}",
            self.board.dataset, self.board.eps_text
        )
    }

    fn reproduces(&self) -> &'static str {
        "Tian et al. §4.3, Table 1: defences compared by total and by per-class robustness"
    }

    fn look_at(&self) -> &'static str {
        "Points off the diagonal on the left: models the average ranks differently from the \
         worst class. On the right, the vertical gap below the diagonal is what the worst class \
         loses against the average."
    }

    fn size(&self) -> (u32, u32) {
        style::WIDE
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new(
            "",
            &[
                "model",
                "rank_by_average",
                "rank_by_worst",
                "robust",
                "worst_robust",
            ],
        );
        for r in &self.board.models {
            let row = vec![
                Cell::from(r.name.as_str()),
                Cell::from(r.rank_by_average),
                Cell::from(r.rank_by_worst),
                Cell::from(r.robust),
                Cell::from(r.worst_robust),
            ];
            t.push(row).expect("five columns");
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.iter().map(|s| s.to_string()).collect()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let panels = area.split_evenly((1, 2));
        let n = self.board.models.len() as f64;
        panel(
            &panels[0],
            &self.points(true),
            0.5..n + 0.5,
            [AXES[0], AXES[1]],
            true,
        )?;
        let accuracies = self.points(false);
        let all = accuracies.iter().flat_map(|(_, x, y)| [*x, *y]);
        let range = style::padded(all, 0.15);
        let range = range.start.max(0.0)..range.end.min(100.0);
        panel(&panels[1], &accuracies, range, [AXES[2], AXES[3]], false)
    }
}

/// A scatter of named points over `range` on both axes, with the diagonal.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(String, f64, f64)],
    range: std::ops::Range<f64>,
    [x_desc, y_desc]: [&str; 2],
    whole: bool,
) -> DrawResult<(), DB> {
    let mut chart = style::chart(area, "", range.clone(), range.clone())?;
    let fmt: &dyn Fn(&f64) -> String = if whole {
        &integer_tick
    } else {
        &style::tick_plain
    };
    style::mesh_with(&mut chart, x_desc, y_desc, fmt, fmt)?;
    let diagonal = [(range.start, range.start), (range.end, range.end)];
    chart.draw_series(LineSeries::new(diagonal, style::stroke(style::REFERENCE)))?;
    let mut placed: Vec<(i32, i32)> = Vec::new();
    for (i, (name, x, y)) in points.iter().enumerate() {
        let color = style::color(i);
        chart.draw_series(std::iter::once(Circle::new((*x, *y), 7, color.filled())))?;
        // A name that would overlap one already written goes one line higher.
        let (px, py) = chart.backend_coord(&(*x, *y));
        let mut dy = 0;
        while placed
            .iter()
            .any(|(qx, qy)| (qx - px).abs() < 170 && (qy - (py + dy)).abs() < 20)
        {
            dy -= 22;
        }
        placed.push((px, py + dy));
        let font = style::legend_font()
            .color(&color)
            .pos(Pos::new(HPos::Left, VPos::Bottom));
        let label = EmptyElement::at((*x, *y)) + Text::new(format!(" {name}"), (4, dy), font);
        chart.draw_series(std::iter::once(label))?;
    }
    Ok(())
}

/// Whole numbers only (ranks); empty between them.
fn integer_tick(v: &f64) -> String {
    let r = v.round();
    if (v - r).abs() < 1e-6 {
        format!("{r:.0}")
    } else {
        String::new()
    }
}
