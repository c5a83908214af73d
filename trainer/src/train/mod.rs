//! Training: the optimiser with savable state ([`optim`]), learning-rate schedules
//! ([`schedule`]), the per-class plan that fairness methods drive ([`plan`]) and the training
//! objectives ([`objective`]).
//!
//! Still to come (issue 6, later sessions): the epoch loop with on-the-fly t_k counting,
//! EMA/FAWA hooks, run directories, checkpoints and resume.

pub mod objective;
pub mod optim;
pub mod plan;
pub mod schedule;

pub use objective::{Method, Objective, StepOutput, TradesScaling};
pub use optim::{Sgd, SgdConfig};
pub use plan::{ClassPlan, ClassRule, ClassStats, Uniform};
pub use schedule::LrSchedule;
