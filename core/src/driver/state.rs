//! The driver's part of a run state: the completed epochs, the rule's state and the hooks'
//! fields, kept opaque so that a new hook needs no change here.

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

/// Merges a hook's `fields` into `into`: new keys are added, objects under the same key are
/// merged key by key (two hooks may each add an entry to `selection`); any other collision is
/// an error naming the key.
pub fn merge(into: &mut Map<String, Value>, fields: Map<String, Value>) -> Result<()> {
    for (key, value) in fields {
        match (into.get_mut(&key), value) {
            (None, v) => {
                into.insert(key, v);
            }
            (Some(Value::Object(old)), Value::Object(new)) => merge(old, new)?,
            (Some(_), v) => {
                return Err(CoreError::Invalid {
                    field: format!("run state `{key}`"),
                    value: v.to_string(),
                    expected: "a key no other hook writes (or an object merged key by key)"
                        .to_owned(),
                });
            }
        }
    }
    Ok(())
}
