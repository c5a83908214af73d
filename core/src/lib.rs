//! The backend-neutral training decisions of classwise, shared by the multi-class toy
//! (`classwise-toy`, pure Rust) and the libtorch trainer (`classwise-trainer`):
//!
//! * [`plan`]: the per-class plan of an epoch and the statistics a rule observes;
//! * [`rule`]: the class-wise rules (uniform, CFA, WAT, FRL, CSL, class-wise β) behind one trait,
//!   and which base objectives each fits;
//! * [`average`]: EMA and FAWA decisions;
//! * [`select`]: model-selection strategies (last, best avg + worst, CFA's, WAT's);
//! * [`record`]: the versioned records of a run (`metrics.jsonl`, the class-wise reports, the
//!   per-image predictions), written by the trainer and read by the figures (older schemas
//!   converted on reading);
//! * [`eval`]: how an evaluation counted robust samples and computed (named in its reports).
//!
//! Each is implemented once; the backends only apply the decisions to their models.

pub mod aggregate;
pub mod average;
pub mod driver;
pub mod error;
pub mod eval;
pub mod interrupt;
pub mod io;
pub mod name;
pub mod plan;
pub mod record;
pub mod rule;
pub mod select;

pub use error::{CoreError, Result};
pub use plan::{ClassPlan, ClassStats, Needs, TradesScaling};
pub use record::{EpochRecord, METRICS_SCHEMA, SplitRecord};
pub use rule::{ClassRule, RuleConfig, RuleContext};
