//! The final class-wise report of a trainer run (`report.json`): clean and robust accuracy per
//! class as paired bars, with the averages (the class-wise tables of CFA, WAT and BAT, drawn).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::log::{Report, RunLog};
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::{Cell, Table};

/// Class names are written under the bars up to this many classes.
pub const MAX_LABELLED: usize = 20;

const AXES: [&str; 2] = ["class", "accuracy on the test set"];
const CLEAN: RGBColor = RGBColor(150, 190, 225);
const ROBUST: RGBColor = style::POS;

/// The bars of [`RunReportBars`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunReportBars {
    pub name: String,
    pub report: Report,
}

impl RunReportBars {
    /// Fails when the run has no report yet (unfinished).
    pub fn new(log: &RunLog) -> Result<Self> {
        let report = log.report.clone().ok_or_else(|| {
            invalid(
                format!("run {}", log.name),
                "no report.json",
                "a finished run (resume it with `classwise train --resume`)",
            )
        })?;
        Ok(RunReportBars {
            name: log.name.clone(),
            report,
        })
    }

    fn worst(&self) -> (usize, f64) {
        self.report
            .robust
            .per_class
            .iter()
            .copied()
            .enumerate()
            .fold(
                (0, f64::INFINITY),
                |b, (c, v)| if v < b.1 { (c, v) } else { b },
            )
    }
}

impl Figure for RunReportBars {
    fn id(&self) -> &'static str {
        "run-report"
    }

    fn title(&self) -> String {
        format!(
            "Run {}: final clean and robust accuracy by class",
            self.name
        )
    }

    fn reproduces(&self) -> &'static str {
        "the class-wise result tables of CFA, WAT and BAT, from the run's report.json"
    }

    fn look_at(&self) -> &'static str {
        "How far the worst class falls below the average, and whether the classes that lose \
         most under attack are the ones that are already weak on clean data."
    }

    fn size(&self) -> (u32, u32) {
        (1600, 820)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("", &["class", "name", "clean", "robust"]);
        for (c, n) in self.report.class_names.iter().enumerate() {
            t.push(vec![
                Cell::from(c),
                Cell::from(n.as_str()),
                Cell::from(self.report.clean.per_class[c]),
                Cell::from(self.report.robust.per_class[c]),
            ])
            .expect("four cells");
        }
        vec![t]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (plot, strip) = legend::split(area, 1);
        let k = self.report.class_names.len();
        let (worst, worst_value) = self.worst();
        let caption = format!(
            "{} at ε = {} on {} test images; worst class {} ({}) at {:.1}%",
            self.report.attack,
            self.report.eps,
            self.report.n_samples,
            worst,
            self.report.class_names[worst],
            100.0 * worst_value
        );
        let mut chart = ChartBuilder::on(&plot)
            .margin(18)
            .margin_right(34)
            .x_label_area_size(if k <= MAX_LABELLED { 100 } else { 70 })
            .y_label_area_size(95)
            .caption(caption, style::caption_font())
            .build_cartesian_2d(-0.5..k as f64 - 0.5, 0.0..1.0)?;
        let [x_desc, y_desc] = AXES;
        style::mesh_style(&mut chart, x_desc, y_desc)
            .disable_x_mesh()
            .x_labels(if k <= MAX_LABELLED { 0 } else { 10 })
            .x_label_formatter(&style::tick_whole)
            .y_labels(11)
            .y_label_formatter(&style::tick_plain)
            .draw()?;
        let width = 0.38;
        for c in 0..k {
            let x = c as f64;
            let pairs = [
                (x - width, self.report.clean.per_class[c], CLEAN),
                (x, self.report.robust.per_class[c], ROBUST),
            ];
            for (x0, v, color) in pairs {
                let corners = [(x0 + 0.02, 0.0), (x0 + width - 0.02, v)];
                chart.draw_series(std::iter::once(Rectangle::new(corners, color.filled())))?;
                let outline = if c == worst && color == ROBUST {
                    BLACK.stroke_width(3)
                } else {
                    BLACK.mix(0.4).stroke_width(1)
                };
                chart.draw_series(std::iter::once(Rectangle::new(corners, outline)))?;
            }
            if k <= MAX_LABELLED {
                let name = &self.report.class_names[c];
                legend::text_at(
                    &plot,
                    &chart,
                    (x, 0.0),
                    (0, 10),
                    &c.to_string(),
                    style::tick_font(),
                    HPos::Center,
                )?;
                legend::text_at(
                    &plot,
                    &chart,
                    (x, 0.0),
                    (0, 34),
                    name,
                    style::tick_font(),
                    HPos::Center,
                )?;
            }
        }
        let clean_avg = self.report.clean.average();
        let robust_avg = self.report.robust.average();
        let span = -0.5..k as f64 - 0.5;
        style::line(
            &mut chart,
            &[(span.start, clean_avg), (span.end, clean_avg)],
            CLEAN,
            Dash::Dashed,
            "",
        )?;
        style::line(
            &mut chart,
            &[(span.start, robust_avg), (span.end, robust_avg)],
            ROBUST,
            Dash::Dashed,
            "",
        )?;
        legend::draw_rows(
            &strip,
            &[vec![
                Entry::boxed(CLEAN, "clean"),
                Entry::boxed(ROBUST, "robust (worst class outlined)"),
                Entry::line(
                    CLEAN,
                    Dash::Dashed,
                    format!("clean average {:.1}%", 100.0 * clean_avg),
                ),
                Entry::line(
                    ROBUST,
                    Dash::Dashed,
                    format!("robust average {:.1}%", 100.0 * robust_avg),
                ),
            ]],
        )
    }
}
