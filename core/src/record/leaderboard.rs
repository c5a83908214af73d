//! The class-wise leaderboard, `leaderboard.json`: several models evaluated on one data set
//! under one protocol (`classwise zoo run`), one row per model with its per-class clean and
//! robust accuracy, its worst class, the spread of its classes, its rank by average robust
//! accuracy against its rank by worst-class robust accuracy (Tian et al. §4.3, Table 1,
//! compare defences by both), and its overall robust accuracy against the accuracy its source reports.
//!
//! # Versions
//!
//! * Schema 1 ([`LEADERBOARD_SCHEMA`]): the first.

use serde::{Deserialize, Serialize};

use super::{check_fractions, check_schema, parse_json};
use crate::error::{Result, invalid};

/// The version of [`Leaderboard`] written now.
pub const LEADERBOARD_SCHEMA: u32 = 1;

/// What a model's source reports (RobustBench's `model_info`), in percent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reported {
    pub clean: f64,
    pub robust: f64,
    /// Where the numbers come from.
    pub source: String,
}

/// One model of the leaderboard. Accuracies are fractions, as in the reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardRow {
    pub name: String,
    pub architecture: String,
    /// The model's AutoAttack report, relative to the leaderboard's directory.
    pub report: String,
    /// SHA-256 of the weights file.
    pub weights_sha256: String,
    pub clean_per_class: Vec<f64>,
    pub robust_per_class: Vec<f64>,
    /// Overall accuracies (every evaluated image counts once).
    pub clean: f64,
    pub robust: f64,
    pub worst_class: usize,
    pub worst_robust: f64,
    /// Population standard deviation of the per-class robust accuracies.
    pub robust_std: f64,
    /// Mean robust accuracy of the worst 20 % of classes (CFA App. C.1).
    pub robust_worst_20: f64,
    /// 1 = best; ties share the better rank.
    pub rank_by_average: usize,
    pub rank_by_worst: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported: Option<Reported>,
    /// Ours − reported robust accuracy, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difference: Option<f64>,
    /// Whether `difference` is large ([`is_large_difference`]).
    #[serde(default)]
    pub flagged: bool,
}

/// The whole leaderboard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    pub schema: u32,
    pub dataset: String,
    pub eps: f64,
    pub eps_text: String,
    /// E.g. `autoattack standard (apgd-ce, apgd-t, fab-t, square)`.
    pub protocol: String,
    /// Images evaluated per model.
    pub n_samples: usize,
    pub class_names: Vec<String>,
    /// In rank-by-average order.
    pub models: Vec<LeaderboardRow>,
}

/// `<leaderboard>/models/<name>/finished.json`: the mark of a model whose evaluation is done,
/// reused only for the same weights and settings (`classwise zoo run`), and how `compare`
/// finds the model's report in its directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FinishedModel {
    /// The report's file name in the model's directory.
    pub report: String,
    pub weights_sha256: String,
    /// Everything that changes the report (attacks, ε, images, data).
    pub settings: String,
}

impl FinishedModel {
    /// The file name in a model's directory.
    pub const FILE: &'static str = "finished.json";

    /// Reads the mark from its JSON text; `what` names the file.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        parse_json::<Self>(text, what, "a leaderboard model's finished.json")
    }
}

/// Competition ranks of `values` (1 for the largest; equal values share the better rank).
pub fn ranks(values: &[f64]) -> Vec<usize> {
    values
        .iter()
        .map(|v| 1 + values.iter().filter(|w| *w > v).count())
        .collect()
}

/// Population standard deviation.
pub fn std_dev(values: &[f64]) -> f64 {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt()
}

/// Whether ours and the reported robust accuracy (percent) differ by more than sampling can
/// explain: more than 1 point and more than three binomial standard errors of the reported
/// accuracy on `n` images (at 60 % on 10,000 images, 1.5 points; on 500, 6.6 points).
pub fn is_large_difference(ours: f64, reported: f64, n: usize) -> bool {
    let p = (reported / 100.0).clamp(0.0, 1.0);
    let se = 100.0 * (p * (1.0 - p) / n.max(1) as f64).sqrt();
    (ours - reported).abs() > (3.0 * se).max(1.0)
}

impl Leaderboard {
    /// Fills the ranks, the differences and the flags of `rows`, and orders them by rank by
    /// average (then by name).
    pub fn ranked(mut self) -> Self {
        let avg: Vec<f64> = self.models.iter().map(|r| r.robust).collect();
        let worst: Vec<f64> = self.models.iter().map(|r| r.worst_robust).collect();
        let n = self.n_samples;
        for ((row, a), w) in self.models.iter_mut().zip(ranks(&avg)).zip(ranks(&worst)) {
            row.rank_by_average = a;
            row.rank_by_worst = w;
            row.difference = row.reported.as_ref().map(|r| 100.0 * row.robust - r.robust);
            row.flagged = (row.reported.as_ref())
                .is_some_and(|r| is_large_difference(100.0 * row.robust, r.robust, n));
        }
        let key = |r: &LeaderboardRow| (r.rank_by_average, r.name.clone());
        self.models.sort_by_key(key);
        self
    }

    /// Reads a leaderboard from its JSON text and checks it; `what` names the file.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let board = parse_json::<Self>(text, what, "a leaderboard")?;
        check_schema(what, board.schema, LEADERBOARD_SCHEMA, "leaderboard")?;
        let k = board.class_names.len();
        for (i, row) in board.models.iter().enumerate() {
            let here = format!("{what}: models[{i}] ({})", row.name);
            check_fractions(&here, "clean_per_class", &row.clean_per_class, k)?;
            check_fractions(&here, "robust_per_class", &row.robust_per_class, k)?;
            if row.worst_class >= k {
                return Err(invalid(
                    format!("{here}.worst_class"),
                    row.worst_class,
                    format!("a class below {k}"),
                ));
            }
        }
        Ok(board)
    }
}
