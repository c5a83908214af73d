//! Training: the optimiser with savable state ([`optim`]), learning-rate schedules
//! ([`schedule`]), the per-class plan that fairness methods drive ([`plan`]) and the training
//! objectives ([`objective`]).
//!
//! One epoch ([`epoch`]) counts CFA's t_k on the fly and takes its learning rate and ε factor
//! (warm-up) per batch ([`StepSettings`]); [`average`] applies EMA/FAWA decisions to the whole
//! state. The loop over epochs, run directories, checkpoints and resume are in [`crate::run`].

pub mod average;
pub mod epoch;
pub mod objective;
pub mod optim;
pub mod plan;
pub mod schedule;

pub use average::WeightAverage;
pub use epoch::{
    EpochOutcome, EpochProgress, EpochStats, StepSettings, train_epoch, train_epoch_from,
};
pub use objective::{
    Bat, BatPoint, BatSource, DevicePlan, Fat, Mart, Method, Natural, Objective, PgdAt,
    StepContext, StepOutput, Trades, TradesScaling,
};
pub use optim::{Sgd, SgdConfig};
pub use plan::{ClassPlan, ClassRule, ClassStats, Needs, RuleConfig, RuleContext};
pub use schedule::LrSchedule;
