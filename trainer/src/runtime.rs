//! Process-wide CPU settings applied once at start-up, before libtorch starts its worker threads
//! (which inherit the floating-point control register of the thread that creates them).
//!
//! * **Denormals flushed to zero** (x86-64 MXCSR FTZ and DAZ, AArch64 FPCR FZ), as
//!   `torch.set_flush_denormal(True)` does: late in training, attack gradients hold subnormal
//!   values whose arithmetic is many times slower on x86.
//! * **glibc malloc without mmap** (`M_MMAP_MAX = 0`, a large `M_TRIM_THRESHOLD`): libtorch
//!   allocates every activation with `malloc`; above glibc's mmap threshold each allocation is a
//!   fresh mapping whose pages fault in again at every step. From the heap they are reused.
//!
//! `CLASSWISE_TUNE=0` in the environment turns both off (to measure their effect with
//! `classwise bench`). Results stay deterministic either way; flushing changes the last bits of
//! a run, so compare runs made with the same setting.

use std::sync::OnceLock;

use serde::Serialize;

/// What [`tune`] applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Tuning {
    /// Subnormal floats are flushed to zero on this thread and the threads it creates.
    pub flush_denormals: bool,
    /// glibc malloc serves large blocks from its heap instead of fresh mmaps.
    pub malloc_heap_only: bool,
}

impl std::fmt::Display for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = |b: bool| if b { "on" } else { "off" };
        write!(
            f,
            "flush denormals {}, malloc heap-only {}",
            on(self.flush_denormals),
            on(self.malloc_heap_only)
        )
    }
}

static APPLIED: OnceLock<Tuning> = OnceLock::new();

/// Applies the settings of this module once per process (unless `CLASSWISE_TUNE=0`) and returns
/// what is in effect. Call it first thing in `main`.
pub fn tune() -> Tuning {
    *APPLIED.get_or_init(|| {
        if std::env::var("CLASSWISE_TUNE").is_ok_and(|v| v.trim() == "0") {
            return Tuning {
                flush_denormals: false,
                malloc_heap_only: false,
            };
        }
        Tuning {
            flush_denormals: flush_denormals(),
            malloc_heap_only: malloc_heap_only(),
        }
    })
}

/// The settings in effect: what [`tune`] applied, or all off if it was never called.
pub fn current() -> Tuning {
    APPLIED.get().copied().unwrap_or(Tuning {
        flush_denormals: false,
        malloc_heap_only: false,
    })
}

#[cfg(target_arch = "x86_64")]
fn flush_denormals() -> bool {
    // MXCSR bit 15 (FTZ: results flushed to zero) and bit 6 (DAZ: inputs read as zero).
    const FTZ_DAZ: u32 = 0x8040;
    let mut csr: u32 = 0;
    // SAFETY: stmxcsr/ldmxcsr read and write this thread's SSE control register through a
    // valid pointer to a u32 on our stack; only the FTZ and DAZ bits are changed.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr |= FTZ_DAZ;
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, readonly));
    }
    true
}

#[cfg(target_arch = "aarch64")]
fn flush_denormals() -> bool {
    // FPCR bit 24 (FZ).
    let mut fpcr: u64;
    // SAFETY: reads and writes this thread's floating-point control register; only FZ changes.
    unsafe {
        std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack));
        fpcr |= 1 << 24;
        std::arch::asm!("msr fpcr, {}", in(reg) fpcr, options(nomem, nostack));
    }
    true
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn flush_denormals() -> bool {
    false
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn malloc_heap_only() -> bool {
    // SAFETY: mallopt only changes glibc's allocator parameters; it returns 1 on success.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn malloc_heap_only() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest positive normal f32 halved is subnormal; with FTZ/DAZ it becomes zero.
    #[test]
    fn tune_flushes_subnormals_on_supported_targets() {
        let t = tune();
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        let half = std::hint::black_box(tiny) / std::hint::black_box(2.0f32);
        if t.flush_denormals {
            assert_eq!(half, 0.0, "subnormal survived with FTZ on");
        } else {
            assert!(half > 0.0 && half < f32::MIN_POSITIVE);
        }
        assert_eq!(tune(), current());
    }
}
