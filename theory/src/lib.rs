//! Closed forms of the binary Gaussian model of the CFA paper (section 2, appendix B), the
//! theorems about it (CFA Theorems 1-4, as printed and corrected), the WAT bounds (Hedge no-regret,
//! worst-class Rademacher bounds), class-wise metrics and class-wise calibration rules.
//!
//! Pure Rust: this crate never depends on libtorch. Every formula cites its paper equation;
//! derivations beyond the papers are stated where they are used, and the errata (C1-C9, W1-W6)
//! are re-confirmed by `classwise theory verify`.

pub mod calibration;
pub mod check;
pub mod error;
pub mod eval;
pub mod metrics;
pub mod model;
pub mod normal;
pub mod tally;
pub mod theorems;
pub mod tol;
pub mod verify;
pub mod wat;

pub use error::{Result, TheoryError};
