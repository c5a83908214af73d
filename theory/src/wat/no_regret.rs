//! WAT Theorem 1 (the no-regret bound of Hedge on the validation losses), its proof steps
//! (17)-(19), the corrected unconditional forms (T1a)/(T1b), and the Lemma-1 oscillation
//! (WAT appendix, proof of Theorem 1).

use super::hedge::{Hedge, LinearWeights};
use crate::error::{Result, TheoryError, require};

/// Validates a loss sequence: `T ≥ 1` rounds, each with the same number `K+1 ≥ 2` of decisions,
/// every value finite and in [0, 1] (WAT Theorem 1's hypothesis on `L^val`). Returns `(T, K+1)`.
pub fn validate_losses(losses: &[Vec<f64>]) -> Result<(usize, usize)> {
    let first = losses
        .first()
        .ok_or(TheoryError::Empty { what: "losses" })?;
    let n = first.len();
    if n < 2 {
        return Err(TheoryError::LengthMismatch {
            what: "decisions per round (K+1 >= 2)",
            expected: 2,
            got: n,
        });
    }
    for row in losses {
        if row.len() != n {
            return Err(TheoryError::LengthMismatch {
                what: "losses row",
                expected: n,
                got: row.len(),
            });
        }
        for &v in row {
            require("loss", v, (0.0..=1.0).contains(&v), "a loss in [0, 1]")?;
        }
    }
    Ok((losses.len(), n))
}

/// One run of Hedge (WAT eq. (12)) on a loss sequence used as gains.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgePlay {
    /// `w^t` for t = 1..T (row t-1), each of length K+1.
    pub weights: Vec<Vec<f64>>,
    /// `w^t · L(f_t)` for t = 1..T.
    pub weighted_losses: Vec<f64>,
    /// `Σ_t L_k(f_t)` per decision k.
    pub cumulative: Vec<f64>,
}

impl HedgePlay {
    /// `Σ_t Σ_k w_k^t L_k(f_t)`, the algorithm's total gain.
    pub fn total_weighted(&self) -> f64 {
        self.weighted_losses.iter().sum()
    }
}

/// Runs Hedge with step `eta > 0` on `losses` (T × (K+1), values in \[0,1\]) as in WAT eq. (12).
pub fn play_hedge(losses: &[Vec<f64>], eta: f64) -> Result<HedgePlay> {
    let (t, n) = validate_losses(losses)?;
    let mut hedge = Hedge::new(n, eta)?;
    let mut weights = Vec::with_capacity(t);
    let mut weighted_losses = Vec::with_capacity(t);
    for row in losses {
        weights.push(hedge.weights());
        weighted_losses.push(hedge.update(row)?);
    }
    Ok(HedgePlay {
        weights,
        weighted_losses,
        cumulative: hedge.cumulative().to_vec(),
    })
}

/// Every quantity of WAT Theorem 1 (eq. (13)/(16)) and its proof on one loss sequence.
/// Margins are "right side minus left side": non-negative when the inequality holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Theorem1Report {
    /// T.
    pub rounds: usize,
    /// K+1.
    pub n_decisions: usize,
    pub eta: f64,
    /// LHS of eq. (13): `max_k min_t L_k(f_t)`.
    pub max_min: f64,
    /// `min_t max_k L_k(f_t)`, the worst-class loss of the best iterate (erratum W1: *not* what
    /// Theorem 1 bounds).
    pub min_max: f64,
    /// `(1/T) Σ_t Σ_k w_k^t L_k(f_t)`.
    pub average_weighted: f64,
    /// `ln(K+1)/(ηT)`.
    pub regret_term: f64,
    /// RHS of eq. (13): `average_weighted + regret_term`.
    pub rhs: f64,
    /// `rhs - max_min`.
    pub margin: f64,
    /// Assumption (A): `(1/T) Σ_t L_k ≥ min_t L_k / (1-η)` for every k.
    pub assumption_a: bool,
    /// `min_k [(1/T)Σ_t L_k - min_t L_k/(1-η)]` (≥ 0 iff (A) holds).
    pub assumption_a_margin: f64,
    /// Ineq. (18): `min_k [Σ_t w^t·L^t + ln(K+1)/η - (1-η) Σ_t L_k]`.
    pub ineq18_margin: f64,
    /// Hoeffding form: `min_k [Σ_t w^t·L^t + ln(K+1)/η + ηT/8 - Σ_t L_k]`.
    pub hoeffding_margin: f64,
    /// (T1a): `rhs / (1-η)`.
    pub t1a_rhs: f64,
    /// `t1a_rhs - max_min`.
    pub t1a_margin: f64,
    /// (T1b): `rhs + η/8`.
    pub t1b_rhs: f64,
    /// `t1b_rhs - max_min`.
    pub t1b_margin: f64,
    /// The η minimising the (T1b) bound's `ln(K+1)/(ηT) + η/8`: `√(8 ln(K+1)/T)`.
    pub t1b_optimal_eta: f64,
}

impl Theorem1Report {
    /// Evaluates WAT Theorem 1 (eq. (13)), ineq. (18), the Hoeffding form and (T1a)/(T1b) on
    /// `losses` (T rounds × (K+1) decisions in \[0,1\]) with Theorem 1's step `0 < η ≤ 1/2`.
    pub fn evaluate(losses: &[Vec<f64>], eta: f64) -> Result<Self> {
        require("eta", eta, eta > 0.0 && eta <= 0.5, "0 < eta <= 1/2")?;
        let play = play_hedge(losses, eta)?;
        let (t, n) = (losses.len(), play.cumulative.len());
        let tf = t as f64;
        let ln_n = (n as f64).ln();
        let total = play.total_weighted();

        let column_min = |k: usize| losses.iter().map(|r| r[k]).fold(f64::INFINITY, f64::min);
        let max_min = (0..n).map(column_min).fold(f64::NEG_INFINITY, f64::max);
        let min_max = losses
            .iter()
            .map(|r| r.iter().copied().fold(f64::NEG_INFINITY, f64::max))
            .fold(f64::INFINITY, f64::min);

        let assumption_a_margin = (0..n)
            .map(|k| play.cumulative[k] / tf - column_min(k) / (1.0 - eta))
            .fold(f64::INFINITY, f64::min);
        let ineq18_margin = play
            .cumulative
            .iter()
            .map(|g| total + ln_n / eta - (1.0 - eta) * g)
            .fold(f64::INFINITY, f64::min);
        let hoeffding_margin = play
            .cumulative
            .iter()
            .map(|g| total + ln_n / eta + eta * tf / 8.0 - g)
            .fold(f64::INFINITY, f64::min);

        let average_weighted = total / tf;
        let regret_term = ln_n / (eta * tf);
        let rhs = average_weighted + regret_term;
        let t1a_rhs = rhs / (1.0 - eta);
        let t1b_rhs = rhs + eta / 8.0;
        Ok(Theorem1Report {
            rounds: t,
            n_decisions: n,
            eta,
            max_min,
            min_max,
            average_weighted,
            regret_term,
            rhs,
            margin: rhs - max_min,
            assumption_a: assumption_a_margin >= 0.0,
            assumption_a_margin,
            ineq18_margin,
            hoeffding_margin,
            t1a_rhs,
            t1a_margin: t1a_rhs - max_min,
            t1b_rhs,
            t1b_margin: t1b_rhs - max_min,
            t1b_optimal_eta: (8.0 * ln_n / tf).sqrt(),
        })
    }
}

/// The step minimising the (T1b) bound `ln(K+1)/(ηT) + η/8`: `η* = √(8 ln(K+1)/T)`.
pub fn t1b_optimal_eta(n_decisions: usize, rounds: usize) -> Result<f64> {
    check_game_size(n_decisions, rounds)?;
    Ok((8.0 * (n_decisions as f64).ln() / rounds as f64).sqrt())
}

/// RHS of (T1b), `(1/T)ΣΣ w L + ln(K+1)/(ηT) + η/8`, for Hedge run with any finite step
/// `η > 0` (the Hoeffding-lemma bound needs no η ≤ 1/2, so `η*` of [`t1b_optimal_eta`] may be
/// used even when it exceeds 1/2).
pub fn t1b_rhs(losses: &[Vec<f64>], eta: f64) -> Result<f64> {
    let play = play_hedge(losses, eta)?;
    let tf = losses.len() as f64;
    let ln_n = (play.cumulative.len() as f64).ln();
    Ok(play.total_weighted() / tf + ln_n / (eta * tf) + eta / 8.0)
}

/// Slacks of WAT Lemma 1 as printed (gain form of AHK Thm 2.1) on the oscillation sequence of
/// [`lemma1_oscillation`], against comparator 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lemma1Oscillation {
    /// `Σ_t p^t·C^t - (Σ_t C_0^t - η Σ_t |C_0^t| - ln 2/η)` for Hedge (negative: Lemma 1 fails).
    pub hedge_slack: f64,
    /// The same for the linear update `w ← w(1 + ηC)` (non-negative: Lemma 1 holds).
    pub linear_slack: f64,
}

/// WAT Lemma 1 counterexample (with signed costs Hedge violates it): two decisions, `C_0 ≡ 0`
/// and `C_1 = +1` when its running sum is 0, else `-1`. Requires `0 < η ≤ 1/2` (Lemma 1's
/// hypothesis) and `T ≥ 1`.
pub fn lemma1_oscillation(eta: f64, rounds: usize) -> Result<Lemma1Oscillation> {
    require("eta", eta, eta > 0.0 && eta <= 0.5, "0 < eta <= 1/2")?;
    if rounds == 0 {
        return Err(TheoryError::Empty { what: "rounds" });
    }
    let mut hedge = Hedge::new(2, eta)?;
    let mut linear = LinearWeights::new(2, eta)?;
    let (mut hedge_gain, mut linear_gain, mut running) = (0.0, 0.0, 0.0);
    for _ in 0..rounds {
        let c1 = if running == 0.0 { 1.0 } else { -1.0 };
        running += c1;
        let costs = [0.0, c1];
        hedge_gain += hedge.update(&costs)?;
        linear_gain += linear.update(&costs)?;
    }
    // Comparator 0 has Σ C_0 = Σ |C_0| = 0, so Lemma 1's right side is -ln 2/η.
    let lemma_rhs = -(2.0f64).ln() / eta;
    Ok(Lemma1Oscillation {
        hedge_slack: hedge_gain - lemma_rhs,
        linear_slack: linear_gain - lemma_rhs,
    })
}

/// At least two decisions (K+1 ≥ 2) and one round.
pub(crate) fn check_game_size(n_decisions: usize, rounds: usize) -> Result<()> {
    if n_decisions < 2 {
        return Err(TheoryError::LengthMismatch {
            what: "decisions (K+1 >= 2)",
            expected: 2,
            got: n_decisions,
        });
    }
    if rounds == 0 {
        return Err(TheoryError::Empty { what: "rounds" });
    }
    Ok(())
}
