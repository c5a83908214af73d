//! Monte Carlo simulation of the binary Gaussian model and of small multi-class toys, including
//! toy adversarial training. Pure Rust: this crate never depends on libtorch.
//!
//! Not implemented yet: see the README's status table.
