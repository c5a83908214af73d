//! `classwise bench --import CARD`: the seconds and the memory of loading a card's weights
//! (`Model::import`), in a process that does nothing else, to set beside `torch.load` +
//! `load_state_dict` (`tools/zoo/bench_load.py` runs both, alternating fresh processes). Prints
//! numbers and asserts nothing.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use crate::error::{IoContext, Result};
use crate::model::Model;
use crate::model::import::Checkpoint;
use crate::zoo::ModelCard;

/// One measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ImportBench {
    pub file: PathBuf,
    pub file_bytes: u64,
    /// Bytes of the loaded model's state (parameters and BatchNorm statistics).
    pub state_bytes: u64,
    /// Opening the checkpoint: parsing its pickle (or header), no tensor read.
    pub open_seconds: f64,
    /// Building the model and copying every tensor into it.
    pub load_seconds: f64,
    /// Resident memory before opening, and the process's peak (Linux `VmRSS`, `VmHWM`).
    pub rss_before_bytes: u64,
    pub peak_rss_bytes: u64,
}

/// A field of `/proc/self/status` in bytes (`None` where there is no such file).
fn proc_status(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Loads the weights of `card` on the CPU, timing the two phases.
pub fn run(card: &ModelCard) -> Result<ImportBench> {
    let file_bytes = std::fs::metadata(&card.file)
        .at("reading", &card.file)?
        .len();
    let rss_before = proc_status("VmRSS:").unwrap_or(0);
    let started = Instant::now();
    let checkpoint = Checkpoint::open(&card.file)?;
    let opened = Instant::now();
    let (model, _) = Model::import_checkpoint(&checkpoint, &card.spec(), tch::Device::Cpu)?;
    let loaded = Instant::now();
    let state_bytes = (model.state_shapes().iter())
        .map(|(_, s)| 4 * s.iter().product::<i64>().max(1) as u64)
        .sum();
    Ok(ImportBench {
        file: card.file.clone(),
        file_bytes,
        state_bytes,
        open_seconds: (opened - started).as_secs_f64(),
        load_seconds: (loaded - opened).as_secs_f64(),
        rss_before_bytes: rss_before,
        peak_rss_bytes: proc_status("VmHWM:").unwrap_or(0),
    })
}
