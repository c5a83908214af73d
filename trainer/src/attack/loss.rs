//! The losses attacks ascend (PGD, TRADES, CW∞, Tian et al.'s Temperature-PGD). Each is
//! **summed** over the batch: the sign of the input gradient is then independent of the batch
//! size and tiny per-sample gradients are not divided by N (AutoAttack does the same,
//! `fra31/auto-attack:autoattack/autopgd_base.py`).

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

/// A loss to maximise over x'.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum AttackLoss {
    /// Σ_i CE(f(x'_i), y_i) (Madry PGD, CFA eqs. (1)-(2)).
    CrossEntropy,
    /// Σ_i KL(p(x_i) ‖ p(x'_i)) with p(x) the clean softmax, fixed during the attack (TRADES
    /// inner maximisation, `yaodongyu/TRADES:trades.py`).
    TradesKl,
    /// Carlini-Wagner ℓ∞ margin, −Σ_i max(z_y − max_{j≠y} z_j + κ, 0); κ = 50 in WAT and FAT
    /// (`cwloss` in `boqili/WAT:attack_generator.py`).
    CwMargin { kappa: f64 },
    /// Σ_i CE(softmax(z_i / T), y_i) with `inv_t` = 1/T > 1 sharpening the softmax
    /// (Tian et al.'s Temperature-PGD, Tian §5); accuracy still uses the plain argmax.
    Temperature { inv_t: f64 },
}

impl AttackLoss {
    /// A short name for logs.
    pub fn name(&self) -> String {
        match self {
            AttackLoss::CrossEntropy => "ce".into(),
            AttackLoss::TradesKl => "trades-kl".into(),
            AttackLoss::CwMargin { kappa } => format!("cw(kappa={kappa})"),
            AttackLoss::Temperature { inv_t } => format!("ce(1/T={inv_t})"),
        }
    }

    /// Whether the loss needs the clean probabilities p(x).
    pub fn needs_clean(&self) -> bool {
        matches!(self, AttackLoss::TradesKl)
    }

    /// The summed loss at adversarial logits `z` [N, K]; `clean_prob` is p(x) for
    /// [`AttackLoss::TradesKl`] (ignored otherwise).
    pub fn value(&self, z: &Tensor, y: &Tensor, clean_prob: Option<&Tensor>) -> Tensor {
        match *self {
            AttackLoss::CrossEntropy => cross_entropy_sum(z, y),
            AttackLoss::Temperature { inv_t } => cross_entropy_sum(&(z * inv_t), y),
            AttackLoss::TradesKl => match clean_prob {
                Some(p) => kl_sum(p, z),
                None => cross_entropy_sum(z, y),
            },
            AttackLoss::CwMargin { kappa } => {
                let correct = z.gather(1, &y.unsqueeze(1), false).squeeze_dim(1);
                // The largest wrong logit: the true entry replaced by −10⁴ (as WAT's `cwloss`).
                let others = z.scatter_value(1, &y.unsqueeze(1), -1e4);
                let best_other = others.amax(1, false);
                -(correct - best_other + kappa)
                    .clamp_min(0.0)
                    .sum(Kind::Float)
            }
        }
    }
}

/// Σ_i −log softmax(z_i)[y_i].
pub fn cross_entropy_sum(z: &Tensor, y: &Tensor) -> Tensor {
    -z.log_softmax(-1, Kind::Float)
        .gather(1, &y.unsqueeze(1), false)
        .sum(Kind::Float)
}

/// Σ_i KL(p_i ‖ softmax(z_i)) = Σ_i Σ_k p_ik (log p_ik − log softmax(z_i)_k), with 0·log 0 = 0.
pub fn kl_sum(p: &Tensor, z: &Tensor) -> Tensor {
    let log_q = z.log_softmax(-1, Kind::Float);
    (p.xlogy(p) - p * log_q).sum(Kind::Float)
}
