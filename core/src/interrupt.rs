//! Graceful interruption: SIGTERM (a Slurm time limit or preemption, `kill`), SIGUSR1 (Slurm's
//! `--signal=USR1@T` warning) and SIGINT (Ctrl-C) ask a run to stop at the next batch boundary.
//! The training driver ([`crate::driver::Stop`]) hands the question to every backend; the
//! trainer then writes a mid-epoch checkpoint, and a later resume continues from that batch and
//! ends bit-identical (on the CPU) to a run that was never interrupted. A second Ctrl-C
//! terminates the process at once, as an impatient user expects; repeated SIGTERMs do not (Slurm
//! may deliver one to the task and one through its batch script, and sends SIGKILL itself when
//! its grace time is over).
//!
//! The handlers only set a flag ([`signal_hook::flag`]); the driver's [`Stop`](crate::driver::Stop)
//! reads it.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::error::{CoreError, Result};

/// The exit status of a process that stopped because it was asked to and saved its progress
/// (sysexits' `EX_TEMPFAIL`): "try again later", which `classwise sweep` and the Slurm script
/// read as "resume me", unlike a failure.
pub const EXIT_INTERRUPTED: u8 = 75;

struct Flags {
    any: Arc<AtomicBool>,
    which: Arc<AtomicI32>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// The signals that ask for a graceful stop.
const SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGUSR1,
    signal_hook::consts::SIGINT,
];

/// Installs the handlers (once per process; later calls do nothing).
pub fn install() -> Result<()> {
    if FLAGS.get().is_some() {
        return Ok(());
    }
    let flags = Flags {
        any: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicI32::new(0)),
    };
    for sig in SIGNALS {
        let failed = |e: std::io::Error| CoreError::Signal {
            signal: sig,
            message: e.to_string(),
        };
        if sig == signal_hook::consts::SIGINT {
            // Registered first, so that it sees the flag as the previous signal left it: the
            // second Ctrl-C terminates (status 130, the shell's convention for SIGINT).
            signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flags.any))
                .map_err(failed)?;
        }
        signal_hook::flag::register(sig, Arc::clone(&flags.any)).map_err(failed)?;
        let which = Arc::clone(&flags.which);
        // SAFETY: the action only stores to an atomic, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || which.store(sig, Ordering::SeqCst))
        }
        .map_err(failed)?;
    }
    let _ = FLAGS.set(flags);
    Ok(())
}

/// Whether a stop was asked for since [`install`].
pub fn requested() -> bool {
    FLAGS.get().is_some_and(|f| f.any.load(Ordering::SeqCst))
}

/// The name of the signal that asked for the stop (`SIGTERM`, ...), if any.
pub fn signal_name() -> Option<&'static str> {
    let sig = FLAGS.get()?.which.load(Ordering::SeqCst);
    match sig {
        0 => None,
        s if s == signal_hook::consts::SIGTERM => Some("SIGTERM"),
        s if s == signal_hook::consts::SIGUSR1 => Some("SIGUSR1"),
        s if s == signal_hook::consts::SIGINT => Some("SIGINT"),
        _ => Some("a signal"),
    }
}
