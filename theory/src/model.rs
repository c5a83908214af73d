//! The binary Gaussian model of CFA (eq. 5) and the accuracies of the classifier
//! f_w(x) = sign(x₁ + (x₂+…+x_{d+1})/w) (CFA §2.2, App. B.1), with σ kept explicit.
//!
//! In the frame of the label (as in CFA eq. (13)): z = y·x₁ is +1 w.p. p_y and -1 otherwise, and
//! T = y·(x₂+…+x_{d+1}) ~ N(dη, dσ²). f_w is correct iff z·w + T > 0. Against an ℓ∞ attack of
//! budget ε the worst case is deterministic: T → T - dε, and under the full adversary also
//! z → z - ε. Every accuracy below is therefore
//!
//!   p_y Φ((dm + w(1-ε₁))/s) + (1-p_y) Φ((dm - w(1+ε₁))/s),   s = σ√d,
//!
//! with (m, ε₁) = (η, 0) clean, (η-ε, 0) for the paper's adversary (x₁ pinned, App. B.1) and
//! (η-ε, ε) for the full ℓ∞ adversary of definition (4).

use serde::Serialize;

use crate::error::{Result, TheoryError, require};
use crate::normal::{cdf, pdf, sf};

/// The label y.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Class {
    /// y = +1, the easy class when p₊₁ > p₋₁.
    Pos,
    /// y = -1, the hard class when p₊₁ > p₋₁.
    Neg,
}

impl Class {
    pub const BOTH: [Class; 2] = [Class::Pos, Class::Neg];
}

/// Which ℓ∞ adversary robust accuracy is taken against (CFA App. B.1 vs definition (4);
/// erratum C6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Adversary {
    /// CFA App. B.1: x₁ is pinned, only x₂..x_{d+1} move.
    Paper,
    /// Definition (4) literally: every coordinate, x₁ included, moves by up to ε.
    Full,
}

/// Where a supremum over w ∈ (0, ∞) is attained.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Argmax {
    /// A unique maximiser.
    At(f64),
    /// Not attained: the function increases towards its supremum as w → ∞.
    PlusInfinity,
    /// Not attained: the supremum is the limit as w → 0⁺.
    ZeroPlus,
    /// The function is constant in w: every w is a maximiser.
    Constant,
}

impl Argmax {
    /// The maximiser, if attained at a unique finite point.
    pub fn value(self) -> Option<f64> {
        match self {
            Argmax::At(w) => Some(w),
            _ => None,
        }
    }

    /// `"+inf"`, `"0+"`, `"constant"`, or the number in shortest round-trip form.
    pub fn label(self) -> String {
        match self {
            Argmax::At(w) => format!("{w:?}"),
            Argmax::PlusInfinity => "+inf".into(),
            Argmax::ZeroPlus => "0+".into(),
            Argmax::Constant => "constant".into(),
        }
    }
}

/// Validated parameters of CFA eq. (5): d ≥ 1 non-robust features N(ηy, σ²), robust feature
/// x₁ = y with probability p_y.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BinaryModel {
    d: u32,
    eta: f64,
    sigma: f64,
    p_pos: f64,
    p_neg: f64,
}

/// An accuracy of the form p Φ((dm + w(1-ε₁))/s) + (1-p) Φ((dm - w(1+ε₁))/s) and its pieces.
#[derive(Clone, Copy, Debug)]
struct Form {
    p: f64,
    /// d·m
    dm: f64,
    /// ε₁: 0, or ε under the full adversary.
    e1: f64,
}

impl BinaryModel {
    /// Validates d ≥ 1, η finite, σ > 0 finite, p₊₁, p₋₁ ∈ [0, 1].
    pub fn new(d: u32, eta: f64, sigma: f64, p_pos: f64, p_neg: f64) -> Result<Self> {
        if d == 0 {
            return Err(TheoryError::InvalidParameter {
                name: "d",
                value: 0.0,
                expected: "an integer ≥ 1",
            });
        }
        require("eta", eta, eta.is_finite(), "a finite real number")?;
        require("sigma", sigma, sigma > 0.0 && sigma.is_finite(), "σ > 0")?;
        require(
            "p_pos",
            p_pos,
            (0.0..=1.0).contains(&p_pos),
            "a probability in [0, 1]",
        )?;
        require(
            "p_neg",
            p_neg,
            (0.0..=1.0).contains(&p_neg),
            "a probability in [0, 1]",
        )?;
        Ok(BinaryModel {
            d,
            eta,
            sigma,
            p_pos,
            p_neg,
        })
    }

    pub fn d(&self) -> u32 {
        self.d
    }
    pub fn eta(&self) -> f64 {
        self.eta
    }
    pub fn sigma(&self) -> f64 {
        self.sigma
    }
    /// p_y = P(x₁ = y | y).
    pub fn p(&self, y: Class) -> f64 {
        match y {
            Class::Pos => self.p_pos,
            Class::Neg => self.p_neg,
        }
    }
    /// P = p₊₁ + p₋₁.
    pub fn p_sum(&self) -> f64 {
        self.p_pos + self.p_neg
    }
    /// s = σ√d, the standard deviation of T.
    pub fn s(&self) -> f64 {
        self.sigma * f64::from(self.d).sqrt()
    }

    fn form(&self, p: f64, eps: f64, adv: Option<Adversary>) -> Form {
        let d = f64::from(self.d);
        let (m, e1) = match adv {
            None => (self.eta, 0.0),
            Some(Adversary::Paper) => (self.eta - eps, 0.0),
            Some(Adversary::Full) => (self.eta - eps, eps),
        };
        Form { p, dm: d * m, e1 }
    }

    /// p Φ(u₊) + (1-p) Φ(u₋), evaluated as Φ(u₋) + p·[Φ(u₊) - Φ(u₋)]: the same value, but
    /// monotone in p under rounding, so a larger p never gives a smaller f64 accuracy
    /// (Theorem 1 holds exactly in floating point, check T2).
    fn value(&self, f: Form, w: f64) -> f64 {
        let s = self.s();
        cdf((f.dm - w * (1.0 + f.e1)) / s) + f.p * self.band(f, w)
    }

    fn slope(&self, f: Form, w: f64) -> f64 {
        let s = self.s();
        (f.p * (1.0 - f.e1) * pdf((f.dm + w * (1.0 - f.e1)) / s)
            - (1.0 - f.p) * (1.0 + f.e1) * pdf((f.dm - w * (1.0 + f.e1)) / s))
            / s
    }

    /// P(dm - w(1+ε₁) < N(0, s²)-shifted < dm + w(1-ε₁)) = Φ(u₊) - Φ(u₋), computed on the side
    /// of the tail where it does not cancel.
    fn band(&self, f: Form, w: f64) -> f64 {
        let s = self.s();
        let (hi, lo) = ((f.dm + w * (1.0 - f.e1)) / s, (f.dm - w * (1.0 + f.e1)) / s);
        if lo > 0.0 {
            sf(lo) - sf(hi)
        } else {
            cdf(hi) - cdf(lo)
        }
    }

    /// Clean accuracy of class y, CFA eqs. (13)-(14) (σ = 1 there):
    /// A_y(w) = p_y Φ((dη + w)/s) + (1-p_y) Φ((dη - w)/s).
    pub fn clean_accuracy(&self, y: Class, w: f64) -> Result<f64> {
        let w = check_w(w)?;
        Ok(self.value(self.form(self.p(y), 0.0, None), w))
    }

    /// Robust accuracy of class y at budget ε: CFA eq. (16) at ε = 2η, σ = 1 for the paper's
    /// adversary; the module docs give the full adversary's form.
    pub fn robust_accuracy(&self, y: Class, w: f64, eps: f64, adv: Adversary) -> Result<f64> {
        let (w, eps) = (check_w(w)?, check_eps(eps)?);
        Ok(self.value(self.form(self.p(y), eps, Some(adv)), w))
    }

    /// ∂A_y/∂w = [p_y φ((dη+w)/s) - (1-p_y) φ((dη-w)/s)]/s (CFA eq. (22), σ explicit).
    pub fn clean_accuracy_dw(&self, y: Class, w: f64) -> Result<f64> {
        let w = check_w(w)?;
        Ok(self.slope(self.form(self.p(y), 0.0, None), w))
    }

    /// ∂R_y/∂w at budget ε (CFA eq. (22) with η → η - ε for the paper's adversary).
    pub fn robust_accuracy_dw(&self, y: Class, w: f64, eps: f64, adv: Adversary) -> Result<f64> {
        let (w, eps) = (check_w(w)?, check_eps(eps)?);
        Ok(self.slope(self.form(self.p(y), eps, Some(adv)), w))
    }

    /// Class-average robust accuracy R̄(w, ε) = ½(R₊₁ + R₋₁), CFA eq. (19) for the paper's
    /// adversary (which is also the train accuracy on ε-perturbed data, eq. (18)).
    pub fn average_robust_accuracy(&self, w: f64, eps: f64, adv: Adversary) -> Result<f64> {
        let (w, eps) = (check_w(w)?, check_eps(eps)?);
        Ok(self.value(self.form(self.p_sum() / 2.0, eps, Some(adv)), w))
    }

    /// ∂R̄/∂w.
    pub fn average_robust_accuracy_dw(&self, w: f64, eps: f64, adv: Adversary) -> Result<f64> {
        let (w, eps) = (check_w(w)?, check_eps(eps)?);
        Ok(self.slope(self.form(self.p_sum() / 2.0, eps, Some(adv)), w))
    }

    /// The class gap A₊₁ - A₋₁ = (p₊₁ - p₋₁)·P(|T| < w) computed without cancellation (CFA
    /// Theorem 1, eq. (17)): positive whenever p₊₁ > p₋₁, even where A₊₁ and A₋₁ round to the
    /// same f64.
    pub fn clean_gap(&self, w: f64) -> Result<f64> {
        let w = check_w(w)?;
        Ok((self.p_pos - self.p_neg) * self.band(self.form(0.0, 0.0, None), w))
    }

    /// The class gap R₊₁ - R₋₁ at budget ε, without cancellation (CFA Theorem 1).
    pub fn robust_gap(&self, w: f64, eps: f64, adv: Adversary) -> Result<f64> {
        let (w, eps) = (check_w(w)?, check_eps(eps)?);
        Ok((self.p_pos - self.p_neg) * self.band(self.form(0.0, eps, Some(adv)), w))
    }

    /// w*_y = argmax_w A_y(w) (CFA Theorem 3, with the σ² factor of caveat C3):
    /// (σ²/(2η))·logit(p_y) for 1/2 < p_y < 1 and η > 0.
    pub fn w_star(&self, y: Class) -> Argmax {
        unimodal_argmax(
            self.p(y),
            self.eta,
            self.sigma,
            self.limits(self.p(y), self.eta),
        )
    }

    /// Peak of R_y(·, ε) under the paper's adversary: (σ²/(2(η-ε)))·logit(p_y) when ε < η and
    /// 1/2 < p_y < 1 (CFA Theorem 4 at a general budget: eq. (23) with η → η - ε).
    pub fn robust_peak(&self, y: Class, eps: f64) -> Result<Argmax> {
        let eps = check_eps(eps)?;
        let m = self.eta - eps;
        Ok(unimodal_argmax(
            self.p(y),
            m,
            self.sigma,
            self.limits(self.p(y), m),
        ))
    }

    /// ŵ_ε = argmax_w R̄(w, ε) under the paper's adversary (CFA Theorem 2, eq. (21), corrected
    /// range C1 and σ² factor C3): σ² ln(P/(2-P)) / (2(η-ε)) for 0 ≤ ε < η and 1 < P < 2.
    pub fn w_hat(&self, eps: f64) -> Result<Argmax> {
        let eps = check_eps(eps)?;
        let (p, m) = (self.p_sum() / 2.0, self.eta - eps);
        Ok(unimodal_argmax(p, m, self.sigma, self.limits(p, m)))
    }

    /// The optimum of R̄ under the full adversary (derived here; the paper has none): the
    /// critical points of the convex quadratic g(w) = L - 2(η-ε)w/σ² + 2εw²/(dσ²),
    /// L = ln[P(1-ε)/((2-P)(1+ε))], and the global supremum over (0, ∞) among the local maximum
    /// and the limits at 0⁺ and ∞.
    /// Needs 0 ≤ ε < 1 (at ε ≥ 1 the attack can flip x₁ outright).
    pub fn w_hat_full(&self, eps: f64) -> Result<FullOptimum> {
        let eps = check_eps(eps)?;
        require("eps", eps, eps < 1.0, "0 ≤ ε < 1 for the full adversary")?;
        let (big_p, m) = (self.p_sum(), self.eta - eps);
        if eps == 0.0 {
            let argmax = self.w_hat(0.0)?;
            return Ok(FullOptimum {
                local_max: argmax.value(),
                local_min: None,
                argmax,
            });
        }
        let d = f64::from(self.d);
        let s2 = self.sigma * self.sigma;
        let l = big_p.ln() + (1.0 - eps).ln() - (2.0 - big_p).ln() - (1.0 + eps).ln();
        let (a, b, c) = (2.0 * eps / (d * s2), -2.0 * m / s2, l);
        let disc = b * b - 4.0 * a * c;
        let (mut local_max, mut local_min) = (None, None);
        if disc > 0.0 && l.is_finite() {
            // Stable roots of a w² + b w + c.
            let q = -0.5 * (b + b.signum() * disc.sqrt());
            let (r1, r2) = {
                let (x, y) = (q / a, c / q);
                (x.min(y), x.max(y))
            };
            // g > 0 outside [r1, r2]: r1 is a local maximum of R̄^full, r2 a local minimum.
            local_max = (r1 > 0.0).then_some(r1);
            local_min = (r2 > 0.0).then_some(r2);
        }
        let f = self.form(big_p / 2.0, eps, Some(Adversary::Full));
        let at_zero = cdf(f.dm / self.s());
        let at_inf = if big_p.is_finite() {
            big_p / 2.0
        } else {
            f64::NAN
        };
        let best_local = local_max.map(|w| (w, self.value(f, w)));
        let argmax = match best_local {
            Some((w, v)) if v >= at_inf && v >= at_zero => Argmax::At(w),
            _ if at_inf >= at_zero => Argmax::PlusInfinity,
            _ => Argmax::ZeroPlus,
        };
        Ok(FullOptimum {
            local_max,
            local_min,
            argmax,
        })
    }

    /// Limits of p Φ((dm+w)/s) + (1-p) Φ((dm-w)/s) at w → 0⁺ and w → ∞.
    fn limits(&self, p: f64, m: f64) -> (f64, f64) {
        (cdf(f64::from(self.d) * m / self.s()), p)
    }
}

/// The optimum of R̄ under the full adversary.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FullOptimum {
    /// The smaller positive root of g: a local maximum, if it exists.
    pub local_max: Option<f64>,
    /// The larger positive root of g: a local minimum, if it exists.
    pub local_min: Option<f64>,
    /// The global supremum over w ∈ (0, ∞).
    pub argmax: Argmax,
}

/// Argmax over w > 0 of p Φ((dm+w)/s) + (1-p) Φ((dm-w)/s), whose slope has the sign of
/// p e^{-2mw/σ²} - (1-p) (as in CFA eqs. (21), (23); independent of d). `limits` are the values
/// at 0⁺ and ∞.
fn unimodal_argmax(p: f64, m: f64, sigma: f64, limits: (f64, f64)) -> Argmax {
    if m > 0.0 {
        if p <= 0.5 {
            Argmax::ZeroPlus
        } else if p >= 1.0 {
            Argmax::PlusInfinity
        } else {
            // logit(p) = ln p - ln(1-p), written to keep digits for p near 1.
            Argmax::At(sigma * sigma * (p.ln() - (-p).ln_1p()) / (2.0 * m))
        }
    } else if m == 0.0 {
        match p.partial_cmp(&0.5) {
            Some(std::cmp::Ordering::Greater) => Argmax::PlusInfinity,
            Some(std::cmp::Ordering::Less) => Argmax::ZeroPlus,
            _ => Argmax::Constant,
        }
    } else if p >= 0.5 {
        // m < 0: e^{-2mw/σ²} grows, so the slope stays positive.
        Argmax::PlusInfinity
    } else if limits.1 >= limits.0 {
        // Decreasing, then increasing: the supremum is the larger limit.
        Argmax::PlusInfinity
    } else {
        Argmax::ZeroPlus
    }
}

fn check_w(w: f64) -> Result<f64> {
    require("w", w, w > 0.0 && w.is_finite(), "a finite w > 0")
}

fn check_eps(eps: f64) -> Result<f64> {
    require(
        "eps",
        eps,
        eps >= 0.0 && eps.is_finite(),
        "a finite budget ε ≥ 0",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_parameters_are_named() {
        let e = BinaryModel::new(0, 0.4, 1.0, 0.8, 0.7).unwrap_err();
        assert!(e.to_string().contains("`d`"));
        for (sigma, p) in [(0.0, 0.5), (f64::NAN, 0.5), (1.0, 1.5), (1.0, f64::NAN)] {
            assert!(BinaryModel::new(1, 0.4, sigma, p, 0.5).is_err());
        }
        let m = BinaryModel::new(1, 0.4, 1.0, 0.8, 0.7).unwrap();
        let e = m.clean_accuracy(Class::Pos, 0.0).unwrap_err();
        assert!(e.to_string().contains("`w`"), "{e}");
        assert!(
            m.robust_accuracy(Class::Pos, 1.0, -0.1, Adversary::Paper)
                .is_err()
        );
        assert!(m.w_hat_full(1.0).is_err());
    }
}
