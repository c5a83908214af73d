//! Every random stream of a run is derived from (seed, epoch, step): the data order and
//! augmentation from ChaCha8 streams, libtorch's generator (attack starts) reseeded before every
//! batch and every evaluation.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;

use super::config::RunConfig;

/// Evaluated splits, for [`eval_seed`].
#[derive(Clone, Copy)]
pub(crate) enum EvalSplit {
    Test = 0,
    Val = 1,
}

/// libtorch's seed for an evaluation on `split` after `epoch` (0-based; `epochs` for the final
/// report). The raw and the averaged model get the same attack starts.
pub(crate) fn eval_seed(seed: u64, epoch: usize, split: EvalSplit) -> i64 {
    torch_seed(seed, epoch, usize::MAX - split as usize)
}

/// libtorch's seed for the evaluation of the initial model, before the first epoch (a rule's
/// `needs_initial`).
pub(crate) fn initial_seed(seed: u64) -> i64 {
    torch_seed(seed, usize::MAX, usize::MAX - EvalSplit::Val as usize)
}

/// libtorch's seed for the final report: `classwise eval` of the last checkpoint with the run's
/// attack seeds with it and so reproduces `report.json`.
pub fn report_seed(config: &RunConfig) -> i64 {
    eval_seed(config.seed, config.epochs, EvalSplit::Test)
}

/// A 64-bit mix of (seed, epoch, step) for libtorch's generator.
pub(crate) fn torch_seed(seed: u64, epoch: usize, step: usize) -> i64 {
    crate::seed::mix(seed, epoch as u64, step as u64)
}

/// A ChaCha8 stream for (seed, purpose, epoch).
pub(crate) fn stream(seed: u64, purpose: u64, epoch: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream((purpose << 48) | epoch as u64);
    rng
}
