//! Mean ± standard deviation over seeds, as the papers' tables report repeated runs.

use serde::{Deserialize, Serialize};

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
