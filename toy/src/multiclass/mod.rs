//! Multi-class toys: K Gaussian classes of different difficulty, a linear softmax model, and
//! natural / PGD-AT / TRADES / FAT training combined with the class-wise rules of CFA, WAT and
//! FRL ([`classwise_core`], the same implementations the libtorch trainer uses). A whole run takes a fraction of a second, so a course can watch class-wise robust
//! unfairness appear and test each fix.
//!
//! # Entry point
//!
//! ```no_run
//! use classwise_toy::multiclass::{Method, RunConfig, run};
//!
//! let method: Method = "cfa".parse()?; // natural|at|trades|fat|cfa|cfa-at|cfa-trades|cfa-fat|wat|frl|csl
//! let mut config = RunConfig::preset(method);
//! config.seed = 7;
//! let report = run(&config)?; // serde::Serialize
//! println!("worst-class robust accuracy {:.3}", report.final_model.robust_worst());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `cfa` alone is CFA on TRADES (CCM λ₁ = 0.3 + CCR λ₂ = 0.5 + FAWA), the paper's headline
//! "TRADES + CFA"; `cfa-at` is CCM (λ₁ = 0.5) + FAWA on PGD-AT. The [`RunReport`] holds the
//! per-epoch history (ε_k, β_k and loss weights in force, t_k, class-wise validation and test
//! accuracies, WAT costs, FAWA actions) and class-wise tables (avg, worst, CV, MCD) of the final,
//! FAWA, EMA and WAT-selected models. Robust accuracy is always **exact** (ℓ∞ worst case of a
//! linear model, [`attack::worst_case_margins`]) at the plain ε.
//!
//! # Modules
//!
//! * [`data`]: the K-class distribution (CFA eq. (5) generalised) and its splits;
//! * [`model`]: the linear softmax model, CE and KL with analytic gradients;
//! * [`attack`]: exact worst case, PGD with per-sample ε, FAT's early-stopped PGD;
//! * [`loss`]: the base losses with class-wise weights;
//! * the class-wise rules (uniform, CFA, WAT, FRL) behind one trait, [`ClassRule`], the FAWA and
//!   EMA decisions and WAT's model selection come from [`classwise_core`] (re-exported here:
//!   [`RuleConfig`], [`ClassPlan`], [`ClassStats`], the rules' settings, [`FawaSettings`]);
//! * [`train`], [`eval`]: one epoch of SGD, class-wise evaluation;
//! * [`config`]: configuration and presets; [`run`](mod@run): the toy's backend and hooks of
//!   the shared training driver ([`classwise_core::driver`]); [`report`]: what a run reports.
//!
//! Random streams use tags 16..=31 of [`crate::rng::stream_id`].

pub mod attack;
pub mod config;
pub mod data;
pub mod eval;
pub mod loss;
pub mod model;
pub mod report;
pub mod run;
mod table;
pub mod train;

pub use classwise_core::average::{FawaGate, FawaSettings};
pub use classwise_core::rule::{CfaSettings, FrlSettings, WatSettings};
pub use classwise_core::{ClassPlan, ClassRule, ClassStats, RuleConfig, RuleContext};
pub use classwise_theory::calibration::FawaComparison;
pub use config::{
    CfaBase, METHODS, Method, PRESET_EPOCHS, ParseMethodError, RunConfig, cfa_paper_settings,
};
pub use data::{DATA_PRESETS, Dataset, Split, Splits, ToyData};
pub use loss::Base;
pub use model::Linear;
pub use report::{EpochRecord, ModelReport, RunReport, SelectedReport};
pub use run::{run, run_until};
