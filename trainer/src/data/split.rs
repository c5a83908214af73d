//! Deterministic per-class validation splits (`PKU-ML/CFA:generate_validation.py`,
//! `boqili/WAT:data_loader.py`).
//!
//! - CFA: the **first** 100 images of each CIFAR-10 class (first 25 for CIFAR-100), in dataset
//!   order: `SplitSpec { rule: First, size: PerClass(100) }`.
//! - WAT and FRL: the **last** 300 of each class, i.e. indices 4,700–4,999 within each class
//!   (30 of 500 for CIFAR-100): `SplitSpec { rule: Last, size: PerClass(300) }`.
//! - A seeded random choice per class, for data sets the papers do not cover.
//!
//! Both index lists are in ascending (dataset) order and are saved with the run, so that the
//! validation set behind FAWA thresholds and WAT costs can be checked afterwards.

use std::path::Path;

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::dataset::Dataset;
use crate::error::{IoContext, Result, TrainerError, invalid};
use rand::seq::SliceRandom;

/// Which images of each class go to validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitRule {
    /// The first ones of the class in dataset order (CFA).
    First,
    /// The last ones of the class in dataset order (WAT, FRL).
    Last,
    /// A random choice per class from a generator seeded with `seed`.
    Random { seed: u64 },
}

/// How many images of each class go to validation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValSize {
    /// This many of every class.
    PerClass(usize),
    /// This fraction of every class, rounded to the nearest count (0.02 of 5,000 is 100).
    Fraction(f64),
}

/// A validation-split rule.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitSpec {
    pub rule: SplitRule,
    pub size: ValSize,
}

impl SplitSpec {
    /// No validation set: everything trains.
    pub fn none() -> Self {
        SplitSpec {
            rule: SplitRule::First,
            size: ValSize::PerClass(0),
        }
    }

    /// Validation images for a class of `count` images.
    fn val_count(&self, class: usize, count: usize) -> Result<usize> {
        match self.size {
            ValSize::PerClass(n) if n <= count => Ok(n),
            ValSize::PerClass(n) => Err(invalid(
                "split.size.per-class",
                n,
                format!("at most {count}, the number of images of class {class}"),
            )),
            ValSize::Fraction(f) if f.is_finite() && (0.0..1.0).contains(&f) => {
                Ok((f * count as f64).round() as usize)
            }
            ValSize::Fraction(f) => Err(invalid("split.size.fraction", f, "a number in [0, 1)")),
        }
    }
}

/// Train and validation indices into a data set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Split {
    pub spec: SplitSpec,
    /// The size of the data set the indices refer to.
    pub of: usize,
    pub train: Vec<i64>,
    pub val: Vec<i64>,
}

impl Split {
    /// Splits images with these `labels` (in `0..num_classes`) by `spec`.
    pub fn new(labels: &[i64], num_classes: usize, spec: &SplitSpec) -> Result<Split> {
        let mut by_class: Vec<Vec<i64>> = vec![Vec::new(); num_classes];
        for (i, &y) in labels.iter().enumerate() {
            let class = usize::try_from(y)
                .ok()
                .and_then(|k| by_class.get_mut(k))
                .ok_or_else(|| invalid(format!("labels[{i}]"), y, format!("0..{num_classes}")))?;
            class.push(i as i64);
        }
        let seed = match spec.rule {
            SplitRule::Random { seed } => seed,
            SplitRule::First | SplitRule::Last => 0,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut val = Vec::new();
        for (k, members) in by_class.iter_mut().enumerate() {
            let n = spec.val_count(k, members.len())?;
            match spec.rule {
                SplitRule::First => val.extend_from_slice(&members[..n]),
                SplitRule::Last => val.extend_from_slice(&members[members.len() - n..]),
                SplitRule::Random { .. } => {
                    members.shuffle(&mut rng);
                    val.extend_from_slice(&members[..n]);
                }
            }
        }
        val.sort_unstable();
        let mut is_val = vec![false; labels.len()];
        for &i in &val {
            is_val[i as usize] = true;
        }
        let train = (0..labels.len() as i64)
            .filter(|&i| !is_val[i as usize])
            .collect();
        Ok(Split {
            spec: *spec,
            of: labels.len(),
            train,
            val,
        })
    }

    /// Splits `data` by `spec`.
    pub fn of_dataset(data: &Dataset, spec: &SplitSpec) -> Result<Split> {
        Split::new(data.label_slice(), data.num_classes(), spec)
    }

    /// Checks that the indices are in `0..self.of`, disjoint and together cover everything,
    /// e.g. after reading a split back from a run.
    pub fn check(&self) -> Result<()> {
        let mut seen = vec![false; self.of];
        let all = self.train.iter().map(|&i| ("train", i));
        for (part, i) in all.chain(self.val.iter().map(|&i| ("val", i))) {
            let slot = usize::try_from(i)
                .ok()
                .and_then(|j| seen.get_mut(j))
                .ok_or_else(|| {
                    invalid(
                        format!("split.{part}"),
                        i,
                        format!("an index in 0..{}", self.of),
                    )
                })?;
            if std::mem::replace(slot, true) {
                return Err(invalid(format!("split.{part}"), i, "each index once"));
            }
        }
        if let Some(missing) = seen.iter().position(|s| !s) {
            return Err(invalid(
                "split",
                format!("index {missing} missing"),
                "a partition of the data set",
            ));
        }
        Ok(())
    }

    /// Writes the split as JSON (atomically).
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::io::write_json(path, "the split indices", self)
    }

    /// Reads a split written by [`Split::save`] and [checks](Split::check) it.
    pub fn load(path: &Path) -> Result<Split> {
        let text = std::fs::read(path).at("reading", path)?;
        let split: Split = serde_json::from_slice(&text).map_err(|e| TrainerError::BadData {
            path: path.to_path_buf(),
            offset: None,
            reason: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        split.check()?;
        Ok(split)
    }
}
