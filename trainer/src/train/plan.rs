//! The per-class plan of an epoch and the rules that make it: the shared, backend-neutral seam of
//! `classwise_core` (the same rules drive the multi-class toy). Re-exported here for the
//! trainer's users.

pub use classwise_core::plan::{ClassPlan, ClassStats, Needs};
pub use classwise_core::rule::{ClassRule, RuleConfig, RuleContext};
