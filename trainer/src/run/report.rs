//! A run's report files: `report*.json` with `.md` and `predictions/` (`selection.json` is a
//! record of `classwise_core`, [`classwise_core::record::selection`]).

use classwise_core::record::SelectionNote;
use serde::Serialize;

use super::dir::RunDir;
use crate::error::Result;
use crate::eval::{Report, markdown, write_predictions};
use crate::io::write_json;

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
