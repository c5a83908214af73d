//! `classwise toy`: Monte Carlo simulation of the binary model and the multi-class toys.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use classwise_theory::model::{Adversary, BinaryModel};
use classwise_toy::binary::{ccm_run, fit_report, scatter_csv, simulate, sweep};
use serde::Serialize;

/// σ of CFA Figure 1 (σ² = 0.6).
const FIGURE1_SIGMA: f64 = 0.774_596_669_241_483_4;

#[derive(Subcommand)]
pub enum ToyCommand {
    /// Empirical clean and robust accuracies of f_w (N samples per class, exact worst-case
    /// ℓ∞ perturbation) with standard errors, next to the closed forms and the z-scores.
    Simulate(SimulateArgs),
    /// `simulate` for several w on the same samples (common random numbers): empirical
    /// A_y(w), R_y(w, ε) against w, as in CFA Figure 1(b), with the closed forms (Theorems 3-4).
    Sweep(SweepArgs),
    /// Toy adversarial training: the empirical ŵ_ε (exact maximiser of the empirical robust
    /// accuracy, and a logistic-loss gradient fit of (w₁, w₂)) for each ε, and the empirical
    /// w*_y, next to the closed forms (CFA Theorems 2 and 3).
    Fit(FitArgs),
    /// CFA's class-wise budgets ε_y = (λ₁ + t_y)ε (CCM, eq. 6) iterated on the binary model, next
    /// to one budget for both classes: w, ε_y, t_y and the population accuracies per epoch.
    Ccm(CcmArgs),
    /// The 100-points-per-class sample of CFA Figure 1(a) (or any model) as CSV: y,x1,...
    Scatter(ScatterArgs),
    /// Train a linear softmax model on K Gaussian classes of different difficulty with one
    /// method and report the class-wise history and final table.
    Multiclass(MulticlassArgs),
    /// Samples per second of the Monte Carlo simulator, with 1 thread and with all threads.
    Bench {
        /// Number of non-robust features.
        #[arg(long, default_value_t = 10)]
        d: u32,
        /// Samples per class per measurement.
        #[arg(long, default_value_t = 1_000_000)]
        samples: usize,
    },
}

#[derive(Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The classifier's w > 0 (f_w(x) = sign(x₁ + (x₂+…+x_{d+1})/w)).
    #[arg(long, allow_negative_numbers = true)]
    w: f64,
    /// Attack budget ε (as in `theory eval`).
    #[arg(long, allow_negative_numbers = true)]
    eps: f64,
    #[command(flatten)]
    mc: McArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct SweepArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Values of w, comma-separated (e.g. 0.25,0.5,1,2,3).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_negative_numbers = true
    )]
    w: Vec<f64>,
    /// Attack budget ε.
    #[arg(long, allow_negative_numbers = true)]
    eps: f64,
    #[command(flatten)]
    mc: McArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct FitArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Training budgets, comma-separated (e.g. 0,0.1,0.2,0.3).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_negative_numbers = true
    )]
    eps: Vec<f64>,
    /// Threat model of the training perturbation.
    #[arg(long, value_enum, default_value_t = AdversaryArg::Paper)]
    adversary: AdversaryArg,
    #[command(flatten)]
    mc: McArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CcmArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Base training budget ε.
    #[arg(long, default_value_t = 0.2)]
    eps: f64,
    /// λ₁ of CFA eq. (6) (0.5 for AT).
    #[arg(long, default_value_t = 0.5)]
    lambda1: f64,
    /// Number of epochs.
    #[arg(long, default_value_t = 8)]
    epochs: usize,
    #[command(flatten)]
    mc: McArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ScatterArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// Points per class.
    #[arg(long, default_value_t = 100)]
    samples: usize,
    /// Seed (ChaCha8, one stream per class and chunk).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output file (written atomically); stdout when absent.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct MulticlassArgs {
    /// natural | at | trades | fat | cfa (= cfa-trades) | cfa-at | cfa-trades | cfa-fat | wat | frl | csl
    #[arg(long, default_value = "at")]
    method: String,
    /// Start from this run configuration (JSON, the `config` object of a report) instead of the
    /// method's preset; --method is then ignored.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Toy data preset (default | equal | small).
    #[arg(long)]
    data: Option<String>,
    /// Seed of the data, the initialisation and the shuffles.
    #[arg(long)]
    seed: Option<u64>,
    /// Number of epochs. The preset's epoch-relative settings (learning-rate drops, the FAWA and
    /// FRL start epochs, FRL's schedule) scale with it. Not with --config: edit the file.
    #[arg(long, conflicts_with = "config", value_parser = clap::value_parser!(u64).range(1..))]
    epochs: Option<u64>,
    /// Write the full JSON report to this file (atomically).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the full JSON report.
    #[arg(long)]
    json: bool,
}

/// The binary model's parameters; the defaults are CFA Figure 1.
#[derive(Args)]
pub struct ModelArgs {
    /// Number of non-robust features.
    #[arg(long, default_value_t = 1)]
    d: u32,
    /// Mean shift η of the non-robust features.
    #[arg(long, default_value_t = 0.4, allow_negative_numbers = true)]
    eta: f64,
    /// Standard deviation σ of the non-robust features [default: √0.6, Figure 1].
    #[arg(long, default_value_t = FIGURE1_SIGMA)]
    sigma: f64,
    /// p₊₁ = P(x₁ = +1 | y = +1).
    #[arg(long, default_value_t = 0.85)]
    p_pos: f64,
    /// p₋₁ = P(x₁ = -1 | y = -1).
    #[arg(long, default_value_t = 0.7)]
    p_neg: f64,
}

impl ModelArgs {
    fn model(&self) -> anyhow::Result<BinaryModel> {
        Ok(BinaryModel::new(
            self.d, self.eta, self.sigma, self.p_pos, self.p_neg,
        )?)
    }
}

#[derive(Args)]
pub struct McArgs {
    /// Samples per class.
    #[arg(long, default_value_t = 1_000_000)]
    samples: usize,
    /// Seed (ChaCha8, one stream per class and chunk; the same for any thread count).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AdversaryArg {
    /// x₁ pinned (CFA App. B.1).
    Paper,
    /// Every coordinate moves (CFA definition (4)).
    Full,
}

impl From<AdversaryArg> for Adversary {
    fn from(a: AdversaryArg) -> Self {
        match a {
            AdversaryArg::Paper => Adversary::Paper,
            AdversaryArg::Full => Adversary::Full,
        }
    }
}

pub fn run(cmd: ToyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ToyCommand::Simulate(a) => simulate_cmd(&a)?,
        ToyCommand::Sweep(a) => {
            let s = sweep(a.model.model()?, &a.w, a.eps, a.mc.samples, a.mc.seed)?;
            let header = "common random numbers: every w sees the same samples\n";
            emit_either(&s, a.json, header)?;
        }
        ToyCommand::Fit(a) => {
            let (adversary, n, seed) = (a.adversary.into(), a.mc.samples, a.mc.seed);
            let r = fit_report(a.model.model()?, &a.eps, adversary, n, seed)?;
            emit_either(&r, a.json, "")?;
        }
        ToyCommand::Scatter(a) => {
            let csv = scatter_csv(a.model.model()?, a.samples, a.seed)?;
            write_or_emit(a.out.as_deref(), &csv)?;
        }
        ToyCommand::Ccm(a) => {
            let (n, seed) = (a.mc.samples, a.mc.seed);
            let r = ccm_run(a.model.model()?, a.eps, a.lambda1, a.epochs, n, seed)?;
            emit_either(&r, a.json, "")?;
        }
        ToyCommand::Multiclass(a) => multiclass(&a)?,
        ToyCommand::Bench { d, samples } => bench(d, samples)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `toy simulate`: one w as JSON, or as the one-point table of `toy sweep`.
fn simulate_cmd(a: &SimulateArgs) -> anyhow::Result<()> {
    let (model, n, seed) = (a.model.model()?, a.mc.samples, a.mc.seed);
    match a.json {
        true => emit_json(&simulate(model, a.w, a.eps, n, seed)?),
        false => emit(&sweep(model, &[a.w], a.eps, n, seed)?.to_string()),
    }
}

/// A report as pretty JSON or, after `header`, as its text table.
fn emit_either<T: Serialize + std::fmt::Display>(
    report: &T,
    json: bool,
    header: &str,
) -> anyhow::Result<()> {
    match json {
        true => emit_json(report),
        false => emit(&format!("{header}{report}")),
    }
}

/// A report as pretty JSON.
fn emit_json<T: Serialize>(report: &T) -> anyhow::Result<()> {
    emit(&(serde_json::to_string_pretty(report)? + "\n"))
}

/// `text` into the file `out` (atomically), or to stdout.
fn write_or_emit(out: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match out {
        Some(path) => Ok(classwise_trainer::io::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?),
        None => emit(text),
    }
}

fn bench(d: u32, samples: usize) -> anyhow::Result<()> {
    use classwise_toy::multiclass::{Method, RunConfig, run};
    let model = BinaryModel::new(d, 0.4, 1.0, 0.85, 0.7)?;
    let threads = rayon::current_num_threads();
    let mut out = format!(
        "toy simulate: d = {d}, {samples} samples per class (2 classes), clean + 2 attacks\n"
    );
    // Warm-up: thread pool, allocator and caches.
    simulate(model, 1.0, 0.1, samples.min(100_000), 1)?;
    let mut counts = vec![1];
    if threads > 1 {
        counts.push(threads);
    }
    for t in counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
        let start = Instant::now();
        pool.install(|| simulate(model, 1.0, 0.1, samples, 0))?;
        let secs = start.elapsed().as_secs_f64();
        let _ = writeln!(
            out,
            "threads {t}: {secs:.3} s, {:.3e} samples/s, {:.3e} coordinates/s",
            2.0 * samples as f64 / secs,
            2.0 * samples as f64 * f64::from(d + 1) / secs
        );
    }
    for method in [Method::At, Method::Trades] {
        let config = RunConfig::preset(method);
        let start = Instant::now();
        run(&config)?;
        let secs = start.elapsed().as_secs_f64();
        let _ = writeln!(
            out,
            "toy multiclass --method {method}: {} epochs in {secs:.3} s ({:.1} ms/epoch)",
            config.epochs,
            1e3 * secs / config.epochs as f64
        );
    }
    emit(&out)
}

fn multiclass(a: &MulticlassArgs) -> anyhow::Result<()> {
    use classwise_toy::multiclass::{DATA_PRESETS, RunConfig, ToyData, run};
    let mut config = match &a.config {
        Some(path) => RunConfig::read(path)?,
        None => {
            let method = (a.method.parse()).map_err(|e| anyhow::anyhow!("--method: {e}"))?;
            match a.epochs {
                Some(n) => RunConfig::preset_with_epochs(method, usize::try_from(n)?),
                None => RunConfig::preset(method),
            }
        }
    };
    if let Some(name) = &a.data {
        config.data = ToyData::preset(name).with_context(|| {
            format!("--data {name}: unknown preset (expected one of {DATA_PRESETS:?})")
        })?;
    }
    config.seed = a.seed.unwrap_or(config.seed);
    // Ctrl-C or SIGTERM stop the run between epochs, through the driver, with a message.
    classwise_core::interrupt::install()?;
    let report = run(&config)?;
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(path) = &a.out {
        classwise_trainer::io::write_atomic(path, json.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    match a.json {
        true => emit(&(json + "\n")),
        false => emit(&report.to_string()),
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
