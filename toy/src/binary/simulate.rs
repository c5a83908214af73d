//! Empirical clean and robust accuracies of f_w with standard errors, against the closed forms.

use classwise_theory::eval::PerClass;
use classwise_theory::model::{Adversary, BinaryModel, Class};
use serde::Serialize;

use super::label;
use super::perturb::LinearClassifier;
use super::sampler::{Sampler, Samples};
use crate::error::{Bound, Result, check, require_count};

/// A Monte Carlo proportion and its standard error √(m(1−m)/N).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub mean: f64,
    pub se: f64,
}

impl Estimate {
    /// From `hits` successes in `n ≥ 1` trials.
    pub fn from_counts(hits: u64, n: u64) -> Self {
        let n = n as f64;
        let mean = hits as f64 / n;
        Estimate {
            mean,
            se: (mean * (1.0 - mean) / n).sqrt(),
        }
    }

    /// z = (mean − p)/√(p(1−p)/N) against a hypothesised probability p (check T12). When
    /// p is 0 or 1 the estimate must equal it exactly: z is 0 if it does, ±∞ otherwise.
    pub fn z_against(&self, p: f64, n: u64) -> f64 {
        let sd = (p * (1.0 - p) / n as f64).sqrt();
        let diff = self.mean - p;
        if sd > 0.0 {
            diff / sd
        } else if diff == 0.0 {
            0.0
        } else {
            diff.signum() * f64::INFINITY
        }
    }
}

/// The three accuracies of one evaluation.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Accuracies<T> {
    pub clean: PerClass<T>,
    pub robust_paper: PerClass<T>,
    pub robust_full: PerClass<T>,
}

/// Estimates at one w, next to the closed forms.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub w: f64,
    #[serde(flatten)]
    pub estimates: Accuracies<Estimate>,
    /// The closed forms of `classwise-theory` at the same parameters.
    pub closed_form: Accuracies<f64>,
    /// z-score of each estimate against its closed form.
    pub z: Accuracies<f64>,
}

impl Point {
    /// The largest |z| over every accuracy and class.
    pub fn max_abs_z(&self) -> f64 {
        let z = &self.z;
        [z.clean, z.robust_paper, z.robust_full]
            .iter()
            .flat_map(|p| [p.pos, p.neg])
            .fold(0.0, |m: f64, v| m.max(v.abs()))
    }
}

/// The output of `classwise toy simulate`: one [`Point`].
#[derive(Clone, Debug, Serialize)]
pub struct Simulation {
    pub model: BinaryModel,
    pub eps: f64,
    pub samples_per_class: u64,
    pub seed: u64,
    #[serde(flatten)]
    pub point: Point,
}

impl Simulation {
    /// The largest |z| over every accuracy and class.
    pub fn max_abs_z(&self) -> f64 {
        self.point.max_abs_z()
    }
}

/// The output of `classwise toy sweep`: one [`Point`] per w, all on the same samples (common
/// random numbers), so differences between neighbouring w are estimated far more precisely
/// than each accuracy alone.
#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    pub model: BinaryModel,
    pub eps: f64,
    pub samples_per_class: u64,
    pub seed: u64,
    pub points: Vec<Point>,
    /// Between consecutive w: the paired difference of each accuracy with its standard error
    /// (much smaller than that of either accuracy alone).
    pub steps: Vec<Step>,
}

/// acc(w_to) − acc(w_from) for consecutive values of a [`Sweep`].
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub from_w: f64,
    pub to_w: f64,
    #[serde(flatten)]
    pub difference: Accuracies<Estimate>,
}

/// Counts of one classifier: correct predictions (clean, paper adversary, full adversary) and,
/// against the previous classifier of the sweep, samples that became correct (`up`) or wrong
/// (`down`).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    hits: [u64; 3],
    up: [u64; 3],
    down: [u64; 3],
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        for i in 0..3 {
            self.hits[i] += o.hits[i];
            self.up[i] += o.up[i];
            self.down[i] += o.down[i];
        }
    }
}

/// [`Counts`] of every classifier over one chunk.
fn count_chunk(fs: &[LinearClassifier], s: &Samples, eps: f64) -> Vec<Counts> {
    let y = label(s.y);
    let mut buf = vec![0.0; s.dim];
    let mut counts = vec![Counts::default(); fs.len()];
    for x in s.rows() {
        let mut prev: Option<[bool; 3]> = None;
        for (f, c) in fs.iter().zip(counts.iter_mut()) {
            let mut ok = [f.margin(x, y) > 0.0, false, false];
            for (o, adv) in ok[1..].iter_mut().zip([Adversary::Paper, Adversary::Full]) {
                f.worst_case_into(x, y, eps, adv, &mut buf);
                *o = f.margin(&buf, y) > 0.0;
            }
            for i in 0..3 {
                c.hits[i] += u64::from(ok[i]);
                if let Some(p) = prev {
                    c.up[i] += u64::from(ok[i] && !p[i]);
                    c.down[i] += u64::from(!ok[i] && p[i]);
                }
            }
            prev = Some(ok);
        }
    }
    counts
}

/// [`Counts`] of class y over `n` samples, per classifier.
fn count_class(
    sampler: &Sampler,
    fs: &[LinearClassifier],
    y: Class,
    eps: f64,
    n: usize,
    seed: u64,
) -> Vec<Counts> {
    sampler
        .map_chunks(y, n, seed, |s| count_chunk(fs, s, eps))
        .into_iter()
        .fold(vec![Counts::default(); fs.len()], |mut acc, part| {
            acc.iter_mut().zip(&part).for_each(|(a, b)| a.add(b));
            acc
        })
}

/// A paired difference acc(w') − acc(w) on the same n samples: mean (n_up − n_down)/n and
/// standard error √(((n_up + n_down)/n − mean²)/n).
fn paired_difference(up: u64, down: u64, n: u64) -> Estimate {
    let nf = n as f64;
    let mean = (up as f64 - down as f64) / nf;
    let var = ((up + down) as f64 / nf - mean * mean).max(0.0) / nf;
    Estimate {
        mean,
        se: var.sqrt(),
    }
}

/// The closed forms at one w.
fn closed_forms(model: &BinaryModel, w: f64, eps: f64) -> Result<Accuracies<f64>> {
    let both = |f: &dyn Fn(Class) -> classwise_theory::Result<f64>| -> Result<PerClass<f64>> {
        Ok(PerClass {
            pos: f(Class::Pos)?,
            neg: f(Class::Neg)?,
        })
    };
    Ok(Accuracies {
        clean: both(&|y| model.clean_accuracy(y, w))?,
        robust_paper: both(&|y| model.robust_accuracy(y, w, eps, Adversary::Paper))?,
        robust_full: both(&|y| model.robust_accuracy(y, w, eps, Adversary::Full))?,
    })
}

/// Simulates `n` samples per class, applies the exact worst-case perturbation of budget ε
/// (paper and full adversary) to every sample, and counts the correct predictions of f_w for
/// every w in `ws` on the same samples. ε is the budget of `theory eval` (≥ 0, finite); every
/// w > 0.
pub fn sweep(model: BinaryModel, ws: &[f64], eps: f64, n: usize, seed: u64) -> Result<Sweep> {
    require_count("w (number of values)", ws.len(), 1)?;
    for &w in ws {
        check("w", w, Bound::Positive)?;
    }
    check("eps", eps, Bound::NonNegative)?;
    require_count("samples", n, 1)?;
    let sampler = Sampler::new(model);
    let fs: Vec<LinearClassifier> = ws
        .iter()
        .map(|&w| LinearClassifier::cfa(w, model.d() as usize))
        .collect();
    let pos = count_class(&sampler, &fs, Class::Pos, eps, n, seed);
    let neg = count_class(&sampler, &fs, Class::Neg, eps, n, seed);
    let nn = n as u64;
    let accuracies = |i: usize, f: &dyn Fn(&Counts, usize) -> Estimate| {
        let both = |k: usize| PerClass {
            pos: f(&pos[i], k),
            neg: f(&neg[i], k),
        };
        Accuracies {
            clean: both(0),
            robust_paper: both(1),
            robust_full: both(2),
        }
    };
    let z = |e: PerClass<Estimate>, c: PerClass<f64>| PerClass {
        pos: e.pos.z_against(c.pos, nn),
        neg: e.neg.z_against(c.neg, nn),
    };
    let points = ws
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let estimates = accuracies(i, &|c, k| Estimate::from_counts(c.hits[k], nn));
            let closed_form = closed_forms(&model, w, eps)?;
            Ok(Point {
                w,
                z: Accuracies {
                    clean: z(estimates.clean, closed_form.clean),
                    robust_paper: z(estimates.robust_paper, closed_form.robust_paper),
                    robust_full: z(estimates.robust_full, closed_form.robust_full),
                },
                estimates,
                closed_form,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let steps = (1..ws.len())
        .map(|i| Step {
            from_w: ws[i - 1],
            to_w: ws[i],
            difference: accuracies(i, &|c, k| paired_difference(c.up[k], c.down[k], nn)),
        })
        .collect();
    Ok(Sweep {
        model,
        eps,
        samples_per_class: nn,
        seed,
        points,
        steps,
    })
}

/// [`sweep`] at a single w.
pub fn simulate(model: BinaryModel, w: f64, eps: f64, n: usize, seed: u64) -> Result<Simulation> {
    let s = sweep(model, &[w], eps, n, seed)?;
    let point = s
        .points
        .into_iter()
        .next()
        .ok_or(crate::ToyError::LengthMismatch {
            what: "sweep points",
            expected: 1,
            got: 0,
        })?;
    Ok(Simulation {
        model,
        eps,
        samples_per_class: s.samples_per_class,
        seed,
        point,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_handles_degenerate_probabilities() {
        let e = Estimate::from_counts(10, 10);
        assert_eq!(e.se, 0.0);
        assert_eq!(e.z_against(1.0, 10), 0.0);
        assert_eq!(
            Estimate::from_counts(9, 10).z_against(1.0, 10),
            f64::NEG_INFINITY
        );
        let z = Estimate::from_counts(60, 100).z_against(0.5, 100);
        assert!((z - 2.0).abs() < 1e-12);
    }

    #[test]
    fn bad_input_is_an_error() {
        let m = BinaryModel::new(1, 0.4, 0.7, 0.85, 0.7).unwrap();
        assert!(simulate(m, 0.0, 0.1, 10, 0).is_err());
        assert!(simulate(m, 1.0, f64::NAN, 10, 0).is_err());
        assert!(simulate(m, 1.0, 0.1, 0, 0).is_err());
    }
}
