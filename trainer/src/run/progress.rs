//! Progress of a training epoch: a progress bar with throughput and ETA when stderr is a
//! terminal, else a plain log line every `every` batches (CI logs, `nohup`, pipes).

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

/// Batches between two plain log lines when stderr is not a terminal.
pub const LOG_EVERY: usize = 20;

/// Progress over the batches of one epoch.
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: usize,
    batch_size: usize,
    started: Instant,
    enabled: bool,
}

impl Progress {
    /// `total` batches of up to `batch_size` images; nothing is shown when `enabled` is false.
    pub fn new(label: String, total: usize, batch_size: usize, enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} batches, {per_sec}, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style.progress_chars("=> "));
            bar.set_message(label.clone());
            bar
        });
        Progress {
            bar,
            label,
            total,
            batch_size,
            started: Instant::now(),
            enabled,
        }
    }

    /// Batch `step` (0-based) is done.
    pub fn tick(&self, step: usize) {
        if let Some(bar) = &self.bar {
            bar.set_position(step as u64 + 1);
        } else if self.enabled && (step + 1).is_multiple_of(LOG_EVERY) && step + 1 < self.total {
            let secs = self.started.elapsed().as_secs_f64().max(1e-9);
            let done = step + 1;
            let rate = (done * self.batch_size) as f64 / secs;
            let eta = secs / done as f64 * (self.total - done) as f64;
            eprintln!(
                "{} batch {done}/{} ({rate:.0} img/s, ETA {eta:.0} s)",
                self.label, self.total
            );
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
