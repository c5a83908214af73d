//! `classwise bench`'s text output: the line saying what is timed and one line per measurement
//! (with its phases when profiled). `--json` prints the [`BenchRow`]s themselves instead.

use std::fmt;

use super::{BenchPlan, BenchRow};

impl fmt::Display for BenchPlan {
    /// The device, precision, threads, CPU settings, batch, steps and kernels' layout.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cudnn = match self.device.is_cuda() {
            true => format!(", cudnn.benchmark {}", self.cudnn_benchmark),
            false => String::new(),
        };
        write!(
            f,
            "device {:?}{cudnn}, {}, {} threads, {}, batch {}, {} timed steps after 1 warm-up, \
             {} kernels",
            self.device,
            self.precision,
            tch::get_num_threads(),
            crate::runtime::current(),
            self.batch,
            self.steps,
            self.memory_format.name()
        )
    }
}

impl fmt::Display for BenchRow {
    /// The model, workload, seconds per step and images per second; then each profiled phase,
    /// indented by its depth.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<40} {:<10} {:>8.3} s/step {:>9.1} img/s",
            self.model_description,
            self.workload.name(),
            self.seconds_per_step,
            self.img_per_s
        )?;
        for phase in self.profile.iter().flatten() {
            let depth = phase.phase.matches('/').count();
            let name = phase.phase.rsplit('/').next().unwrap_or(&phase.phase);
            write!(
                f,
                "\n    {:indent$}{:<w$} {:>8.4} s/step {:>6.1}% {:>6.1} calls/step",
                "",
                name,
                phase.seconds_per_step,
                100.0 * phase.share,
                phase.calls_per_step,
                indent = 2 * depth,
                w = 24 - 2 * depth,
            )?;
        }
        Ok(())
    }
}
