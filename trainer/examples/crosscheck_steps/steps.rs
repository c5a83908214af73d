//! Step files: one SGD step of each method from the same weights on the same batch
//! (STEP_FORMAT.md, "Step file"). The cases are in `cases.rs`.
//!
//! The random draws are recorded by replaying them: libtorch's generator is seeded with
//! [`SEED`] before the step, and after it the same seed gives the same tensors in the order the
//! attacks drew them (the start; FAT's ω noise, one [N, C, H, W] draw per step taken; BAT's
//! second start for x'), since the network has no dropout and nothing else draws. A method whose
//! attack drew otherwise would show a difference in the cross-check, not pass silently. The
//! attacks' results (x', FAT's x̃, BAT's boundary pair) are captured as the objectives built them
//! (`capturing_adversarial`, `capturing_early_stopped`).

use std::collections::BTreeMap;
use std::path::Path;

use classwise_trainer::attack::{EarlyStopped, Start, capturing_early_stopped};
use classwise_trainer::error::invalid;
use classwise_trainer::model::safetensors::write;
use classwise_trainer::model::{Model, ModelSpec};
use classwise_trainer::seed::seeded;
use classwise_trainer::train::objective::capturing_adversarial;
use classwise_trainer::train::{
    BatPoint, BatSource, ClassPlan, DevicePlan, Method, Objective, Sgd, StepContext, StepOutput,
};
use classwise_trainer::{Result, tch};
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

use crate::common::{K, LR, MODEL_SEED, SEED, SGD, Written, batch, spec};

/// One case: a file name, the method, the plan, the rule it came from and the step's settings.
pub struct Case {
    pub name: &'static str,
    pub method: Method,
    pub plan: ClassPlan,
    /// `[rule]` as serialised (only `kind` for the plans written by hand).
    pub rule: serde_json::Value,
    /// CFA's clean forward after the step (`clean_forward_after_step`).
    pub after_step: bool,
    /// The 0-based epoch (FAT's τ schedule).
    pub epoch: usize,
    /// Start from weights fitted to the batch ([`fit`]) instead of the initialisation.
    pub fitted: bool,
    /// `reference_inputs` (WAT's Hedge weights).
    pub reference_inputs: Option<serde_json::Value>,
}

impl Case {
    /// A step of `method` at epoch 0 from the initial weights, without a forward after it.
    pub fn new(
        name: &'static str,
        method: Method,
        plan: ClassPlan,
        rule: serde_json::Value,
    ) -> Self {
        Case {
            name,
            method,
            plan,
            rule,
            after_step: false,
            epoch: 0,
            fitted: false,
            reference_inputs: None,
        }
    }

    /// With CFA's clean forward after the step (`PKU-ML/CFA:train.py:98`).
    pub fn forward_after(self) -> Self {
        Case {
            after_step: true,
            ..self
        }
    }

    /// From weights fitted to the batch ([`fit`]), at 0-based `epoch`.
    pub fn fitted(self, epoch: usize) -> Self {
        Case {
            fitted: true,
            epoch,
            ..self
        }
    }
}

/// Natural SGD steps of [`fit`] and their learning rate.
const FIT_STEPS: usize = 12;
const FIT_LR: f64 = 0.05;

/// Writes every case of `cases` (`cases.rs`); returns the files with the steps the
/// early-stopped attacks took.
pub fn write_all(out: &Path, cases: Vec<Case>) -> Result<Vec<Written>> {
    let spec = spec();
    let (x, y) = batch();
    let mut files = Vec::new();
    for case in cases {
        let path = out.join(format!("{}.safetensors", case.name));
        let note = write_step(&path, &spec, &case, &x, &y)?;
        files.push((path, note));
    }
    Ok(files)
}

/// A dozen natural SGD steps on the batch, so that the early-stopped attacks stop at various
/// steps (STEP_FORMAT.md, "Any weights"). The optimiser keeps its momentum buffers: the step
/// then starts from them (`momentum.*` in the file).
fn fit(model: &Model, opt: &mut Sgd, x: &Tensor, y: &Tensor) {
    for _ in 0..FIT_STEPS {
        opt.zero_grad();
        model
            .forward_t(x, true)
            .cross_entropy_for_logits(y)
            .backward();
        opt.step(FIT_LR);
    }
}

/// `state` with `prefix.` before each name, as copies.
fn named(prefix: &str, state: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    state
        .into_iter()
        .map(|(n, t)| (format!("{prefix}.{n}"), t.detach().copy()))
        .collect()
}

/// What one step returned, with what the captures saw.
struct Stepped {
    out: StepOutput,
    /// The objectives' last PGD x' (PGD-AT, TRADES, MART; BAT's full x').
    x_adv: Option<Tensor>,
    /// The early-stopped attacks' runs (FAT, BAT).
    runs: Vec<EarlyStopped>,
}

/// The loss of `case` on (x, y) with the step's seed, its captures, and the gradients.
fn loss_and_grads(
    case: &Case,
    model: &Model,
    opt: &mut Sgd,
    x: &Tensor,
    y: &Tensor,
) -> Result<(Stepped, Vec<(String, Tensor)>)> {
    let plan = DevicePlan::new(&case.plan, Device::Cpu)?;
    let ctx = StepContext {
        plan: &plan,
        epoch: case.epoch,
    };
    opt.zero_grad();
    let ((out, runs), x_adv) = capturing_adversarial(|| {
        capturing_early_stopped(|| seeded(SEED, || case.method.loss(model, x, y, ctx)))
    });
    let out = out?;
    out.loss.backward();
    let grads = opt
        .parameters()
        .map(|(n, t)| (format!("grad.{n}"), t.grad().copy()))
        .collect();
    Ok((Stepped { out, x_adv, runs }, grads))
}

/// One step of `case` written to `path`; returns a note with the attack steps taken.
fn write_step(
    path: &Path,
    spec: &ModelSpec,
    case: &Case,
    x: &Tensor,
    y: &Tensor,
) -> Result<String> {
    let model = Model::new(spec, Device::Cpu, MODEL_SEED)?;
    let mut opt = Sgd::new(model.var_store(), SGD)?;
    if case.fitted {
        fit(&model, &mut opt, x, y);
    }
    let mut tensors: Vec<(String, Tensor)> = vec![("x".into(), x.copy()), ("y".into(), y.copy())];
    tensors.extend(named("before", model.state()));
    tensors.extend(named("momentum", opt.state()));
    let (stepped, grads) = loss_and_grads(case, &model, &mut opt, x, y)?;
    tensors.extend(grads);
    opt.step(LR);
    if case.after_step {
        tch::no_grad(|| drop(model.forward_t(x, true)));
    }
    let steps = stepped.out.steps.as_ref().map(Tensor::copy);
    tensors.extend(draws(&case.method, x, steps.as_ref())?);
    tensors.extend(outputs(&case.method, stepped, y)?);
    tensors.extend(named("after", model.state()));
    tensors.extend(named("after_momentum", opt.state()));
    write(path, &tensors, &metadata(spec, case)?)?;
    Ok(match steps {
        Some(s) => format!(": attack steps {:?}", Vec::<i64>::try_from(&s)?),
        None => String::new(),
    })
}

/// The step's metadata: the model spec and the `classwise.step` object.
fn metadata(spec: &ModelSpec, case: &Case) -> Result<BTreeMap<String, String>> {
    let mut step = serde_json::json!({
        "format": "classwise-step/1",
        "method": case.method,
        "rule": case.rule,
        "plan": case.plan,
        "epoch": case.epoch,
        "optimizer": { "lr": LR, "momentum": SGD.momentum, "weight_decay": SGD.weight_decay, "nesterov": SGD.nesterov },
        "clean_forward_after_step": case.after_step,
        "source": format!(
            "trainer/examples/crosscheck_steps, case {}, model seed {MODEL_SEED}{}, batch seed 3, step seed {SEED}",
            case.name,
            if case.fitted { format!(", {FIT_STEPS} natural SGD steps of lr {FIT_LR} on the batch") } else { String::new() },
        ),
    });
    if let Some(r) = &case.reference_inputs {
        step["reference_inputs"] = r.clone();
    }
    Ok(BTreeMap::from([
        ("classwise.model_spec".to_owned(), spec.to_json()?),
        ("classwise.step".to_owned(), step.to_string()),
    ]))
}

/// The loss, the predictions, the per-class counts, the steps and the training inputs.
fn outputs(method: &Method, stepped: Stepped, y: &Tensor) -> Result<Vec<(String, Tensor)>> {
    let Stepped { out, x_adv, runs } = stepped;
    let (correct, total) = counts(&out.predicted, y);
    let mut tensors = vec![
        ("out.loss".to_owned(), out.loss.detach().copy()),
        (
            "out.predicted".to_owned(),
            out.predicted.to_kind(Kind::Int64),
        ),
        ("out.correct".to_owned(), correct),
        ("out.total".to_owned(), total),
    ];
    if let Some(steps) = out.steps {
        tensors.push(("out.steps".into(), steps));
    }
    tensors.extend(training_inputs(method, x_adv, runs)?);
    Ok(tensors)
}

/// The training inputs as STEP_FORMAT.md names them: x' (`out.x_adv`); FAT's x̃ (`out.x_adv`);
/// BAT's boundary pair (`out.x_c`, `out.x_a`) and its x' when computed.
fn training_inputs(
    method: &Method,
    x_adv: Option<Tensor>,
    mut runs: Vec<EarlyStopped>,
) -> Result<Vec<(String, Tensor)>> {
    let early_stopped = matches!(method, Method::Fat(_) | Method::Bat(_));
    if early_stopped != (runs.len() == 1) {
        return Err(invalid(
            "captured early-stopped runs",
            runs.len(),
            format!("one for FAT and BAT, none otherwise ({})", method.name()),
        ));
    }
    let mut tensors = Vec::new();
    match (method, runs.pop()) {
        (Method::Fat(_), Some(run)) => tensors.push(("out.x_adv".to_owned(), run.x_adv)),
        (Method::Bat(_), Some(run)) => {
            tensors.push(("out.x_c".to_owned(), run.last_correct));
            tensors.push(("out.x_a".to_owned(), run.first_wrong));
        }
        _ => {}
    }
    if !matches!(method, Method::Fat(_))
        && let Some(x_adv) = x_adv
    {
        tensors.push(("out.x_adv".into(), x_adv));
    }
    Ok(tensors)
}

/// The draws the step's attacks made, replayed from [`SEED`] (see the module docs), unscaled:
/// `draw.start`; FAT's `draw.step_noise` [S, N, C, H, W] when ω > 0 (S: the most steps a
/// sample took, the rounds with a step, since a sample that stops never steps again); BAT's
/// `draw.start_fixed` when it also runs the full attack.
fn draws(method: &Method, x: &Tensor, steps: Option<&Tensor>) -> Result<Vec<(String, Tensor)>> {
    let (start, noise_steps, fixed) = match method {
        Method::Natural => return Ok(Vec::new()),
        Method::PgdAt(m) => (m.attack.start, 0, None),
        Method::Trades(m) => (m.attack.start, 0, None),
        Method::Mart(m) => (m.attack.start, 0, None),
        Method::Fat(m) => {
            let s = match (m.attack.step_noise > 0.0, steps) {
                (true, Some(s)) => i64::try_from(s.max())?,
                _ => 0,
            };
            (m.attack.start, s, None)
        }
        Method::Bat(m) => {
            let full = m.source == BatSource::Trades || m.uniform_on.contains(&BatPoint::Fixed);
            (m.attack.start, 0, full.then_some(m.attack.start))
        }
    };
    Ok(seeded(SEED, || {
        let mut out = vec![("draw.start".to_owned(), start_draw(start, x))];
        if noise_steps > 0 {
            let noise: Vec<Tensor> = (0..noise_steps).map(|_| x.randn_like()).collect();
            out.push(("draw.step_noise".into(), Tensor::stack(&noise, 0)));
        }
        if let Some(start) = fixed {
            out.push(("draw.start_fixed".into(), start_draw(start, x)));
        }
        out
    }))
}

/// An attack's unscaled start draw, the attack's own ([`Start::draw`]); zeros, drawing
/// nothing, without a start.
fn start_draw(start: Start, x: &Tensor) -> Tensor {
    start.draw(x).unwrap_or_else(|| x.zeros_like())
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
