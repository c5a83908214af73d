//! One look for every figure: the committed DejaVu Sans font (registered once, so PNG text
//! renders on machines without system fonts), sizes, the Okabe–Ito colour-blind-safe palette,
//! line dashes, chart frames and legends.

use std::ops::Range;
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
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

/// Ten distinguishable colours for per-class lines (the "category10" palette).
pub const CATEGORY10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of series `i`: the seven colours of [`PALETTE`] after black, then the same hues
/// darkened (series 7-13), then lightened (14-20), so that up to 21 series (the homing table's
/// 11 groups) have a colour each; black is kept for references such as bounds.
pub fn color(i: usize) -> RGBColor {
    let hues = PALETTE.len() - 1;
    let c = PALETTE[1 + i % hues];
    match (i / hues) % 3 {
        0 => c,
        1 => shade(c, 0.55),
        _ => tint(c, 0.45),
    }
}

/// `c` with each channel scaled to the fraction `f` of its value (towards black).
fn shade(c: RGBColor, f: f64) -> RGBColor {
    let scale = |v: u8| (f * v as f64).round() as u8;
    RGBColor(scale(c.0), scale(c.1), scale(c.2))
}

/// `c` at opacity `alpha` over white, as an opaque colour (for fills and their legend boxes).
pub fn tint(c: RGBColor, alpha: f64) -> RGBColor {
    let mix = |v: u8| (255.0 - alpha * (255.0 - v as f64)).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
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

/// A chart over the axes made from the specs `X` and `Y` (see [`frame`]).
pub type Framed<'a, DB, X, Y> = ChartContext<
    'a,
    DB,
    Cartesian2d<<X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
>;

/// A framed chart over any axes (linear, `log_scale()`, …) with a caption (empty for none), the
/// common margins and label areas.
pub fn frame<'a, DB, X, Y>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: X,
    y: Y,
) -> DrawResult<Framed<'a, DB, X, Y>, DB>
where
    DB: DrawingBackend,
    X: AsRangedCoord,
    Y: AsRangedCoord,
{
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

/// A framed chart over f64 × f64 (see [`frame`]).
pub fn chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: Range<f64>,
    y: Range<f64>,
) -> DrawResult<Chart<'a, DB>, DB> {
    frame(area, caption, x, y)
}

/// The grid, ticks and axis descriptions of `chart`, with [`tick_plain`] labels.
pub fn mesh<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    mesh_with(chart, x_desc, y_desc, &tick_plain, &tick_plain)
}

/// [`mesh`] with the tick labels written by `x_fmt` and `y_fmt` (e.g. [`tick_log`] on a log axis,
/// [`tick_whole`] for epochs).
pub fn mesh_with<'b, DB, X, Y>(
    chart: &'b mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_fmt: &'b dyn Fn(&f64) -> String,
    y_fmt: &'b dyn Fn(&f64) -> String,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    mesh_style(chart, x_desc, y_desc)
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .draw()
}

/// The mesh of `chart` in the common style (axis descriptions, fonts, grid, 8 ticks per axis),
/// for callers that change more (e.g. bar charts: `.disable_x_mesh().x_labels(0)`) before
/// `.draw()`.
pub fn mesh_style<'a, 'b, DB, X, Y, XT, YT>(
    chart: &'b mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> MeshStyle<'a, 'b, X, Y, DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = XT> + ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + ValueFormatter<YT>,
{
    let mut style = chart.configure_mesh();
    style
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(label_font())
        .label_style(tick_font())
        .light_line_style(RGBColor(0, 0, 0).mix(0.05))
        .bold_line_style(RGBColor(0, 0, 0).mix(0.15))
        .x_labels(8)
        .y_labels(8);
    style
}

/// A tick label of a linear axis: at most 4 decimals, trailing zeros dropped, no "-0", a true
/// minus sign.
pub fn tick_plain(v: &f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    match s {
        "" | "-" | "-0" => "0".into(),
        _ => s.replacen('-', "−", 1),
    }
}

/// A tick label of a log axis: powers of ten as `1`, `10`, `0.1`, `10²`, `10⁻³`, other values
/// as [`tick_plain`].
pub fn tick_log(v: &f64) -> String {
    let e = v.log10();
    if v.is_finite() && *v > 0.0 && (e - e.round()).abs() < 1e-9 {
        let e = e.round() as i32;
        return match e {
            0 => "1".into(),
            1 => "10".into(),
            -1 => "0.1".into(),
            _ => format!("10{}", superscript(e)),
        };
    }
    tick_plain(v)
}

/// A tick label of whole numbers (epochs, rounds).
pub fn tick_whole(v: &f64) -> String {
    tick_plain(&v.round())
}

/// An integer in Unicode superscript digits.
fn superscript(e: i32) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let mut s = String::new();
    if e < 0 {
        s.push('⁻');
    }
    for c in e.unsigned_abs().to_string().chars() {
        s.push(DIGITS[c as usize - '0' as usize]);
    }
    s
}

/// `[min, max]` of the finite `values` widened by `pad` of its span on each side (by `pad` when
/// the span is 0); `0..1` when there is no finite value.
pub fn padded(values: impl IntoIterator<Item = f64>, pad: f64) -> Range<f64> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return 0.0..1.0;
    }
    let span = if hi > lo { hi - lo } else { 1.0 };
    (lo - pad * span)..(hi + pad * span)
}

/// The parts of the polyline `points` inside the band `lo ≤ y ≤ hi`, cut where a segment leaves
/// it (interpolated linearly in plotted coordinates: in ln x when `log_x`). Non-finite points
/// break the line. plotters clamps out-of-range points onto the frame, which would draw a false
/// line along its edge.
pub fn clip_y(points: &[(f64, f64)], lo: f64, hi: f64, log_x: bool) -> Vec<Vec<(f64, f64)>> {
    type Map = fn(f64) -> f64;
    let (map, unmap): (Map, Map) = if log_x {
        (f64::ln, f64::exp)
    } else {
        (std::convert::identity, std::convert::identity)
    };
    let inside = |y: f64| y.is_finite() && (lo..=hi).contains(&y);
    let cut = |a: (f64, f64), b: (f64, f64), level: f64| {
        let s = (level - a.1) / (b.1 - a.1);
        (unmap(map(a.0) + s * (map(b.0) - map(a.0))), level)
    };
    let mut parts = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (i, &p) in points.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| points[j]);
        match (prev, inside(p.1)) {
            (Some(q), true) if !inside(q.1) && q.1.is_finite() => {
                current.push(cut(q, p, if q.1 > hi { hi } else { lo }));
                current.push(p);
            }
            (_, true) => current.push(p),
            (Some(q), false) => {
                if inside(q.1) && p.1.is_finite() {
                    current.push(cut(q, p, if p.1 > hi { hi } else { lo }));
                }
                if current.len() > 1 {
                    parts.push(std::mem::take(&mut current));
                }
                current.clear();
            }
            (None, false) => {}
        }
    }
    if current.len() > 1 {
        parts.push(current);
    }
    parts
}

/// Draws the parts of `points` inside the y range `y` (see [`clip_y`]) with [`line`]; the
/// legend entry comes from the first part.
pub fn clipped_line<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    points: &[(f64, f64)],
    y: &Range<f64>,
    log_x: bool,
    color: RGBColor,
    dash: Dash,
    label: &str,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    for (i, part) in clip_y(points, y.start, y.end, log_x).iter().enumerate() {
        line(chart, part, color, dash, if i == 0 { label } else { "" })?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks() {
        assert_eq!(tick_log(&1.0), "1");
        assert_eq!(tick_log(&10.0), "10");
        assert_eq!(tick_log(&1000.0), "10³");
        assert_eq!(tick_log(&1e-4), "10⁻⁴");
        assert_eq!(tick_log(&20.0), "20");
        assert_eq!(tick_log(&0.25), "0.25");
        assert_eq!(tick_log(&0.0), "0");
        assert_eq!(tick_plain(&1000.0), "1000");
        assert_eq!(tick_plain(&-200.0), "−200");
        assert_eq!(tick_plain(&0.5), "0.5");
        assert_eq!(tick_plain(&-1e-17), "0");
        assert_eq!(tick_whole(&12.0000001), "12");
    }

    #[test]
    fn clipping_cuts_at_the_band() {
        let pts = [(0.0, 3.0), (1.0, 1.0), (2.0, 0.5), (3.0, 3.0)];
        let parts = clip_y(&pts, 0.0, 2.0, false);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0][0], (0.5, 2.0));
        assert_eq!(parts[0][1], (1.0, 1.0));
        assert_eq!(parts[0].len(), 4);
        assert!((parts[0][3].0 - 2.0 - 1.5 / 2.5).abs() < 1e-12);
        // A non-finite point breaks the line; a log x axis cuts in ln x.
        let pts = [(1.0, 0.0), (2.0, f64::INFINITY), (3.0, 1.0), (4.0, 1.5)];
        assert_eq!(
            clip_y(&pts, 0.0, 2.0, false),
            vec![vec![(3.0, 1.0), (4.0, 1.5)]]
        );
        let parts = clip_y(&[(1.0, 0.0), (100.0, 2.0)], 0.0, 1.0, true);
        assert!((parts[0][1].0 - 10.0).abs() < 1e-9, "{parts:?}");
    }

    #[test]
    fn twenty_one_series_have_distinct_colours_none_black() {
        let colours: Vec<RGBColor> = (0..21).map(color).collect();
        for (i, a) in colours.iter().enumerate() {
            assert_ne!(*a, PALETTE[0], "series {i} is black");
            for (j, b) in colours[..i].iter().enumerate() {
                assert_ne!(a, b, "series {j} and {i}");
            }
        }
        // Orange (230, 159, 0) darkened to 0.55 and lightened to 0.45 over white, by hand.
        assert_eq!(colours[7], RGBColor(127, 87, 0));
        assert_eq!(colours[14], RGBColor(244, 212, 140));
        assert_eq!(color(21), colours[0]);
    }

    #[test]
    fn padding() {
        assert_eq!(padded([1.0, 3.0, f64::NAN], 0.5), 0.0..4.0);
        assert_eq!(padded([2.0], 0.5), 1.5..2.5);
        assert_eq!(padded([], 0.1), 0.0..1.0);
    }
}
