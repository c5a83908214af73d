//! Draws from a seeded generator whose results depend only on the generator's stream (not on
//! the `rand` version's algorithms for ranges and shuffles), so splits and augmentations
//! replay exactly from a saved seed.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

/// A uniform integer in `0..n` (`n > 0`) by the multiply-shift method; the bias is below
/// `n / 2^64`, nothing at data-set sizes.
pub(crate) fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    let x: u64 = rng.random();
    ((u128::from(x) * n as u128) >> 64) as usize
}

/// Fisher–Yates shuffle.
pub(crate) fn shuffle<T>(items: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..items.len()).rev() {
        let j = below(rng, i + 1);
        items.swap(i, j);
    }
}
