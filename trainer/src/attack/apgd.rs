//! Auto-PGD (Croce & Hein 2020), the white-box half of AutoAttack, in ℓ∞, with the reference's
//! algorithmic details (`fra31/auto-attack:autoattack/autopgd_base.py`):
//!
//! * start: x₀ = Clip01(x + ε_i·u/‖u‖∞), u ~ U[−1, 1]^d (the start touches the ε-box);
//! * step size η_i = 2ε_i; momentum: x_{k+1} = P(x_k + a·(z_{k+1} − x_k) + (1 − a)·(x_k −
//!   x_{k−1})) with z_{k+1} = P(x_k + η·sign(∇)), a = 1 at the first step and 0.75 after;
//! * checkpoints after 22, 19, 16, … iterations (⌊0.22·n⌋, then 3% less each time, at least
//!   6%; [`checkpoints`]): η_i is halved and the iterate reset to the best point (with its
//!   gradient) if the loss rose in at most ρ = 75% of the steps since the last checkpoint, or
//!   if η_i was not halved at the last checkpoint and the best loss has not moved since;
//! * losses CE, DLR and targeted DLR ([`ApgdLoss`]), **summed** over the batch;
//! * restarts on the points still robust; the targeted version attacks the 2nd … (n+1)-th
//!   most likely classes of the clean logits in turn, re-ranked on the remaining points;
//! * EOT: the gradient averaged over `eot_iter` forwards (AutoAttack's `rand` version).
//!
//! Only the points still robust are attacked, and a point stops being iterated as soon as one
//! iterate is misclassified: its outcome is then decided, and the other points' iterates do not
//! depend on it (the loss is a sum of per-sample terms and the model is in eval mode), so the
//! result equals the reference's, with less work.

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::{Attack, AttackInput, check_input, input_gradient, project};
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// The loss APGD ascends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApgdLoss {
    /// Cross-entropy (APGD-CE).
    Ce,
    /// Difference of logits ratio, −(z_y − max_{j≠y} z_j) / (z_π1 − z_π3 + 10⁻¹²), π sorting
    /// the logits in decreasing order (Croce & Hein 2020, eq. (5)); needs ≥ 3 classes.
    Dlr,
    /// Targeted DLR, −(z_y − z_t) / (z_π1 − (z_π3 + z_π4)/2 + 10⁻¹²) (APGD-T); needs ≥ 4
    /// classes.
    DlrTargeted,
}

impl ApgdLoss {
    /// The fewest classes the loss is defined for.
    pub fn min_classes(self) -> i64 {
        match self {
            ApgdLoss::Ce => 2,
            ApgdLoss::Dlr => 3,
            ApgdLoss::DlrTargeted => 4,
        }
    }

    /// Per-sample losses at logits `z` [N, K]; `target` is t for [`ApgdLoss::DlrTargeted`].
    pub fn per_sample(self, z: &Tensor, y: &Tensor, target: Option<&Tensor>) -> Tensor {
        let zy = z.gather(1, &y.unsqueeze(1), false).squeeze_dim(1);
        match (self, target) {
            (ApgdLoss::Ce, _) => -z
                .log_softmax(-1, Kind::Float)
                .gather(1, &y.unsqueeze(1), false)
                .squeeze_dim(1),
            (ApgdLoss::Dlr, _) => {
                let (top, _) = z.topk(3, 1, true, true);
                let others = z.scatter_value(1, &y.unsqueeze(1), f64::NEG_INFINITY);
                let best_other = others.amax(1, false);
                -(zy - best_other) / (top.select(1, 0) - top.select(1, 2) + 1e-12)
            }
            (ApgdLoss::DlrTargeted, Some(t)) => {
                let (top, _) = z.topk(4, 1, true, true);
                let zt = z.gather(1, &t.unsqueeze(1), false).squeeze_dim(1);
                -(zy - zt)
                    / (top.select(1, 0) - (top.select(1, 2) + top.select(1, 3)) * 0.5 + 1e-12)
            }
            (ApgdLoss::DlrTargeted, None) => {
                unreachable!("the targeted DLR loss is only evaluated with targets")
            }
        }
    }

    /// The reference's name (`apgd-ce`, `apgd-dlr`, `apgd-t`).
    pub fn attack_name(self) -> &'static str {
        match self {
            ApgdLoss::Ce => "apgd-ce",
            ApgdLoss::Dlr => "apgd-dlr",
            ApgdLoss::DlrTargeted => "apgd-t",
        }
    }
}

/// APGD's settings; [`Apgd::ce`], [`Apgd::dlr`] and [`Apgd::targeted`] give AutoAttack's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Apgd {
    pub loss: ApgdLoss,
    /// Iterations per run (100).
    pub iterations: usize,
    /// Runs from new random starts on the points still robust (1; 5 in AutoAttack's `plus`).
    pub restarts: usize,
    /// Target classes of [`ApgdLoss::DlrTargeted`] (9), ignored otherwise.
    pub targets: usize,
    /// ρ: the fraction of increasing steps below which the step size is halved (0.75).
    pub rho: f64,
    /// Forwards averaged per gradient (1; 20 in AutoAttack's `rand` version).
    pub eot_iter: usize,
}

impl Apgd {
    /// APGD-CE as AutoAttack's `standard` version runs it.
    pub fn ce() -> Self {
        Apgd {
            loss: ApgdLoss::Ce,
            iterations: 100,
            restarts: 1,
            targets: 9,
            rho: 0.75,
            eot_iter: 1,
        }
    }

    /// APGD on DLR (untargeted), as the `plus` and `rand` versions run it.
    pub fn dlr() -> Self {
        Apgd {
            loss: ApgdLoss::Dlr,
            ..Self::ce()
        }
    }

    /// APGD-T: targeted DLR against the 9 most likely wrong classes, 1 restart each.
    pub fn targeted() -> Self {
        Apgd {
            loss: ApgdLoss::DlrTargeted,
            ..Self::ce()
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        super::at_least_one("apgd.iterations", self.iterations)?;
        super::at_least_one("apgd.restarts", self.restarts)?;
        super::at_least_one("apgd.eot_iter", self.eot_iter)?;
        if self.loss == ApgdLoss::DlrTargeted {
            super::at_least_one("apgd.targets", self.targets)?;
        }
        if !(self.rho > 0.0 && self.rho <= 1.0) {
            return Err(invalid("apgd.rho", self.rho, "in (0, 1]"));
        }
        Ok(())
    }

    /// The ranks of the target classes: 2nd … (targets+1)-th largest clean logit, at most K.
    fn target_ranks(&self, k: i64) -> std::ops::RangeInclusive<i64> {
        match self.loss {
            ApgdLoss::DlrTargeted => 2..=(self.targets as i64 + 1).min(k),
            _ => 1..=1,
        }
    }

    /// x' and the number of points whose gradient at the start was exactly zero for a DLR
    /// loss (AutoAttack's `check_zero_gradients` warning).
    pub fn run(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<ApgdOutcome> {
        self.validate()?;
        check_input(input)?;
        let (x, y, train) = (input.x, input.y, input.train);
        let mut adv = x.detach().copy();
        let mut zero_gradients = 0;
        let n = x.size()[0];
        if n == 0 {
            return Ok(ApgdOutcome {
                x_adv: adv,
                zero_gradients,
            });
        }
        let clean = tch::no_grad(|| model.forward_t(x, train));
        let k = clean.size()[1];
        if k < self.loss.min_classes() {
            return Err(invalid(
                "model classes",
                k,
                format!(
                    "at least {} classes for {}",
                    self.loss.min_classes(),
                    self.loss.attack_name()
                ),
            ));
        }
        let mut robust = clean.argmax(-1, false).eq_tensor(y);
        let eps = input.eps.broadcast(x.dim()).to_kind(x.kind());
        for rank in self.target_ranks(k) {
            for _ in 0..self.restarts {
                let idx = robust.nonzero().squeeze_dim(1);
                if idx.numel() == 0 {
                    return Ok(ApgdOutcome {
                        x_adv: adv,
                        zero_gradients,
                    });
                }
                let xs = x.index_select(0, &idx);
                let ys = y.index_select(0, &idx);
                let target = (self.loss == ApgdLoss::DlrTargeted).then(|| {
                    let z = tch::no_grad(|| model.forward_t(&xs, train));
                    z.argsort(1, true).select(1, rank - 1)
                });
                let run = SingleRun {
                    model,
                    train,
                    settings: self,
                    x: &xs,
                    y: &ys,
                    eps: &eps.index_select(0, &idx),
                    target: target.as_ref(),
                };
                let out = run.attack()?;
                zero_gradients += out.zero_gradients;
                let fooled = out.fooled.nonzero().squeeze_dim(1);
                if fooled.numel() > 0 {
                    let at = idx.index_select(0, &fooled);
                    let _ = robust.index_fill_(0, &at, 0);
                    let _ = adv.index_copy_(0, &at, &out.x_adv.index_select(0, &fooled));
                }
            }
        }
        Ok(ApgdOutcome {
            x_adv: adv,
            zero_gradients,
        })
    }
}

/// What [`Apgd::run`] returns.
#[derive(Debug)]
pub struct ApgdOutcome {
    /// x' (x itself for the points not fooled).
    pub x_adv: Tensor,
    /// Points whose input gradient at the random start was exactly zero (DLR losses only).
    pub zero_gradients: i64,
}

/// The iterations (0-based) after which APGD checks its step size, for `n` iterations: the
/// first after ⌊0.22·n⌋ iterations, then with the period shrinking by ⌊0.03·n⌋ down to
/// ⌊0.06·n⌋ (each at least 1), as `n_iter_2`, `size_decr` and `n_iter_min` in
/// `fra31/auto-attack:autoattack/autopgd_base.py`. Each item is (iteration, period).
pub fn checkpoints(n: usize) -> Vec<(usize, usize)> {
    let first = ((0.22 * n as f64) as usize).max(1);
    let min = ((0.06 * n as f64) as usize).max(1);
    let decr = ((0.03 * n as f64) as usize).max(1);
    let mut out = Vec::new();
    let (mut at, mut period) = (first, first);
    while at <= n {
        out.push((at - 1, period));
        period = period.saturating_sub(decr).max(min);
        at += period;
    }
    out
}

/// One APGD run on points all robust at the start.
struct SingleRun<'a> {
    model: &'a dyn Classifier,
    train: bool,
    settings: &'a Apgd,
    x: &'a Tensor,
    y: &'a Tensor,
    /// ε_i broadcast over the batch.
    eps: &'a Tensor,
    target: Option<&'a Tensor>,
}

struct RunOutcome {
    fooled: Tensor,
    x_adv: Tensor,
    zero_gradients: i64,
}

/// The per-point state of a run; every field has one row per point still iterated.
struct Active {
    /// Positions of these points in the run's batch.
    pos: Tensor,
    x: Tensor,
    y: Tensor,
    eps: Tensor,
    target: Option<Tensor>,
    x_adv: Tensor,
    x_old: Tensor,
    grad: Tensor,
    x_best: Tensor,
    grad_best: Tensor,
    loss_best: Tensor,
    step: Tensor,
    /// Losses since the last checkpoint, one [n] tensor per iteration.
    losses: Vec<Tensor>,
    /// The loss before the first of `losses` (the reference reads a not yet written slot, 0,
    /// at the first checkpoint; kept for parity).
    loss_before: Tensor,
    loss_best_last_check: Tensor,
    reduced_last_check: Tensor,
}

impl Active {
    /// Keeps the rows in `keep` (a 1-D index tensor).
    fn retain(&mut self, keep: &Tensor) {
        let sel = |t: &Tensor| t.index_select(0, keep);
        self.pos = sel(&self.pos);
        self.x = sel(&self.x);
        self.y = sel(&self.y);
        self.eps = sel(&self.eps);
        self.target = self.target.as_ref().map(sel);
        self.x_adv = sel(&self.x_adv);
        self.x_old = sel(&self.x_old);
        self.grad = sel(&self.grad);
        self.x_best = sel(&self.x_best);
        self.grad_best = sel(&self.grad_best);
        self.loss_best = sel(&self.loss_best);
        self.step = sel(&self.step);
        self.losses = self.losses.iter().map(sel).collect();
        self.loss_before = sel(&self.loss_before);
        self.loss_best_last_check = sel(&self.loss_best_last_check);
        self.reduced_last_check = sel(&self.reduced_last_check);
    }
}

impl SingleRun<'_> {
    /// Logits, per-sample losses and the EOT-averaged gradient at `x_adv`.
    fn evaluate(
        &self,
        x_adv: &Tensor,
        y: &Tensor,
        target: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let eot = self.settings.eot_iter;
        let mut grad: Option<Tensor> = None;
        let mut last = None;
        for _ in 0..eot {
            let xa = x_adv.detach().set_requires_grad(true);
            let z = self.model.forward_t(&xa, self.train);
            let loss = self.settings.loss.per_sample(&z, y, target);
            let g = input_gradient(&loss.sum(Kind::Float), &xa)?;
            grad = Some(match grad {
                None => g,
                Some(acc) => acc + g,
            });
            last = Some((z.detach(), loss.detach()));
        }
        let (z, loss) = last.expect("eot_iter >= 1 is validated");
        let mut grad = grad.expect("eot_iter >= 1 is validated");
        if eot > 1 {
            grad /= eot as f64;
        }
        Ok((z, loss, grad))
    }

    fn attack(&self) -> Result<RunOutcome> {
        let x = self.x;
        let n = x.size()[0];
        let device = x.device();
        let ndim = x.dim();
        let flat_max = |t: &Tensor| t.abs().reshape([n, -1]).amax(1, true);
        let u = x.rand_like() * 2.0 - 1.0;
        let u_max = flat_max(&u).reshape(super::row_shape(ndim).as_slice());
        let x_adv = (x + self.eps * (&u / (u_max + 1e-12))).clamp(0.0, 1.0);
        let (z, loss, grad) = self.evaluate(&x_adv, self.y, self.target)?;
        let zero_gradients = if self.settings.loss == ApgdLoss::Ce {
            0
        } else {
            i64::try_from(
                grad.abs()
                    .reshape([n, -1])
                    .sum_dim_intlist(1, false, Kind::Float)
                    .eq(0.0)
                    .sum(Kind::Int64),
            )?
        };
        let fooled_now = z.argmax(-1, false).ne_tensor(self.y);
        // The result: the last misclassified iterate per point (x_best_adv in the reference).
        let mut x_out = x_adv.copy();
        let mut fooled = fooled_now.copy();
        let mut s = Active {
            pos: Tensor::arange(n, (Kind::Int64, device)),
            x: x.shallow_clone(),
            y: self.y.shallow_clone(),
            eps: self.eps.shallow_clone(),
            target: self.target.map(Tensor::shallow_clone),
            x_old: x_adv.copy(),
            x_best: x_adv.copy(),
            grad_best: grad.copy(),
            loss_best: loss.copy(),
            step: self.eps * 2.0,
            losses: Vec::new(),
            loss_before: loss.zeros_like(),
            loss_best_last_check: loss.copy(),
            reduced_last_check: loss.ones_like().to_kind(Kind::Bool),
            x_adv,
            grad,
        };
        drop_fooled(&mut s, &fooled_now);
        let schedule = checkpoints(self.settings.iterations);
        let mut next_check = schedule.iter().copied().peekable();
        for i in 0..self.settings.iterations {
            if s.pos.numel() == 0 {
                break;
            }
            let a = if i > 0 { 0.75 } else { 1.0 };
            let x_next = tch::no_grad(|| {
                let momentum = &s.x_adv - &s.x_old;
                let z1 = project(&(&s.x_adv + &s.step * s.grad.sign()), &s.x, &s.eps);
                project(
                    &(&s.x_adv + (z1 - &s.x_adv) * a + momentum * (1.0 - a)),
                    &s.x,
                    &s.eps,
                )
            });
            s.x_old = std::mem::replace(&mut s.x_adv, x_next);
            let (z, loss, grad) = self.evaluate(&s.x_adv, &s.y, s.target.as_ref())?;
            s.grad = grad;
            let wrong = z.argmax(-1, false).ne_tensor(&s.y);
            tch::no_grad(|| {
                let improved = loss.gt_tensor(&s.loss_best);
                let rows = super::row_shape(ndim);
                let improved_rows = improved.view(rows.as_slice());
                s.x_best = s.x_adv.where_self(&improved_rows, &s.x_best);
                s.grad_best = s.grad.where_self(&improved_rows, &s.grad_best);
                s.loss_best = loss.where_self(&improved, &s.loss_best);
            });
            s.losses.push(loss);
            let any_wrong = i64::try_from(wrong.any())? != 0;
            if any_wrong {
                let rows = wrong.nonzero().squeeze_dim(1);
                let at = s.pos.index_select(0, &rows);
                let _ = x_out.index_copy_(0, &at, &s.x_adv.index_select(0, &rows));
                let _ = fooled.index_fill_(0, &at, 1);
            }
            if next_check.peek().is_some_and(|&(at, _)| at == i) {
                let (_, period) = next_check.next().expect("peeked");
                self.check_step_size(&mut s, period, ndim);
            }
            if any_wrong {
                drop_fooled(&mut s, &wrong);
            }
        }
        Ok(RunOutcome {
            fooled,
            x_adv: x_out,
            zero_gradients,
        })
    }

    /// The step-size check at a checkpoint with `period` iterations since the last one.
    fn check_step_size(&self, s: &mut Active, period: usize, ndim: usize) {
        tch::no_grad(|| {
            let mut rises = s.loss_best.zeros_like();
            let m = s.losses.len();
            for j in 0..period.min(m) {
                let cur = &s.losses[m - 1 - j];
                let prev = if m >= j + 2 {
                    &s.losses[m - 2 - j]
                } else {
                    &s.loss_before
                };
                rises += cur.gt_tensor(prev).to_kind(Kind::Float);
            }
            let oscillating = rises.le(period as f64 * self.settings.rho);
            let stalled = s
                .reduced_last_check
                .logical_not()
                .logical_and(&s.loss_best_last_check.ge_tensor(&s.loss_best));
            let reduce = oscillating.logical_or(&stalled);
            s.reduced_last_check = reduce.copy();
            s.loss_best_last_check = s.loss_best.copy();
            let rows = reduce.view(super::row_shape(ndim).as_slice());
            s.step = s.step.where_self(&rows.logical_not(), &(&s.step / 2.0));
            s.x_adv = s.x_best.where_self(&rows, &s.x_adv);
            s.grad = s.grad_best.where_self(&rows, &s.grad);
            // Keep the last loss as the "previous" one of the next window.
            let last = s.losses.last().map(Tensor::shallow_clone);
            s.losses.clear();
            if let Some(last) = last {
                s.loss_before = last;
            }
        });
    }
}

/// Removes the rows flagged in `fooled` from the active set.
fn drop_fooled(s: &mut Active, fooled: &Tensor) {
    let keep = fooled.logical_not().nonzero().squeeze_dim(1);
    if keep.numel() < s.pos.numel() {
        s.retain(&keep);
    }
}

impl Attack for Apgd {
    /// E.g. `apgd-ce 100 iterations 1 restart`.
    fn describe(&self) -> String {
        let mut s = format!(
            "{} {} iterations {} restart{}",
            self.loss.attack_name(),
            self.iterations,
            self.restarts,
            if self.restarts == 1 { "" } else { "s" }
        );
        if self.loss == ApgdLoss::DlrTargeted {
            s.push_str(&format!(" {} targets", self.targets));
        }
        if self.eot_iter > 1 {
            s.push_str(&format!(" eot {}", self.eot_iter));
        }
        s
    }

    fn perturb(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor> {
        Ok(self.run(model, input)?.x_adv)
    }

    fn perturb_checked(
        &self,
        model: &dyn Classifier,
        input: &AttackInput<'_>,
    ) -> Result<(Tensor, Vec<String>)> {
        let out = self.run(model, input)?;
        let warnings = if out.zero_gradients > 0 {
            vec![format!(
                "{}: {} points with a zero gradient at the random start; gradient-based attacks \
                 may then overestimate robustness (input quantisation, saturated logits?)",
                self.loss.attack_name(),
                out.zero_gradients
            )]
        } else {
            Vec::new()
        };
        Ok((out.x_adv, warnings))
    }
}
