//! The driver's part of a run state: the completed epochs, the rule's state and the hooks'
//! fields. Each hook's fields are its typed state ([`super::Hook::State`]) written as JSON, side
//! by side, so that a new hook needs no change here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{CoreError, Result};

/// What a resume needs besides the backend's checkpoint files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DriverState {
    pub completed_epochs: usize,
    /// The class-wise rule's state after the last completed epoch.
    pub rule: Value,
    /// Every hook's fields ([`Hook::save`](super::Hook::save)), side by side with the
    /// driver's.
    #[serde(flatten)]
    pub hooks: Map<String, Value>,
}

/// Adds a hook's `fields` to `into`; a field another hook already wrote is an error naming it
/// (each hook's state has fields of its own).
pub fn join(into: &mut Map<String, Value>, fields: Map<String, Value>) -> Result<()> {
    for (key, value) in fields {
        if into.contains_key(&key) {
            return Err(CoreError::Invalid {
                field: format!("run state `{key}`"),
                value: value.to_string(),
                expected: "a field no other hook writes".to_owned(),
            });
        }
        into.insert(key, value);
    }
    Ok(())
}
