//! `env.json`: the environment of every session of a run (its first start and each resume: the
//! commit, the versions, the device, the threads, the seed streams), one object per session,
//! written by the trainer. The sessions' fields are the trainer's to choose; this record keeps
//! their list.
//!
//! # Versions
//!
//! * Before sessions were recorded (until 2026-11-25): one flat object, read as the only
//!   session.
//! * Schema 1: `{"sessions": [...]}` without a `schema` field (2026-11-25 to 2026-11-28).
//! * Schema 2 ([`ENV_SCHEMA`]): adds `schema`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{check_schema, first_schema, parse_json};
use crate::error::{Result, invalid};

/// The version of [`EnvRecord`] written now.
pub const ENV_SCHEMA: u32 = 2;

/// `env.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvRecord {
    /// [`ENV_SCHEMA`] when written; 1 for a file without the field.
    #[serde(default = "first_schema")]
    pub schema: u32,
    /// One object per session, the first start first.
    pub sessions: Vec<Map<String, Value>>,
}

impl EnvRecord {
    /// Reads `env.json` from its text: the list of sessions, or one flat object of the files
    /// written before sessions were recorded as the only session. `what` names the file.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let value: Value = parse_json(text, what, "a run environment")?;
        let Value::Object(fields) = value else {
            return Err(invalid(what, "not an object", "a JSON object"));
        };
        if !fields.contains_key("sessions") {
            let sessions = vec![fields];
            return Ok(EnvRecord {
                schema: 1,
                sessions,
            });
        }
        let record: Self = serde_json::from_value(Value::Object(fields))
            .map_err(|e| invalid(format!("{what}: sessions"), e, "a list of session objects"))?;
        check_schema(what, record.schema, ENV_SCHEMA, "run environment")?;
        Ok(record)
    }
}
