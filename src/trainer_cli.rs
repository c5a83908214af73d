//! `classwise train`, `classwise eval` and `classwise bench`: the libtorch trainer.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use classwise_trainer::attack::{Pgd, StepSize};
use classwise_trainer::data::{self, Part};
use classwise_trainer::eval::markdown;
use classwise_trainer::io::write_json;
use classwise_trainer::run::{self, RunConfig, RunDir, TrainOptions};

#[derive(Args)]
pub struct TrainArgs {
    /// Run configuration (TOML; presets in configs/).
    #[arg(long)]
    config: PathBuf,
    /// Run directory [default: runs/<name>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue the run in --out from its last checkpoint.
    #[arg(long)]
    resume: bool,
    /// Resume even though the configuration changed.
    #[arg(long, requires = "resume")]
    force: bool,
    /// Stop after this many epochs (a later --resume continues).
    #[arg(long)]
    stop_after: Option<usize>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AttackKind {
    /// PGD on cross-entropy with a uniform start.
    Pgd,
    /// One step of size ε.
    Fgsm,
    /// PGD on the CW∞ margin (κ = 50).
    Cw,
    /// Tian et al.'s Temperature-PGD (--inv-t).
    Temperature,
}

#[derive(Args)]
pub struct EvalArgs {
    /// Run directory written by `classwise train`.
    #[arg(long)]
    run: PathBuf,
    /// best | last | ema (the last epoch's weight average) | a path to model weights.
    #[arg(long, default_value = "last")]
    checkpoint: String,
    /// Attack [default: the run's evaluation attack].
    #[arg(long, value_enum)]
    attack: Option<AttackKind>,
    /// Attack steps (PGD, CW, Temperature).
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Attack step size [default: ε/4].
    #[arg(long)]
    step: Option<f64>,
    /// 1/T of Temperature-PGD.
    #[arg(long, default_value_t = 5.0)]
    inv_t: f64,
    /// Budget, a number or a ratio such as 8/255 [default: the run's].
    #[arg(long)]
    eps: Option<String>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Batch size.
    #[arg(long, default_value_t = 128)]
    batch: usize,
    /// Timed steps per measurement (after one warm-up step).
    #[arg(long, default_value_t = 3)]
    steps: usize,
    /// Only the SmallCNN (skip PreActResNet-18, which takes minutes on a CPU).
    #[arg(long)]
    small_only: bool,
}

pub fn train(a: &TrainArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&a.config)
        .with_context(|| format!("reading {}", a.config.display()))?;
    let config = RunConfig::from_toml(&text).with_context(|| format!("{}", a.config.display()))?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(&config.name));
    let opts = TrainOptions {
        resume: a.resume,
        force: a.force,
        verbose: true,
        stop_after: a.stop_after,
    };
    eprintln!("run {} in {}", config.name, out.display());
    let summary = run::train(&config, &out, opts)?;
    match &summary.report {
        Some(report) => println!("{}", markdown(report)),
        None => eprintln!(
            "stopped after {} of {} epochs; continue with --resume",
            summary.completed_epochs, config.epochs
        ),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn eval(a: &EvalArgs) -> anyhow::Result<ExitCode> {
    let dir = RunDir(a.run.clone());
    let text = std::fs::read_to_string(dir.config())
        .with_context(|| format!("reading {}", dir.config().display()))?;
    let mut config = RunConfig::from_toml(&text)?;
    if let Some(e) = &a.eps {
        config.eval.eps = run::Eps::parse(e)?;
    }
    let eps = config.eval.eps.value;
    let step = a.step.unwrap_or(eps / 4.0);
    config.eval.attack = match a.attack {
        None => config.eval.attack,
        Some(AttackKind::Pgd) => Pgd::ce(a.steps, step),
        Some(AttackKind::Fgsm) => Pgd::fgsm(),
        Some(AttackKind::Cw) => Pgd::cw(a.steps, step),
        Some(AttackKind::Temperature) => Pgd::temperature(a.steps, step, a.inv_t),
    };
    if let StepSize::Absolute(s) = config.eval.attack.step {
        anyhow::ensure!(s.is_finite() && s >= 0.0, "--step must be >= 0, got {s}");
    }
    let device = config.device.device()?;
    let model = dir.load_model(&a.checkpoint, device)?;
    let test_full = data::load(&config.data.source, Part::Test)?;
    let test = run::head_per_class(&test_full, config.data.test_per_class)?;
    let report = classwise_trainer::seed::seeded(run::report_seed(&config), || {
        run::evaluate_on(&model, &test, &config, device)
    })?;
    let tag = a.checkpoint.replace(['/', '.'], "_");
    let base = dir
        .0
        .join(format!("eval-{tag}-{}", report.attack.replace(' ', "_")));
    write_json(&base.with_extension("json"), "evaluation", &report)?;
    classwise_trainer::io::write_atomic(&base.with_extension("md"), markdown(&report).as_bytes())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", markdown(&report));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        a.batch >= 1 && a.steps >= 1,
        "--batch and --steps must be >= 1"
    );
    let device = classwise_trainer::default_device();
    let mut specs = classwise_trainer::bench::models();
    if a.small_only {
        specs.truncate(1);
    }
    println!(
        "device {device:?}, {} threads, {}, batch {}, {} timed steps after 1 warm-up",
        tch::get_num_threads(),
        classwise_trainer::runtime::current(),
        a.batch,
        a.steps
    );
    for row in classwise_trainer::bench::run(&specs, a.batch, a.steps, device)? {
        println!(
            "{:<40} {:<10} {:>8.3} s/step {:>9.1} img/s",
            row.model, row.method, row.seconds_per_step, row.images_per_second
        );
    }
    Ok(ExitCode::SUCCESS)
}
