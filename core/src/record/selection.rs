//! `selection.json`, the last file a completed run writes: the selection strategy and, per
//! track (the raw model, EMA, FAWA), the epoch it chose among which candidates; and the
//! `selection` note of a selected model's report (`report-best*.json`).
//!
//! # Versions
//!
//! * Schema 1: files without a `schema` field (2026-11-22 to 2026-11-28).
//! * Schema 2 ([`SELECTION_SCHEMA`]): adds `schema`; every other field as in schema 1.

use serde::{Deserialize, Serialize};

use super::{check_schema, first_schema, parse_json};
use crate::error::{Result, invalid};
use crate::select::Selection;

/// The version of [`SelectionRecord`] written now.
pub const SELECTION_SCHEMA: u32 = 2;

/// `selection.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionRecord {
    /// [`SELECTION_SCHEMA`] when written; 1 for a file without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    pub strategy: Selection,
    /// The split whose avg + worst robust accuracy scored the raw model (`val` or `test`; the
    /// averages are scored on the test subset, as `PKU-ML/CFA:train.py` does).
    pub split: String,
    pub tracks: Vec<SelectedTrack>,
}

/// One track's choice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectedTrack {
    /// `raw`, `ema` or `fawa`.
    pub track: String,
    /// The chosen epoch (0-based); `None` when the track had no candidate.
    pub epoch: Option<usize>,
    pub candidates: Vec<usize>,
    /// avg + worst-class robust accuracy of each candidate under the final attack, when the
    /// strategy compares them.
    pub final_scores: Vec<(usize, f64)>,
}

/// How a selected model (`report-best*.json`, its `selection` field) was chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelectionNote {
    /// The strategy (`[select] kind`).
    pub strategy: String,
    /// `raw`, `ema` or `fawa`.
    pub track: String,
    /// The chosen epoch, 0-based as in `metrics.jsonl` and `selection.json`.
    pub epoch: usize,
    pub epochs: usize,
}

impl SelectionRecord {
    /// Reads `selection.json` from its text and checks it: a known schema, and each track's
    /// chosen epoch among its candidates. `what` names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let record: Self = parse_json(text, what, "a run's selection.json")?;
        check_schema(what, record.schema, SELECTION_SCHEMA, "selection")?;
        for (i, t) in record.tracks.iter().enumerate() {
            if let Some(e) = t.epoch.filter(|e| !t.candidates.contains(e)) {
                let field = format!("{what}: tracks[{i}].epoch");
                return Err(invalid(field, e, "one of the track's candidates"));
            }
        }
        Ok(record)
    }
}
