//! The ℓ∞ budget of a threat model, as configured.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Result, invalid};

/// An ℓ∞ budget in [0, 1] pixel units, written as a number (`0.031`) or an exact ratio
/// (`"8/255"`, the papers' convention; note 0.031 ≠ 8/255 = 0.0313725…, and WAT's code uses
/// 0.031 where its paper says 8/255).
#[derive(Clone, Debug, PartialEq)]
pub struct Eps {
    pub value: f64,
    /// The text it was written as, kept for reports.
    pub text: String,
}

impl Eps {
    pub fn parse(text: &str) -> Result<Eps> {
        let bad = || {
            invalid(
                "eps",
                text,
                "a number in [0, 1] or a ratio such as \"8/255\"",
            )
        };
        let value = match text.split_once('/') {
            Some((a, b)) => {
                let (a, b): (f64, f64) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if b == 0.0 {
                    return Err(bad());
                }
                a / b
            }
            None => text.trim().parse().map_err(|_| bad())?,
        };
        if !(0.0..=1.0).contains(&value) {
            return Err(bad());
        }
        Ok(Eps {
            value,
            text: text.trim().to_string(),
        })
    }
}

impl Serialize for Eps {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Eps {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Number(v) => v.to_string(),
            Raw::Text(t) => t,
        };
        Eps::parse(&text).map_err(serde::de::Error::custom)
    }
}
