//! Toy adversarial training of CFA's f_w (CFA §2.2, App. B.3): fit w on n samples per class
//! perturbed with budget ε, giving the empirical ŵ_ε.
//!
//! Every perturbed sample becomes one linear condition in w. For w > 0 the worst-case
//! perturbation of [`LinearClassifier::cfa`] does not depend on w (all coefficients are
//! positive), so with x' = x + δ the sample is correct iff y(x₁' + S'/w) > 0, i.e. iff
//! a·w + b > 0 with a = y·x₁' and b = y·S'. The empirical accuracy is therefore a step function
//! of w, maximised exactly by a sweep over its breakpoints ([`maximise_accuracy`]). The same
//! conditions give the margins w₁a + w₂b of the two-parameter classifier sign(w₁x₁ + w₂S)
//! trained with a smooth loss ([`fit_surrogate`]).

use classwise_theory::eval::{ArgmaxJson, PerClass};
use classwise_theory::model::{Adversary, Argmax, BinaryModel, Class};
use serde::Serialize;

use super::label;
use super::perturb::LinearClassifier;
use super::sampler::Sampler;
use crate::error::{Bound, Result, ToyError, check, require_count};

/// One condition a·w + b > 0.
pub type Condition = (f64, f64);

/// The exact maximiser of an empirical accuracy over w ∈ (0, ∞).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct EmpiricalArgmax {
    /// The midpoint of the leftmost maximising interval, or "+inf" when that interval is
    /// unbounded (the accuracy is maximal for every large w).
    pub argmax: ArgmaxJson,
    /// The leftmost maximising open interval (lower, upper); `upper` is null when unbounded.
    pub lower: f64,
    pub upper: Option<f64>,
    /// The maximal empirical accuracy.
    pub accuracy: f64,
}

impl EmpiricalArgmax {
    pub fn value(&self) -> Option<f64> {
        self.argmax.0.value()
    }
}

/// Maximises the fraction of satisfied conditions a_i·w + b_i > 0 over w ∈ (0, ∞), exactly.
///
/// A condition with a > 0 holds for w > −b/a, one with a < 0 for w < −b/a, one with a = 0
/// everywhere or nowhere. Sorting the positive thresholds and sweeping gives the count on each
/// open interval between them; at a threshold itself the count is never larger than on both
/// sides, so the supremum is attained on an interval.
pub fn maximise_accuracy(conditions: &[Condition]) -> Result<EmpiricalArgmax> {
    require_count("conditions", conditions.len(), 1)?;
    let mut count: i64 = 0; // satisfied on (0, first threshold)
    let mut events: Vec<(f64, i64)> = Vec::new();
    for (i, &(a, b)) in conditions.iter().enumerate() {
        if !(a.is_finite() && b.is_finite()) {
            return Err(ToyError::InvalidParameter {
                name: "condition",
                value: i as f64,
                expected: "finite coefficients (index in `value`)",
            });
        }
        let t = -b / a;
        match a.partial_cmp(&0.0) {
            Some(std::cmp::Ordering::Greater) if t > 0.0 => events.push((t, 1)),
            Some(std::cmp::Ordering::Greater) => count += 1,
            Some(std::cmp::Ordering::Less) if t > 0.0 => {
                count += 1;
                events.push((t, -1));
            }
            Some(std::cmp::Ordering::Less) => {}
            _ => count += i64::from(b > 0.0),
        }
    }
    events.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut best, mut lower, mut upper) = (count, 0.0, events.first().map(|e| e.0));
    let mut i = 0;
    while i < events.len() {
        let t = events[i].0;
        while i < events.len() && events[i].0 == t {
            count += events[i].1;
            i += 1;
        }
        if count > best {
            best = count;
            lower = t;
            upper = events.get(i).map(|e| e.0);
        }
    }
    let argmax = match upper {
        Some(u) => Argmax::At(0.5 * (lower + u)),
        None => Argmax::PlusInfinity,
    };
    Ok(EmpiricalArgmax {
        argmax: ArgmaxJson(argmax),
        lower,
        upper,
        accuracy: best as f64 / conditions.len() as f64,
    })
}

/// The conditions of the first `n` samples of class y after the worst-case perturbation of
/// budget ε (ε = 0: clean).
pub fn conditions(
    sampler: &Sampler,
    y: Class,
    eps: f64,
    adv: Adversary,
    n: usize,
    seed: u64,
) -> Vec<Condition> {
    let d = sampler.model().d() as usize;
    // Any w > 0 gives the same perturbation; see the module docs.
    let f = LinearClassifier::cfa(1.0, d);
    let yv = label(y);
    sampler
        .map_chunks(y, n, seed, |s| {
            let mut buf = vec![0.0; s.dim];
            s.rows()
                .map(|x| {
                    f.worst_case_into(x, yv, eps, adv, &mut buf);
                    (yv * buf[0], yv * buf[1..].iter().sum::<f64>())
                })
                .collect::<Vec<_>>()
        })
        .concat()
}

/// The result of [`fit_surrogate`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SurrogateFit {
    pub w1: f64,
    pub w2: f64,
    /// w = w₁/w₂ ("+inf" when w₂ = 0 < w₁, "constant" when both are 0: the zero score).
    pub w: ArgmaxJson,
    /// Mean logistic loss at the optimum.
    pub loss: f64,
    pub iterations: usize,
    /// Whether the projected-gradient norm fell below the tolerance.
    pub converged: bool,
}

/// Trains sign(w₁x₁ + w₂S) on the perturbed samples by minimising the mean logistic loss
/// ln(1 + e^{−(w₁a + w₂b)}) over w₁, w₂ ≥ 0 with a projected Newton method: the gradient and the
/// 2×2 Hessian of the loss give the step, variables at their bound whose gradient pushes
/// outwards are held fixed, and an Armijo backtracking line search guarantees descent.
///
/// The constraint keeps the worst-case perturbation the one the conditions were built with;
/// the loss is convex, so the method finds its global minimum. b is rescaled internally by its
/// root mean square (a diagonal preconditioner). Note that this is a *surrogate*: the minimiser
/// of the logistic loss is not the maximiser of accuracy, so w₁/w₂ need not equal ŵ_ε.
pub fn fit_surrogate(conditions: &[Condition], max_iter: usize, tol: f64) -> Result<SurrogateFit> {
    require_count("conditions", conditions.len(), 1)?;
    let n = conditions.len() as f64;
    let scale = (conditions.iter().map(|c| c.1 * c.1).sum::<f64>() / n).sqrt();
    check("rms of S", scale, Bound::Positive)?;
    let data: Vec<(f64, f64)> = conditions.iter().map(|&(a, b)| (a, b / scale)).collect();
    let mut theta = [1.0, 1.0];
    let mut cur = Logistic::at(&data, theta);
    let mut iterations = 0;
    let mut converged = false;
    while iterations < max_iter {
        // Free variables: off the bound, or on it with the gradient pointing inwards.
        let free = [0, 1].map(|i| theta[i] > 0.0 || cur.grad[i] < 0.0);
        let pg = [0, 1].map(|i| if free[i] { cur.grad[i] } else { 0.0 });
        if pg[0].hypot(pg[1]) < tol {
            converged = true;
            break;
        }
        iterations += 1;
        let dir = newton_direction(&cur, free);
        let slope = dir[0] * cur.grad[0] + dir[1] * cur.grad[1];
        // Newton decrement: the predicted decrease is below the rounding of the mean loss.
        if -slope < NEWTON_DECREMENT_TOL {
            converged = true;
            break;
        }
        let mut t = 1.0;
        let accepted = loop {
            let cand = [0, 1].map(|i| (theta[i] + t * dir[i]).max(0.0));
            let next = Logistic::at(&data, cand);
            if next.loss <= cur.loss + 1e-4 * t * slope {
                break Some((cand, next));
            }
            t *= 0.5;
            if t < 1e-10 {
                break None;
            }
        };
        match accepted {
            Some((cand, next)) => (theta, cur) = (cand, next),
            // No decrease is measurable any more: stationary up to rounding.
            None => break,
        }
    }
    let (w1, w2) = (theta[0], theta[1] / scale);
    let w = if w2 > 0.0 {
        Argmax::At(w1 / w2)
    } else if w1 > 0.0 {
        Argmax::PlusInfinity
    } else {
        // w₁ = w₂ = 0: the zero score, no direction at all.
        Argmax::Constant
    };
    Ok(SurrogateFit {
        w1,
        w2,
        w: ArgmaxJson(w),
        loss: cur.loss,
        iterations,
        converged,
    })
}

/// Mean logistic loss, gradient and Hessian at θ.
struct Logistic {
    loss: f64,
    grad: [f64; 2],
    hess: [[f64; 2]; 2],
}

impl Logistic {
    fn at(data: &[(f64, f64)], t: [f64; 2]) -> Self {
        let n = data.len() as f64;
        let (mut l, mut g, mut h) = (0.0, [0.0; 2], [[0.0; 2]; 2]);
        for &(a, b) in data {
            let m = t[0] * a + t[1] * b;
            // softplus(−m), σ(−m) and σ(m)σ(−m), without overflow.
            l += if m > 0.0 {
                (-m).exp().ln_1p()
            } else {
                -m + m.exp().ln_1p()
            };
            let s = 1.0 / (1.0 + m.exp());
            let c = [a, b];
            for i in 0..2 {
                g[i] -= s * c[i];
                for j in 0..2 {
                    h[i][j] += s * (1.0 - s) * c[i] * c[j];
                }
            }
        }
        Logistic {
            loss: l / n,
            grad: g.map(|v| v / n),
            hess: h.map(|r| r.map(|v| v / n)),
        }
    }
}

/// The Newton step on the free variables (zero on the fixed ones); the negative gradient when
/// the reduced Hessian is numerically singular.
fn newton_direction(f: &Logistic, free: [bool; 2]) -> [f64; 2] {
    let (g, h) = (f.grad, f.hess);
    let steepest = [0, 1].map(|i| if free[i] { -g[i] } else { 0.0 });
    match free {
        [true, true] => {
            let det = h[0][0] * h[1][1] - h[0][1] * h[1][0];
            if det > 1e-14 * (h[0][0] * h[1][1]).max(f64::MIN_POSITIVE) {
                [
                    -(h[1][1] * g[0] - h[0][1] * g[1]) / det,
                    -(h[0][0] * g[1] - h[1][0] * g[0]) / det,
                ]
            } else {
                steepest
            }
        }
        [true, false] if h[0][0] > 0.0 => [-g[0] / h[0][0], 0.0],
        [false, true] if h[1][1] > 0.0 => [0.0, -g[1] / h[1][1]],
        _ => steepest,
    }
}

/// One budget of [`fit_report`].
#[derive(Clone, Debug, Serialize)]
pub struct FitPoint {
    pub eps: f64,
    /// ŵ_ε: the exact maximiser of the class-average empirical robust accuracy.
    pub empirical: EmpiricalArgmax,
    /// The two-parameter logistic surrogate.
    pub surrogate: SurrogateFit,
    /// The closed form of `classwise-theory`: CFA Theorem 2's ŵ_ε (paper adversary) or the
    /// full-adversary optimum (null when ε ≥ 1).
    pub closed_form: Option<ArgmaxJson>,
}

/// The output of `classwise toy fit`.
#[derive(Clone, Debug, Serialize)]
pub struct FitReport {
    pub model: BinaryModel,
    pub adversary: Adversary,
    pub samples_per_class: usize,
    pub seed: u64,
    pub points: Vec<FitPoint>,
    /// Whether the empirical ŵ_ε is non-decreasing over the given budgets in increasing order
    /// (CFA Theorem 2; "+inf" counts as the largest value).
    pub empirical_monotone: bool,
    /// w*_y: the exact maximiser of class y's empirical clean accuracy (CFA Theorem 3).
    pub w_star_empirical: PerClass<EmpiricalArgmax>,
    pub w_star_closed_form: PerClass<ArgmaxJson>,
}

/// Surrogate iteration budget and tolerance used by [`fit_report`].
pub const SURROGATE_MAX_ITER: usize = 200;
pub const SURROGATE_TOL: f64 = 1e-8;

/// Stop when the Newton decrement g·H⁻¹g (the predicted decrease of the mean loss, times 2)
/// falls below this: beyond it the decrease is lost in the rounding of the mean over n terms.
const NEWTON_DECREMENT_TOL: f64 = 1e-14;

/// Fits w on `n` samples per class for every budget in `eps` (the same samples for every ε:
/// common random numbers) and the per-class clean maximisers, next to the closed forms.
pub fn fit_report(
    model: BinaryModel,
    eps: &[f64],
    adv: Adversary,
    n: usize,
    seed: u64,
) -> Result<FitReport> {
    require_count("samples", n, 1)?;
    require_count("eps (number of budgets)", eps.len(), 1)?;
    for &e in eps {
        check("eps", e, Bound::NonNegative)?;
    }
    let sampler = Sampler::new(model);
    let both = |e: f64| {
        let mut c = conditions(&sampler, Class::Pos, e, adv, n, seed);
        c.extend(conditions(&sampler, Class::Neg, e, adv, n, seed));
        c
    };
    let mut points = Vec::with_capacity(eps.len());
    for &e in eps {
        let c = both(e);
        let closed_form = match adv {
            Adversary::Paper => Some(ArgmaxJson(model.w_hat(e)?)),
            Adversary::Full if e < 1.0 => Some(ArgmaxJson(model.w_hat_full(e)?.argmax)),
            Adversary::Full => None,
        };
        points.push(FitPoint {
            eps: e,
            empirical: maximise_accuracy(&c)?,
            surrogate: fit_surrogate(&c, SURROGATE_MAX_ITER, SURROGATE_TOL)?,
            closed_form,
        });
    }
    let mut order: Vec<&FitPoint> = points.iter().collect();
    order.sort_by(|a, b| a.eps.total_cmp(&b.eps));
    let key = |p: &FitPoint| p.empirical.value().unwrap_or(f64::INFINITY);
    let empirical_monotone = order.windows(2).all(|w| key(w[0]) <= key(w[1]));
    let star = |y: Class| maximise_accuracy(&conditions(&sampler, y, 0.0, adv, n, seed));
    Ok(FitReport {
        model,
        adversary: adv,
        samples_per_class: n,
        seed,
        points,
        empirical_monotone,
        w_star_empirical: PerClass {
            pos: star(Class::Pos)?,
            neg: star(Class::Neg)?,
        },
        w_star_closed_form: PerClass {
            pos: ArgmaxJson(model.w_star(Class::Pos)),
            neg: ArgmaxJson(model.w_star(Class::Neg)),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over a fine grid of w against the exact sweep.
    #[test]
    fn sweep_matches_a_grid_search() {
        let c: Vec<Condition> = vec![
            (1.0, -2.0),  // w > 2
            (1.0, -3.0),  // w > 3
            (-1.0, 5.0),  // w < 5
            (-1.0, 4.0),  // w < 4
            (1.0, 1.0),   // always
            (-1.0, -1.0), // never
            (0.0, 1.0),   // always
        ];
        let m = maximise_accuracy(&c).unwrap();
        assert_eq!((m.lower, m.upper), (3.0, Some(4.0)));
        assert_eq!(m.value(), Some(3.5));
        assert!((m.accuracy - 6.0 / 7.0).abs() < 1e-15);
        let grid_best = (1..1000)
            .map(|i| {
                let w = i as f64 * 0.01;
                c.iter().filter(|(a, b)| a * w + b > 0.0).count()
            })
            .max()
            .unwrap();
        assert_eq!(grid_best, 6);
    }

    #[test]
    fn unbounded_maximum_is_plus_infinity() {
        let m = maximise_accuracy(&[(1.0, -1.0), (1.0, -2.0)]).unwrap();
        assert_eq!(m.argmax.0, Argmax::PlusInfinity);
        assert_eq!((m.lower, m.upper, m.accuracy), (2.0, None, 1.0));
        assert!(maximise_accuracy(&[]).is_err());
        assert!(maximise_accuracy(&[(f64::NAN, 1.0)]).is_err());
    }
}
