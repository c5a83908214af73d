//! A run's report files: `report*.json` with `.md` and `predictions/`, and `selection.json`.

use serde::Serialize;

use super::dir::RunDir;
use crate::error::Result;
use crate::eval::{Report, markdown, write_predictions};
use crate::io::write_json;

/// `selection.json`: the strategy and, per track, the epoch it chose.
#[derive(Serialize)]
pub(crate) struct SelectionFile {
    pub strategy: classwise_core::select::Selection,
    /// The split whose avg + worst robust accuracy scored the raw model (the averages are
    /// scored on the test subset, as `PKU-ML/CFA:train.py` does).
    pub split: &'static str,
    pub tracks: Vec<SelectedTrack>,
}

/// One entry of `selection.json`.
#[derive(Serialize)]
pub(crate) struct SelectedTrack {
    pub track: &'static str,
    /// The chosen epoch (0-based); `None` when the track had no candidate.
    pub epoch: Option<usize>,
    pub candidates: Vec<usize>,
    /// avg + worst-class robust accuracy of each candidate under the final attack, when the
    /// strategy compares them.
    pub final_scores: Vec<(usize, f64)>,
}

/// Writes `<stem>.json`, `<stem>.md` and `predictions/<stem>.json`.
pub(crate) fn write_report(dir: &RunDir, stem: &str, report: &Report) -> Result<()> {
    let json = dir.0.join(format!("{stem}.json"));
    write_json(&json, "report", report)?;
    write_predictions(report, &json)?;
    crate::io::write_atomic(
        &dir.0.join(format!("{stem}.md")),
        markdown(report).as_bytes(),
    )
}

/// How a selected model (`report-best*`) was chosen.
#[derive(Serialize)]
pub(crate) struct SelectionNote {
    /// The strategy (`[select] kind`).
    pub strategy: &'static str,
    /// `raw`, `ema` or `fawa`.
    pub track: &'static str,
    /// The chosen epoch, 0-based as in `metrics.jsonl` and `selection.json`.
    pub epoch: usize,
    pub epochs: usize,
}

/// Writes the report of a selected model: `<stem>.json` with a `selection` field naming the
/// strategy and the epoch, `<stem>.md` opening with the same in a sentence, and
/// `predictions/<stem>.json`.
pub(crate) fn write_selected_report(
    dir: &RunDir,
    stem: &str,
    report: &Report,
    note: SelectionNote,
) -> Result<()> {
    #[derive(Serialize)]
    struct Selected<'a> {
        selection: SelectionNote,
        #[serde(flatten)]
        report: &'a Report,
    }
    let sentence = format!(
        "Selected model: the `{}` track at epoch {} of {} (0-based index {}), chosen by the \
         `{}` strategy (`selection.json` lists the candidates).\n\n",
        note.track,
        note.epoch + 1,
        note.epochs,
        note.epoch,
        note.strategy
    );
    let json = dir.0.join(format!("{stem}.json"));
    write_json(
        &json,
        "report",
        &Selected {
            selection: note,
            report,
        },
    )?;
    write_predictions(report, &json)?;
    crate::io::write_atomic(
        &dir.0.join(format!("{stem}.md")),
        (sentence + &markdown(report)).as_bytes(),
    )
}
