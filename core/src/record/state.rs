//! `state.json`, written by the trainer at the end of every epoch: what a resume needs besides
//! the checkpoint files, the driver's state ([`DriverState`]: the completed epochs, the rule's
//! state, every hook's typed state) with the name of the checkpoint directory it goes with.
//!
//! # Versions
//!
//! * Schema 1: files without a `schema` field (2026-11-22 to 2026-11-28).
//! * Schema 2 ([`STATE_SCHEMA`]): adds `schema`; every other field as in schema 1.

use serde::{Deserialize, Serialize};

use super::{check_schema, first_schema, parse_json};
use crate::driver::DriverState;
use crate::error::{Result, invalid};

/// The version of [`RunState`] written now.
pub const STATE_SCHEMA: u32 = 2;

/// `state.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// [`STATE_SCHEMA`] when written; 1 for a file without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// The directory under `checkpoints/` holding the last completed epoch's files.
    pub checkpoint: String,
    /// The driver's state after that epoch.
    #[serde(flatten)]
    pub driver: DriverState,
}

impl RunState {
    /// Reads `state.json` from its text and checks it: a known schema, at least one completed
    /// epoch, a checkpoint named. `what` names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let state: Self = parse_json(text, what, "a run state")?;
        check_schema(what, state.schema, STATE_SCHEMA, "run state")?;
        if state.driver.completed_epochs == 0 || state.checkpoint.is_empty() {
            let (n, ck) = (state.driver.completed_epochs, &state.checkpoint);
            let found = format!("{n} completed epochs, checkpoint `{ck}`");
            let expected = "a committed epoch and the checkpoint directory it wrote";
            return Err(invalid(
                format!("{what}: completed_epochs"),
                found,
                expected,
            ));
        }
        Ok(state)
    }
}
