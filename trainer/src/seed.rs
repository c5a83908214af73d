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

/// A non-negative 63-bit seed for libtorch's generator from (seed, a, b) (FNV-1a over their
/// little-endian bytes): distinct streams for, e.g., (run seed, epoch, step) or (evaluation
/// seed, attack, batch).
pub fn mix(seed: u64, a: u64, b: u64) -> i64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for v in [seed, a, b] {
        for byte in v.to_le_bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    (h >> 1) as i64
}
