//! Plotters that regenerate the papers' figures from theory, toy and run logs. Pure Rust: this
//! crate never depends on libtorch.
//!
//! Not implemented yet: see the README's status table.
