//! The versioned records classwise writes and reads back, each naming its version in `schema`
//! and read by the same type that writes it:
//!
//! * [`epoch`]: the lines of a run's `metrics.jsonl` ([`EpochRecord`], [`METRICS_SCHEMA`]);
//! * [`report`]: the class-wise report of one model under one attack ([`Report`],
//!   [`REPORT_SCHEMA`]);
//! * [`autoattack`] and [`protocol`]: the AutoAttack and protocol reports that embed it
//!   ([`AutoAttackReport`], [`AUTOATTACK_SCHEMA`]; [`ProtocolReport`], [`PROTOCOL_SCHEMA`]);
//! * [`predictions`]: the per-image decisions beside each report ([`PredictionsRecord`],
//!   [`PREDICTIONS_SCHEMA`]);
//! * [`selection`]: a run's `selection.json` ([`SelectionRecord`], [`SELECTION_SCHEMA`]);
//! * [`state`]: a run's `state.json` ([`RunState`], [`STATE_SCHEMA`]), the driver's state with
//!   its checkpoint;
//! * [`split`]: a run's `split.json` ([`SplitIndices`], [`SPLIT_SCHEMA`]), the images it used;
//! * [`env`]: a run's `env.json` ([`EnvRecord`], [`ENV_SCHEMA`]), one entry per session;
//! * [`progress`]: a run's `interrupted.json` ([`MidEpoch`], [`MID_EPOCH_SCHEMA`]), where it
//!   stopped inside an epoch;
//!
//! and [`config`], the few fields of a run's resolved configuration that the libtorch-free
//! readers need ([`RunConfigView`]; the trainer owns the configuration itself).

pub mod autoattack;
pub mod config;
pub mod env;
pub mod epoch;
pub mod leaderboard;
pub mod predictions;
pub mod progress;
pub mod protocol;
pub mod report;
pub mod selection;
pub mod split;
pub mod state;

pub use autoattack::*;
pub use config::*;
pub use env::*;
pub use epoch::*;
pub use leaderboard::*;
pub use predictions::*;
pub use progress::*;
pub use protocol::*;
pub use report::*;
pub use selection::*;
pub use split::*;
pub use state::*;

use crate::error::{CoreError, Result, invalid};

/// The version of a record written without a `schema` field.
fn first_schema() -> u32 {
    1
}

/// A record of type `T` from JSON `text`; `what` names the file, `kind` says what it should be.
fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &str,
    kind: &'static str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|e| CoreError::File {
        what: what.to_owned(),
        kind,
        message: e.to_string(),
    })
}

/// A `schema` from 1 to `newest`, the versions of `kind` this build reads.
fn check_schema(what: &str, schema: u32, newest: u32, kind: &str) -> Result<()> {
    if (1..=newest).contains(&schema) {
        return Ok(());
    }
    Err(invalid(
        format!("{what}: schema"),
        schema,
        format!(
            "a {kind} schema from 1 to {newest}, which this build reads (a newer classwise \
             wrote it?)"
        ),
    ))
}

/// `values` has `k` entries, one per class, each an accuracy in [0, 1].
fn check_fractions(what: &str, field: &str, values: &[f64], k: usize) -> Result<()> {
    if values.len() != k {
        let got = format!("{} entries", values.len());
        return Err(invalid(
            format!("{what}: {field}"),
            got,
            format!("{k}, one per class"),
        ));
    }
    match values.iter().find(|v| !(0.0..=1.0).contains(*v)) {
        Some(v) => Err(invalid(
            format!("{what}: {field}"),
            v,
            "accuracies in [0, 1]",
        )),
        None => Ok(()),
    }
}
