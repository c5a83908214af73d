//! The versioned records classwise writes and reads back, each naming its version in `schema`
//! and read by the same type that writes it:
//!
//! * [`epoch`]: the lines of a run's `metrics.jsonl` ([`EpochRecord`], [`METRICS_SCHEMA`]);
//! * [`report`]: the class-wise report of one model under one attack ([`Report`],
//!   [`REPORT_SCHEMA`]) and the AutoAttack and protocol reports that embed it;
//! * [`predictions`]: the per-image decisions beside each report ([`PredictionsRecord`],
//!   [`PREDICTIONS_SCHEMA`]);
//!
//! and [`config`], the few fields of a run's resolved configuration that the libtorch-free
//! readers need ([`RunConfigView`]; the trainer owns the configuration itself).

pub mod config;
pub mod epoch;
pub mod predictions;
pub mod report;

pub use config::*;
pub use epoch::*;
pub use predictions::*;
pub use report::*;
