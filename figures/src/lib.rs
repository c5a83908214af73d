//! Plotters that regenerate the papers' figures from the closed forms of `classwise-theory` and
//! the simulations of `classwise-toy`, as SVG and PNG with a CSV of exactly the series drawn.
//! Pure Rust: this crate never depends on libtorch.
//!
//! Every figure is a value implementing [`Figure`]: it computes its data when built, lists the
//! tables written next to the image, and draws itself on any plotters backend with the common
//! look of [`style`]. [`render`] writes `<id>.svg`, `<id>.png` and `<id>*.csv`;
//! [`write_index`] writes the gallery.

pub mod atomic;
pub mod bars;
pub mod caption;
pub mod classes;
pub mod compare;
pub mod error;
pub mod legend;
pub mod render;
pub mod run;
pub mod style;
pub mod table;
pub mod theory;
pub mod toy;
pub mod zoo;

pub use error::{FigureError, Result};
pub use render::{Figure, Rendered, render, write_index};
pub use table::{Cell, Table};
