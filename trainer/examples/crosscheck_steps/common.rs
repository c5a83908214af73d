//! What the step, rule and average writers share: the model, the batch, the settings and a few
//! helpers.

use std::path::PathBuf;

use classwise_trainer::error::{TrainerError, invalid};
use classwise_trainer::model::{Architecture, ModelSpec};
use classwise_trainer::seed::seeded;
use classwise_trainer::train::SgdConfig;
use classwise_trainer::{Result, tch};
use tch::{Device, Kind, Tensor};

/// A written file and a short note on what it holds (printed after its path).
pub type Written = (PathBuf, String);

pub const K: usize = 10;
/// CFA's budget and step on CIFAR-10 (8/255, 2/255).
pub const EPS: f64 = 8.0 / 255.0;
pub const STEP: f64 = 2.0 / 255.0;
/// The step's seed: the attack's draws are libtorch's first draws after seeding with it.
pub const SEED: i64 = 11;
/// The model's initialisation seed.
pub const MODEL_SEED: i64 = 5;
pub const SGD: SgdConfig = SgdConfig {
    momentum: 0.9,
    weight_decay: 5e-4,
    nesterov: false,
};
pub const LR: f64 = 0.1;

/// WideResNet-10-1 on 3×16×16 inputs, K classes: BatchNorm, no dropout (STEP_FORMAT.md).
pub fn spec() -> ModelSpec {
    ModelSpec::new(Architecture::wide_resnet(10, 1), K, [3, 16, 16])
}

/// The batch: one uniform random image per class, labels 0..K (class-balanced).
pub fn batch() -> (Tensor, Tensor) {
    seeded(3, || {
        (
            Tensor::rand([K as i64, 3, 16, 16], (Kind::Float, Device::Cpu)),
            Tensor::arange(K as i64, (Kind::Int64, Device::Cpu)),
        )
    })
}

/// K values from `a` (class 0) to `b` (class K − 1), evenly spaced.
pub fn ramp(a: f64, b: f64) -> Vec<f64> {
    (0..K)
        .map(|k| a + (b - a) * k as f64 / (K - 1) as f64)
        .collect()
}

/// `n` values drawn uniformly from [lo, hi) with libtorch's generator seeded by `seed`.
pub fn uniform_values(seed: i64, n: usize, lo: f64, hi: f64) -> Result<Vec<f64>> {
    let t = seeded(seed, || {
        Tensor::rand([n as i64], (Kind::Double, Device::Cpu)) * (hi - lo) + lo
    });
    Ok(Vec::<f64>::try_from(&t)?)
}

/// `value` as JSON.
pub fn to_json<T: serde::Serialize>(what: &'static str, value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|source| TrainerError::Json { what, source })
}

/// A `[rule]`-like table as serde writes it, without its `kind` tag (a rule file's `settings`).
pub fn settings<T: serde::Serialize>(what: &'static str, value: &T) -> Result<serde_json::Value> {
    let mut v = to_json(what, value)?;
    match v.as_object_mut() {
        Some(map) => {
            map.remove("kind");
            Ok(v)
        }
        None => Err(invalid(what, v, "a table")),
    }
}
