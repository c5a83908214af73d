//! Closed forms of the binary Gaussian model of the CFA paper (section 2, appendix B) and the
//! WAT bounds, checked by property tests. Pure Rust: this crate never depends on libtorch.
//!
//! Not implemented yet: see the README's status table.
