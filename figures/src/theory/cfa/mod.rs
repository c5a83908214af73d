//! Panels of CFA's Theorems 1-4 on the binary Gaussian model, plus the small drawing and
//! root-finding helpers they share.

pub mod gaps;
pub mod sigma;
pub mod thm2;
pub mod thm34;
pub mod thm4b;

use std::path::Path;

use classwise_theory::model::{BinaryModel, Class};
use plotters::prelude::*;

use crate::error::Result;
use crate::render::{Rendered, render};
use crate::style::{self, DrawResult};

pub use gaps::Thm1Gaps;
pub use sigma::SigmaScaling;
pub use thm2::Thm2;
pub use thm4b::Thm4b;
pub use thm34::Thm34;

/// Renders every figure of this module into `dir`, in the order of the brief: Theorem 1 gaps,
/// Theorem 2, Theorems 3/4(a), Theorem 4(b), σ-scaling.
pub fn render_all(dir: &Path) -> Result<Vec<Rendered>> {
    Ok(vec![
        render(&Thm1Gaps::new()?, dir)?,
        render(&Thm2::new()?, dir)?,
        render(&Thm34::new()?, dir)?,
        render(&Thm4b::new()?, dir)?,
        render(&SigmaScaling::new()?, dir)?,
    ])
}

/// `base` (usually CFA's Figure 1 model) with another `d`, `sigma` or `p_neg`.
pub(crate) fn variant(base: &BinaryModel, d: u32, sigma: f64, p_neg: f64) -> Result<BinaryModel> {
    Ok(BinaryModel::new(
        d,
        base.eta(),
        sigma,
        base.p(Class::Pos),
        p_neg,
    )?)
}

/// `n` points from `a` to `b` (both > 0, both included), evenly spaced in log scale.
pub(crate) fn log_grid(a: f64, b: f64, n: usize) -> Vec<f64> {
    super::grid(a.ln(), b.ln(), n)
        .into_iter()
        .map(f64::exp)
        .collect()
}

/// Zips two equally long vectors into plot points.
pub(crate) fn points(x: &[f64], y: &[f64]) -> Vec<(f64, f64)> {
    x.iter().copied().zip(y.iter().copied()).collect()
}

/// The boundary between `lo` (where `pred` holds) and `hi` (where it does not), by bisection to
/// the resolution of f64.
pub(crate) fn boundary(
    mut lo: f64,
    mut hi: f64,
    pred: impl Fn(f64) -> Result<bool>,
) -> Result<f64> {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if pred(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// Every sign change of `f` between consecutive points of the grid `xs`, refined by bisection.
pub(crate) fn sign_changes(xs: &[f64], f: impl Fn(f64) -> Result<f64>) -> Result<Vec<f64>> {
    let mut roots = Vec::new();
    let mut prev: Option<(f64, f64)> = None;
    for &x in xs {
        let v = f(x)?;
        if let Some((x0, v0)) = prev
            && (v0 < 0.0) != (v < 0.0)
        {
            let neg_first = v0 < 0.0;
            roots.push(boundary(x0, x, |t| Ok((f(t)? < 0.0) == neg_first))?);
        }
        prev = Some((x, v));
    }
    Ok(roots)
}

/// A light rectangle spanning `x` and the full height `y` of a chart, drawn behind the curves.
pub(crate) fn shade<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    x: (f64, f64),
    y: (f64, f64),
    color: RGBColor,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart.draw_series(std::iter::once(Rectangle::new(
        [(x.0, y.0), (x.1, y.1)],
        color.mix(0.18).filled(),
    )))?;
    Ok(())
}

/// A thin reference line through `pts` (zero lines, asymptotes, markers).
pub(crate) fn reference<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    pts: Vec<(f64, f64)>,
    color: RGBColor,
    dashed: bool,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let st = color.stroke_width(2);
    if dashed {
        chart.draw_series(DashedLineSeries::new(pts, 8, 6, st))?;
    } else {
        chart.draw_series(std::iter::once(PathElement::new(pts, st)))?;
    }
    Ok(())
}

/// Text at a data point, in the legend font and `color`.
pub(crate) fn note<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    text: &str,
    at: (f64, f64),
    color: RGBColor,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate<From = (f64, f64)>,
{
    chart.draw_series(std::iter::once(Text::new(
        text.to_owned(),
        at,
        style::legend_font().color(&color),
    )))?;
    Ok(())
}
