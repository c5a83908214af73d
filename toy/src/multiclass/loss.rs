//! Base training losses (CFA eqs. (1)-(3), FAT) with class-wise weights: the single place where
//! the per-sample loss and its gradient are defined, so every class-wise rule composes with every
//! base.
//!
//! A sample of class y is trained with the entries of class y of the epoch's
//! [`ClassPlan`] (from a [`classwise_core`] rule): budget ε_y, trade-off β_y and the weights
//! n_y (`natural_weight`) and m_y (`boundary_weight`). [`Base::term_weights`] turns them into the
//! weights u_y, v_y of the loss's two terms:
//!
//! * `Natural`: u_y·CE(f(x), y), u_y = n_y;
//! * `PgdAt` and `Fat`: u_y·CE(f(x'), y) with x' from CE-PGD (resp. early-stopped PGD), u_y = n_y;
//! * `Trades`: u_y·CE(f(x), y) + v_y·KL(p(x) ‖ p(x')) with x' from KL-PGD, u_y = n_y/(1 + β_y)
//!   and v_y = m_y·β_y/(1 + β_y) ([`TradesScaling::Reference`]: CFA eq. (8), which the reference
//!   code applies to vanilla TRADES too, `PKU-ML/CFA:train.py`).
//!
//! The batch loss is the mean of the per-sample losses.

use classwise_core::{ClassPlan, TradesScaling};
use rand::rngs::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::attack::{AttackLoss, PgdConfig, fat_pgd, pgd};
use super::model::{Linear, cross_entropy, kl_divergence};
use crate::error::{Bound, Result, check, require_count};

/// The base adversarial-training method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Base {
    /// Standard training on clean inputs.
    Natural,
    /// Madry PGD-AT: CE on CE-PGD examples (CFA eqs. (1)-(2)).
    PgdAt,
    /// TRADES with trade-off β (CFA eq. (3); β = 6 in CFA and WAT).
    Trades { beta: f64 },
    /// Friendly AT: CE on early-stopped PGD examples with budget τ (Zhang et al. 2020; τ = 3 in
    /// `PKU-ML/CFA:train.py`).
    Fat { tau: usize },
}

impl Base {
    pub fn validate(&self) -> Result<()> {
        match *self {
            Base::Trades { beta } => {
                check("base.beta", beta, Bound::NonNegative)?;
            }
            Base::Fat { tau } => {
                require_count("base.tau", tau, 1)?;
            }
            Base::Natural | Base::PgdAt => {}
        }
        Ok(())
    }

    /// The TRADES β, if the base is TRADES.
    /// The base as the class-wise rules know it (which rules fit it).
    pub fn kind(&self) -> classwise_core::rule::Base {
        use classwise_core::rule::Base as Kind;
        match self {
            Base::Natural => Kind::NATURAL,
            Base::PgdAt => Kind::PGD_AT,
            Base::Trades { .. } => Kind::TRADES,
            Base::Fat { .. } => Kind::FAT,
        }
    }

    pub fn trades_beta(&self) -> Option<f64> {
        match *self {
            Base::Trades { beta } => Some(beta),
            _ => None,
        }
    }

    /// Short name (`natural`, `at`, `trades`, `fat`).
    pub fn name(&self) -> &'static str {
        match self {
            Base::Natural => "natural",
            Base::PgdAt => "at",
            Base::Trades { .. } => "trades",
            Base::Fat { .. } => "fat",
        }
    }

    /// (u_y, v_y): the weights of the loss's first (CE) and second (KL) term for a sample of
    /// class `y` under `plan` (see the module docs); v_y = 0 for the bases without a KL term.
    pub fn term_weights(&self, plan: &ClassPlan, y: usize) -> (f64, f64) {
        match self {
            Base::Trades { .. } => {
                let (a, b) = TradesScaling::Reference.term_weights(plan.beta[y]);
                (plan.natural_weight[y] * a, plan.boundary_weight[y] * b)
            }
            Base::Natural | Base::PgdAt | Base::Fat { .. } => (plan.natural_weight[y], 0.0),
        }
    }

    /// The training input the loss is evaluated on besides x: x' for the adversarial bases
    /// (per-sample budget `epsilon`, CFA eq. (6)), x itself for `Natural`.
    pub fn training_input(
        &self,
        model: &Linear,
        x: &[f64],
        y: usize,
        epsilon: f64,
        attack: &PgdConfig,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<f64>> {
        match *self {
            Base::Natural => Ok(x.to_vec()),
            Base::PgdAt => pgd(model, x, y, epsilon, attack, AttackLoss::CrossEntropy, rng),
            Base::Trades { .. } => pgd(model, x, y, epsilon, attack, AttackLoss::TradesKl, rng),
            Base::Fat { tau } => fat_pgd(model, x, y, epsilon, attack, tau, rng),
        }
    }

    /// The weighted per-sample loss at clean logits `z` and adversarial logits `z_adv`, with
    /// its gradients with respect to both (see the module docs).
    pub fn sample_loss(
        &self,
        z: &[f64],
        z_adv: &[f64],
        y: usize,
        natural_weight: f64,
        boundary_weight: f64,
    ) -> SampleLoss {
        let k = z.len();
        match self {
            Base::Natural => {
                let ce = cross_entropy(z, y);
                SampleLoss {
                    value: natural_weight * ce.value,
                    grad_clean: scale(&ce.grad, natural_weight),
                    grad_adv: vec![0.0; k],
                }
            }
            Base::PgdAt | Base::Fat { .. } => {
                let ce = cross_entropy(z_adv, y);
                SampleLoss {
                    value: natural_weight * ce.value,
                    grad_clean: vec![0.0; k],
                    grad_adv: scale(&ce.grad, natural_weight),
                }
            }
            Base::Trades { .. } => {
                let ce = cross_entropy(z, y);
                let kl = kl_divergence(z, z_adv);
                SampleLoss {
                    value: natural_weight * ce.value + boundary_weight * kl.value,
                    grad_clean: ce
                        .grad
                        .iter()
                        .zip(&kl.grad_clean)
                        .map(|(c, d)| natural_weight * c + boundary_weight * d)
                        .collect(),
                    grad_adv: scale(&kl.grad_adv, boundary_weight),
                }
            }
        }
    }
}

/// A per-sample loss with its logit gradients.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleLoss {
    pub value: f64,
    pub grad_clean: Vec<f64>,
    pub grad_adv: Vec<f64>,
}

fn scale(v: &[f64], a: f64) -> Vec<f64> {
    v.iter().map(|x| a * x).collect()
}
