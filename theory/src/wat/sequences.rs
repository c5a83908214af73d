//! Loss sequences (T rounds × (K+1) decisions, values in [0, 1]) used to exercise WAT
//! Theorem 1 in simulation: uniform, Bernoulli, near-constant, training-curve-like
//! and an adaptive adversary against Hedge.

use rand::RngExt;
use rand::rngs::ChaCha8Rng;

use super::hedge::Hedge;
use crate::error::{Result, require};

/// The families of loss sequences used to exercise WAT Theorem 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceKind {
    /// iid U[0, 1].
    Uniform,
    /// iid Bernoulli(p_k), with p_k ~ U[0, 1] per decision.
    Bernoulli,
    /// A per-decision constant c_k ~ U[0, 1] plus noise of width 0.02 (clipped), exactly
    /// constant for half of the decisions.
    NearConstant,
    /// `a_k e^{-t/τ_k} + b_k` plus small noise, clipped: decreasing like a validation loss.
    TrainingCurve,
    /// Gain 1 to the decision Hedge (with the same η) currently weights least, 0 elsewhere.
    Adaptive,
}

impl SequenceKind {
    /// Every kind, in a fixed order.
    pub const ALL: [SequenceKind; 5] = [
        SequenceKind::Uniform,
        SequenceKind::Bernoulli,
        SequenceKind::NearConstant,
        SequenceKind::TrainingCurve,
        SequenceKind::Adaptive,
    ];
}

/// Generates a loss sequence of `kind` with `rounds ≥ 1` rounds and `n_decisions ≥ 2`
/// decisions; `eta > 0` is the step of the Hedge player the adaptive adversary plays against.
pub fn generate(
    kind: SequenceKind,
    n_decisions: usize,
    rounds: usize,
    eta: f64,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<Vec<f64>>> {
    super::no_regret::check_game_size(n_decisions, rounds)?;
    require("eta", eta, eta > 0.0 && eta.is_finite(), "a finite eta > 0")?;
    let n = n_decisions;
    let mut out = Vec::with_capacity(rounds);
    match kind {
        SequenceKind::Uniform => {
            for _ in 0..rounds {
                out.push((0..n).map(|_| rng.random::<f64>()).collect());
            }
        }
        SequenceKind::Bernoulli => {
            let p: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
            for _ in 0..rounds {
                out.push(
                    p.iter()
                        .map(|&pk| if rng.random::<f64>() < pk { 1.0 } else { 0.0 })
                        .collect(),
                );
            }
        }
        SequenceKind::NearConstant => {
            let c: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
            let exact: Vec<bool> = (0..n).map(|_| rng.random::<bool>()).collect();
            for _ in 0..rounds {
                out.push(
                    c.iter()
                        .zip(&exact)
                        .map(|(&ck, &ex)| {
                            let noise = if ex {
                                0.0
                            } else {
                                0.02 * (rng.random::<f64>() - 0.5)
                            };
                            (ck + noise).clamp(0.0, 1.0)
                        })
                        .collect(),
                );
            }
        }
        SequenceKind::TrainingCurve => {
            let params: Vec<(f64, f64, f64)> = (0..n)
                .map(|_| {
                    let b = 0.5 * rng.random::<f64>();
                    let a = (1.0 - b) * rng.random::<f64>();
                    let tau = 1.0 + rounds as f64 * rng.random::<f64>();
                    (a, b, tau)
                })
                .collect();
            for t in 0..rounds {
                out.push(
                    params
                        .iter()
                        .map(|&(a, b, tau)| {
                            let noise = 0.05 * (rng.random::<f64>() - 0.5);
                            (a * (-(t as f64) / tau).exp() + b + noise).clamp(0.0, 1.0)
                        })
                        .collect(),
                );
            }
        }
        SequenceKind::Adaptive => {
            let mut hedge = Hedge::new(n, eta)?;
            for _ in 0..rounds {
                let w = hedge.weights();
                let least = w
                    .iter()
                    .enumerate()
                    .fold(
                        (0, f64::INFINITY),
                        |best, (k, &wk)| {
                            if wk < best.1 { (k, wk) } else { best }
                        },
                    )
                    .0;
                let row: Vec<f64> = (0..n).map(|k| if k == least { 1.0 } else { 0.0 }).collect();
                hedge.update(&row)?;
                out.push(row);
            }
        }
    }
    Ok(out)
}
