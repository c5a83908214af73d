//! Training objectives (CFA eqs. (1)-(3)): natural, PGD-AT and TRADES, with per-class budgets,
//! β and weights from a [`ClassPlan`]. An objective builds its adversarial examples, returns the
//! loss to differentiate and the per-sample correctness of the training input it used (CFA's
//! t_k, CFA §4.1).

use serde::{Deserialize, Serialize};
use tch::nn::ModuleT;
use tch::{Kind, Tensor};

use super::plan::ClassPlan;
use crate::attack::{Attack, AttackInput, Budget, Pgd};
use crate::error::{Result, invalid};

/// The loss of one batch and what it measured.
pub struct StepOutput {
    /// The scalar loss (differentiable with respect to the parameters).
    pub loss: Tensor,
    /// Per sample: was the training input the loss used (x' for the adversarial objectives)
    /// classified correctly by the logits of the loss forward, before the update? (bool, [N])
    pub correct: Tensor,
}

/// A training objective.
pub trait Objective {
    fn describe(&self) -> String;
    /// The loss of batch (x, y) under `plan`; the model is in train mode for the loss forward.
    fn loss(
        &self,
        model: &dyn ModuleT,
        x: &Tensor,
        y: &Tensor,
        plan: &ClassPlan,
    ) -> Result<StepOutput>;
}

/// How TRADES' two terms are scaled (the TRADES paper vs `trades_loss` in `PKU-ML/CFA:attack.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TradesScaling {
    /// CE + β·KL (the TRADES paper).
    Paper,
    /// (CE + β·KL)/(1 + β) = (1 − b)·CE + b·KL with b = β/(1 + β) (CFA's reference code, even
    /// for vanilla TRADES).
    Reference,
}

/// The objectives of the baselines.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "method")]
pub enum Method {
    /// Mean weighted CE on clean inputs.
    Natural,
    /// Madry PGD-AT: mean weighted CE on x' from CE-PGD with ε_{y_i}; `attack_train_mode` runs
    /// the attack with BN in train mode as CFA's code does (`PKU-ML/CFA:train.py`).
    PgdAt {
        attack: Pgd,
        #[serde(default)]
        attack_train_mode: bool,
    },
    /// TRADES: CE(f(x), y) + β_y·KL(p(x) ‖ p(x')), x' from the KL attack in eval mode; the clean
    /// distribution is not detached (as in `yaodongyu/TRADES:trades.py`).
    Trades { attack: Pgd, scaling: TradesScaling },
}

impl Method {
    /// Checks the training attack's settings; errors name `attack.<field>`.
    pub fn validate(&self) -> Result<()> {
        match self {
            Method::Natural => Ok(()),
            Method::PgdAt { attack, .. } | Method::Trades { attack, .. } => attack.validate(),
        }
    }
}

fn weights_of(values: &[f64], y: &Tensor) -> Tensor {
    Tensor::from_slice(values)
        .to_kind(Kind::Float)
        .to_device(y.device())
        .index_select(0, y)
}

fn correct_of(logits: &Tensor, y: &Tensor) -> Tensor {
    logits.detach().argmax(-1, false).eq_tensor(y)
}

/// Per-sample CE.
fn ce(z: &Tensor, y: &Tensor) -> Tensor {
    -z.log_softmax(-1, Kind::Float)
        .gather(1, &y.unsqueeze(1), false)
        .squeeze_dim(1)
}

impl Objective for Method {
    fn describe(&self) -> String {
        match self {
            Method::Natural => "natural".into(),
            Method::PgdAt { attack, .. } => format!("pgd-at ({})", attack.describe()),
            Method::Trades { attack, scaling } => {
                format!("trades {scaling:?} ({})", attack.describe())
            }
        }
    }

    fn loss(
        &self,
        model: &dyn ModuleT,
        x: &Tensor,
        y: &Tensor,
        plan: &ClassPlan,
    ) -> Result<StepOutput> {
        let n = x.size().first().copied().unwrap_or(0);
        if n == 0 {
            return Err(invalid("batch", "0 samples", "at least one sample"));
        }
        plan.validate(plan.weight.len())?;
        let w = weights_of(&plan.weight, y);
        match self {
            Method::Natural => {
                let z = model.forward_t(x, true);
                Ok(StepOutput {
                    loss: (ce(&z, y) * &w).mean(Kind::Float),
                    correct: correct_of(&z, y),
                })
            }
            Method::PgdAt {
                attack,
                attack_train_mode,
            } => {
                let eps = Budget::per_class(&plan.eps, y)?;
                let input = AttackInput {
                    x,
                    y,
                    eps: &eps,
                    train: *attack_train_mode,
                };
                let x_adv = attack.perturb(model, &input)?;
                let z = model.forward_t(&x_adv, true);
                Ok(StepOutput {
                    loss: (ce(&z, y) * &w).mean(Kind::Float),
                    correct: correct_of(&z, y),
                })
            }
            Method::Trades { attack, scaling } => {
                let eps = Budget::per_class(&plan.eps, y)?;
                let input = AttackInput {
                    x,
                    y,
                    eps: &eps,
                    train: false,
                };
                let x_adv = attack.perturb(model, &input)?;
                let z = model.forward_t(x, true);
                let z_adv = model.forward_t(&x_adv, true);
                let p = z.softmax(-1, Kind::Float);
                let kl = (p.xlogy(&p) - &p * z_adv.log_softmax(-1, Kind::Float)).sum_dim_intlist(
                    -1,
                    false,
                    Kind::Float,
                );
                let beta = weights_of(&plan.beta, y);
                let (a, b) = match scaling {
                    TradesScaling::Paper => (beta.ones_like(), beta),
                    TradesScaling::Reference => {
                        let d = &beta + 1.0;
                        (d.reciprocal(), beta / d)
                    }
                };
                let per_sample = a * ce(&z, y) + b * kl;
                Ok(StepOutput {
                    loss: (per_sample * &w).mean(Kind::Float),
                    correct: correct_of(&z_adv, y),
                })
            }
        }
    }
}
