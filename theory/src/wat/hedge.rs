//! Hedge over the K+1 decisions of WAT in **gains** form (WAT eq. (12), Algorithm 1), and the
//! linear multiplicative-weights update of Arora-Hazan-Kale 2012 Thm 2.1 that WAT's Lemma 1
//! actually describes.

use crate::error::{Result, TheoryError, require};

/// Validates one round's vector against the number of decisions: right length, finite.
fn check_round(values: &[f64], n: usize, what: &'static str) -> Result<()> {
    if values.len() != n {
        return Err(TheoryError::LengthMismatch {
            what,
            expected: n,
            got: values.len(),
        });
    }
    for &v in values {
        require(what, v, v.is_finite(), "a finite number")?;
    }
    Ok(())
}

/// Exponential weights on cumulative gains (Freund-Schapire Hedge, WAT eq. (8) and eq. (12)):
/// `w_k^t = exp(η Σ_{i<t} L_k(f_i)) / Σ_j exp(η Σ_{i<t} L_j(f_i))`.
///
/// The weights grow with the loss: the adversary of WAT's zero-sum game maximises the loss, so
/// the Hedge player receives the losses as gains. The weights are a softmax with
/// max-subtraction, so they never overflow. Hedge itself accepts any finite step `η > 0` and any
/// finite gains; the theorems that use it check their own hypotheses (η ≤ 1/2, gains in \[0,1\]).
#[derive(Debug, Clone, PartialEq)]
pub struct Hedge {
    eta: f64,
    cumulative: Vec<f64>,
    rounds: usize,
}

impl Hedge {
    /// A Hedge player over `n_decisions` decisions with step `eta`; its first weights are
    /// uniform, `w_k^1 = 1/(K+1)` (Algorithm 1's initialisation, eq. (12) with an empty sum).
    pub fn new(n_decisions: usize, eta: f64) -> Result<Self> {
        if n_decisions == 0 {
            return Err(TheoryError::Empty { what: "decisions" });
        }
        require("eta", eta, eta > 0.0 && eta.is_finite(), "a finite eta > 0")?;
        Ok(Hedge {
            eta,
            cumulative: vec![0.0; n_decisions],
            rounds: 0,
        })
    }

    /// Number of decisions (K+1 in WAT).
    pub fn n_decisions(&self) -> usize {
        self.cumulative.len()
    }

    /// The step η.
    pub fn eta(&self) -> f64 {
        self.eta
    }

    /// Rounds played so far (t-1 when the next weights are w^t).
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// Cumulative gains `Σ_{i<t} L_k(f_i)` per decision.
    pub fn cumulative(&self) -> &[f64] {
        &self.cumulative
    }

    /// The weights `w^t` of WAT eq. (12) for the next round (a softmax of `η G`).
    pub fn weights(&self) -> Vec<f64> {
        exp_weights(&self.cumulative, self.eta)
    }

    /// Plays one round: returns the expected gain `w^t · L^t` under the current weights, then
    /// adds `gains` to the cumulative sums (so that `weights()` becomes `w^{t+1}`).
    ///
    /// Errors on a length mismatch or a non-finite gain; the state is unchanged on error.
    pub fn update(&mut self, gains: &[f64]) -> Result<f64> {
        check_round(gains, self.n_decisions(), "gains")?;
        let next: Vec<f64> = self
            .cumulative
            .iter()
            .zip(gains)
            .map(|(c, g)| c + g)
            .collect();
        for &c in &next {
            require(
                "cumulative gain",
                c,
                c.is_finite(),
                "a finite cumulative gain",
            )?;
        }
        let expected: f64 = self.weights().iter().zip(gains).map(|(w, g)| w * g).sum();
        self.cumulative = next;
        self.rounds += 1;
        Ok(expected)
    }
}

/// The linear multiplicative-weights update of Arora-Hazan-Kale 2012 Thm 2.1 in gains form,
/// `w_k ← w_k (1 + η C_k)`, for which WAT's Lemma 1 (as printed) is a theorem. Requires
/// `0 < η ≤ 1/2` and gains in [-1, 1] so that the weights stay positive.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearWeights {
    eta: f64,
    probabilities: Vec<f64>,
}

impl LinearWeights {
    /// Uniform start over `n_decisions` decisions, step `eta ∈ (0, 1/2]`.
    pub fn new(n_decisions: usize, eta: f64) -> Result<Self> {
        if n_decisions == 0 {
            return Err(TheoryError::Empty { what: "decisions" });
        }
        require("eta", eta, eta > 0.0 && eta <= 0.5, "0 < eta <= 1/2")?;
        let u = 1.0 / n_decisions as f64;
        Ok(LinearWeights {
            eta,
            probabilities: vec![u; n_decisions],
        })
    }

    /// The current distribution p^t (renormalised after every round).
    pub fn weights(&self) -> &[f64] {
        &self.probabilities
    }

    /// Plays one round: returns `p^t · C^t`, then updates `p_k ← p_k (1 + η C_k)` and
    /// renormalises. Gains must lie in [-1, 1] (AHK Thm 2.1).
    pub fn update(&mut self, gains: &[f64]) -> Result<f64> {
        check_round(gains, self.probabilities.len(), "gains")?;
        for &g in gains {
            require("gain", g, (-1.0..=1.0).contains(&g), "a gain in [-1, 1]")?;
        }
        let expected: f64 = self
            .probabilities
            .iter()
            .zip(gains)
            .map(|(p, g)| p * g)
            .sum();
        let mut next: Vec<f64> = self
            .probabilities
            .iter()
            .zip(gains)
            .map(|(p, g)| p * (1.0 + self.eta * g))
            .collect();
        let sum: f64 = next.iter().sum();
        for p in &mut next {
            *p /= sum;
        }
        self.probabilities = next;
        Ok(expected)
    }
}

/// WAT eq. (12): w_k = exp(η G_k) / Σ_j exp(η G_j), as a softmax with the maximum subtracted so
/// that η·G ≫ 700 does not overflow. Inputs are assumed finite (callers validate).
pub fn exp_weights(cumulative: &[f64], eta: f64) -> Vec<f64> {
    let scaled: Vec<f64> = cumulative.iter().map(|g| eta * g).collect();
    let max = scaled.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scaled.iter().map(|s| (s - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}
