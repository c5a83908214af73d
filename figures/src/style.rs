//! One look for every figure: the committed DejaVu Sans font (registered once, so PNG text
//! renders on machines without system fonts), sizes, the Okabe–Ito colour-blind-safe palette,
//! line dashes, chart frames and legends.

use std::ops::Range;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::error::{FigureError, Result};

/// The family name every text style uses (registered by [`init_fonts`]).
pub const FAMILY: &str = "DejaVu Sans";

/// Default image size in pixels (3:2).
pub const SIZE: (u32, u32) = (1200, 800);
/// Size of figures with two panels side by side.
pub const WIDE: (u32, u32) = (1600, 720);

static REGULAR: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static BOLD: &[u8] = include_bytes!("../assets/DejaVuSans-Bold.ttf");

/// Registers the committed fonts (regular and bold) under [`FAMILY`] and `sans-serif`; safe to
/// call any number of times.
pub fn init_fonts() -> Result<()> {
    static DONE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for family in [FAMILY, "sans-serif"] {
            for (style, bytes) in [(FontStyle::Normal, REGULAR), (FontStyle::Bold, BOLD)] {
                register_font(family, style, bytes)
                    .map_err(|_| format!("the committed font for {family} ({})", style.as_str()))?;
            }
        }
        Ok(())
    })
    .clone()
    .map_err(|message| FigureError::Encode {
        what: "fonts".into(),
        message,
    })
}

/// The figure title (drawn by [`crate::render`]).
pub fn title_font() -> TextStyle<'static> {
    (FAMILY, 30).into_font().style(FontStyle::Bold).into()
}

/// A panel caption inside a figure.
pub fn caption_font() -> TextStyle<'static> {
    (FAMILY, 24).into()
}

/// Axis descriptions.
pub fn label_font() -> TextStyle<'static> {
    (FAMILY, 22).into()
}

/// Tick labels.
pub fn tick_font() -> TextStyle<'static> {
    (FAMILY, 18).into()
}

/// Legend entries and annotations.
pub fn legend_font() -> TextStyle<'static> {
    (FAMILY, 18).into()
}

/// Okabe–Ito palette (colour-blind safe), black first.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 0, 0),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(0, 114, 178),
    RGBColor(204, 121, 167),
    RGBColor(240, 228, 66),
];

/// The colour of series `i` (cycling; black is kept for references such as bounds).
pub fn color(i: usize) -> RGBColor {
    PALETTE[1 + i % (PALETTE.len() - 1)]
}

/// The class y = +1 (easy in CFA's figures): blue.
pub const POS: RGBColor = RGBColor(0, 114, 178);
/// The class y = −1 (hard in CFA's figures): vermillion.
pub const NEG: RGBColor = RGBColor(213, 94, 0);
/// Reference lines (bounds, asymptotes, markers).
pub const REFERENCE: RGBColor = RGBColor(90, 90, 90);

/// How a line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// Line width in pixels.
pub const STROKE: u32 = 3;

/// A chart over f64 × f64.
pub type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The result of drawing on `DB`.
pub type DrawResult<T, DB> =
    std::result::Result<T, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A framed chart with a caption (empty for none), the common margins and label areas.
pub fn chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: Range<f64>,
    y: Range<f64>,
) -> DrawResult<Chart<'a, DB>, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(18)
        .margin_right(34)
        .x_label_area_size(70)
        .y_label_area_size(95);
    if !caption.is_empty() {
        builder.caption(caption, caption_font());
    }
    builder.build_cartesian_2d(x, y)
}

/// The grid, ticks and axis descriptions of `chart` (any ranged axes: linear, log, segmented).
pub fn mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend,
    X: Ranged + ValueFormatter<<X as Ranged>::ValueType>,
    Y: Ranged + ValueFormatter<<Y as Ranged>::ValueType>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(label_font())
        .label_style(tick_font())
        .light_line_style(RGBColor(0, 0, 0).mix(0.05))
        .bold_line_style(RGBColor(0, 0, 0).mix(0.15))
        .x_labels(8)
        .y_labels(8)
        .draw()
}

/// The shape style of a line.
pub fn stroke(color: RGBColor) -> ShapeStyle {
    color.stroke_width(STROKE)
}

/// Draws `points` as a line with `dash`, in the legend as `label` when it is not empty.
pub fn line<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: &[(f64, f64)],
    color: RGBColor,
    dash: Dash,
    label: &str,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let style = stroke(color);
    let pts = points.to_vec();
    let anno = match dash {
        Dash::Solid => chart.draw_series(LineSeries::new(pts, style))?,
        Dash::Dashed => chart.draw_series(DashedLineSeries::new(pts, 12, 8, style))?,
        Dash::Dotted => chart.draw_series(DashedLineSeries::new(pts, 3, 6, style))?,
    };
    if !label.is_empty() {
        anno.label(label)
            .legend(move |(x, y)| legend_glyph(x, y, style, dash));
    }
    Ok(())
}

/// A 36-pixel legend sample of a line drawn with `dash`.
fn legend_glyph(
    x: i32,
    y: i32,
    style: ShapeStyle,
    dash: Dash,
) -> DashedPathElement<std::vec::IntoIter<(i32, i32)>, u32> {
    let (size, spacing) = match dash {
        Dash::Solid => (36, 0),
        Dash::Dashed => (12, 8),
        Dash::Dotted => (3, 6),
    };
    DashedPathElement::new(vec![(x, y), (x + 36, y)], size, spacing, style)
}

/// Draws the legend of `chart` at `position` with the common style.
pub fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font(legend_font())
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(0, 0, 0).mix(0.4))
        .margin(12)
        .legend_area_size(44)
        .draw()
}
