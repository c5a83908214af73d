//! Monte Carlo simulation of the binary Gaussian model of CFA (§2.2) and of small multi-class
//! toys trained with every class-wise fairness rule of the papers (CFA, WAT, FRL). Pure Rust:
//! this crate never depends on libtorch.
//!
//! * [`binary`]: sampler, empirical clean/robust accuracies with standard errors, the exact ℓ∞
//!   worst case of the linear classifier, toy adversarial training (exact 1-D maximisation and a
//!   gradient method).
//! * [`multiclass`]: K Gaussian classes of different difficulty, a linear softmax model with
//!   analytic gradients, natural/PGD-AT/TRADES training with CFA, WAT and FRL class-wise rules.
//!
//! Every random number comes from a named ChaCha8 stream ([`rng`]). The binary sampler runs its
//! chunks in parallel with rayon and gives identical results for any number of threads; a
//! multi-class run is single-threaded.

pub mod binary;
pub mod error;
pub mod multiclass;
pub mod rng;

pub use error::{Result, ToyError};
