//! libtorch's CPU generator is global to the process: a `manual_seed` followed by draws is only
//! reproducible if no other thread draws in between. [`seeded`] serialises such sections.

use std::sync::Mutex;

static TORCH_RNG: Mutex<()> = Mutex::new(());

/// Runs `f` right after `tch::manual_seed(seed)`, with no other `seeded` section in between.
pub fn seeded<T>(seed: i64, f: impl FnOnce() -> T) -> T {
    let _guard = TORCH_RNG
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    tch::manual_seed(seed);
    f()
}
