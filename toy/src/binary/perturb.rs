//! The classifier f_w(x) = sign(x₁ + (x₂+…+x_{d+1})/w) of CFA §2.2 and its exact ℓ∞ worst case.

use classwise_theory::model::Adversary;

/// A linear classifier sign(c·x) without bias.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearClassifier {
    coef: Vec<f64>,
}

impl LinearClassifier {
    pub fn new(coef: Vec<f64>) -> Self {
        LinearClassifier { coef }
    }

    /// CFA's f_w: c = (1, 1/w, …, 1/w) in R^{d+1}.
    pub fn cfa(w: f64, d: usize) -> Self {
        let mut coef = vec![1.0 / w; d + 1];
        coef[0] = 1.0;
        LinearClassifier { coef }
    }

    pub fn coef(&self) -> &[f64] {
        &self.coef
    }

    /// The margin y·(c·x): positive iff x is classified as y (ties, of probability 0, count as
    /// errors).
    pub fn margin(&self, x: &[f64], y: f64) -> f64 {
        y * self.coef.iter().zip(x).map(|(c, v)| c * v).sum::<f64>()
    }

    /// The exact worst case of the margin over the ℓ∞ ball of radius ε (CFA definition (4)):
    /// the margin is linear in δ with gradient y·c, so its minimum over ‖δ‖∞ ≤ ε is attained at
    /// the vertex δ_j = −ε·y·sign(c_j). The paper's adversary (App. B.1)
    /// pins x₁ (δ₁ = 0); the full adversary moves every coordinate. Writes x + δ into `out`.
    pub fn worst_case_into(&self, x: &[f64], y: f64, eps: f64, adv: Adversary, out: &mut [f64]) {
        let first = match adv {
            Adversary::Paper => 1,
            Adversary::Full => 0,
        };
        for (j, ((o, &v), &c)) in out.iter_mut().zip(x).zip(&self.coef).enumerate() {
            *o = if j < first || c == 0.0 {
                v
            } else {
                v - eps * y * c.signum()
            };
        }
    }

    /// [`Self::worst_case_into`], allocating.
    pub fn worst_case(&self, x: &[f64], y: f64, eps: f64, adv: Adversary) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        self.worst_case_into(x, y, eps, adv, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfa_coefficients() {
        assert_eq!(LinearClassifier::cfa(2.0, 2).coef(), &[1.0, 0.5, 0.5]);
    }

    #[test]
    fn paper_adversary_pins_x1() {
        let f = LinearClassifier::cfa(1.0, 2);
        let x = [1.0, 0.5, -0.25];
        assert_eq!(
            f.worst_case(&x, 1.0, 0.25, Adversary::Paper),
            [1.0, 0.25, -0.5]
        );
        assert_eq!(
            f.worst_case(&x, -1.0, 0.25, Adversary::Full),
            [1.25, 0.75, 0.0]
        );
    }
}
