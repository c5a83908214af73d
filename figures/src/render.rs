//! Rendering a [`Figure`] to SVG and PNG with its data files, and the gallery page.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Serialize;

pub use crate::atomic::write_atomic;
use crate::error::{FigureError, Result};
use crate::style::{self, DrawResult};
use crate::table::Table;

/// A figure: its data (computed once, when the figure value is built), the tables written next
/// to it, and how it is drawn on any plotters backend.
pub trait Figure {
    /// File stem, e.g. `cfa-fig1b`.
    fn id(&self) -> &'static str;
    /// The title drawn above the figure (and used in the gallery).
    fn title(&self) -> String;
    /// The paper figure or equation it reproduces, for the gallery.
    fn reproduces(&self) -> &'static str;
    /// One sentence on what to look at, for the gallery.
    fn look_at(&self) -> &'static str;
    /// Image size in pixels.
    fn size(&self) -> (u32, u32) {
        style::SIZE
    }
    /// Exactly the series the figure draws.
    fn tables(&self) -> Vec<Table>;
    /// The axis descriptions of every panel (x, y, …), exactly as drawn: tests check that the
    /// SVG holds each of them.
    fn axis_labels(&self) -> Vec<String>;
    /// Draws everything below the title on `area`.
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB>;
}

/// What [`render`] wrote for one figure.
#[derive(Clone, Debug, Serialize)]
pub struct Rendered {
    pub id: String,
    pub title: String,
    pub reproduces: String,
    pub look_at: String,
    pub size: (u32, u32),
    pub axis_labels: Vec<String>,
    /// File names, relative to the output directory: SVG, PNG, then the data files.
    pub files: Vec<String>,
}

fn draw_error(figure: &str, e: impl std::fmt::Display) -> FigureError {
    FigureError::Draw {
        figure: figure.to_owned(),
        message: e.to_string(),
    }
}

/// White background, the title, then the figure.
fn draw_on<DB: DrawingBackend, F: Figure + ?Sized>(
    fig: &F,
    root: DrawingArea<DB, Shift>,
) -> Result<()> {
    let id = fig.id();
    root.fill(&WHITE).map_err(|e| draw_error(id, e))?;
    let area = root
        .titled(&fig.title(), style::title_font())
        .map_err(|e| draw_error(id, e))?;
    fig.draw(&area).map_err(|e| draw_error(id, e))?;
    root.present().map_err(|e| draw_error(id, e))
}

/// The SVG text of `fig`.
pub fn svg<F: Figure + ?Sized>(fig: &F) -> Result<String> {
    style::init_fonts()?;
    let mut text = String::new();
    draw_on(
        fig,
        SVGBackend::with_string(&mut text, fig.size()).into_drawing_area(),
    )?;
    Ok(text)
}

/// The PNG bytes of `fig`.
pub fn png<F: Figure + ?Sized>(fig: &F) -> Result<Vec<u8>> {
    style::init_fonts()?;
    let (w, h) = fig.size();
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    draw_on(
        fig,
        BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
    )?;
    let image = image::RgbImage::from_raw(w, h, rgb).ok_or_else(|| FigureError::Encode {
        what: format!("{}.png", fig.id()),
        message: "pixel buffer of the wrong size".into(),
    })?;
    let mut bytes = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut bytes, image::ImageFormat::Png)
        .map_err(|e| FigureError::Encode {
            what: format!("{}.png", fig.id()),
            message: e.to_string(),
        })?;
    Ok(bytes.into_inner())
}

/// Writes `<id>.svg`, `<id>.png` and the data tables of `fig` into `dir`.
pub fn render<F: Figure + ?Sized>(fig: &F, dir: &Path) -> Result<Rendered> {
    std::fs::create_dir_all(dir).map_err(|source| FigureError::Io {
        action: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    let id = fig.id();
    let mut files = Vec::new();
    let svg_name = format!("{id}.svg");
    write_atomic(&dir.join(&svg_name), svg(fig)?.as_bytes())?;
    files.push(svg_name);
    let png_name = format!("{id}.png");
    write_atomic(&dir.join(&png_name), &png(fig)?)?;
    files.push(png_name);
    for t in fig.tables() {
        t.write(dir, id)?;
        files.push(t.file_name(id));
    }
    Ok(Rendered {
        id: id.to_owned(),
        title: fig.title(),
        reproduces: fig.reproduces().to_owned(),
        look_at: fig.look_at().to_owned(),
        size: fig.size(),
        axis_labels: fig.axis_labels(),
        files,
    })
}

/// Writes `index.md`, a gallery naming, for every image, what it reproduces and what to look
/// at, with links to its SVG and data files.
pub fn write_index(
    dir: &Path,
    heading: &str,
    intro: &str,
    figures: &[Rendered],
) -> Result<PathBuf> {
    let mut md = format!("# {heading}\n\n{intro}\n\n");
    for f in figures {
        md.push_str(&format!(
            "## {}\n\n![{}]({}.png)\n\n**Reproduces:** {}\n\n**Look at:** {}\n\n**Files:** {}\n\n",
            f.title,
            f.title,
            f.id,
            f.reproduces,
            f.look_at,
            f.files
                .iter()
                .map(|n| format!("[{n}]({n})"))
                .collect::<Vec<_>>()
                .join(" · ")
        ));
    }
    let path = dir.join("index.md");
    write_atomic(&path, md.as_bytes())?;
    Ok(path)
}
