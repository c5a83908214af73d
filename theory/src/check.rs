//! The bounds every crate checks its numeric inputs against, with the words its errors use for
//! them: one set, so that a value is refused the same way wherever it is given (a
//! configuration, a command-line flag, a function argument). Each crate reports a failed check
//! in its own error type, naming the field.

/// A bound on a number. Every bound refuses NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Finite.
    Finite,
    /// Finite and ≥ 0.
    NonNegative,
    /// Finite and > 0.
    Positive,
    /// In [0, 1].
    Unit,
}

impl Bound {
    /// Whether `v` satisfies the bound.
    pub fn holds(self, v: f64) -> bool {
        match self {
            Bound::Finite => v.is_finite(),
            Bound::NonNegative => v.is_finite() && v >= 0.0,
            Bound::Positive => v.is_finite() && v > 0.0,
            Bound::Unit => (0.0..=1.0).contains(&v),
        }
    }

    /// What an error says was expected.
    pub fn expected(self) -> &'static str {
        match self {
            Bound::Finite => "finite",
            Bound::NonNegative => "finite and >= 0",
            Bound::Positive => "finite and > 0",
            Bound::Unit => "in [0, 1]",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Bound::*;

    #[test]
    fn bounds_hold_where_their_words_say() {
        let cases = [
            (
                Finite,
                [-1.0, 0.0, 2.0],
                [f64::NAN, f64::INFINITY, f64::NEG_INFINITY],
            ),
            (
                NonNegative,
                [0.0, 1.5, 1e300],
                [-1e-300, f64::NAN, f64::INFINITY],
            ),
            (Positive, [1e-300, 1.0, 7.0], [0.0, -1.0, f64::INFINITY]),
            (Unit, [0.0, 0.5, 1.0], [-0.0001, 1.0001, f64::NAN]),
        ];
        for (bound, inside, outside) in cases {
            for v in inside {
                assert!(bound.holds(v), "{bound:?} {v}");
            }
            for v in outside {
                assert!(!bound.holds(v), "{bound:?} {v}");
            }
        }
        assert_eq!(Positive.expected(), "finite and > 0");
    }
}
