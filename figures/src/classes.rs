//! One line per class: the colours, lines and legend of the per-class figures (a run's curves,
//! the comparison's curves over epochs and over a swept parameter). Up to [`MAX_NAMED`] classes
//! get a colour and a legend entry each; more are drawn as a grey band of thin lines.

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::legend::{self, Entry};
use crate::style::{self, Dash, DrawResult};

/// At most this many classes get a coloured line and a legend entry each.
pub const MAX_NAMED: usize = 10;

/// The grey of the band of many classes.
const BAND: RGBColor = RGBColor(170, 170, 170);

/// The per-class palette of `n` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassLines {
    pub n: usize,
}

impl ClassLines {
    pub fn new(n: usize) -> Self {
        ClassLines { n }
    }

    /// Whether every class has its colour and legend entry.
    pub fn named(self) -> bool {
        self.n <= MAX_NAMED
    }

    pub fn color(self, c: usize) -> RGBColor {
        if self.named() {
            style::CATEGORY10[c % style::CATEGORY10.len()]
        } else {
            BAND
        }
    }

    /// Class `c`'s line through `pts`: in its colour with markers, or thin and translucent in
    /// the grey band.
    pub fn draw<'a, DB: DrawingBackend + 'a>(
        self,
        chart: &mut style::Chart<'a, DB>,
        pts: &[(f64, f64)],
        c: usize,
    ) -> DrawResult<(), DB> {
        if self.named() {
            style::line(chart, pts, self.color(c), Dash::Solid, "")?;
            legend::markers(chart, pts, legend::Shape::Circle, self.color(c), 1.0, true)
        } else {
            let thin = self.color(c).mix(0.45).stroke_width(1);
            chart.draw_series(LineSeries::new(pts.to_vec(), thin))?;
            Ok(())
        }
    }

    /// The legend rows a strip needs: two rows of classes and the summary row when there is
    /// one, or one row (the grey entry joins the summary).
    pub fn legend_rows(self, summary: bool) -> usize {
        if self.named() {
            2 + usize::from(summary)
        } else {
            1
        }
    }

    /// The classes (two rows, or one grey entry) followed by the `summary` row, if any.
    pub fn legend<DB: DrawingBackend>(
        self,
        strip: &DrawingArea<DB, Shift>,
        names: &[String],
        mut summary: Vec<Entry>,
    ) -> DrawResult<(), DB> {
        if self.named() {
            let classes: Vec<Entry> = names
                .iter()
                .enumerate()
                .map(|(c, n)| Entry::line(self.color(c), Dash::Solid, format!("{c} {n}")))
                .collect();
            let half = classes.len().div_ceil(2);
            let mut rows = vec![classes[..half].to_vec(), classes[half..].to_vec()];
            if !summary.is_empty() {
                rows.push(summary);
            }
            legend::draw_rows(strip, &rows)
        } else {
            summary.insert(
                0,
                Entry::line(
                    BAND,
                    Dash::Solid,
                    format!("each of the {} classes", names.len()),
                ),
            );
            legend::draw_rows(strip, &[summary])
        }
    }
}
