//! The libtorch (tch) side of classwise: data sets ([`data`]), models ([`model`]), attacks
//! ([`attack`]), training objectives and the training epoch ([`train`]), class-wise evaluation
//! ([`eval`]), runs with checkpoints and resume ([`run`]), the environment report behind
//! `classwise doctor` ([`doctor`]), a gradient self-check of libtorch ([`gradcheck`]) and the
//! training-step benchmark ([`bench`]). The baselines (natural, PGD-AT, TRADES) train end to
//! end; the class-wise fairness methods (CFA, WAT, FRL, BAT) are not in the trainer yet.
//!
//! Code is device-agnostic: [`default_device`] picks CUDA when libtorch has it, else the CPU.

pub mod attack;
pub mod bench;
pub mod data;
pub mod diagnose;
pub mod doctor;
pub mod error;
pub mod eval;
pub mod gradcheck;
pub mod io;
pub mod loss;
pub mod model;
pub mod paths;
pub mod profile;
pub mod run;
pub mod runtime;
pub mod seed;
pub mod sweep;
pub mod train;
pub mod zoo;

pub use classwise_core::interrupt;
pub use error::{Result, TrainerError};
pub use tch;

/// The libtorch version tch 0.26 is generated for.
pub const LIBTORCH_VERSION: &str = "2.13.0";

/// CUDA device 0 when libtorch was built with CUDA and a device is visible, else the CPU.
pub fn default_device() -> tch::Device {
    tch::Device::cuda_if_available()
}
