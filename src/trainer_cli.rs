//! `classwise train`, `classwise eval` and `classwise bench`: the libtorch trainer.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use classwise_trainer::attack::{Pgd, StepSize};
use classwise_trainer::data::{self, Part};
use classwise_trainer::eval::{RobustCounting, markdown};
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
    /// Directory holding the data sets (`fashion-mnist/`, `cifar-10-batches-bin/`, ...), the
    /// only place searched when given [default: the set-up cache's data/, then
    /// /usr/share/datasets]. A `root` in the config's data source takes precedence.
    #[arg(long, env = "CLASSWISE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Override a configuration value: `--set key=value` with a dotted key (`train.eps=0.05`,
    /// `rule.lambda1=0.3`, `epochs=3`), repeatable; validated like the file and written into
    /// the run's resolved config.toml. A resume must repeat the same overrides.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The commit this binary was built from (see `build.rs`).
pub fn build_info() -> run::BuildInfo {
    let known = |v: &'static str| (v != "unknown").then(|| v.to_string());
    run::BuildInfo {
        git_sha: known(env!("CLASSWISE_GIT_SHA")),
        git_dirty: known(env!("CLASSWISE_GIT_DIRTY")).map(|d| d == "true"),
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AttackKind {
    /// PGD on cross-entropy with a uniform start.
    Pgd,
    /// One step of size ε from the clean input.
    Fgsm,
    /// FGSM from a uniform random start in the ε-ball, one step of --step (default ε), as Tian
    /// et al. (App. A.2) evaluate it.
    FgsmRs,
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
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// Attack step size [default: ε/4; ε for fgsm-rs].
    #[arg(long)]
    step: Option<f64>,
    /// 1/T of Temperature-PGD.
    #[arg(long, default_value_t = 5.0)]
    inv_t: f64,
    /// Budget, a number or a ratio such as 8/255 [default: the run's].
    #[arg(long)]
    eps: Option<String>,
    /// When a sample counts as robust: clean-and-adversarial (AutoAttack's counting) or
    /// adversarial-only (the reference codes') [default: the run's, whose default is
    /// clean-and-adversarial].
    #[arg(long, value_parser = |s: &str| s.parse::<RobustCounting>())]
    robust_counting: Option<RobustCounting>,
    /// Directory holding the data sets [default: as `train`].
    #[arg(long, env = "CLASSWISE_DATA_DIR")]
    data_dir: Option<PathBuf>,
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
    let config = RunConfig::from_toml_with_overrides(&text, &a.set)
        .with_context(|| format!("{}", a.config.display()))?;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(&config.name));
    let opts = TrainOptions {
        resume: a.resume,
        force: a.force,
        verbose: true,
        stop_after: a.stop_after,
        data_dir: a.data_dir.clone(),
        build: build_info(),
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
    let mut config =
        RunConfig::from_toml(&text).with_context(|| format!("{}", dir.config().display()))?;
    if let Some(e) = &a.eps {
        config.eval.eps = run::Eps::parse(e)?;
    }
    if let Some(c) = a.robust_counting {
        config.eval.robust_counting = c;
    }
    let eps = config.eval.eps.value;
    let steps = usize::try_from(a.steps)?;
    let step = a.step.unwrap_or(eps / 4.0);
    config.eval.attack = match a.attack {
        None => config.eval.attack,
        Some(AttackKind::Pgd) => Pgd::ce(steps, step),
        Some(AttackKind::Fgsm) => Pgd::fgsm(),
        Some(AttackKind::FgsmRs) => match a.step {
            None => Pgd::fgsm_random_start(1.0),
            Some(s) => Pgd {
                step: StepSize::Absolute(s),
                ..Pgd::fgsm_random_start(1.0)
            },
        },
        Some(AttackKind::Cw) => Pgd::cw(steps, step),
        Some(AttackKind::Temperature) => Pgd::temperature(steps, step, a.inv_t),
    };
    config.eval.attack.validate().map_err(|e| {
        anyhow::anyhow!("{}", e.in_section("eval")).context("--attack, --steps, --step or --inv-t")
    })?;
    let device = config.device.device()?;
    let model = dir.load_model(&a.checkpoint, device)?;
    let test_full = data::load(&config.data.source, Part::Test, a.data_dir.as_deref())?;
    let test = run::head_per_class(&test_full, config.data.test_per_class)?;
    let report = classwise_trainer::seed::seeded(run::report_seed(&config), || {
        run::evaluate_on(&model, &test, &config, device)
    })?;
    let stem = eval_file_stem(&a.checkpoint, &report.attack, &config.eval);
    let (json, md) = free_paths(&dir.0, &stem);
    write_json(&json, "evaluation", &report)?;
    classwise_trainer::io::write_atomic(&md, markdown(&report).as_bytes())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{}", markdown(&report));
    }
    eprintln!("wrote {} and {}", json.display(), md.display());
    Ok(ExitCode::SUCCESS)
}

/// `text` as one file-name component: ASCII letters, digits, `.`, `-` and `=` are kept, any
/// other run of characters becomes one `_`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '=') {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// The name of an evaluation's files, from everything that determines it: the checkpoint, the
/// attack with its settings, ε and the robust counting, e.g.
/// `eval-last-pgd-20_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial`.
fn eval_file_stem(
    checkpoint: &str,
    attack: &str,
    eval: &classwise_trainer::run::config::EvalConfig,
) -> String {
    let checkpoint = match checkpoint {
        "best" | "last" | "ema" => checkpoint.to_string(),
        path => format!("file-{}", slug(path)),
    };
    format!(
        "eval-{checkpoint}-{}-eps_{}-{}",
        slug(attack),
        slug(&eval.eps.text),
        eval.robust_counting.name()
    )
}

/// `dir/stem.json` and `dir/stem.md`, or with `-2`, `-3`, ... after the stem when an earlier
/// evaluation holds those names: an evaluation never replaces another.
fn free_paths(dir: &std::path::Path, stem: &str) -> (PathBuf, PathBuf) {
    let pair = |s: &str| (dir.join(format!("{s}.json")), dir.join(format!("{s}.md")));
    let mut n = 1;
    loop {
        let name = if n == 1 {
            stem.to_string()
        } else {
            format!("{stem}-{n}")
        };
        let (json, md) = pair(&name);
        if !json.exists() && !md.exists() {
            return (json, md);
        }
        n += 1;
    }
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
