//! The libtorch (tch) side of classwise: data, models, attacks, adversarial-training methods and
//! class-wise evaluation. This first version holds what the set-up needs: locating data sets,
//! the environment report behind `classwise doctor`, and a gradient self-check of libtorch.
//!
//! Code is device-agnostic: [`default_device`] picks CUDA when libtorch has it, else the CPU.

pub mod attack;
pub mod bench;
pub mod data;
pub mod doctor;
pub mod error;
pub mod eval;
pub mod gradcheck;
pub mod io;
pub mod model;
pub mod paths;
pub mod run;
pub mod runtime;
pub mod seed;
pub mod train;

pub use error::{Result, TrainerError};
pub use tch;

/// The libtorch version tch 0.26 is generated for.
pub const LIBTORCH_VERSION: &str = "2.13.0";

/// CUDA device 0 when libtorch was built with CUDA and a device is visible, else the CPU.
pub fn default_device() -> tch::Device {
    tch::Device::cuda_if_available()
}
