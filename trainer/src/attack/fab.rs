//! FAB, the fast adaptive boundary attack (Croce & Hein 2020b), in ℓ∞, targeted (FAB-T, as
//! AutoAttack's `standard` version runs it) or untargeted, with the reference's details
//! (`fra31/auto-attack:autoattack/fab_base.py`, `fab_pt.py`, `fab_projections.py`):
//!
//! each iteration linearises g = z_t − z_y at the iterate x₁ (untargeted: the class whose
//! linearised boundary is nearest), projects both x₁ and the clean x onto the hyperplane
//! {g = 0} with the smallest ℓ∞ step inside [0, 1] ([`projection_linf`]), and moves to
//!
//! ```text
//! x₁ ← Clip01((1 − α)·(x₁ + η·d₁) + α·(x + η·d₂)),   α = min(‖d₁‖ / (‖d₁‖ + ‖d₂‖), α_max)
//! ```
//!
//! with η = 1.05 (overshoot) and α_max = 0.1; a misclassified iterate is kept if it is closer to x
//! than the best so far, then pulled back, x₁ ← x + β·(x₁ − x) with β = 0.9. The first restart
//! starts at x, later ones at x + ε/2·u/‖u‖∞. FAB minimises ‖δ‖∞: a point counts as broken only if
//! its best adversarial example has ‖δ‖∞ ≤ ε_i.
//!
//! With `early_stop`, a point stops being iterated once it has an adversarial example within
//! ε_i: whether it is broken at ε_i is then decided (the best distance only decreases), so the
//! cascade's flags are those of the full attack, with less work; the returned example is then
//! not the closest one FAB would find.

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::{Attack, AttackInput, check_input, input_gradient, row_shape};
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// FAB's settings; [`Fab::targeted`] gives AutoAttack's FAB-T.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fab {
    /// Attack the 2nd … (targets+1)-th most likely classes in turn (FAB-T), or the nearest
    /// boundary of any class (FAB).
    pub targeted: bool,
    /// Target classes of FAB-T (9).
    pub targets: usize,
    pub iterations: usize,
    pub restarts: usize,
    /// α_max (0.1).
    pub alpha_max: f64,
    /// η, the overshoot (1.05).
    pub eta: f64,
    /// β, the backward step (0.9).
    pub beta: f64,
    /// Stop iterating a point once it has an adversarial example within ε_i.
    pub early_stop: bool,
}

impl Fab {
    /// FAB-T as AutoAttack's `standard` version runs it (9 targets, 1 restart, 100 iterations).
    pub fn targeted() -> Self {
        Fab {
            targeted: true,
            targets: 9,
            iterations: 100,
            restarts: 1,
            alpha_max: 0.1,
            eta: 1.05,
            beta: 0.9,
            early_stop: true,
        }
    }

    /// Untargeted FAB (AutoAttack's `plus` version runs it with 5 restarts).
    pub fn untargeted() -> Self {
        Fab {
            targeted: false,
            ..Self::targeted()
        }
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        super::at_least_one("fab.iterations", self.iterations)?;
        super::at_least_one("fab.restarts", self.restarts)?;
        if self.targeted {
            super::at_least_one("fab.targets", self.targets)?;
        }
        for (name, v, lo, hi) in [
            ("fab.alpha_max", self.alpha_max, 0.0, 1.0),
            ("fab.beta", self.beta, 0.0, 1.0),
        ] {
            if !(v >= lo && v <= hi) {
                return Err(invalid(name, v, format!("in [{lo}, {hi}]")));
            }
        }
        if !(self.eta.is_finite() && self.eta >= 1.0) {
            return Err(invalid("fab.eta", self.eta, "finite and >= 1"));
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        if self.targeted { "fab-t" } else { "fab" }
    }

    /// x' (x itself where no adversarial example within ε_i was found) and, per point, ‖δ‖∞ of
    /// the closest adversarial example found (+∞ where none was; 0 where x is misclassified).
    pub fn run(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<FabOutcome> {
        self.validate()?;
        check_input(input)?;
        let (x, y, train) = (input.x, input.y, input.train);
        let n = x.size()[0];
        let mut adv = x.detach().copy();
        let mut distance = Tensor::full([n], f64::INFINITY, (Kind::Float, x.device()));
        if n == 0 {
            return Ok(FabOutcome {
                x_adv: adv,
                distance,
            });
        }
        let eps = input.eps.tensor().to_kind(Kind::Float);
        let clean = tch::no_grad(|| model.forward_t(x, train));
        let k = clean.size()[1];
        let correct = clean.argmax(-1, false).eq_tensor(y);
        let _ = distance.masked_fill_(&correct.logical_not(), 0.0);
        let mut robust = correct;
        let ranks = if self.targeted {
            2..=(self.targets as i64 + 1).min(k)
        } else {
            1..=1
        };
        for rank in ranks {
            for restart in 0..self.restarts {
                let idx = robust.nonzero().squeeze_dim(1);
                if idx.numel() == 0 {
                    return Ok(FabOutcome {
                        x_adv: adv,
                        distance,
                    });
                }
                let xs = x.index_select(0, &idx);
                let ys = y.index_select(0, &idx);
                let es = eps.index_select(0, &idx);
                let target = self.targeted.then(|| {
                    let z = tch::no_grad(|| model.forward_t(&xs, train));
                    z.argsort(1, true).select(1, rank - 1)
                });
                let run = SingleRun {
                    model,
                    train,
                    settings: self,
                    x: &xs,
                    y: &ys,
                    eps: &es,
                    target: target.as_ref(),
                };
                let (best, dist) = run.attack(restart > 0)?;
                // Record the closest example over restarts and targets.
                let closer = dist.lt_tensor(&distance.index_select(0, &idx));
                let rows = closer.nonzero().squeeze_dim(1);
                if rows.numel() > 0 {
                    let at = idx.index_select(0, &rows);
                    let _ = adv.index_copy_(0, &at, &best.index_select(0, &rows));
                    let _ = distance.index_copy_(0, &at, &dist.index_select(0, &rows));
                }
                let broken = dist.le_tensor(&es).nonzero().squeeze_dim(1);
                if broken.numel() > 0 {
                    let _ = robust.index_fill_(0, &idx.index_select(0, &broken), 0);
                }
            }
        }
        // Points not broken within ε_i keep x.
        let keep = distance.gt_tensor(&eps).view(row_shape(x.dim()).as_slice());
        Ok(FabOutcome {
            x_adv: x.where_self(&keep, &adv),
            distance,
        })
    }
}

/// What [`Fab::run`] returns.
#[derive(Debug)]
pub struct FabOutcome {
    pub x_adv: Tensor,
    /// ‖δ‖∞ of the closest adversarial example found per point (+∞: none; 0: x misclassified).
    pub distance: Tensor,
}

struct SingleRun<'a> {
    model: &'a dyn Classifier,
    train: bool,
    settings: &'a Fab,
    x: &'a Tensor,
    y: &'a Tensor,
    /// ε_i, 1-D.
    eps: &'a Tensor,
    target: Option<&'a Tensor>,
}

impl SingleRun<'_> {
    /// The linearisation at `x1`: (f, ∇f) of the boundary function chosen per point, f = z_t −
    /// z_y (targeted) or the z_c − z_y whose linearised boundary is nearest in ℓ∞ (untargeted).
    fn linearise(
        &self,
        x1: &Tensor,
        y: &Tensor,
        target: Option<&Tensor>,
    ) -> Result<(Tensor, Tensor)> {
        let xa = x1.detach().set_requires_grad(true);
        let z = self.model.forward_t(&xa, self.train);
        let zy = z.gather(1, &y.unsqueeze(1), false).squeeze_dim(1);
        if let Some(t) = target {
            let f = z.gather(1, &t.unsqueeze(1), false).squeeze_dim(1) - &zy;
            let g = input_gradient(&f.sum(Kind::Float), &xa)?;
            return Ok((f.detach(), g));
        }
        let n = x1.size()[0];
        let k = z.size()[1];
        let mut grads = Vec::with_capacity(k as usize);
        for c in 0..k {
            let mut g =
                Tensor::f_run_backward(&[z.select(1, c).sum(Kind::Float)], &[&xa], true, false)?;
            grads.push(g.swap_remove(0).reshape([n, -1]));
        }
        let jac = Tensor::stack(&grads, 1); // [n, K, d]
        let z = z.detach();
        let gy = jac.gather(
            1,
            &y.view([n, 1, 1]).expand([n, 1, jac.size()[2]], false),
            false,
        );
        let dg = &jac - gy;
        let df = (&z - zy.detach().unsqueeze(1)).scatter_value(1, &y.unsqueeze(1), 1e10);
        let dist = df.abs() / (dg.abs().sum_dim_intlist(2, false, Kind::Float) + 1e-12);
        let c = dist.argmin(1, false);
        let f = df.gather(1, &c.unsqueeze(1), false).squeeze_dim(1);
        let g = dg
            .gather(
                1,
                &c.view([n, 1, 1]).expand([n, 1, dg.size()[2]], false),
                false,
            )
            .squeeze_dim(1)
            .view(x1.size().as_slice());
        Ok((f, g))
    }

    /// One run: the closest adversarial example found per point and its ‖δ‖∞ (+∞ if none).
    fn attack(&self, random_start: bool) -> Result<(Tensor, Tensor)> {
        let s = self.settings;
        let x = self.x;
        let n = x.size()[0];
        let rows = row_shape(x.dim());
        let mut best = x.copy();
        let mut dist = Tensor::full([n], f64::INFINITY, (Kind::Float, x.device()));
        let mut pos = Tensor::arange(n, (Kind::Int64, x.device()));
        let (mut x0, mut y, mut eps) = (
            x.shallow_clone(),
            self.y.shallow_clone(),
            self.eps.shallow_clone(),
        );
        let mut target = self.target.map(Tensor::shallow_clone);
        let mut x1 = if random_start {
            let t = x.rand_like() * 2.0 - 1.0;
            let t_max = t
                .abs()
                .reshape([n, -1])
                .amax(1, false)
                .view(rows.as_slice());
            (x + t / t_max * eps.view(rows.as_slice()) * 0.5).clamp(0.0, 1.0)
        } else {
            x.copy()
        };
        let mut best_active = Tensor::full([n], f64::INFINITY, (Kind::Float, x.device()));
        for _ in 0..s.iterations {
            if pos.numel() == 0 {
                break;
            }
            let m = pos.numel() as i64;
            let (f, g) = self.linearise(&x1, &y, target.as_ref())?;
            tch::no_grad(|| {
                let w = g.reshape([m, -1]);
                let b = (&w * x1.reshape([m, -1])).sum_dim_intlist(1, false, Kind::Float) - &f;
                let d1 = projection_linf(&x1.reshape([m, -1]), &w, &b);
                let d2 = projection_linf(&x0.reshape([m, -1]), &w, &b);
                let norm = |d: &Tensor| d.abs().amax(1, false).clamp_min(1e-8);
                let (a1, a2) = (norm(&d1), norm(&d2));
                let alpha = (&a1 / (&a1 + &a2))
                    .clamp(0.0, s.alpha_max)
                    .view(rows.as_slice());
                let d1 = d1.view(x1.size().as_slice());
                let d2 = d2.view(x1.size().as_slice());
                x1 = ((&x1 + d1 * s.eta) * (-&alpha + 1.0) + (&x0 + d2 * s.eta) * &alpha)
                    .clamp(0.0, 1.0);
                let wrong = self
                    .model
                    .forward_t(&x1, self.train)
                    .argmax(-1, false)
                    .ne_tensor(&y);
                let delta = (&x1 - &x0).abs().reshape([m, -1]).amax(1, false);
                let closer = wrong.logical_and(&delta.lt_tensor(&best_active));
                let at = closer.nonzero().squeeze_dim(1);
                if at.numel() > 0 {
                    let global = pos.index_select(0, &at);
                    let _ = best.index_copy_(0, &global, &x1.index_select(0, &at));
                    let _ = dist.index_copy_(0, &global, &delta.index_select(0, &at));
                    best_active = delta.where_self(&closer, &best_active);
                }
                let back = wrong.view(rows.as_slice());
                x1 = (&x0 + (&x1 - &x0) * s.beta).where_self(&back, &x1);
                if s.early_stop {
                    let keep = best_active.gt_tensor(&eps).nonzero().squeeze_dim(1);
                    if (keep.numel() as i64) < m {
                        let sel = |t: &Tensor| t.index_select(0, &keep);
                        pos = sel(&pos);
                        x0 = sel(&x0);
                        x1 = sel(&x1);
                        y = sel(&y);
                        eps = sel(&eps);
                        best_active = sel(&best_active);
                        target = target.as_ref().map(sel);
                    }
                }
            });
        }
        Ok((best, dist))
    }
}

/// The smallest-ℓ∞ step d onto the hyperplane {w·x = b} from each row t of `points`, inside the
/// box [0, 1] (FAB's ℓ∞ projection, `projection_linf` in
/// `fra31/auto-attack:autoattack/fab_projections.py`): all rows are [m, d], `b` is [m].
///
/// With c = b − w·t the change of w·x needed, each coordinate moves towards the hyperplane by
/// min(λ, r_i), r_i being its room to the box's face in that direction, so w·x changes by
/// F(λ) = Σ_i |w_i|·min(λ, r_i), non-decreasing and piecewise linear in λ; λ solves F(λ) = |c|
/// between the two sorted rooms that bracket it. If even λ = max r_i falls short (the box keeps
/// the hyperplane out of reach), every coordinate moves to its face. Coordinates with w_i = 0
/// do not move.
pub fn projection_linf(points: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    let t = points;
    let c = b - (w * t).sum_dim_intlist(1, false, Kind::Float);
    let need = c.abs().unsqueeze(1);
    // The direction of each coordinate's move: sign(c)·sign(w_i).
    let dir = w.sign() * c.sign().unsqueeze(1);
    // Room to the face: 1 − t_i when moving up, t_i when moving down.
    let room = (-t + 1.0).where_self(&dir.gt(0.0), t);
    let aw = w.abs();
    let (rs, order) = room.sort(1, false);
    let aws = aw.gather(1, &order, false);
    let cum_awr = (&aws * &rs).cumsum(1, Kind::Float);
    let cum_aw = aws.cumsum(1, Kind::Float);
    let total = cum_aw.select(1, -1).unsqueeze(1);
    // F at each sorted room.
    let f = &cum_awr + &rs * (&total - &cum_aw);
    let dim = t.size()[1];
    // j: the first sorted room at which F reaches |c|; dim when it never does.
    let j = f.lt_tensor(&need).sum_dim_intlist(1, true, Kind::Int64);
    let reachable = j.lt(dim);
    let jm1 = (&j - 1).clamp_min(0);
    let has_prev = j.gt(0);
    let zero = need.zeros_like();
    let awr_before = cum_awr.gather(1, &jm1, false).where_self(&has_prev, &zero);
    let aw_before = cum_aw.gather(1, &jm1, false).where_self(&has_prev, &zero);
    let lambda = ((&need - awr_before) / (&total - aw_before).clamp_min(1e-30)).clamp_min(0.0);
    let step = room.minimum(&lambda).where_self(&reachable, &room);
    dir * step
}

impl Attack for Fab {
    /// E.g. `fab-t 100 iterations 1 restart 9 targets`.
    fn describe(&self) -> String {
        let mut s = format!(
            "{} {} iterations {} restart{}",
            self.name(),
            self.iterations,
            self.restarts,
            if self.restarts == 1 { "" } else { "s" }
        );
        if self.targeted {
            s.push_str(&format!(" {} targets", self.targets));
        }
        s
    }

    fn perturb(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor> {
        Ok(self.run(model, input)?.x_adv)
    }
}
