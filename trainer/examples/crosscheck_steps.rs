//! Writes step files for the step cross-check (`tools/crosscheck/STEP_FORMAT.md`): one SGD step
//! of each method on the same WideResNet-10-1 (BatchNorm, no dropout), the same class-balanced
//! batch and the same weights, with the training attack's random start recorded unscaled.
//!
//! ```sh
//! cargo run --release -p classwise-trainer --example crosscheck_steps -- OUT_DIR
//! $PY tools/crosscheck/steps.py OUT_DIR/*.safetensors --markdown results/crosscheck.md
//! ```
//!
//! The start is recorded by drawing it from the step's seed before the step, then reseeding:
//! the attack's first draw from libtorch's generator is then the same tensor (the network has
//! no dropout, so nothing else draws first). A method whose attack drew otherwise would show
//! a difference in the cross-check, not pass silently. Covered: PGD-AT and TRADES (both
//! scalings, uniform and class-wise plans), MART. Not yet: FAT, BAT (their early-stopped
//! examples and step noise are not captured), the rule files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use classwise_trainer::Result;
use classwise_trainer::attack::{Pgd, Start};
use classwise_trainer::model::safetensors::write;
use classwise_trainer::model::{Architecture, Model, ModelSpec};
use classwise_trainer::seed::seeded;
use classwise_trainer::train::objective::capturing_adversarial;
use classwise_trainer::train::{
    ClassPlan, DevicePlan, Mart, Method, Objective, PgdAt, Sgd, SgdConfig, StepContext, Trades,
    TradesScaling,
};
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

const K: usize = 10;
const EPS: f64 = 8.0 / 255.0;
const STEP: f64 = 2.0 / 255.0;
const SEED: i64 = 11;
const SGD: SgdConfig = SgdConfig {
    momentum: 0.9,
    weight_decay: 5e-4,
    nesterov: false,
};
const LR: f64 = 0.1;

/// One case: a file name, the method, the plan and CFA's clean forward after the step.
struct Case {
    name: &'static str,
    method: Method,
    plan: ClassPlan,
    rule: serde_json::Value,
    after_step: bool,
}

fn main() -> Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "crosscheck-steps".into()),
    );
    std::fs::create_dir_all(&out)
        .map_err(|e| classwise_trainer::error::invalid("OUT", out.display(), e.to_string()))?;
    let spec = ModelSpec::new(
        Architecture::WideResNet {
            depth: 10,
            widen: 1,
        },
        K,
        [3, 16, 16],
    );
    let (x, y) = seeded(3, || {
        (
            Tensor::rand([K as i64, 3, 16, 16], (Kind::Float, Device::Cpu)),
            Tensor::arange(K as i64, (Kind::Int64, Device::Cpu)),
        )
    });
    for case in cases() {
        let path = out.join(format!("{}.safetensors", case.name));
        write_step(&path, &spec, &case, &x, &y)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Madry's PGD-10 on CE from a uniform start (CFA's training attack).
fn uniform_attack() -> Pgd {
    Pgd::ce(10, STEP)
}

/// TRADES' KL attack from x + 0.001·N(0, I).
fn normal_attack() -> Pgd {
    Pgd::trades(10, STEP)
}

/// MART's attack: CE from x + 0.001·N(0, I) (`YisenWang/MART:mart.py`).
fn mart_attack() -> Pgd {
    Pgd {
        start: Start::Normal { std: 0.001 },
        ..Pgd::ce(10, STEP)
    }
}

/// A class-wise plan: ε_k from 0.5·ε to 1.4·ε, β_k from 1 to 10, weights around 1.
fn class_wise() -> ClassPlan {
    let f = |a: f64, b: f64| {
        (0..K)
            .map(|k| a + (b - a) * k as f64 / (K - 1) as f64)
            .collect()
    };
    ClassPlan {
        eps: f(0.5 * EPS, 1.4 * EPS),
        beta: f(1.0, 10.0),
        natural_weight: f(0.6, 1.5),
        boundary_weight: f(1.4, 0.7),
        step_size: None,
    }
}

fn cases() -> Vec<Case> {
    let uniform = ClassPlan::uniform(K, EPS, 6.0);
    let rule = |kind: &str| serde_json::json!({ "kind": kind });
    let trades = |scaling, second| {
        Method::Trades(Trades {
            attack: normal_attack(),
            scaling,
            second_clean_forward: second,
        })
    };
    let at = |train_mode| {
        Method::PgdAt(PgdAt {
            attack: uniform_attack(),
            attack_train_mode: train_mode,
        })
    };
    vec![
        Case {
            name: "pgd-at-cfa",
            method: at(true),
            plan: uniform.clone(),
            rule: rule("uniform"),
            after_step: true,
        },
        Case {
            name: "pgd-at-ccm",
            method: at(true),
            plan: ClassPlan {
                beta: vec![6.0; K],
                ..class_wise()
            },
            rule: rule("cfa"),
            after_step: true,
        },
        Case {
            name: "trades-cfa",
            method: trades(TradesScaling::Reference, true),
            plan: uniform.clone(),
            rule: rule("uniform"),
            after_step: true,
        },
        Case {
            name: "trades-cfa-ccm-ccr",
            method: trades(TradesScaling::Reference, true),
            plan: class_wise(),
            rule: rule("cfa"),
            after_step: true,
        },
        // A control: classwise's defaults (one clean forward, none after the step) against
        // CFA's code, which makes both: expected to differ in the BatchNorm statistics only.
        Case {
            name: "control-trades-cfa-defaults",
            method: trades(TradesScaling::Reference, false),
            plan: uniform.clone(),
            rule: rule("uniform"),
            after_step: false,
        },
        Case {
            name: "trades-paper",
            method: trades(TradesScaling::Paper, true),
            plan: uniform.clone(),
            rule: rule("uniform"),
            after_step: false,
        },
        Case {
            name: "trades-class-beta",
            method: trades(TradesScaling::Paper, true),
            plan: ClassPlan {
                eps: vec![EPS; K],
                ..class_wise()
            },
            rule: rule("class-beta"),
            after_step: false,
        },
        Case {
            name: "mart",
            method: Method::Mart(Mart {
                attack: mart_attack(),
            }),
            plan: uniform,
            rule: rule("uniform"),
            after_step: false,
        },
    ]
}

/// The attack's unscaled first draw from the step's seed: U(−1, 1) for a uniform start, N(0, 1)
/// for a normal one.
fn start_draw(method: &Method, x: &Tensor) -> Option<Tensor> {
    let start = match method {
        Method::PgdAt(m) => m.attack.start,
        Method::Trades(m) => m.attack.start,
        Method::Mart(m) => m.attack.start,
        _ => return None,
    };
    Some(seeded(SEED, || match start {
        Start::Uniform => x.rand_like() * 2.0 - 1.0,
        Start::Normal { .. } => x.randn_like(),
        Start::None => x.zeros_like(),
    }))
}

/// Per class: the batch's samples with `predicted` = y, and all of them.
fn counts(predicted: &Tensor, y: &Tensor) -> (Tensor, Tensor) {
    let hit = predicted.eq_tensor(y).to_kind(Kind::Int64);
    let zeros = Tensor::zeros([K as i64], (Kind::Int64, Device::Cpu));
    (
        zeros.index_add(0, y, &hit),
        zeros.index_add(0, y, &y.ones_like()),
    )
}

/// One step of `case` from a fresh model of `spec`, written to `path`.
fn write_step(path: &Path, spec: &ModelSpec, case: &Case, x: &Tensor, y: &Tensor) -> Result<()> {
    let model = Model::new(spec, Device::Cpu, 5)?;
    let mut opt = Sgd::new(model.var_store(), SGD)?;
    let mut tensors: Vec<(String, Tensor)> = vec![("x".into(), x.copy()), ("y".into(), y.copy())];
    let named = |prefix: &str, state: Vec<(String, Tensor)>| {
        state
            .into_iter()
            .map(move |(n, t)| (format!("{prefix}.{n}"), t))
            .collect::<Vec<_>>()
    };
    tensors.extend(named("before", model.state()));
    if let Some(draw) = start_draw(&case.method, x) {
        tensors.push(("draw.start".into(), draw));
    }
    let plan = DevicePlan::new(&case.plan, Device::Cpu)?;
    let ctx = StepContext {
        plan: &plan,
        epoch: 0,
    };
    opt.zero_grad();
    let (out, x_adv) =
        capturing_adversarial(|| seeded(SEED, || case.method.loss(&model, x, y, ctx)));
    let out = out?;
    out.loss.backward();
    let grads: Vec<(String, Tensor)> = opt
        .parameters()
        .map(|(n, t)| (format!("grad.{n}"), t.grad().copy()))
        .collect();
    tensors.extend(grads);
    opt.step(LR);
    if case.after_step {
        tch::no_grad(|| drop(model.forward_t(x, true)));
    }
    let (correct, total) = counts(&out.predicted, y);
    tensors.extend([
        ("out.loss".to_owned(), out.loss.detach().copy()),
        (
            "out.predicted".to_owned(),
            out.predicted.to_kind(Kind::Int64),
        ),
        ("out.correct".to_owned(), correct),
        ("out.total".to_owned(), total),
    ]);
    if let Some(x_adv) = x_adv {
        tensors.push(("out.x_adv".into(), x_adv));
    }
    tensors.extend(named("after", model.state()));
    tensors.extend(named("after_momentum", opt.state()));
    let step = serde_json::json!({
        "format": "classwise-step/1",
        "method": case.method,
        "rule": case.rule,
        "plan": case.plan,
        "epoch": 0,
        "optimizer": { "lr": LR, "momentum": SGD.momentum, "weight_decay": SGD.weight_decay, "nesterov": SGD.nesterov },
        "clean_forward_after_step": case.after_step,
        "source": format!("trainer/examples/crosscheck_steps.rs, case {}, model seed 5, batch seed 3, step seed {SEED}", case.name),
    });
    let metadata = BTreeMap::from([
        ("classwise.model_spec".to_owned(), spec.to_json()?),
        ("classwise.step".to_owned(), step.to_string()),
    ]);
    write(path, &tensors, &metadata)
}
