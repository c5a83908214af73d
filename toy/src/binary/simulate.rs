//! Empirical clean and robust accuracies of f_w with standard errors, against the closed forms.

use classwise_theory::eval::PerClass;
use classwise_theory::model::{Adversary, BinaryModel, Class};
use serde::Serialize;

use super::label;
use super::perturb::LinearClassifier;
use super::sampler::{Sampler, Samples};
use crate::error::{Result, require, require_count};

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

    /// z = (mean − p)/√(p(1−p)/N) against a hypothesised probability p (theory spec T12). When
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

/// The output of `classwise toy simulate`.
#[derive(Clone, Debug, Serialize)]
pub struct Simulation {
    pub model: BinaryModel,
    pub w: f64,
    pub eps: f64,
    pub samples_per_class: u64,
    pub seed: u64,
    #[serde(flatten)]
    pub estimates: Accuracies<Estimate>,
    /// The closed forms of `classwise-theory` at the same parameters.
    pub closed_form: Accuracies<f64>,
    /// z-score of each estimate against its closed form.
    pub z: Accuracies<f64>,
}

impl Simulation {
    /// The largest |z| over every accuracy and class.
    pub fn max_abs_z(&self) -> f64 {
        let z = &self.z;
        [z.clean, z.robust_paper, z.robust_full]
            .iter()
            .flat_map(|p| [p.pos, p.neg])
            .fold(0.0, |m: f64, v| m.max(v.abs()))
    }
}

/// Correct counts in one chunk: clean, paper adversary, full adversary.
fn count_chunk(f: &LinearClassifier, s: &Samples, eps: f64) -> [u64; 3] {
    let y = label(s.y);
    let mut buf = vec![0.0; s.dim];
    let mut hits = [0u64; 3];
    for x in s.rows() {
        hits[0] += u64::from(f.margin(x, y) > 0.0);
        for (h, adv) in hits[1..]
            .iter_mut()
            .zip([Adversary::Paper, Adversary::Full])
        {
            f.worst_case_into(x, y, eps, adv, &mut buf);
            *h += u64::from(f.margin(&buf, y) > 0.0);
        }
    }
    hits
}

/// Correct counts of class y over `n` samples.
fn count_class(
    sampler: &Sampler,
    f: &LinearClassifier,
    y: Class,
    eps: f64,
    n: usize,
    seed: u64,
) -> [u64; 3] {
    sampler
        .map_chunks(y, n, seed, |s| count_chunk(f, s, eps))
        .into_iter()
        .fold([0; 3], |a, b| [a[0] + b[0], a[1] + b[1], a[2] + b[2]])
}

/// Simulates `n` samples per class, applies the exact worst-case perturbation of budget ε
/// (paper and full adversary) to every sample, and counts the correct predictions of f_w.
/// ε is the budget of `theory eval` (≥ 0, finite); w > 0.
pub fn simulate(model: BinaryModel, w: f64, eps: f64, n: usize, seed: u64) -> Result<Simulation> {
    require("w", w, w > 0.0 && w.is_finite(), "finite and > 0")?;
    require("eps", eps, eps >= 0.0 && eps.is_finite(), "finite and >= 0")?;
    require_count("samples", n, 1)?;
    let sampler = Sampler::new(model);
    let f = LinearClassifier::cfa(w, model.d() as usize);
    let pos = count_class(&sampler, &f, Class::Pos, eps, n, seed);
    let neg = count_class(&sampler, &f, Class::Neg, eps, n, seed);
    let nn = n as u64;
    let est = |i: usize| PerClass {
        pos: Estimate::from_counts(pos[i], nn),
        neg: Estimate::from_counts(neg[i], nn),
    };
    let estimates = Accuracies {
        clean: est(0),
        robust_paper: est(1),
        robust_full: est(2),
    };
    let cf = |y: Class, i: usize| match i {
        0 => model.clean_accuracy(y, w),
        1 => model.robust_accuracy(y, w, eps, Adversary::Paper),
        _ => model.robust_accuracy(y, w, eps, Adversary::Full),
    };
    let closed = |i: usize| -> Result<PerClass<f64>> {
        Ok(PerClass {
            pos: cf(Class::Pos, i)?,
            neg: cf(Class::Neg, i)?,
        })
    };
    let closed_form = Accuracies {
        clean: closed(0)?,
        robust_paper: closed(1)?,
        robust_full: closed(2)?,
    };
    let z = |e: PerClass<Estimate>, c: PerClass<f64>| PerClass {
        pos: e.pos.z_against(c.pos, nn),
        neg: e.neg.z_against(c.neg, nn),
    };
    Ok(Simulation {
        model,
        w,
        eps,
        samples_per_class: nn,
        seed,
        z: Accuracies {
            clean: z(estimates.clean, closed_form.clean),
            robust_paper: z(estimates.robust_paper, closed_form.robust_paper),
            robust_full: z(estimates.robust_full, closed_form.robust_full),
        },
        estimates,
        closed_form,
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
