//! The per-class robust accuracies of every method on a radar chart (WAT Figs. 4-6): a spoke
//! per class, a polygon per method.

use std::f64::consts::{FRAC_PI_2, PI};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Selection, method_entries};
use crate::caption;
use crate::compare::load::AttackKey;
use crate::compare::stats::Comparison;
use crate::error::Result;
use crate::legend;
use crate::render::Figure;
use crate::style::{self, DrawResult};
use crate::table::{Cell, Table};

const RADAR_AXES: [&str; 2] = ["spokes: classes", "radius: robust accuracy"];

/// The per-class robust accuracies of every method on a radar chart (WAT Figs. 4-6).
#[derive(Clone, Debug, PartialEq)]
pub struct Radar(pub Selection);

impl Radar {
    pub fn new(c: &Comparison, model: &str, key: &AttackKey) -> Result<Self> {
        Selection::new(c, model, key).map(Radar)
    }

    /// The outer ring: the largest accuracy rounded up to a tenth (at least 0.1, at most 1);
    /// the radius of every point drawn is at most this.
    pub fn outer(&self) -> f64 {
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
        let rows = legend::wrap(area, vec![method_entries(&self.0.methods)]);
        let (plot, strip) = legend::split(area, rows.len());
        let outer = self.outer();
        let plot = caption::draw(
            &plot,
            &format!(
                "{}; {}, {} (rings every 0.1 up to {outer:.1})",
                self.0.key.describe(),
                RADAR_AXES[0],
                RADAR_AXES[1],
            ),
            18,
        )?;
        let (w, h) = plot.dim_in_pixel();
        let wheel = Wheel::new(w, h, self.0.class_names.len(), outer);
        draw_grid(&plot, &wheel, &self.0.class_names)?;
        for (i, m) in self.0.methods.iter().enumerate() {
            let values: Vec<f64> = m.stats.robust_per_class.iter().map(|x| x.mean).collect();
            draw_polygon(&plot, &wheel, &values, style::color(i))?;
        }
        legend::draw_rows(&strip, &rows)
    }
}

/// Where the radar chart lies in its area: `k` spokes from `center` (the first pointing up,
/// then clockwise), `radius` pixels long for an accuracy of `outer`.
struct Wheel {
    center: (i32, i32),
    radius: f64,
    k: usize,
    outer: f64,
}

impl Wheel {
    /// The largest wheel in a `w` × `h` area that leaves room around it for the class names.
    fn new(w: u32, h: u32, k: usize, outer: f64) -> Self {
        Wheel {
            center: (w as i32 / 2, h as i32 / 2),
            radius: (w.min(h) as i32 / 2 - 90).max(40) as f64,
            k: k.max(1),
            outer,
        }
    }

    /// The pixel of accuracy `r` on the spoke of class `c` (clamped to the wheel).
    fn at(&self, c: usize, r: f64) -> (i32, i32) {
        self.point(c as f64, r)
    }

    /// The pixel of accuracy `r` at `spoke` spokes clockwise from the first (fractions lie
    /// between two spokes).
    fn point(&self, spoke: f64, r: f64) -> (i32, i32) {
        let angle = FRAC_PI_2 - 2.0 * PI * spoke / self.k as f64;
        let rr = self.radius * (r / self.outer).clamp(0.0, 1.0);
        (
            self.center.0 + (rr * angle.cos()).round() as i32,
            self.center.1 - (rr * angle.sin()).round() as i32,
        )
    }

    /// The pixel beyond the outer ring where class `c`'s name goes, and its alignment (away
    /// from the centre: a name above or below the wheel is centred on its spoke).
    fn label(&self, c: usize) -> ((i32, i32), Pos) {
        let angle = FRAC_PI_2 - 2.0 * PI * c as f64 / self.k as f64;
        let rr = self.radius + 14.0;
        let p = (
            self.center.0 + (rr * angle.cos()).round() as i32,
            self.center.1 - (rr * angle.sin()).round() as i32,
        );
        let h = if p.0 < self.center.0 - 5 {
            HPos::Right
        } else if p.0 > self.center.0 + 5 {
            HPos::Left
        } else {
            HPos::Center
        };
        let reach = (0.9 * self.radius) as i32;
        let v = if p.1 < self.center.1 - reach {
            VPos::Bottom
        } else if p.1 > self.center.1 + reach {
            VPos::Top
        } else {
            VPos::Center
        };
        (p, Pos::new(h, v))
    }
}

/// Draws the rings (every 0.1, labelled between the last and the first spoke) and the spokes
/// with the class names.
fn draw_grid<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    wheel: &Wheel,
    class_names: &[String],
) -> DrawResult<(), DB> {
    let grid = style::REFERENCE.mix(0.35).stroke_width(1);
    let rings = (wheel.outer * 10.0).round() as usize;
    for ring in 1..=rings {
        let r = ring as f64 / 10.0;
        let mut pts: Vec<(i32, i32)> = (0..wheel.k).map(|c| wheel.at(c, r)).collect();
        pts.push(pts[0]);
        area.draw(&PathElement::new(pts, grid))?;
        // Halfway between the last and the first spoke, clear of the methods' dots on them.
        area.draw(&Text::new(
            format!("{r:.1}"),
            wheel.point(-0.5, r),
            style::tick_font().pos(Pos::new(HPos::Center, VPos::Center)),
        ))?;
    }
    for (c, name) in class_names.iter().enumerate() {
        area.draw(&PathElement::new(
            vec![wheel.center, wheel.at(c, wheel.outer)],
            grid,
        ))?;
        let (p, pos) = wheel.label(c);
        area.draw(&Text::new(
            format!("{c} {name}"),
            p,
            style::tick_font().pos(pos),
        ))?;
    }
    Ok(())
}

/// Draws one method's polygon through its per-class accuracies `values`, lightly filled, with
/// a dot at each class. The outline is drawn a segment at a time (zero-length ones skipped): as
/// one thick polyline, plotters joins two segments that meet at a sharp angle (an outline
/// through the centre, when a class is at 0) with a spike far out of the wheel.
fn draw_polygon<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    wheel: &Wheel,
    values: &[f64],
    color: RGBColor,
) -> DrawResult<(), DB> {
    let pts: Vec<(i32, i32)> = values
        .iter()
        .enumerate()
        .map(|(c, &v)| wheel.at(c, v))
        .collect();
    area.draw(&Polygon::new(pts.clone(), color.mix(0.12).filled()))?;
    let segments = (0..pts.len()).map(|c| (pts[c], pts[(c + 1) % pts.len()]));
    for (a, b) in segments.filter(|(a, b)| a != b) {
        area.draw(&PathElement::new(
            vec![a, b],
            color.stroke_width(style::STROKE),
        ))?;
    }
    for p in &pts {
        area.draw(&Circle::new(*p, 5, color.filled()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws the methods' polygons of `groups` on a white `w` × `h` bitmap; returns its pixels
    /// (RGB) and the wheel they were drawn on.
    fn rendered(groups: &[&[f64]], w: u32, h: u32) -> (Vec<u8>, Wheel) {
        let mut pixels = vec![0u8; (w * h * 3) as usize];
        let wheel = Wheel::new(w, h, groups[0].len(), 1.0);
        {
            let area = BitMapBackend::with_buffer(&mut pixels, (w, h)).into_drawing_area();
            area.fill(&WHITE).unwrap();
            for (i, values) in groups.iter().enumerate() {
                draw_polygon(&area, &wheel, values, style::color(i)).unwrap();
            }
            area.present().unwrap();
        }
        (pixels, wheel)
    }

    /// A group with classes at 0 (the homing table's runs without a class: the dropped class
    /// and Shirt) has an outline through the centre; nothing of any polygon may lie outside the
    /// outer ring (beyond its dots' radius and the stroke). Drawn as one polyline, the outline
    /// of the first two groups put 897 pixels there (a spike from the centre up to the edge).
    #[test]
    fn polygons_through_the_centre_stay_inside_the_wheel() {
        // Three groups of results/fmnist/homing/compare/compare-radar.csv (robust_mean, without
        // Coat, Bag, Sneaker) and one with three classes at exactly 0, on a plot area of the
        // figure's size.
        let groups: [&[f64]; 4] = [
            &[
                0.648, 0.896, 0.822, 0.6427, 0.0, 0.7007, 0.01, 0.67, 0.7867, 0.882,
            ],
            &[
                0.69, 0.902, 0.428, 0.6133, 0.4847, 0.7307, 0.004, 0.648, 0.0, 0.898,
            ],
            &[
                0.693, 0.879, 0.451, 0.603, 0.455, 0.869, 0.002, 0.0, 0.801, 0.921,
            ],
            &[0.6, 0.0, 0.5, 0.7, 0.0, 0.4, 0.9, 0.8, 0.0, 0.3],
        ];
        let (w, h) = (1200u32, 660u32);
        let (pixels, wheel) = rendered(&groups, w, h);
        let reach = wheel.radius + 5.0 + style::STROKE as f64 + 2.0;
        let mut outside = Vec::new();
        for y in 0..h as i32 {
            for x in 0..w as i32 {
                let (dx, dy) = ((x - wheel.center.0) as f64, (y - wheel.center.1) as f64);
                let i = 3 * (y as usize * w as usize + x as usize);
                if dx.hypot(dy) > reach && pixels[i..i + 3] != [255, 255, 255] {
                    outside.push((x, y));
                }
            }
        }
        assert!(
            outside.is_empty(),
            "{} coloured pixels outside the wheel (radius {}), e.g. {:?}",
            outside.len(),
            wheel.radius,
            &outside[..outside.len().min(5)]
        );
    }
}
