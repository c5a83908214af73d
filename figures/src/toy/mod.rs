//! Figures from simulations of `classwise-toy`: CFA Figure 1(a), Monte Carlo against closed
//! forms, CFA's CCM on the binary model, and the multi-class toy (class-wise accuracies and
//! the per-class budgets and weights of each method).
//!
//! Every number drawn comes from a public function of `classwise-toy` (samples, sweeps, CCM
//! runs, multi-class runs) or `classwise-theory` (closed-form curves next to the estimates);
//! this module only arranges and draws them.

pub mod bars;
pub mod budgets;
pub mod ccm;
pub mod fig1a;

pub mod mc;

use std::path::Path;

use classwise_toy::multiclass::{CfaBase, Method, RunConfig, RunReport, run};

use crate::error::{Result, invalid};
use crate::render::{Rendered, render};

pub use bars::MulticlassBars;
pub use budgets::MulticlassBudgets;
pub use ccm::CcmFigure;
pub use fig1a::Fig1a;
pub use mc::McVsClosed;

/// Settings of the toy figures.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Seed of every random stream.
    pub seed: u64,
    /// Smaller samples and fewer epochs (for tests); the figures keep their layout.
    pub quick: bool,
}

/// Epochs of the multi-class runs when [`Options::quick`] is set (the presets train 40).
pub const QUICK_EPOCHS: usize = 10;

/// The multi-class methods drawn, in legend order, with their display names: every distinct
/// preset of [`RunConfig::preset`] except CFA on FAT (eight methods, one palette colour each).
pub const METHODS: [(Method, &str); 8] = [
    (Method::Natural, "natural"),
    (Method::At, "PGD-AT"),
    (Method::Trades, "TRADES"),
    (Method::Fat, "FAT"),
    (Method::Cfa(CfaBase::At), "AT + CFA"),
    (Method::Cfa(CfaBase::Trades), "TRADES + CFA"),
    (Method::Wat, "WAT (TRADES)"),
    (Method::Frl, "FRL (TRADES)"),
];

/// The run configuration of `method`: [`RunConfig::preset`] with `options.seed`, trained for
/// [`QUICK_EPOCHS`] with `options.quick` ([`RunConfig::preset_with_epochs`]).
pub fn multiclass_config(method: Method, options: &Options) -> RunConfig {
    let mut config = if options.quick {
        RunConfig::preset_with_epochs(method, QUICK_EPOCHS)
    } else {
        RunConfig::preset(method)
    };
    config.seed = options.seed;
    config
}

/// One finished multi-class run per entry of [`METHODS`], shared by the two multi-class figures.
pub struct MulticlassRuns {
    pub runs: Vec<(Method, &'static str, RunReport)>,
}

impl MulticlassRuns {
    /// Runs every method of [`METHODS`] (in parallel threads; each run is deterministic).
    pub fn new(options: &Options) -> Result<Self> {
        let configs: Vec<RunConfig> = METHODS
            .iter()
            .map(|(m, _)| multiclass_config(*m, options))
            .collect();
        let reports: Vec<classwise_toy::Result<RunReport>> = std::thread::scope(|s| {
            let handles: Vec<_> = configs.iter().map(|c| s.spawn(move || run(c))).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a toy run panicked"))
                .collect()
        });
        let mut runs = Vec::with_capacity(METHODS.len());
        for ((method, name), report) in METHODS.iter().zip(reports) {
            runs.push((*method, *name, report?));
        }
        Ok(MulticlassRuns { runs })
    }

    /// The run of `method`.
    pub fn get(&self, method: Method) -> Result<&RunReport> {
        self.runs
            .iter()
            .find(|r| r.0 == method)
            .map(|r| &r.2)
            .ok_or_else(|| invalid("method", method, "one of the methods that were run"))
    }
}

/// Renders every toy figure into `dir`: CFA Figure 1(a), Monte Carlo against closed forms, CCM
/// on the binary model, then the multi-class bars and budgets (which share one set of runs).
pub fn render_all(dir: &Path, options: &Options) -> Result<Vec<Rendered>> {
    let mut out = vec![
        render(&Fig1a::new(options)?, dir)?,
        render(&McVsClosed::new(options)?, dir)?,
        render(&CcmFigure::new(options)?, dir)?,
    ];
    let runs = MulticlassRuns::new(options)?;
    out.push(render(&MulticlassBars::from_runs(&runs)?, dir)?);
    out.push(render(&MulticlassBudgets::from_runs(&runs)?, dir)?);
    Ok(out)
}
