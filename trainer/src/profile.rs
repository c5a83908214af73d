//! Where the time of a training step goes, phase by phase (`classwise bench --profile`).
//!
//! The training loop and the attacks open a [`scope`] around each phase (the batch from the
//! data, the attack's forward passes, its input gradients, its updates, the loss forward, the
//! backward pass, the optimiser step). While [`Recorder`] is recording, every scope adds its
//! wall time to its phase; otherwise a scope costs one atomic load. On the CPU libtorch runs
//! every operation before returning, so a scope's wall time is the time of its kernels; on
//! CUDA, where kernels run asynchronously, the phases would need a synchronisation and the
//! bench refuses to profile.
//!
//! Phases nest as the scopes do: a `forward` opened inside `attack` inside `loss` is recorded
//! as `loss/attack/forward`, and `loss`'s time includes it. A profile lists every phase with
//! its total time, so the parts can be read against the whole.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static RECORDING: AtomicBool = AtomicBool::new(false);
static TOTALS: Mutex<BTreeMap<String, Phase>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The scopes open on this thread, outermost first.
    static OPEN: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The time spent in one phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Phase {
    pub seconds: f64,
    /// How many times the phase ran.
    pub calls: u64,
}

/// Times a phase until dropped (when a [`Recorder`] is recording).
#[must_use = "the phase is timed until the guard is dropped"]
pub struct Scope {
    start: Option<Instant>,
}

/// Opens phase `name` (e.g. `forward`) inside the phases open on this thread.
pub fn scope(name: &'static str) -> Scope {
    let recording = RECORDING.load(Ordering::Relaxed);
    if recording {
        OPEN.with(|open| open.borrow_mut().push(name));
    }
    Scope {
        start: recording.then(Instant::now),
    }
}

/// Runs `f` as phase `name`.
pub fn timed<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    let _scope = scope(name);
    f()
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            let elapsed = start.elapsed();
            let path = OPEN.with(|open| {
                let mut open = open.borrow_mut();
                let path = open.join("/");
                open.pop();
                path
            });
            add(path, elapsed);
        }
    }
}

fn add(path: String, elapsed: Duration) {
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let phase = totals.entry(path).or_default();
    phase.seconds += elapsed.as_secs_f64();
    phase.calls += 1;
}

/// Records the phases of the whole process from its creation until [`Recorder::finish`] (one
/// recorder at a time: the phases are process-wide).
pub struct Recorder(());

impl Recorder {
    /// Starts recording, with every phase at zero.
    pub fn start() -> Recorder {
        TOTALS.lock().unwrap_or_else(|e| e.into_inner()).clear();
        OPEN.with(|open| open.borrow_mut().clear());
        RECORDING.store(true, Ordering::SeqCst);
        Recorder(())
    }

    /// Stops recording and returns the phases, by path (`loss/attack/forward`).
    pub fn finish(self) -> BTreeMap<String, Phase> {
        RECORDING.store(false, Ordering::SeqCst);
        std::mem::take(&mut *TOTALS.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        RECORDING.store(false, Ordering::SeqCst);
    }
}
