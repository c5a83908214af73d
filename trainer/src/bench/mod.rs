//! `classwise bench`: images per second of one training step (PGD-10 AT and TRADES-10) and of
//! one evaluation batch (PGD-20) for the models the CPU presets and the papers use, on the
//! current device and thread count. Timed after one warm-up step; it prints numbers and asserts
//! nothing.
//!
//! Each measurement is a [`BenchRow`], which serialises to the same JSON object the PyTorch
//! reference `tools/bench/reference.py` prints, so that `tools/bench/side_by_side.py` can
//! compare the two process by process.

pub mod autoattack;
mod crosscheck;
pub mod import;
mod text;

pub use autoattack::{AaBench, AaBenchOutcome, AaSettings};
pub use crosscheck::{CrossCheck, Reference};

use std::time::Instant;

use serde::Serialize;
use tch::{Device, Kind, Tensor};

use crate::attack::Pgd;
use crate::error::{Result, TrainerError, invalid};
use crate::eval::{RobustCounting, evaluate};
use crate::model::{Architecture, MemoryFormat, Model, ModelSpec, Precision};
use crate::profile;
use crate::runtime::Tuning;
use crate::train::{
    ClassPlan, Method, PgdAt, Sgd, SgdConfig, StepSettings, Trades, TradesScaling, train_epoch,
};

/// ε of every workload: 8/255, the CIFAR-10 budget of the papers.
pub const EPS: f64 = 8.0 / 255.0;
/// Step of the 10-step attacks: 2/255.
pub const ATTACK_STEP: f64 = 2.0 / 255.0;
/// Attack steps of the training workloads.
pub const ATTACK_STEPS: usize = 10;
/// Attack steps of the evaluation workload (PGD-20, the papers' usual evaluation).
pub const EVAL_ATTACK_STEPS: usize = 20;
/// TRADES' β.
pub const BETA: f64 = 6.0;
/// The optimiser of every workload: SGD, learning rate 0.01, momentum 0.9, weight decay 5e-4.
pub const SGD: (f64, SgdConfig) = (
    0.01,
    SgdConfig {
        momentum: 0.9,
        weight_decay: 5e-4,
        nesterov: false,
    },
);

/// A network of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BenchModel {
    /// TRADES' SmallCNN on 1×28×28 (the Fashion-MNIST presets).
    SmallCnn,
    /// CFA's PreActResNet-18 on 3×32×32 (the CIFAR-10 presets).
    PreactResnet18,
    /// The CIFAR ResNet-18 of WAT, BAT and Tian et al. on 3×32×32.
    Resnet18,
    /// WideResNet-34-10 on 3×32×32, the large model of the CFA and Tian et al. presets (minutes
    /// per step on a CPU: a GPU workload).
    #[serde(rename = "wrn-34-10")]
    Wrn34_10,
}

impl BenchModel {
    /// Every model, in the order they are measured.
    pub const ALL: [BenchModel; 4] = [
        BenchModel::SmallCnn,
        BenchModel::PreactResnet18,
        BenchModel::Resnet18,
        BenchModel::Wrn34_10,
    ];

    /// What `bench` measures when no model is named: the two the CPU presets use.
    pub const DEFAULT: [BenchModel; 2] = [BenchModel::SmallCnn, BenchModel::PreactResnet18];

    /// The command-line (and JSON) name.
    pub fn name(self) -> &'static str {
        match self {
            BenchModel::SmallCnn => "small-cnn",
            BenchModel::PreactResnet18 => "preact-resnet18",
            BenchModel::Resnet18 => "resnet18",
            BenchModel::Wrn34_10 => "wrn-34-10",
        }
    }

    /// The model spec (10 classes, no input normalisation).
    pub fn spec(self) -> ModelSpec {
        match self {
            BenchModel::SmallCnn => ModelSpec::new(Architecture::small_cnn(), 10, [1, 28, 28]),
            BenchModel::PreactResnet18 => ModelSpec::new(
                Architecture::PreActResNet18 {
                    final_bn_relu: true,
                },
                10,
                [3, 32, 32],
            ),
            BenchModel::Resnet18 => ModelSpec::new(Architecture::ResNet18, 10, [3, 32, 32]),
            BenchModel::Wrn34_10 => {
                ModelSpec::new(Architecture::wide_resnet(34, 10), 10, [3, 32, 32])
            }
        }
    }
}

impl std::str::FromStr for BenchModel {
    type Err = TrainerError;
    fn from_str(s: &str) -> Result<Self> {
        by_name(&BenchModel::ALL, BenchModel::name, "model", s)
    }
}

/// A workload of the benchmark: one training step of a method, attack included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    /// PGD-AT (Madry et al.): PGD-10 on the cross-entropy from a uniform start, with the model in
    /// eval mode, then a train-mode step on the adversarial batch.
    PgdAt,
    /// TRADES (Zhang et al., `yaodongyu/TRADES:trades.py`): 10 steps on the KL from a 0.001
    /// Gaussian start in eval mode, then CE(x) + β·KL on a train-mode step.
    Trades,
    /// The evaluation of one batch as `classwise eval --attack pgd --steps 20` runs it
    /// ([`crate::eval::evaluate`]): PGD-20 on the CE from a uniform start, model in eval
    /// mode, then the clean and adversarial predictions (and eval's check of the adversarial
    /// predictions in two halves). Not a training step: no update.
    EvalPgd20,
}

impl Workload {
    /// Every workload, in the order they are measured.
    pub const ALL: [Workload; 3] = [Workload::PgdAt, Workload::Trades, Workload::EvalPgd20];

    /// The command-line (and JSON) name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::PgdAt => "pgd-at",
            Workload::Trades => "trades",
            Workload::EvalPgd20 => "eval-pgd20",
        }
    }

    /// The training method of a training workload; `None` for the evaluation.
    pub fn method(self) -> Option<Method> {
        match self {
            Workload::PgdAt => Some(Method::PgdAt(PgdAt {
                attack: Pgd::ce(ATTACK_STEPS, ATTACK_STEP),
                attack_train_mode: false,
            })),
            Workload::Trades => Some(Method::Trades(Trades {
                attack: Pgd::trades(ATTACK_STEPS, ATTACK_STEP),
                scaling: TradesScaling::Paper,
                second_clean_forward: false,
            })),
            Workload::EvalPgd20 => None,
        }
    }

    /// The attack's steps.
    pub fn attack_steps(self) -> usize {
        match self {
            Workload::PgdAt | Workload::Trades => ATTACK_STEPS,
            Workload::EvalPgd20 => EVAL_ATTACK_STEPS,
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = TrainerError;
    fn from_str(s: &str) -> Result<Self> {
        by_name(&Workload::ALL, Workload::name, "workload", s)
    }
}

/// What a measurement ran with.
#[derive(Debug, Clone, Serialize)]
pub struct BenchSettings {
    /// The device as `env.json` and `doctor` write it (`Cpu`, `Cuda(0)`).
    pub device: String,
    /// libtorch's intra-op threads.
    pub threads: i32,
    /// Layout of the convolution kernels.
    pub memory_format: &'static str,
    /// The arithmetic of the forward passes (`fp32`, `bf16`).
    pub precision: Precision,
    /// cuDNN's autotuner (CUDA only; `false` on the CPU).
    pub cudnn_benchmark: bool,
    /// Timed steps (after `warmup`).
    pub steps: usize,
    pub warmup: usize,
    pub attack_steps: usize,
    pub attack_step: f64,
    pub eps: f64,
    /// TRADES' β (unused by PGD-AT).
    pub beta: f64,
    /// The process-wide CPU settings (`classwise_trainer::runtime`).
    pub tuning: Tuning,
}

/// One measurement; one JSON object per line with `bench --json`.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    /// `classwise` (the PyTorch reference writes `pytorch`).
    pub implementation: &'static str,
    pub model: BenchModel,
    /// The spec, in words.
    pub model_description: String,
    pub workload: Workload,
    pub batch: usize,
    pub img_per_s: f64,
    pub seconds_per_step: f64,
    pub settings: BenchSettings,
    /// With `profile`: the phases of the timed steps ([`crate::profile`]), by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Vec<PhaseRow>>,
}

/// One phase of a profiled step.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseRow {
    /// `data`, `loss`, `loss/attack/forward`, …: a phase's time includes its sub-phases'.
    pub phase: String,
    pub seconds_per_step: f64,
    /// Share of the whole step.
    pub share: f64,
    pub calls_per_step: f64,
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchPlan {
    pub models: Vec<BenchModel>,
    pub workloads: Vec<Workload>,
    pub batch: usize,
    /// Timed steps per measurement (after one warm-up step).
    pub steps: usize,
    pub memory_format: MemoryFormat,
    pub precision: Precision,
    /// cuDNN's autotuner on CUDA (`torch.backends.cudnn.benchmark`).
    pub cudnn_benchmark: bool,
    pub device: Device,
    /// Record where the timed steps spend their time ([`crate::profile`]; CPU only).
    pub profile: bool,
}

/// The value of `all` whose `name` is `s`; otherwise an error naming `field` and every name.
fn by_name<T: Copy>(all: &[T], name: fn(T) -> &'static str, field: &str, s: &str) -> Result<T> {
    all.iter().copied().find(|&v| name(v) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&v| name(v)).collect();
        invalid(field, s, format!("one of {}", names.join(", ")))
    })
}

/// Times every model × workload of `plan`; `each` is called with every row as it is measured.
/// Inputs are uniform in [0, 1) (seeded by the model's seed, 0) and labels cycle through the
/// classes, so the attack and the step do their full work and the evaluation's per-class
/// report has every class (which needs a batch of at least one image per class).
pub fn run(plan: &BenchPlan, mut each: impl FnMut(&BenchRow)) -> Result<Vec<BenchRow>> {
    if plan.batch == 0 || plan.steps == 0 {
        return Err(invalid(
            "batch/steps",
            format!("{}/{}", plan.batch, plan.steps),
            "at least 1 each",
        ));
    }
    let device = plan.device;
    if plan.profile && device != Device::Cpu {
        return Err(invalid(
            "profile",
            format!("{device:?}"),
            "the CPU (CUDA kernels run asynchronously, so phase wall times would mislead)",
        ));
    }
    if device.is_cuda() {
        tch::Cuda::cudnn_set_benchmark(plan.cudnn_benchmark);
    }
    let mut rows = Vec::new();
    for &bench_model in &plan.models {
        let spec = bench_model.spec();
        if plan.workloads.contains(&Workload::EvalPgd20) && plan.batch < spec.num_classes {
            return Err(invalid(
                "batch",
                plan.batch,
                format!(
                    "at least {} with eval-pgd20 (one image per class for its class-wise report)",
                    spec.num_classes
                ),
            ));
        }
        let mut model = Model::new(&spec, device, 0)?;
        model.set_memory_format(plan.memory_format)?;
        model.set_precision(plan.precision)?;
        let [c, h, w] = spec.input_shape.map(|v| v as i64);
        let batch = plan.batch as i64;
        let x = Tensor::rand([batch, c, h, w], (Kind::Float, device));
        let y = Tensor::arange(batch, (Kind::Int64, device)).remainder(spec.num_classes as i64);
        let class_plan = ClassPlan::uniform(spec.num_classes, EPS, BETA);
        let class_names: Vec<String> = (0..spec.num_classes).map(|k| k.to_string()).collect();
        for &workload in &plan.workloads {
            let (lr, sgd_config) = SGD;
            let mut sgd = Sgd::new(model.var_store(), sgd_config)?;
            let (method, eval_attack) =
                (workload.method(), Pgd::ce(EVAL_ATTACK_STEPS, ATTACK_STEP));
            let mut step = |n: usize| -> Result<()> {
                let batches = (0..n).map(|_| Ok((x.shallow_clone(), y.shallow_clone())));
                match &method {
                    Some(method) => train_epoch(
                        &model,
                        &mut sgd,
                        method,
                        &class_plan,
                        0,
                        batches,
                        StepSettings::constant(lr),
                        device,
                    )
                    .map(drop),
                    None => evaluate(
                        &model,
                        batches,
                        &class_names,
                        &eval_attack,
                        EPS,
                        RobustCounting::CleanAndAdversarial,
                        device,
                    )
                    .map(drop),
                }
            };
            step(1)?;
            let recorder = plan.profile.then(profile::Recorder::start);
            let t0 = Instant::now();
            step(plan.steps)?;
            let seconds_per_step = t0.elapsed().as_secs_f64() / plan.steps as f64;
            let profile = recorder.map(|r| phase_rows(r.finish(), plan.steps, seconds_per_step));
            let row = BenchRow {
                implementation: "classwise",
                model: bench_model,
                model_description: spec.describe(),
                workload,
                batch: plan.batch,
                img_per_s: plan.batch as f64 / seconds_per_step,
                seconds_per_step,
                settings: BenchSettings {
                    device: format!("{device:?}"),
                    threads: tch::get_num_threads(),
                    memory_format: plan.memory_format.name(),
                    precision: plan.precision,
                    cudnn_benchmark: device.is_cuda() && plan.cudnn_benchmark,
                    steps: plan.steps,
                    warmup: 1,
                    attack_steps: workload.attack_steps(),
                    attack_step: ATTACK_STEP,
                    eps: EPS,
                    beta: BETA,
                    tuning: crate::runtime::current(),
                },
                profile,
            };
            each(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The recorded phases per step, with `step` (the whole measured step) first and, for the top
/// level, the time no phase covers (`other`: the loop's bookkeeping).
fn phase_rows(
    phases: std::collections::BTreeMap<String, profile::Phase>,
    steps: usize,
    seconds_per_step: f64,
) -> Vec<PhaseRow> {
    let n = steps as f64;
    let row = |phase: &str, seconds: f64, calls: f64| PhaseRow {
        phase: phase.to_string(),
        seconds_per_step: seconds,
        share: seconds / seconds_per_step,
        calls_per_step: calls,
    };
    let top: f64 = phases
        .iter()
        .filter(|(name, _)| !name.contains('/'))
        .map(|(_, p)| p.seconds / n)
        .sum();
    std::iter::once(row("step", seconds_per_step, 1.0))
        .chain(
            phases
                .iter()
                .map(|(name, p)| row(name, p.seconds / n, p.calls as f64 / n)),
        )
        .chain(std::iter::once(row(
            "other",
            (seconds_per_step - top).max(0.0),
            1.0,
        )))
        .collect()
}
