//! Weight-average files (STEP_FORMAT.md, "Weight averages"): FAWA's and the EMA's decision
//! after each of a few epochs (`classwise_core::average::Averager::decide`) and the averaged
//! state it leads to (`classwise_trainer::train::WeightAverage::apply`, as
//! `trainer/src/run/tracks.rs` runs them), on a model whose weights move between epochs.

use std::collections::BTreeMap;
use std::path::Path;

use classwise_core::average::{Averager, Averaging, EmaSettings, FawaGate, FawaSettings};
use classwise_theory::calibration::FawaComparison;
use classwise_trainer::model::Model;
use classwise_trainer::model::safetensors::write;
use classwise_trainer::seed::seeded;
use classwise_trainer::train::WeightAverage;
use classwise_trainer::{Result, tch};
use serde_json::json;
use tch::{Device, Tensor};

use crate::common::{MODEL_SEED, Written, settings, spec, to_json};

/// One sequence of epochs: the averaging, and the worst-class-relevant validation robust
/// accuracy of each epoch (K values; FAWA's gate reads them).
struct Sequence {
    stem: &'static str,
    averaging: Averaging,
    val_robust: Vec<[f64; 10]>,
}

/// Class-wise validation robust accuracies whose minimum is `worst` (class 3), the rest above.
fn accuracies(worst: f64) -> [f64; 10] {
    let mut a = [0.45, 0.5, 0.38, worst, 0.6, 0.41, 0.55, 0.33, 0.52, 0.47];
    for v in a.iter_mut() {
        *v = v.max(worst);
    }
    a
}

fn sequences() -> Vec<Sequence> {
    // CFA's code: α = 0.88, δ = 0.24 (`PKU-ML/CFA:train.py`), here from epoch 1, R ≥ δ.
    let fawa = FawaSettings {
        alpha: 0.88,
        delta: 0.24,
        start_epoch: 1,
        comparison: FawaComparison::AtLeast,
        gate: FawaGate::WorstClass,
    };
    // App. C.1's worst-20% gate and §4.3's R > δ.
    let fawa_fraction = FawaSettings {
        alpha: 0.8,
        delta: 0.3,
        start_epoch: 0,
        comparison: FawaComparison::Above,
        gate: FawaGate::WorstFraction { fraction: 0.2 },
    };
    vec![
        Sequence {
            stem: "average-fawa",
            averaging: Averaging::Fawa(fawa),
            // Before start_epoch (accepted, kept); rejected with nothing held; the first
            // acceptance (copy); rejected; accepted twice (average), the last exactly at δ.
            val_robust: [0.3, 0.2, 0.25, 0.1, 0.3, 0.24].map(accuracies).to_vec(),
        },
        Sequence {
            stem: "average-fawa-worst-fraction",
            averaging: Averaging::Fawa(fawa_fraction),
            val_robust: vec![
                [0.3, 0.2, 0.5, 0.6, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5],
                [0.35, 0.3, 0.5, 0.6, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5],
                [0.3, 0.3, 0.5, 0.6, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5],
                [0.45, 0.3, 0.5, 0.6, 0.7, 0.5, 0.5, 0.5, 0.5, 0.5],
            ],
        },
        Sequence {
            stem: "average-ema",
            averaging: Averaging::Ema(EmaSettings {
                alpha: 0.85,
                start_epoch: 2,
            }),
            val_robust: vec![accuracies(0.2); 5],
        },
    ]
}

/// Moves every variable of `model` a little (an epoch of training, as far as the average can
/// tell); the BatchNorm variances by a positive factor. In name order, so that the same seed
/// gives the same weights (`VarStore::variables` is a hash map).
fn train_epoch(model: &Model, seed: i64) {
    let vars: std::collections::BTreeMap<String, Tensor> =
        model.var_store().variables().into_iter().collect();
    seeded(seed, || {
        tch::no_grad(|| {
            for (name, mut t) in vars {
                let noise = t.randn_like() * 0.05;
                if name.ends_with("running_var") {
                    let _ = t.g_mul_(&noise.exp());
                } else {
                    let _ = t.g_add_(&noise);
                }
            }
        })
    });
}

fn copies(prefix: &str, state: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    state
        .into_iter()
        .map(|(n, t)| (format!("{prefix}.{n}"), t.detach().copy()))
        .collect()
}

/// Writes one file per epoch of `seq`.
fn write_sequence(out: &Path, seq: &Sequence) -> Result<Vec<Written>> {
    let model = Model::new(&spec(), Device::Cpu, MODEL_SEED)?;
    let mut averager = Averager::new(seq.averaging)?;
    let mut average = WeightAverage::new();
    let settings = match seq.averaging {
        Averaging::Ema(e) => settings("ema settings", &e)?,
        Averaging::Fawa(f) => settings("fawa settings", &f)?,
    };
    let mut written = Vec::new();
    for (epoch, val_robust) in seq.val_robust.iter().enumerate() {
        train_epoch(&model, 1000 + epoch as i64);
        let initialized = averager.is_initialized();
        let mut tensors = copies("average_before", average.state());
        tensors.extend(copies("model", model.state()));
        let decision = averager.decide(epoch, Some(val_robust))?;
        average.apply(decision.action, model.var_store());
        tensors.extend(copies("average_after", average.state()));
        let rule = json!({
            "format": "classwise-rule/1",
            "rule": seq.averaging.name(),
            "settings": settings,
            "epoch": epoch,
            "inputs": { "val_robust": val_robust, "initialized": initialized },
            "outputs": { "action": to_json("average action", &decision.action)?, "gate_value": decision.gate_value },
            "source": "trainer/examples/crosscheck_steps (averages.rs)",
        });
        let metadata = BTreeMap::from([("classwise.rule".to_owned(), rule.to_string())]);
        let path = out.join(format!("{}-e{epoch}.safetensors", seq.stem));
        write(&path, &tensors, &metadata)?;
        written.push((path, format!(": {:?}", decision.action)));
    }
    Ok(written)
}

/// Every weight-average file.
pub fn write_all(out: &Path) -> Result<Vec<Written>> {
    let mut written = Vec::new();
    for seq in sequences() {
        written.extend(write_sequence(out, &seq)?);
    }
    Ok(written)
}
