//! ℓ∞ attacks (PGD, TRADES, CW∞, FAT's and BAT's early-stopped PGD, Tian et al.'s
//! Temperature-PGD).
//!
//! Conventions shared by every attack:
//! * inputs are images in [0, 1] (normalisation, if any, is the model's first layer, as
//!   AutoAttack expects, fra31/auto-attack#55), and outputs stay in [0, 1] and in the ball
//!   ‖x' − x‖∞ ≤ ε_i;
//! * the budget is **per sample**: a [`Budget`] holds one ε_i per row, so class-wise budgets
//!   (CFA's ε_{y_i}, FRL's remargin) need no special code; the step size is not scaled by ε_i
//!   unless the attack says so ([`StepSize`]; CFA's `cw_attack_pgd` keeps α, FRL-RWRM uses
//!   max_i ε_i/4);
//! * the caller chooses the model's mode (`train` is passed to
//!   [`tch::nn::ModuleT::forward_t`]): CFA's AT and FAT attacks run in train mode, the
//!   TRADES family and every evaluation in eval mode (as `PKU-ML/CFA:train.py` and
//!   `yaodongyu/TRADES:trades.py` do);
//! * only the input receives gradients: the loss is differentiated with
//!   `torch.autograd.grad`-style [`tch::Tensor::run_backward`] with respect to x' alone, so no
//!   parameter `.grad` is touched;
//! * random starts draw from libtorch's generator, which the training loop reseeds per batch
//!   (a run is then reproducible and resumable).
//!
//! * [`pgd`]: PGD with any loss ([`loss::AttackLoss`]: CE, TRADES KL, CW∞ margin,
//!   Temperature-CE), any start, steps and step size; FGSM is PGD with one step of size ε and
//!   no start.
//! * [`early_stop`]: early-stopped PGD (FAT, BAT): per-sample budgets of extra steps after the
//!   first misclassification, the number of steps taken, and the boundary pair (last correct /
//!   first wrong iterate).
//! * AutoAttack's four attacks (Croce & Hein 2020, `fra31/auto-attack`): [`apgd`] (APGD-CE,
//!   APGD-DLR, APGD-T, with EOT), [`fab`] (FAB, FAB-T) and [`square`]; the cascade that runs
//!   them is in `eval`.

pub mod apgd;
pub mod early_stop;
pub mod eps;
pub mod fab;
pub mod loss;
pub mod pgd;
pub mod square;

pub use apgd::{Apgd, ApgdLoss};
pub use early_stop::{EarlyStopVariant, EarlyStopped, EarlyStoppedPgd, capturing_early_stopped};
pub use eps::Eps;
pub use fab::Fab;
pub use loss::AttackLoss;
pub use pgd::{Pgd, Start, StepSize};
pub use square::Square;

use tch::{Kind, Tensor};

use crate::error::{Result, invalid};
use crate::model::Classifier;

/// Per-sample ℓ∞ budgets ε_i ≥ 0, one per row of the batch (a 1-D f32 tensor on the batch's
/// device).
#[derive(Debug)]
pub struct Budget(Tensor);

impl Budget {
    /// The same ε for `n` samples.
    pub fn uniform(eps: f64, n: i64, device: tch::Device) -> Result<Self> {
        check_eps("eps", eps)?;
        Ok(Budget(Tensor::full([n], eps, (Kind::Float, device))))
    }

    /// ε_{y_i} from a per-class vector (CFA eq. (6), FRL's multipliers): `class_eps[k]` is the
    /// budget of class k and `labels` the batch's labels.
    pub fn per_class(class_eps: &[f64], labels: &Tensor) -> Result<Self> {
        for &e in class_eps {
            check_eps("class_eps", e)?;
        }
        let table = Tensor::from_slice(class_eps)
            .to_kind(Kind::Float)
            .to_device(labels.device());
        Self::from_class_table(&table, labels)
    }

    /// ε_{y_i} from a per-class table already on the labels' device (1-D f32, values checked
    /// by the caller), so that a batch needs no host-to-device copy.
    pub(crate) fn from_class_table(table: &Tensor, labels: &Tensor) -> Result<Self> {
        check_labels(labels, table.size()[0])?;
        Ok(Budget(table.index_select(0, labels)))
    }

    /// From a tensor of ε_i (validated: 1-D, finite, ≥ 0).
    pub fn from_tensor(eps: Tensor) -> Result<Self> {
        if eps.dim() != 1 {
            return Err(invalid("eps", format!("{:?}", eps.size()), "a 1-D tensor"));
        }
        let eps = eps.to_kind(Kind::Float);
        let min = eps.min().double_value(&[]);
        let max = eps.max().double_value(&[]);
        if !(min >= 0.0 && max.is_finite()) {
            return Err(invalid(
                "eps",
                format!("[{min}, {max}]"),
                "finite values >= 0",
            ));
        }
        Ok(Budget(eps))
    }

    pub fn tensor(&self) -> &Tensor {
        &self.0
    }

    pub fn len(&self) -> i64 {
        self.0.size()[0]
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// ε_i broadcast against a batch of shape `[N, …]`.
    pub(crate) fn broadcast(&self, ndim: usize) -> Tensor {
        self.0.view(row_shape(ndim).as_slice())
    }
}

/// What an attack needs besides the model: clean inputs x ∈ [0,1]^{N×…}, labels y ∈ {0..K−1}^N
/// and the budgets.
pub struct AttackInput<'a> {
    pub x: &'a Tensor,
    pub y: &'a Tensor,
    pub eps: &'a Budget,
    /// Forward the model in train mode (BN batch statistics) during the attack.
    pub train: bool,
}

/// An ℓ∞ attack.
pub trait Attack {
    /// A short description with its settings, for logs and reports (e.g. `pgd-10 ce step 0.00784`).
    fn describe(&self) -> String;

    /// The adversarial inputs x' (detached, same shape as x).
    fn perturb(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor>;

    /// x' and the warnings about the evaluation's reliability the attack noticed on the way
    /// (APGD's zero gradients, as AutoAttack's `check_zero_gradients`); none by default.
    fn perturb_checked(
        &self,
        model: &dyn Classifier,
        input: &AttackInput<'_>,
    ) -> Result<(Tensor, Vec<String>)> {
        Ok((self.perturb(model, input)?, Vec::new()))
    }

    /// x' and, for an attack that checks the prediction before each step, the ascent steps each
    /// sample took before it was first misclassified: the "attack steps" of BAT §3, Fig. 2.
    /// `None` by default.
    fn perturb_with_steps(
        &self,
        model: &dyn Classifier,
        input: &AttackInput<'_>,
    ) -> Result<(Tensor, Option<StepCounts>)> {
        Ok((self.perturb(model, input)?, None))
    }
}

/// The ascent steps each sample of a batch took ([`Attack::perturb_with_steps`]).
#[derive(Debug)]
pub struct StepCounts {
    /// int64, [N]: `max` for a sample never misclassified.
    pub taken: Tensor,
    /// The attack's step count K.
    pub max: usize,
}

/// Checks shapes and ranges of an attack's input: x has N rows with values in [0, 1], y is a
/// 1-D integer tensor of length N, ε has length N.
pub(crate) fn check_input(input: &AttackInput<'_>) -> Result<()> {
    let n = *input
        .x
        .size()
        .first()
        .ok_or_else(|| invalid("x", "a scalar", "a batch [N, ...]"))?;
    if input.y.size() != [n] {
        return Err(invalid(
            "y",
            format!("{:?}", input.y.size()),
            format!("shape [{n}]"),
        ));
    }
    if input.eps.len() != n {
        return Err(invalid(
            "eps",
            input.eps.len(),
            format!("{n} budgets, one per sample"),
        ));
    }
    if n > 0 {
        let (lo, hi) = (
            input.x.min().double_value(&[]),
            input.x.max().double_value(&[]),
        );
        if !(lo >= 0.0 && hi <= 1.0) {
            return Err(invalid(
                "x",
                format!("values in [{lo}, {hi}]"),
                "images in [0, 1]",
            ));
        }
    }
    Ok(())
}

/// Checks that labels are a 1-D integer tensor with values in 0..n_classes.
pub(crate) fn check_labels(labels: &Tensor, n_classes: i64) -> Result<()> {
    if labels.dim() != 1 || labels.kind() != Kind::Int64 {
        return Err(invalid(
            "labels",
            format!("{:?} {:?}", labels.size(), labels.kind()),
            "a 1-D int64 tensor",
        ));
    }
    if labels.numel() > 0 {
        let (lo, hi) = (labels.min().int64_value(&[]), labels.max().int64_value(&[]));
        if lo < 0 || hi >= n_classes {
            return Err(invalid(
                "labels",
                format!("values in [{lo}, {hi}]"),
                format!("classes 0..{n_classes}"),
            ));
        }
    }
    Ok(())
}

/// Checks that a count setting (iterations, restarts, …) is at least 1.
pub(crate) fn at_least_one(field: &str, value: usize) -> Result<()> {
    if value == 0 {
        Err(invalid(field, 0, ">= 1"))
    } else {
        Ok(())
    }
}

fn check_eps(name: &str, eps: f64) -> Result<()> {
    if eps.is_finite() && eps >= 0.0 {
        Ok(())
    } else {
        Err(invalid(name, eps, "finite and >= 0"))
    }
}

/// [N, 1, 1, …]: a per-sample value broadcast over a batch of `ndim` dimensions.
pub(crate) fn row_shape(ndim: usize) -> Vec<i64> {
    let mut s = vec![-1i64];
    s.extend(std::iter::repeat_n(1, ndim.saturating_sub(1)));
    s
}

/// Π: projects x' onto {‖x' − x‖∞ ≤ ε_i} ∩ [0, 1] (the reference codes' order: ascent, then
/// projection, then clipping; the two commute here because the ball is a box intersected with a
/// box).
pub(crate) fn project(x_adv: &Tensor, x: &Tensor, eps: &Tensor) -> Tensor {
    x_adv
        .maximum(&(x - eps))
        .minimum(&(x + eps))
        .clamp(0.0, 1.0)
}

/// ∇_{x'} of a scalar loss, without touching any parameter gradient.
pub(crate) fn input_gradient(loss: &Tensor, x_adv: &Tensor) -> Result<Tensor> {
    let mut g = Tensor::f_run_backward(&[loss], &[x_adv], false, false)?;
    Ok(g.swap_remove(0))
}
