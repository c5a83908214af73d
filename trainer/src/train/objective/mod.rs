//! Training objectives (CFA eqs. (1)-(3), FAT, MART, BAT), one small struct per method, each behind
//! the [`Objective`] trait. An objective builds its adversarial examples with the per-class
//! budgets of the epoch's [`ClassPlan`] (ε_{y_i} inside every attack, CFA eq. (6)), returns the
//! loss to differentiate and the per-sample prediction on the training input it used (CFA's
//! t_k, CFA §4.1; BAT Fig. 3) with, for the early-stopped attacks, the steps each sample took.
//!
//! Class-wise weights: the objective's first term (CE on x or x') is multiplied by the plan's
//! `natural_weight[y_i]`, its second term (TRADES' and MART's KL) by `boundary_weight[y_i]`, and
//! TRADES-like objectives use β_{y_i} (CFA eq. (8)). So every class-wise rule composes with
//! every objective without a copy. Adding a method is a new file here (a struct implementing
//! [`Objective`]: its name, its [`Base`] as the rules see it, its settings' checks, its loss)
//! and one variant of [`Method`] with its arm in [`Method::objective`].

mod bat;
mod fat;
mod mart;
mod natural;
mod pgd_at;
mod trades;

pub use bat::{Bat, BatPoint, BatSource};
pub use classwise_core::TradesScaling;
pub use fat::Fat;
pub use mart::Mart;
pub use natural::Natural;
pub use pgd_at::PgdAt;
pub use trades::Trades;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::plan::ClassPlan;
use crate::attack::{Attack, AttackInput, Budget, Pgd, StepSize};
use crate::error::{Result, invalid};
use crate::model::Classifier;
use classwise_core::rule::Base;

pub(crate) use crate::loss::{ce, kl, kl_log};

/// The loss of one batch and what it measured.
pub struct StepOutput {
    /// The scalar loss (differentiable with respect to the parameters).
    pub loss: Tensor,
    /// Per sample: the class the logits of the loss forward predict for the training input the
    /// loss used (x' for the adversarial objectives), before the update (int64, [N]). Compared
    /// with the labels it gives CFA's t_k; against them, the training confusion matrix (BAT
    /// Fig. 3).
    pub predicted: Tensor,
    /// Per sample: the ascent steps the training attack took, for the early-stopped attacks
    /// (FAT, BAT) whose count varies per sample (BAT Fig. 2b); `None` for the others (int64,
    /// [N]).
    pub steps: Option<Tensor>,
}

impl StepOutput {
    /// The loss and the predictions of `logits`, without step counts.
    pub(crate) fn new(loss: Tensor, logits: &Tensor) -> Self {
        StepOutput {
            loss,
            predicted: predicted_by(logits),
            steps: None,
        }
    }
}

/// What a batch is trained with besides its data.
#[derive(Clone, Copy)]
pub struct StepContext<'a> {
    /// The epoch's class-wise plan on the training device (ε already scaled by any warm-up).
    pub plan: &'a DevicePlan,
    /// The 0-based epoch (FAT's dynamic τ).
    pub epoch: usize,
}

/// A [`ClassPlan`], checked, with its per-class vectors as f32 tensors on the training device.
/// Built once per epoch (and per batch only while ε warms up), so that a batch only gathers its
/// samples' entries on the device instead of copying the vectors from the host.
pub struct DevicePlan {
    plan: ClassPlan,
    eps: Tensor,
    beta: Tensor,
    natural_weight: Tensor,
    boundary_weight: Tensor,
}

impl DevicePlan {
    /// Checks `plan` (every vector one finite value ≥ 0 per class; errors name `plan.<field>`)
    /// and copies it to `device`.
    pub fn new(plan: &ClassPlan, device: Device) -> Result<Self> {
        plan.validate_self()?;
        let table = |v: &[f64]| Tensor::from_slice(v).to_kind(Kind::Float).to_device(device);
        Ok(DevicePlan {
            eps: table(&plan.eps),
            beta: table(&plan.beta),
            natural_weight: table(&plan.natural_weight),
            boundary_weight: table(&plan.boundary_weight),
            plan: plan.clone(),
        })
    }

    /// The plan with every ε multiplied by `factor` (an ε warm-up); the other tables are shared.
    pub fn with_eps_scale(&self, factor: f64) -> Result<Self> {
        let plan = self.plan.with_eps_scale(factor)?;
        Ok(DevicePlan {
            eps: Tensor::from_slice(&plan.eps)
                .to_kind(Kind::Float)
                .to_device(self.eps.device()),
            beta: self.beta.shallow_clone(),
            natural_weight: self.natural_weight.shallow_clone(),
            boundary_weight: self.boundary_weight.shallow_clone(),
            plan,
        })
    }

    /// The plan on the host.
    pub fn plan(&self) -> &ClassPlan {
        &self.plan
    }

    /// ε_{y_i} per sample.
    pub(crate) fn budget(&self, y: &Tensor) -> Result<Budget> {
        Budget::from_class_table(&self.eps, y)
    }

    /// β_{y_i} per sample.
    pub(crate) fn beta(&self, y: &Tensor) -> Tensor {
        self.beta.index_select(0, y)
    }

    /// The weight of the natural/CE term of sample i's class.
    pub(crate) fn natural_weight(&self, y: &Tensor) -> Tensor {
        self.natural_weight.index_select(0, y)
    }

    /// The weight of the boundary (KL) term of sample i's class.
    pub(crate) fn boundary_weight(&self, y: &Tensor) -> Tensor {
        self.boundary_weight.index_select(0, y)
    }
}

/// A training objective.
pub trait Objective {
    /// The method's name in configurations (`[train] method = { method = "…" }`).
    fn name(&self) -> &'static str;
    /// The objective as the class-wise rules know it (which rules fit it).
    fn base(&self) -> Base;
    /// Checks the objective's settings; errors name `attack.<field>`.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
    fn describe(&self) -> String;
    /// Whether the objective has a trade-off β (class-wise rules such as CCR need one).
    fn uses_beta(&self) -> bool {
        false
    }
    /// The training attack's absolute step size at budget `eps` (0 without an attack).
    fn attack_step(&self, _eps: f64) -> f64 {
        0.0
    }
    /// The loss of batch (x, y); the model is in train mode for the loss forward.
    fn loss(
        &self,
        model: &dyn Classifier,
        x: &Tensor,
        y: &Tensor,
        ctx: StepContext<'_>,
    ) -> Result<StepOutput>;
}

/// The methods a run configuration can name (`[train] method = { method = "…", … }`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "method")]
pub enum Method {
    Natural,
    PgdAt(PgdAt),
    Trades(Trades),
    Fat(Fat),
    Mart(Mart),
    Bat(Bat),
}

impl Method {
    /// The objective of the method.
    pub fn objective(&self) -> &dyn Objective {
        match self {
            Method::Natural => &Natural,
            Method::PgdAt(m) => m,
            Method::Trades(m) => m,
            Method::Fat(m) => m,
            Method::Mart(m) => m,
            Method::Bat(m) => m,
        }
    }
}

impl Objective for Method {
    fn name(&self) -> &'static str {
        self.objective().name()
    }
    fn base(&self) -> Base {
        self.objective().base()
    }
    fn validate(&self) -> Result<()> {
        self.objective().validate()
    }
    fn describe(&self) -> String {
        self.objective().describe()
    }
    fn uses_beta(&self) -> bool {
        self.objective().uses_beta()
    }
    fn attack_step(&self, eps: f64) -> f64 {
        self.objective().attack_step(eps)
    }
    fn loss(
        &self,
        model: &dyn Classifier,
        x: &Tensor,
        y: &Tensor,
        ctx: StepContext<'_>,
    ) -> Result<StepOutput> {
        self.objective().loss(model, x, y, ctx)
    }
}

/// The predicted class per sample (int64, [N]).
pub(crate) fn predicted_by(logits: &Tensor) -> Tensor {
    logits.detach().argmax(-1, false)
}

/// Checks the batch and its labels; returns the per-sample budgets ε_{y_i}.
pub(crate) fn prepare(x: &Tensor, y: &Tensor, plan: &DevicePlan) -> Result<Budget> {
    let n = x.size().first().copied().unwrap_or(0);
    if n == 0 {
        return Err(invalid("batch", "0 samples", "at least one sample"));
    }
    plan.budget(y)
}

/// x' from the CE/KL-PGD `attack` at the plan's per-sample budgets ε_{y_i} and step override,
/// the model in train mode during the attack when `train` is set. Checks the batch and the plan.
pub(crate) fn adversarial(
    model: &dyn Classifier,
    x: &Tensor,
    y: &Tensor,
    plan: &DevicePlan,
    attack: &Pgd,
    train: bool,
) -> Result<Tensor> {
    let eps = prepare(x, y, plan)?;
    let attack = Pgd {
        step: planned_step(attack.step, plan),
        ..*attack
    };
    let input = AttackInput {
        x,
        y,
        eps: &eps,
        train,
    };
    let x_adv = attack.perturb(model, &input)?;
    CAPTURED.with(|c| {
        if let Some(slot) = c.borrow_mut().as_mut() {
            *slot = Some(x_adv.detach().copy());
        }
    });
    Ok(x_adv)
}

thread_local! {
    /// While [`capturing_adversarial`] runs: the last adversarial batch built on this thread.
    static CAPTURED: std::cell::RefCell<Option<Option<Tensor>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` and returns, with its result, the last adversarial training input the objectives'
/// PGD attacks built on this thread meanwhile (x' of PGD-AT, TRADES, MART; `None` when none
/// ran). For the step cross-check (`tools/crosscheck/STEP_FORMAT.md`); training never calls it.
pub fn capturing_adversarial<T>(f: impl FnOnce() -> T) -> (T, Option<Tensor>) {
    CAPTURED.with(|c| *c.borrow_mut() = Some(None));
    let out = f();
    let x_adv = CAPTURED.with(|c| c.borrow_mut().take().flatten());
    (out, x_adv)
}

/// The weighted mean CE on `input` (the training input: x, x' or FAT's x̃), forwarded in train
/// mode, and its per-sample predictions.
pub(crate) fn weighted_ce(
    model: &dyn Classifier,
    input: &Tensor,
    y: &Tensor,
    plan: &DevicePlan,
) -> StepOutput {
    let z = model.forward_t(input, true);
    let w = plan.natural_weight(y);
    StepOutput::new((ce(&z, y) * w).mean(Kind::Float), &z)
}

/// The attack's step with the plan's override (FRL's remargin) applied.
pub(crate) fn planned_step(step: StepSize, plan: &DevicePlan) -> StepSize {
    plan.plan.step_size.map_or(step, StepSize::Absolute)
}

/// The absolute step of `step` at budget `eps`.
pub(crate) fn absolute_step(step: StepSize, eps: f64) -> f64 {
    match step {
        StepSize::Absolute(a) => a,
        StepSize::FractionOfEps(f) => f * eps,
    }
}
