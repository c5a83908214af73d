//! Projected gradient ascent in the ℓ∞ ball (Madry et al.; CFA eq. (2)):
//!
//! ```text
//! x' ← start(x)
//! repeat n times: x' ← Clip01(Π_{ε_i}(x' + α_i·sign(∇_{x'} L)))
//! ```

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::loss::AttackLoss;
use super::{Attack, AttackInput, check_input, input_gradient, project};
use crate::error::{Bound, Result, check, invalid};
use crate::model::Classifier;
use crate::profile;

/// The random start of PGD.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Start {
    /// x' = x.
    None,
    /// x' = Clip01(x + U(−ε_i, ε_i)) elementwise (Madry; scaled by the per-sample ε, as
    /// `cw_attack_pgd` in `PKU-ML/CFA:attack.py`).
    Uniform,
    /// x' = x + std·N(0, I), **not** clipped before the first step (TRADES: std = 0.001).
    Normal { std: f64 },
}

impl Start {
    /// The start's unscaled random draw for a batch shaped like `x`: U(−1, 1) (`rand·2 − 1`)
    /// for a uniform start, N(0, 1) for a normal one, `None` without a start.
    /// [`Ascent::start`] scales it; the step cross-check records it (`draw.start`).
    pub fn draw(self, x: &Tensor) -> Option<Tensor> {
        match self {
            Start::None => None,
            Start::Uniform => Some(x.rand_like() * 2.0 - 1.0),
            Start::Normal { .. } => Some(x.randn_like()),
        }
    }
}

/// The step size α_i.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum StepSize {
    /// The same α for every sample whatever its ε_i (CFA: 2/255, `PKU-ML/CFA:attack.py`).
    Absolute(f64),
    /// α_i = f·ε_i (e.g. FAT's CW step ε/4; FGSM is one step with f = 1).
    FractionOfEps(f64),
}

/// PGD with any [`AttackLoss`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pgd {
    pub steps: usize,
    pub step: StepSize,
    pub start: Start,
    pub loss: AttackLoss,
}

impl Pgd {
    /// Madry PGD on CE with a uniform start.
    pub fn ce(steps: usize, step: f64) -> Self {
        Pgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Uniform,
            loss: AttackLoss::CrossEntropy,
        }
    }

    /// FGSM: one step of size ε_i on CE from x (Goodfellow et al.).
    pub fn fgsm() -> Self {
        Pgd {
            steps: 1,
            step: StepSize::FractionOfEps(1.0),
            start: Start::None,
            loss: AttackLoss::CrossEntropy,
        }
    }

    /// FGSM from a uniform random start in the ε-ball: one step of `step_fraction`·ε_i on CE,
    /// then projection (Tian et al. App. A.2 evaluate "FGSM with random start"; Wong et al.
    /// 2020 train with it at step 1.25·ε).
    pub fn fgsm_random_start(step_fraction: f64) -> Self {
        Pgd {
            steps: 1,
            step: StepSize::FractionOfEps(step_fraction),
            start: Start::Uniform,
            loss: AttackLoss::CrossEntropy,
        }
    }

    /// The TRADES inner maximisation: KL from x + 0.001·N(0, I) (`yaodongyu/TRADES:trades.py`).
    pub fn trades(steps: usize, step: f64) -> Self {
        Pgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Normal { std: 0.001 },
            loss: AttackLoss::TradesKl,
        }
    }

    /// CW∞: PGD on the margin loss with κ = 50 (WAT: 30 steps of 0.003,
    /// `boqili/WAT:worst_class_adversarial_train.py`).
    pub fn cw(steps: usize, step: f64) -> Self {
        Pgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Uniform,
            loss: AttackLoss::CwMargin { kappa: 50.0 },
        }
    }

    /// Tian et al.'s Temperature-PGD: CE on z/T with 1/T = `inv_t` (Tian §5, Table 3).
    pub fn temperature(steps: usize, step: f64, inv_t: f64) -> Self {
        Pgd {
            steps,
            step: StepSize::Absolute(step),
            start: Start::Uniform,
            loss: AttackLoss::Temperature { inv_t },
        }
    }

    /// Checks the settings: at least one step (an attack of 0 steps would report clean
    /// accuracy as robust accuracy), and the step, start and loss parameters.
    pub fn validate(&self) -> Result<()> {
        if self.steps == 0 {
            return Err(invalid("attack.steps", 0, ">= 1"));
        }
        validate_common(self.step, self.start, self.loss)
    }
}

/// Checks a step size, a start and a loss.
pub(crate) fn validate_common(step: StepSize, start: Start, loss: AttackLoss) -> Result<()> {
    let (StepSize::Absolute(a) | StepSize::FractionOfEps(a)) = step;
    check("attack.step", a, Bound::NonNegative)?;
    if let Start::Normal { std } = start {
        check("attack.start.std", std, Bound::NonNegative)?;
    }
    match loss {
        AttackLoss::CwMargin { kappa } if !(kappa.is_finite() && kappa >= 0.0) => {
            Err(invalid("attack.loss.kappa", kappa, "finite and >= 0"))
        }
        AttackLoss::Temperature { inv_t } if !(inv_t.is_finite() && inv_t > 0.0) => {
            Err(invalid("attack.loss.inv_t", inv_t, "finite and > 0"))
        }
        _ => Ok(()),
    }
}

/// The state every PGD-style attack shares: clean input, broadcast budgets and step sizes, the
/// clean probabilities when the loss needs them.
pub(crate) struct Ascent<'a> {
    pub model: &'a dyn Classifier,
    pub input: &'a AttackInput<'a>,
    pub loss: AttackLoss,
    pub eps: Tensor,
    pub alpha: Tensor,
    pub clean_prob: Option<Tensor>,
}

impl<'a> Ascent<'a> {
    pub fn new(
        model: &'a dyn Classifier,
        input: &'a AttackInput<'a>,
        step: StepSize,
        loss: AttackLoss,
    ) -> Result<Self> {
        check_input(input)?;
        let eps = input.eps.broadcast(input.x.dim()).to_kind(input.x.kind());
        let alpha = match step {
            StepSize::Absolute(a) => eps.ones_like() * a,
            StepSize::FractionOfEps(f) => &eps * f,
        };
        let clean_prob = if loss.needs_clean() {
            let _clean = profile::scope("clean-forward");
            Some(tch::no_grad(|| {
                model
                    .forward_t(input.x, input.train)
                    .softmax(-1, Kind::Float)
            }))
        } else {
            None
        };
        Ok(Ascent {
            model,
            input,
            loss,
            eps,
            alpha,
            clean_prob,
        })
    }

    /// The start point: x, Clip01(x + ε_i·u) or x + std·n, from [`Start::draw`].
    pub fn start(&self, start: Start) -> Tensor {
        let x = self.input.x;
        match (start, start.draw(x)) {
            (Start::Uniform, Some(u)) => (x + u * &self.eps).clamp(0.0, 1.0),
            (Start::Normal { std }, Some(n)) => x + n * std,
            _ => x.copy(),
        }
    }

    /// One ascent step from `x_adv` (detached result).
    pub fn step(&self, x_adv: &Tensor) -> Result<Tensor> {
        self.noisy_step(x_adv, 0.0)
    }

    /// One ascent step from `x_adv` plus `noise`·N(0, I) before the projection (FAT's ω,
    /// `zjfheart/Friendly-Adversarial-Training:earlystop.py`); `noise` = 0 is [`Ascent::step`].
    pub fn noisy_step(&self, x_adv: &Tensor, noise: f64) -> Result<Tensor> {
        let xa = x_adv.detach().set_requires_grad(true);
        let loss = profile::timed("forward", || {
            let z = self.model.forward_t(&xa, self.input.train);
            self.loss.value(&z, self.input.y, self.clean_prob.as_ref())
        });
        let g = profile::timed("backward", || input_gradient(&loss, &xa))?;
        let _update = profile::scope("update");
        Ok(tch::no_grad(|| {
            let ascended = x_adv + &self.alpha * g.sign();
            let ascended = if noise > 0.0 {
                &ascended + x_adv.randn_like() * noise
            } else {
                ascended
            };
            project(&ascended, self.input.x, &self.eps)
        }))
    }
}

impl Attack for Pgd {
    /// E.g. `pgd-10 ce step 0.025 uniform start`, `fgsm ce step 1*eps no start`.
    fn describe(&self) -> String {
        let step = match self.step {
            StepSize::Absolute(a) => format!("step {a}"),
            StepSize::FractionOfEps(f) => format!("step {f}*eps"),
        };
        let start = match self.start {
            Start::None => "no start".to_string(),
            Start::Uniform => "uniform start".to_string(),
            Start::Normal { std } => format!("normal start std {std}"),
        };
        let name = match (self.steps, self.step, self.loss) {
            (1, StepSize::FractionOfEps(_), AttackLoss::CrossEntropy) => "fgsm".to_string(),
            (n, ..) => format!("pgd-{n}"),
        };
        format!("{name} {} {step} {start}", self.loss.name())
    }

    fn perturb(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor> {
        self.validate()?;
        let _attack = profile::scope("attack");
        let ascent = Ascent::new(model, input, self.step, self.loss)?;
        let mut x_adv = ascent.start(self.start);
        for _ in 0..self.steps {
            x_adv = ascent.step(&x_adv)?;
        }
        // A start that was not projected (TRADES' normal start with no step) is projected here
        // so that every output is in the ball and in [0, 1].
        Ok(tch::no_grad(|| project(&x_adv, input.x, &ascent.eps)))
    }
}
