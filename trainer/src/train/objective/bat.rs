//! BAT, Balance Adversarial Training (Sun et al., 2023): per sample
//!
//! ```text
//! natural_weight[y]·a(β_y)·CE(f(x_c), y) + boundary_weight[y]·b(β_y)·KL(p(x) ‖ p(x_a))     (eq. (2))
//!   + α·boundary_weight[y]·[KL(U ‖ p(x_c)) + KL(U ‖ p(x_a))]                                (eq. (6))
//! ```
//!
//! summed as eq. (7), L_source + α·L_target, and averaged over the batch (with the `reference`
//! scaling the whole per-sample loss is divided by 1 + β_y, as CFA's TRADES, so that the
//! balance of the terms is eq. (7)'s). (x_c, x_a) is the
//! sample's boundary pair from early-stopped TRADES-KL PGD (BAT Algorithm 1: x_c the last iterate
//! still classified correctly, x_a the iterate one step later; see
//! [`crate::attack::early_stop`]), U the uniform distribution over the K classes, and
//! (a, b) = (1, β) as in eq. (2) or CFA's (1/(1 + β), β/(1 + β)) ([`TradesScaling`]).
//!
//! The ablations of BAT Tables 2-3 are settings: `source = "trades"` uses CE(f(x)) and
//! KL(p(x) ‖ p(x')) on the fixed, full-length x' of the same attack; `uniform_on` lists where
//! the uniform-KL term is taken (`last-correct` x_c, `first-wrong` x_a, `fixed` x'). Plain
//! TRADES is `method = "trades"`.

use classwise_core::rule::Base;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::trades::term_weights;
use super::{
    Objective, StepContext, StepOutput, TradesScaling, absolute_step, adversarial, ce, kl,
    planned_step, prepare,
};
use crate::attack::{AttackInput, EarlyStopVariant, EarlyStoppedPgd, Pgd};
use crate::error::{Bound, Result, check, invalid};
use crate::model::Classifier;

/// Where a BAT term is evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatPoint {
    /// x_c: the last iterate of the early-stopped attack still classified correctly.
    LastCorrect,
    /// x_a: the iterate one step after x_c.
    FirstWrong,
    /// x': the attack run for all its steps (the ablations' "fixed" x_adv).
    Fixed,
}

/// BAT's source-class loss (eq. (2)) or the TRADES loss it replaces (BAT Table 2, No. 5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BatSource {
    /// CE(f(x_c), y) + β·KL(p(x) ‖ p(x_a)) (eq. (2)).
    #[default]
    Boundary,
    /// CE(f(x), y) + β·KL(p(x) ‖ p(x')) on the fixed x' (TRADES).
    Trades,
}

/// BAT.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bat {
    /// The attack: K steps of α on the TRADES KL from x + ξ·N(0, I) (BAT Algorithm 1; 10 ×
    /// 2/255 at ε 8/255), stopped per sample at its first misclassification.
    pub attack: Pgd,
    /// α of eq. (7), the weight of the uniform-KL (target-class) term. Not given in the
    /// available text (the supplement is missing); the presets use 1 **[inferred]**.
    pub alpha: f64,
    #[serde(default)]
    pub source: BatSource,
    /// Where the uniform-KL term is taken (default: x_c and x_a, eq. (6)).
    #[serde(default = "boundary_pair")]
    pub uniform_on: Vec<BatPoint>,
    /// The scaling of the source loss's two terms (default `paper`, eq. (2): CE + β·KL).
    #[serde(default = "paper")]
    pub scaling: TradesScaling,
}

fn boundary_pair() -> Vec<BatPoint> {
    vec![BatPoint::LastCorrect, BatPoint::FirstWrong]
}

fn paper() -> TradesScaling {
    TradesScaling::Paper
}

/// KL(U ‖ softmax(z)) per sample: −log K − (1/K)·Σ_k log p_k (BAT eq. (6)).
pub(crate) fn uniform_kl(z: &Tensor) -> Tensor {
    let k = z.size().last().copied().unwrap_or(1) as f64;
    -z.log_softmax(-1, Kind::Float)
        .mean_dim(-1, false, Kind::Float)
        - k.ln()
}

impl Bat {
    /// Checks the attack and the settings; errors name the field.
    pub fn validate(&self) -> Result<()> {
        self.attack.validate()?;
        check("alpha", self.alpha, Bound::NonNegative)?;
        for (i, p) in self.uniform_on.iter().enumerate() {
            if self.uniform_on[..i].contains(p) {
                return Err(invalid(
                    "uniform_on",
                    format!("{:?}", self.uniform_on),
                    "each of last-correct, first-wrong, fixed at most once",
                ));
            }
        }
        Ok(())
    }

    /// The early-stopped attack of the boundary pairs: τ = 0 with the original rule.
    fn early_stopped(&self, ctx: StepContext<'_>) -> EarlyStoppedPgd {
        EarlyStoppedPgd {
            steps: self.attack.steps,
            step: planned_step(self.attack.step, ctx.plan),
            start: self.attack.start,
            loss: self.attack.loss,
            tau: 0,
            variant: EarlyStopVariant::Original,
            step_noise: 0.0,
        }
    }

    fn needs_fixed(&self) -> bool {
        self.source == BatSource::Trades || self.uniform_on.contains(&BatPoint::Fixed)
    }
}

impl Objective for Bat {
    fn name(&self) -> &'static str {
        "bat"
    }
    fn base(&self) -> Base {
        Base::adversarial("bat")
    }
    fn validate(&self) -> Result<()> {
        Bat::validate(self)
    }
    fn describe(&self) -> String {
        format!(
            "bat {:?} alpha {} source {:?} uniform on {:?} ({})",
            self.scaling,
            self.alpha,
            self.source,
            self.uniform_on,
            crate::attack::Attack::describe(&self.attack)
        )
    }

    fn uses_beta(&self) -> bool {
        true
    }

    fn attack_step(&self, eps: f64) -> f64 {
        absolute_step(self.attack.step, eps)
    }

    fn loss(
        &self,
        model: &dyn Classifier,
        x: &Tensor,
        y: &Tensor,
        ctx: StepContext<'_>,
    ) -> Result<StepOutput> {
        let eps = prepare(x, y, ctx.plan)?;
        let input = AttackInput {
            x,
            y,
            eps: &eps,
            train: false,
        };
        let pair = self.early_stopped(ctx).run(model, &input)?;
        let fixed = if self.needs_fixed() {
            Some(adversarial(model, x, y, ctx.plan, &self.attack, false)?)
        } else {
            None
        };
        // One train-mode forward per distinct input.
        let z = model.forward_t(x, true);
        let mut logits: Vec<(BatPoint, Tensor)> = Vec::new();
        let mut forward = |p: BatPoint| -> Result<Tensor> {
            if let Some((_, z)) = logits.iter().find(|(q, _)| *q == p) {
                return Ok(z.shallow_clone());
            }
            let input = match p {
                BatPoint::LastCorrect => &pair.last_correct,
                BatPoint::FirstWrong => &pair.first_wrong,
                BatPoint::Fixed => fixed.as_ref().ok_or_else(|| {
                    invalid("uniform_on", "fixed", "an x' computed for it (needs_fixed)")
                })?,
            };
            let zp = model.forward_t(input, true);
            logits.push((p, zp.shallow_clone()));
            Ok(zp)
        };
        let (z_ce, z_kl) = match self.source {
            BatSource::Boundary => (
                forward(BatPoint::LastCorrect)?,
                forward(BatPoint::FirstWrong)?,
            ),
            BatSource::Trades => (z.shallow_clone(), forward(BatPoint::Fixed)?),
        };
        let (a, b) = term_weights(self.scaling, &ctx.plan.beta(y));
        let boundary_weight = ctx.plan.boundary_weight(y);
        // The target term takes the CE's factor a(β_y): 1, or 1/(1 + β_y) with CFA's scaling.
        let target_weight = &a * &boundary_weight * self.alpha;
        let source =
            a * ctx.plan.natural_weight(y) * ce(&z_ce, y) + b * &boundary_weight * kl(&z, &z_kl);
        let targets: Vec<Tensor> = if self.alpha > 0.0 {
            self.uniform_on
                .iter()
                .map(|&p| forward(p).map(|zp| uniform_kl(&zp)))
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let per_sample = targets
            .into_iter()
            .fold(source, |acc, t| acc + t * &target_weight);
        Ok(StepOutput {
            steps: Some(pair.steps_taken),
            ..StepOutput::new(per_sample.mean(Kind::Float), &z_kl)
        })
    }
}
