//! `split.json`: the images a run used, by index in their files: the validation split as the
//! trainer drew it (its rule and the indices of the whole training file it holds out) and the
//! training, validation and test indices actually used (after the per-class subsets and the
//! dropped classes). Written by the trainer when a run starts; read to check which images a run
//! saw.
//!
//! # Versions
//!
//! * Schema 1: files without a `schema` field (2026-11-22 to 2026-11-28).
//! * Schema 2 ([`SPLIT_SCHEMA`]): adds `schema`; every other field as in schema 1.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{check_schema, first_schema, parse_json};
use crate::error::{Result, invalid};

/// The version of [`SplitIndices`] written now.
pub const SPLIT_SCHEMA: u32 = 2;

/// `split.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SplitIndices {
    /// [`SPLIT_SCHEMA`] when written; 1 for a file without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// The validation split as the trainer drew it (its rule, the size of the file it splits
    /// and the indices on each side), in the trainer's format.
    pub split: Value,
    /// The indices in the training file of the images trained on.
    pub train: Vec<i64>,
    /// The indices in the training file of the validation images.
    pub val: Vec<i64>,
    /// The indices in the test file of the images evaluated.
    pub test: Vec<i64>,
}

impl SplitIndices {
    /// Reads `split.json` from its text and checks it: a known schema, indices ≥ 0, and no
    /// image both trained on and held out for validation. `what` names the file.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let s: Self = parse_json(text, what, "a run's split.json")?;
        check_schema(what, s.schema, SPLIT_SCHEMA, "split")?;
        let lists = [("train", &s.train), ("val", &s.val), ("test", &s.test)];
        for (field, list) in lists {
            if let Some(i) = list.iter().find(|&&i| i < 0) {
                return Err(invalid(format!("{what}: {field}"), i, "indices >= 0"));
            }
        }
        let val: std::collections::BTreeSet<i64> = s.val.iter().copied().collect();
        if let Some(i) = s.train.iter().find(|i| val.contains(i)) {
            let expected = "training images apart from the validation images";
            return Err(invalid(
                format!("{what}: train"),
                format!("image {i} in val too"),
                expected,
            ));
        }
        Ok(s)
    }
}
