//! Square Attack (Andriushchenko et al. 2020), the black-box part of AutoAttack, in ℓ∞, with
//! the reference's details (`fra31/auto-attack:autoattack/square.py`, as AutoAttack runs it:
//! 5,000 queries, p_init = 0.8, 1 restart, margin loss, no rescaling of the schedule unless
//! `rescale_schedule` asks for it, as torchattacks does by default):
//!
//! * start: x + ε_i·s with s = ±1 drawn per (point, channel, column): vertical stripes;
//! * iteration i: a square of side max(round(√(p_i·H·W)), 1) (at most H, W) at one random
//!   position, the same for the whole batch; each channel of the window gets ±2ε_i, the sign
//!   drawn per channel and shared by the batch; x_new = Clip01(Π_ε(x_best + Δ));
//! * p_i = p_init halved after 10, 50, 200, 500, 1,000, 2,000, 4,000, 6,000 and 8,000 queries
//!   ([`p_schedule`]);
//! * a point keeps x_new if its margin z_y − max_{j≠y} z_j decreases or becomes ≤ 0; a
//!   point with margin ≤ 0 is done and is no longer queried.
//!
//! Only the points still robust are queried, all of them in one batch. A query changes only the
//! window, so with the model's [`Classifier::window_forward`] (SmallCNN and FAT's SmallCNN in
//! eval mode) it recomputes only the part of each layer the window reaches
//! ([`crate::model::window`]); the decisions are the same up to floating-point summation order,
//! and a point leaves as fooled only once the full forward pass agrees.

use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use super::{Attack, AttackInput, check_input, project, row_shape};
use crate::error::{Result, invalid};
use crate::model::Classifier;
use crate::model::Window;

/// Square's settings; [`Square::autoattack`] gives AutoAttack's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Square {
    /// Iterations (queries after the start) per restart (5,000).
    pub queries: usize,
    /// p_init, the initial fraction of the image a square covers (0.8).
    pub p_init: f64,
    pub restarts: usize,
    /// p's schedule rescaled to the query budget: query i counts as ⌊i / queries · 10,000⌋
    /// (`rescale_schedule` of `p_selection`; torchattacks' default, while AutoAttack runs Square
    /// without it).
    #[serde(default)]
    pub rescale_schedule: bool,
}

impl Square {
    /// Square as AutoAttack's `standard` version runs it.
    pub fn autoattack() -> Self {
        Square {
            queries: 5000,
            p_init: 0.8,
            restarts: 1,
            rescale_schedule: false,
        }
    }

    /// p at query `i` (0-based): [`p_schedule`] of `i`, or with `rescale_schedule` of
    /// ⌊i / queries · 10,000⌋ (computed in f64 as the reference's `int(it / n_queries * 10000)`).
    pub fn p_at(&self, i: usize) -> f64 {
        let it = if self.rescale_schedule {
            (i as f64 / self.queries as f64 * 10000.0) as usize
        } else {
            i
        };
        p_schedule(self.p_init, it)
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        super::at_least_one("square.queries", self.queries)?;
        super::at_least_one("square.restarts", self.restarts)?;
        if !(self.p_init > 0.0 && self.p_init <= 1.0) {
            return Err(invalid("square.p_init", self.p_init, "in (0, 1]"));
        }
        Ok(())
    }

    /// x' (x itself for the points not fooled). `trace`, when given, receives after the start
    /// and after every iteration the best margin of every point a run attacks (those classified
    /// correctly, in batch order; ≤ 0: fooled), run after run.
    pub fn run(
        &self,
        model: &dyn Classifier,
        input: &AttackInput<'_>,
        mut trace: Option<&mut Vec<Tensor>>,
    ) -> Result<Tensor> {
        self.validate()?;
        check_input(input)?;
        let (x, y) = (input.x, input.y);
        let n = x.size()[0];
        let mut adv = x.detach().copy();
        if n == 0 {
            return Ok(adv);
        }
        if x.dim() != 4 {
            return Err(invalid(
                "x",
                format!("{:?}", x.size()),
                "images [N, C, H, W] (Square Attack)",
            ));
        }
        let predict =
            |xs: &Tensor| tch::no_grad(|| model.forward_t(xs, input.train).argmax(-1, false));
        let mut robust = predict(x).eq_tensor(y);
        let eps = input.eps.tensor().to_kind(x.kind());
        for _ in 0..self.restarts {
            let idx = robust.nonzero().squeeze_dim(1);
            if idx.numel() == 0 {
                break;
            }
            let xs = x.index_select(0, &idx);
            let ys = y.index_select(0, &idx);
            let es = eps.index_select(0, &idx);
            let best = self.single_run(model, input.train, &xs, &ys, &es, trace.as_deref_mut())?;
            let fooled = predict(&best).ne_tensor(&ys).nonzero().squeeze_dim(1);
            if fooled.numel() > 0 {
                let at = idx.index_select(0, &fooled);
                let _ = robust.index_fill_(0, &at, 0);
                let _ = adv.index_copy_(0, &at, &best.index_select(0, &fooled));
            }
        }
        Ok(adv)
    }

    /// One run on points all robust at the start: the best point of each. With the model's
    /// [`Classifier::window_forward`], a query recomputes only what its window reaches; a point
    /// whose margin that pass puts at ≤ 0 leaves only if the full forward pass agrees.
    fn single_run(
        &self,
        model: &dyn Classifier,
        train: bool,
        x: &Tensor,
        y: &Tensor,
        eps: &Tensor,
        mut trace: Option<&mut Vec<Tensor>>,
    ) -> Result<Tensor> {
        let margin_of =
            |xs: &Tensor, ys: &Tensor| tch::no_grad(|| margin(&model.forward_t(xs, train), ys));
        let size = x.size();
        let m = size[0];
        let (c, h, w) = (size[1], size[2], size[3]);
        let rows = row_shape(4);
        let eps_b = eps.view(rows.as_slice());
        let device = x.device();
        let stripes = rand_sign(&[m, c, 1, w], device);
        let mut x_best = (x + &eps_b * stripes).clamp(0.0, 1.0);
        let mut margin_min = margin_of(&x_best, y);
        if let Some(t) = trace.as_deref_mut() {
            t.push(margin_min.copy());
        }
        // The points still queried, compacted: their rows in this run's batch and their
        // images, labels, budgets, best points and margins, written back to `x_best` and
        // `margin_min` when points leave and at the end (not at every query).
        let mut pos = Tensor::arange(m, (Kind::Int64, device));
        let (mut xc, mut yc, mut ec) =
            (x.shallow_clone(), y.shallow_clone(), eps_b.shallow_clone());
        // Separate storage: the write-backs go into `x_best` and `margin_min` in place.
        let (mut best_c, mut margin_c) = (x_best.copy(), margin_min.copy());
        let mut local = model.window_forward(&best_c, train);
        for i in 0..self.queries {
            let mut active = margin_c.gt(0.0);
            if i64::try_from(active.all())? == 0 {
                if local.is_some() {
                    let leaving = active.logical_not().nonzero().squeeze_dim(1);
                    let exact = margin_of(
                        &best_c.index_select(0, &leaving),
                        &yc.index_select(0, &leaving),
                    );
                    let _ = margin_c.index_copy_(0, &leaving, &exact);
                    active = margin_c.gt(0.0);
                }
                let _ = x_best.index_copy_(0, &pos, &best_c);
                let _ = margin_min.index_copy_(0, &pos, &margin_c);
                let keep = active.nonzero().squeeze_dim(1);
                if keep.numel() == 0 {
                    return Ok(x_best);
                }
                if keep.numel() < pos.numel() {
                    let sel = |t: &Tensor| t.index_select(0, &keep);
                    (pos, xc, yc, ec) = (sel(&pos), sel(&xc), sel(&yc), sel(&ec));
                    (best_c, margin_c) = (sel(&best_c), sel(&margin_c));
                    if let Some(l) = local.as_mut() {
                        l.select(&keep);
                    }
                }
            }
            let p = self.p_at(i);
            let s = side(p, h, w);
            let window = Window {
                top: rand_below(h - s, device)?,
                left: rand_below(w - s, device)?,
                height: s,
                width: s,
            };
            let signs = rand_sign(&[1, c, 1, 1], device);
            let at = |t: &Tensor| {
                t.narrow(2, window.top, window.height)
                    .narrow(3, window.left, window.width)
            };
            // x_new = Clip01(Π_ε(x_best + Δ)) differs from x_best only in the window.
            let best_w = at(&best_c);
            let values = project(&(&best_w + signs * (&ec * 2.0)), &at(&xc), &ec);
            let logits = match local.as_mut() {
                Some(l) => l.query(window, &values)?,
                None => {
                    let x_new = best_c.copy();
                    at(&x_new).copy_(&values);
                    tch::no_grad(|| model.forward_t(&x_new, train))
                }
            };
            let margin_new = margin(&logits, &yc);
            let accept = margin_new
                .lt_tensor(&margin_c)
                .logical_or(&margin_new.le(0.0));
            let kept = values.where_self(&accept.view(rows.as_slice()), &best_w);
            at(&best_c).copy_(&kept);
            if let Some(l) = local.as_mut() {
                l.accept(&accept);
            }
            margin_c = margin_new.where_self(&accept, &margin_c);
            if let Some(t) = trace.as_deref_mut() {
                t.push(margin_min.index_copy(0, &pos, &margin_c));
            }
        }
        let _ = x_best.index_copy_(0, &pos, &best_c);
        Ok(x_best)
    }
}

/// z_y − max_{j≠y} z_j per row.
pub fn margin(z: &Tensor, y: &Tensor) -> Tensor {
    let zy = z.gather(1, &y.unsqueeze(1), false).squeeze_dim(1);
    let others = z.scatter_value(1, &y.unsqueeze(1), f64::NEG_INFINITY);
    zy - others.amax(1, false)
}

/// p at iteration `i` (0-based): p_init halved after 10, 50, 200, 500, 1,000, 2,000, 4,000,
/// 6,000 and 8,000 iterations (`p_selection` in `fra31/auto-attack:autoattack/square.py`,
/// without rescaling to the query budget, as AutoAttack runs it).
pub fn p_schedule(p_init: f64, i: usize) -> f64 {
    const STEPS: [usize; 9] = [10, 50, 200, 500, 1000, 2000, 4000, 6000, 8000];
    let halvings = STEPS.iter().filter(|&&t| i > t).count();
    p_init / f64::from(1u32 << halvings)
}

/// The side of the square for fraction `p` of an h × w image: max(round(√(p·h·w)), 1), at most
/// min(h, w).
pub fn side(p: f64, h: i64, w: i64) -> i64 {
    let s = ((p * (h * w) as f64).sqrt().round() as i64).max(1);
    s.min(h.min(w))
}

/// ±1 with equal probability, from libtorch's generator.
fn rand_sign(shape: &[i64], device: tch::Device) -> Tensor {
    (Tensor::rand(shape, (Kind::Float, device)) * 2.0 - 1.0).sign()
}

/// An integer uniform in [0, hi) from libtorch's generator, 0 when hi ≤ 0 (the reference's
/// `random_int(0, hi)`, which never draws hi itself).
fn rand_below(hi: i64, device: tch::Device) -> Result<i64> {
    let u = Tensor::rand([1], (Kind::Float, device));
    Ok(((u * hi.max(0) as f64).floor().int64_value(&[0])).clamp(0, (hi - 1).max(0)))
}

impl Attack for Square {
    /// E.g. `square 5000 queries p_init 0.8 1 restart`.
    fn describe(&self) -> String {
        format!(
            "square {} queries p_init {} {} restart{}",
            self.queries,
            self.p_init,
            self.restarts,
            if self.restarts == 1 { "" } else { "s" }
        )
    }

    fn perturb(&self, model: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor> {
        self.run(model, input, None)
    }
}
