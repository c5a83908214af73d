//! Mean ± standard deviation over seeds, as the papers' tables report repeated runs, and the
//! verdict of a directional claim from paired differences over seeds.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::{Result, invalid};

/// The mean of a sample and its standard deviation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanStd {
    pub mean: f64,
    /// The sample standard deviation (divisor n − 1); `None` for a single value.
    pub std: Option<f64>,
    pub n: usize,
}

impl MeanStd {
    /// `None` for an empty sample.
    pub fn of(values: &[f64]) -> Option<MeanStd> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let std = (n > 1).then(|| {
            let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        Some(MeanStd { mean, std, n })
    }

    /// `mean ± std` in percent with `digits` decimals (`mean` alone for one value).
    pub fn percent(&self, digits: usize) -> String {
        match self.std {
            Some(s) => format!("{:.digits$} ± {:.digits$}", 100.0 * self.mean, 100.0 * s),
            None => format!("{:.digits$}", 100.0 * self.mean),
        }
    }
}

/// The direction a claim expects of A − B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sign {
    #[serde(rename = "+")]
    Positive,
    #[serde(rename = "-")]
    Negative,
}

/// What paired differences say of a directional claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The interval excludes 0 on the claim's side.
    Reproduced,
    /// The interval excludes 0 on the other side.
    Refuted,
    /// The interval contains 0.
    Inconclusive,
}

impl Verdict {
    /// `reproduced`, `refuted` or `inconclusive`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Refuted => "refuted",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// Paired differences d_s = A_s − B_s over seeds, their mean, sample standard deviation and
/// two-sided t interval d̄ ± t(1 − α/2, n − 1)·s_d/√n, and the verdict on a claim of `sign`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    pub differences: Vec<f64>,
    pub mean: f64,
    pub std: f64,
    /// The confidence level of the interval (0.95 for a 95 % interval).
    pub level: f64,
    pub interval: [f64; 2],
    pub verdict: Verdict,
}

impl Paired {
    /// From at least two finite differences; `level` in (0, 1).
    pub fn of(differences: Vec<f64>, sign: Sign, level: f64) -> Result<Paired> {
        let n = differences.len();
        if n < 2 || differences.iter().any(|d| !d.is_finite()) {
            return Err(invalid(
                "differences",
                format!("{differences:?}"),
                "at least two finite paired differences",
            ));
        }
        if !(level > 0.0 && level < 1.0) {
            return Err(invalid("level", level, "a confidence level in (0, 1)"));
        }
        let m = MeanStd::of(&differences).expect("n ≥ 2");
        let std = m.std.expect("n ≥ 2");
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map_err(|e| invalid("degrees of freedom", n - 1, e.to_string()))?
            .inverse_cdf(0.5 + level / 2.0);
        let half = t * std / (n as f64).sqrt();
        let interval = [m.mean - half, m.mean + half];
        let verdict = if interval[0] > 0.0 || interval[1] < 0.0 {
            match (m.mean > 0.0, sign) {
                (true, Sign::Positive) | (false, Sign::Negative) => Verdict::Reproduced,
                _ => Verdict::Refuted,
            }
        } else {
            Verdict::Inconclusive
        };
        Ok(Paired {
            differences,
            mean: m.mean,
            std,
            level,
            interval,
            verdict,
        })
    }

    /// The seeds a claim of `sign` would need with the observed d̄ and s_d ([`SeedsNeeded`]),
    /// searched up to `cap`.
    pub fn seeds_needed(&self, sign: Sign, cap: usize) -> Result<SeedsNeeded> {
        if self.verdict != Verdict::Inconclusive {
            return Ok(SeedsNeeded::Decided);
        }
        let wanted = match sign {
            Sign::Positive => self.mean > 0.0,
            Sign::Negative => self.mean < 0.0,
        };
        if !wanted {
            return Ok(SeedsNeeded::OppositeSign);
        }
        for n in 2..=cap {
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                .map_err(|e| invalid("degrees of freedom", n - 1, e.to_string()))?
                .inverse_cdf(0.5 + self.level / 2.0);
            if t * self.std / (n as f64).sqrt() < self.mean.abs() {
                return Ok(SeedsNeeded::Seeds(n));
            }
        }
        Ok(SeedsNeeded::NotDecidable)
    }
}

/// How many paired seeds an inconclusive claim would need to be decided with its observed
/// numbers: the smallest n ≥ 2 whose interval d̄ ± t(1 − α/2, n − 1)·s_d/√n excludes 0 when the
/// mean and standard deviation of the differences stay at the observed d̄ and s_d.
///
/// This is the plug-in sample size, not a power calculation: with n seeds the half-width equals
/// the observed |d̄| on average, so a study of n seeds whose true difference is d̄ decides it about
/// half of the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeedsNeeded {
    /// The interval already excludes 0.
    Decided,
    /// This many seeds (at most the cap asked for).
    Seeds(usize),
    /// d̄ has the claim's opposite sign (or is 0): more seeds would at best refute the claim.
    OppositeSign,
    /// More seeds than the cap: |d̄| is negligible against s_d.
    NotDecidable,
}

impl SeedsNeeded {
    /// As the ledger writes it: `–`, `N`, `opposite sign`, `not decidable (> CAP)`.
    pub fn describe(self, cap: usize) -> String {
        match self {
            SeedsNeeded::Decided => "–".to_owned(),
            SeedsNeeded::Seeds(n) => n.to_string(),
            SeedsNeeded::OppositeSign => "opposite sign".to_owned(),
            SeedsNeeded::NotDecidable => format!("not decidable (> {cap})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_standard_deviation() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations sum to 32, 32 / 7.
        let m = MeanStd::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(m.mean, 5.0);
        approx::assert_relative_eq!(m.std.unwrap(), (32.0f64 / 7.0).sqrt(), epsilon = 1e-15);
        assert_eq!(m.n, 8);
        let one = MeanStd::of(&[0.25]).unwrap();
        assert_eq!((one.mean, one.std), (0.25, None));
        assert_eq!(one.percent(1), "25.0");
        assert_eq!(
            MeanStd::of(&[0.5, 0.7]).unwrap().percent(2),
            "60.00 ± 14.14"
        );
        assert!(MeanStd::of(&[]).is_none());
    }
}
