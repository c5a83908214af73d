//! `classwise bench`: images per second of one training step (PGD-10 AT and TRADES) for the
//! models the CPU presets and the papers use, on the current device and thread count. Timed
//! after one warm-up step; it prints numbers and asserts nothing.

use std::time::Instant;

use serde::Serialize;
use tch::{Device, Kind, Tensor};

use crate::attack::Pgd;
use crate::error::Result;
use crate::model::{Architecture, Model, ModelSpec};
use crate::train::{
    ClassPlan, Method, PgdAt, Sgd, SgdConfig, StepSettings, Trades, TradesScaling, train_epoch,
};

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    pub model: String,
    pub method: String,
    pub batch: usize,
    pub seconds_per_step: f64,
    pub images_per_second: f64,
}

/// The models of the benchmark: TRADES SmallCNN on 1×28×28 and CFA's PreActResNet-18 on 3×32×32.
pub fn models() -> Vec<ModelSpec> {
    vec![
        ModelSpec::new(Architecture::small_cnn(), 10, [1, 28, 28]),
        ModelSpec::new(
            Architecture::PreActResNet18 {
                final_bn_relu: true,
            },
            10,
            [3, 32, 32],
        ),
    ]
}

/// Times `steps` training steps (after one warm-up) of PGD-10 AT and TRADES (10 steps) for each
/// spec at batch size `batch`.
pub fn run(
    specs: &[ModelSpec],
    batch: usize,
    steps: usize,
    device: Device,
) -> Result<Vec<BenchRow>> {
    let mut rows = Vec::new();
    let eps = 8.0 / 255.0;
    let methods = [
        (
            "pgd-10 at",
            Method::PgdAt(PgdAt {
                attack: Pgd::ce(10, 2.0 / 255.0),
                attack_train_mode: false,
            }),
        ),
        (
            "trades-10",
            Method::Trades(Trades {
                attack: Pgd::trades(10, 2.0 / 255.0),
                scaling: TradesScaling::Paper,
            }),
        ),
    ];
    for spec in specs {
        let model = Model::new(spec, device, 0)?;
        let [c, h, w] = spec.input_shape.map(|v| v as i64);
        let x = Tensor::rand([batch as i64, c, h, w], (Kind::Float, device));
        let y = Tensor::randint(
            spec.num_classes as i64,
            [batch as i64],
            (Kind::Int64, device),
        );
        let plan = ClassPlan::uniform(spec.num_classes, eps, 6.0);
        for (name, method) in &methods {
            let mut sgd = Sgd::new(
                model.var_store(),
                SgdConfig {
                    momentum: 0.9,
                    weight_decay: 5e-4,
                    nesterov: false,
                },
            )?;
            let mut step = |n: usize| {
                let batches = (0..n).map(|_| Ok((x.shallow_clone(), y.shallow_clone())));
                train_epoch(
                    &model,
                    &mut sgd,
                    method,
                    &plan,
                    0,
                    batches,
                    StepSettings::constant(0.01),
                    device,
                )
            };
            step(1)?;
            let t0 = Instant::now();
            step(steps)?;
            let seconds_per_step = t0.elapsed().as_secs_f64() / steps as f64;
            rows.push(BenchRow {
                model: spec.describe(),
                method: (*name).to_string(),
                batch,
                seconds_per_step,
                images_per_second: batch as f64 / seconds_per_step,
            });
        }
    }
    Ok(rows)
}
