//! The versioned records classwise writes and reads back, each naming its version in `schema`
//! and read by the same type that writes it:
//!
//! * [`epoch`]: the lines of a run's `metrics.jsonl` ([`EpochRecord`], [`METRICS_SCHEMA`]);
//! * [`report`]: the class-wise report of one model under one attack ([`Report`],
//!   [`REPORT_SCHEMA`]) and the AutoAttack and protocol reports that embed it;
//! * [`predictions`]: the per-image decisions beside each report ([`PredictionsRecord`],
//!   [`PREDICTIONS_SCHEMA`]).

pub mod epoch;
pub mod predictions;
pub mod report;

pub use epoch::*;
pub use predictions::*;
pub use report::*;
