//! `classwise train`, `classwise eval` and `classwise bench`: the libtorch trainer.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use classwise_trainer::attack::{EarlyStoppedPgd, Pgd, StepSize};
use classwise_trainer::data::{self, Part};
use classwise_trainer::eval::autoattack::{AaAttack, AutoAttackSpec, Cascade, Version};
use classwise_trainer::eval::{RobustCounting, markdown};
use classwise_trainer::io::write_json;
use classwise_trainer::model::MemoryFormat;
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
    /// Check every batch before its update, forward and backward, and on a NaN or infinity
    /// name the first operation whose output or gradient is not finite (slow: a diagnostic).
    #[arg(long)]
    diagnose: bool,
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
    /// AutoAttack (--version, or a custom --attacks list), class by class; resumable.
    Autoattack,
    /// PGD on cross-entropy (uniform start) that stops each image at its first
    /// misclassification and reports the steps each class needed (BAT §3, Fig. 2: 1000 steps of
    /// ε/20); give many small steps, e.g. --steps 200 --step 0.002 at ε = 0.1.
    FlipSteps,
}

#[derive(Args)]
pub struct EvalArgs {
    /// Run directory written by `classwise train`.
    #[arg(long)]
    run: PathBuf,
    /// last | best | ema, fawa (the last epoch's weight averages) | best-ema, best-fawa (the
    /// selected averages) | a path to model weights.
    #[arg(long, default_value = "last")]
    checkpoint: String,
    /// Attack [default: the run's evaluation attack].
    #[arg(long, value_enum)]
    attack: Option<AttackKind>,
    /// Run the configuration's `[[eval.protocol]]` (its paper's final evaluation: e.g.
    /// natural, PGD, CW∞ and AutoAttack) into one class-wise report.
    #[arg(long, conflicts_with_all = ["attack", "steps", "step", "inv_t", "attacks"])]
    protocol: bool,
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
    /// Evaluate on the first N test images of each class in file order [default: the run's
    /// test subset, `data.test_per_class`].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    test_per_class: Option<u64>,
    /// AutoAttack version: standard (APGD-CE, APGD-T, FAB-T, Square), plus, or rand (APGD-CE
    /// and APGD-DLR with EOT over 20 forwards).
    #[arg(long, default_value = "standard", value_parser = |s: &str| s.parse::<Version>())]
    version: Version,
    /// AutoAttack: a custom list of attacks run in this order, each with the standard
    /// version's settings, e.g. `apgd-ce,square` (apgd-ce, apgd-dlr, apgd-t, fab, fab-t,
    /// square).
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<AaAttack>())]
    attacks: Option<Vec<AaAttack>>,
    /// AutoAttack: points per attack batch (a killed evaluation resumes from its last
    /// finished batch).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    batch_size: u64,
    /// AutoAttack: also save the images, adversarial examples, labels, test indices, clean
    /// logits and robust flags as `<report>-adv.safetensors` (for `tools/crosscheck`).
    #[arg(long)]
    save_adv: bool,
    /// Directory holding the data sets [default: as `train`].
    #[arg(long, env = "CLASSWISE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Layout of the convolution kernels during the evaluation: channels-last (libtorch's
    /// oneDNN convolutions then skip a reorder per call and the max-pools vectorise) or
    /// contiguous (NCHW); the numbers differ only by float rounding [default: channels-last
    /// for AutoAttack; otherwise the run's own `memory_format`, so that `eval` with the run's
    /// attack reproduces the run's report exactly].
    #[arg(long, value_parser = |s: &str| s.parse::<MemoryFormat>())]
    memory_format: Option<MemoryFormat>,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Batch size.
    #[arg(long, default_value_t = 128)]
    batch: usize,
    /// Timed steps per measurement (after one warm-up step).
    #[arg(long, default_value_t = 3)]
    steps: usize,
    /// Only the SmallCNN (skip PreActResNet-18, which takes minutes on a CPU); the same as
    /// `--model small-cnn`.
    #[arg(long, conflicts_with = "model")]
    small_only: bool,
    /// The networks to time (comma-separated): small-cnn, preact-resnet18, resnet18, wrn-34-10
    /// [default: small-cnn,preact-resnet18; WRN-34-10 takes minutes per step on a CPU].
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<classwise_trainer::bench::BenchModel>().map_err(|e| e.to_string()))]
    model: Vec<classwise_trainer::bench::BenchModel>,
    /// What to time (comma-separated): pgd-at and trades (training steps), eval-pgd20 (a batch
    /// of `eval --attack pgd --steps 20`) [default: all three].
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<classwise_trainer::bench::Workload>().map_err(|e| e.to_string()))]
    workload: Vec<classwise_trainer::bench::Workload>,
    /// One JSON object per measurement on stdout (model, workload, batch, img_per_s,
    /// seconds_per_step, settings), the format of `tools/bench/reference.py`.
    #[arg(long, conflicts_with = "autoattack")]
    json: bool,
    /// Also print where the timed steps spend their time, phase by phase (the batch from the
    /// data, the attack's forward passes, input gradients and updates, the loss, the backward
    /// pass, the optimiser); CPU only. With --json, a `profile` list in every object.
    #[arg(long, conflicts_with = "autoattack")]
    profile: bool,
    /// Instead: time AutoAttack (standard) on this run's checkpoint, attack by attack.
    #[arg(long, value_name = "RUN")]
    autoattack: Option<PathBuf>,
    /// With --autoattack: best, last, ema, or a .safetensors file.
    #[arg(long, default_value = "last", requires = "autoattack")]
    checkpoint: String,
    /// With --autoattack: the first N test images of each class.
    #[arg(long, default_value_t = 10, requires = "autoattack")]
    test_per_class: usize,
    /// With --autoattack: AutoAttack's batch size.
    #[arg(long, default_value_t = 500, requires = "autoattack")]
    aa_batch_size: usize,
    /// With --autoattack: Square with the full forward pass at every query.
    #[arg(long, requires = "autoattack")]
    no_window: bool,
    /// With --autoattack: the AutoAttack parameters both sides run: the original's (100
    /// iterations of APGD and FAB-T) or torchattacks' defaults (10 iterations, Square's
    /// schedule rescaled).
    #[arg(long, value_enum, default_value = "original", requires = "autoattack")]
    settings: crate::aa_bench::Settings,
    /// The layout of the convolution kernels (as `eval --memory-format`) [default:
    /// channels-last, the training layout of the presets].
    #[arg(long, value_parser = |s: &str| s.parse::<MemoryFormat>())]
    memory_format: Option<MemoryFormat>,
    /// The arithmetic of the forward passes, as a run's `precision`: fp32 or bf16 (mixed
    /// precision; slow on most CPUs).
    #[arg(long, default_value = "fp32", value_parser = |s: &str| s.parse::<classwise_trainer::model::Precision>().map_err(|e| e.to_string()))]
    precision: classwise_trainer::model::Precision,
    /// Where to time: auto (CUDA when available), cpu or cuda.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<classwise_trainer::run::DeviceChoice>().map_err(|e| e.to_string()))]
    device: classwise_trainer::run::DeviceChoice,
    /// On CUDA, pick convolution algorithms by heuristics instead of cuDNN's autotuner (which a
    /// run uses unless its config sets `cudnn_benchmark = false`).
    #[arg(long)]
    no_cudnn_benchmark: bool,
    /// With --autoattack: the crosscheck venv's python (`bash tools/crosscheck/setup.sh`); also
    /// times torchattacks' AutoAttack (with --settings) on the same images and prints the
    /// ratio.
    #[arg(long, requires = "autoattack")]
    python: Option<PathBuf>,
    /// With --autoattack: where the reports and images go [default: <RUN>/bench-autoattack].
    #[arg(long, requires = "autoattack")]
    out: Option<PathBuf>,
    /// Directory holding the data sets [default: as `train`].
    #[arg(long, env = "CLASSWISE_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

pub fn train(a: &TrainArgs) -> anyhow::Result<ExitCode> {
    let config = RunConfig::from_file(&a.config, &a.set)
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
        interrupt_at: None,
        data_dir: a.data_dir.clone(),
        build: build_info(),
        diagnose: a.diagnose,
    };
    eprintln!("run {} in {}", config.name, out.display());
    train_run(&config, &out, opts)
}

/// Trains with SIGTERM, SIGUSR1 and Ctrl-C asking for a mid-epoch checkpoint; exits with
/// [`EXIT_INTERRUPTED`](classwise_trainer::interrupt::EXIT_INTERRUPTED) when one came.
fn train_run(
    config: &RunConfig,
    out: &std::path::Path,
    opts: TrainOptions,
) -> anyhow::Result<ExitCode> {
    classwise_trainer::interrupt::install()?;
    let summary = run::train(config, out, opts)?;
    if let Some(mid) = &summary.interrupted {
        eprintln!(
            "interrupted{} in epoch {} of {} before batch {}: checkpoint {} written; continue \
             with --resume",
            mid.signal
                .as_deref()
                .map(|s| format!(" by {s}"))
                .unwrap_or_default(),
            mid.epoch + 1,
            config.epochs,
            mid.progress.next_step,
            out.join("checkpoints").join(&mid.checkpoint).display()
        );
        return Ok(ExitCode::from(
            classwise_trainer::interrupt::EXIT_INTERRUPTED,
        ));
    }
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
    let dir = &RunDir(a.run.clone());
    let mut config = read_run_config(dir)?;
    if let Some(e) = &a.eps {
        config.eval.eps = run::Eps::parse(e)?;
    }
    if let Some(c) = a.robust_counting {
        config.eval.robust_counting = c;
    }
    if matches!(a.attack, Some(AttackKind::Autoattack)) {
        return autoattack(a, dir, &config);
    }
    if a.protocol {
        return protocol(a, dir, &config);
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
        Some(AttackKind::Autoattack) => unreachable!("handled by `autoattack` above"),
        Some(AttackKind::FlipSteps) => config.eval.attack,
    };
    config.eval.attack.validate().map_err(|e| {
        anyhow::anyhow!("{}", e.in_section("eval")).context("--attack, --steps, --step or --inv-t")
    })?;
    let device = config.device.device()?;
    let format = a.memory_format.unwrap_or(config.memory_format);
    let model = load_eval_model(dir, &a.checkpoint, device, format)?;
    let test_full = data::load(&config.data.source, Part::Test, a.data_dir.as_deref())?;
    let (test, _) = test_subset(a, &config, &test_full)?;
    let flip = match a.attack {
        Some(AttackKind::FlipSteps) => {
            let flip = EarlyStoppedPgd::steps_to_flip(steps, step);
            flip.validate()
                .map_err(|e| anyhow::anyhow!("{e}").context("--steps or --step"))?;
            Some(flip)
        }
        _ => None,
    };
    let report = classwise_trainer::seed::seeded(run::report_seed(&config), || match &flip {
        Some(f) => run::evaluate_with(&model, &test, &config, f, device),
        None => run::evaluate_on(&model, &test, &config, device),
    })?;
    let stem = eval_file_stem(a, &report.attack, &config.eval);
    let (json, md) = free_paths(&dir.0, &stem);
    write_json(&json, "evaluation", &report)?;
    classwise_trainer::io::write_atomic(&md, markdown(&report).as_bytes())?;
    report.write_predictions(&json)?;
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
/// attack with its settings, ε, the robust counting and the test subset when --test-per-class
/// chose it, e.g.
/// `eval-last-pgd-20_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial`.
fn eval_file_stem(
    a: &EvalArgs,
    attack: &str,
    eval: &classwise_trainer::run::config::EvalConfig,
) -> String {
    let (checkpoint, subset) = stem_parts(a);
    format!(
        "eval-{checkpoint}-{}-eps_{}-{}{subset}",
        slug(attack),
        slug(&eval.eps.text),
        eval.robust_counting.name()
    )
}

/// The checkpoint and test-subset parts of an evaluation's file name: `last` (or `file-<path>`)
/// and `-<N>_per_class` when --test-per-class chose the images.
fn stem_parts(a: &EvalArgs) -> (String, String) {
    let checkpoint = match a.checkpoint.as_str() {
        "best" | "last" | "ema" | "fawa" | "best-ema" | "best-fawa" => a.checkpoint.clone(),
        path => format!("file-{}", slug(path)),
    };
    let subset = a
        .test_per_class
        .map(|n| format!("-{n}_per_class"))
        .unwrap_or_default();
    (checkpoint, subset)
}

/// The model of `checkpoint` in `dir`, its kernels laid out in `format`, for evaluation.
pub(crate) fn load_eval_model(
    dir: &RunDir,
    checkpoint: &str,
    device: tch::Device,
    format: MemoryFormat,
) -> anyhow::Result<classwise_trainer::model::Model> {
    let mut model = dir.load_model(checkpoint, device)?;
    model
        .set_memory_format(format)
        .with_context(|| format!("laying the kernels out {}", format.name()))?;
    Ok(model)
}

/// The test images evaluated: the first --test-per-class of each class in file order, or the
/// run's test subset.
fn test_subset(
    a: &EvalArgs,
    config: &RunConfig,
    test_full: &data::Dataset,
) -> anyhow::Result<(data::Dataset, Vec<i64>)> {
    let n = match a.test_per_class {
        Some(n) => Some(usize::try_from(n)?),
        None => config.data.test_per_class,
    };
    head_subset(test_full, n)
}

/// The first `n` test images of each class in file order (all of them when `n` is `None`) and
/// their indices in `test_full`.
pub(crate) fn head_subset(
    test_full: &data::Dataset,
    n: Option<usize>,
) -> anyhow::Result<(data::Dataset, Vec<i64>)> {
    let indices = run::head_per_class_indices(test_full, n);
    Ok((test_full.subset(&indices)?, indices))
}

/// The configuration a run directory was trained with (`<run>/config.toml`).
pub(crate) fn read_run_config(dir: &RunDir) -> anyhow::Result<RunConfig> {
    let text = std::fs::read_to_string(dir.config())
        .with_context(|| format!("reading {}", dir.config().display()))?;
    RunConfig::from_toml(&text).with_context(|| format!("{}", dir.config().display()))
}

/// `classwise eval --attack autoattack`: the cascade on the test subset, resumable from
/// `<run>/<report stem>.partial/`.
fn autoattack(a: &EvalArgs, dir: &RunDir, config: &RunConfig) -> anyhow::Result<ExitCode> {
    // `eval` has applied --eps and --robust-counting to the config.
    let mut eval = config.eval.clone();
    anyhow::ensure!(
        a.robust_counting != Some(RobustCounting::AdversarialOnly),
        "--robust-counting adversarial-only: AutoAttack counts a point misclassified clean as \
         not robust and never attacks it (use clean-and-adversarial)"
    );
    eval.robust_counting = RobustCounting::CleanAndAdversarial;
    let spec = AutoAttackSpec {
        version: a.version,
        attacks: a.attacks.clone(),
    };
    spec.validate().context("--attacks")?;
    let device = config.device.device()?;
    let format = a.memory_format.unwrap_or(MemoryFormat::ChannelsLast);
    let model = load_eval_model(dir, &a.checkpoint, device, format)?;
    let test_full = data::load(&config.data.source, Part::Test, a.data_dir.as_deref())?;
    let (test, indices) = test_subset(a, config, &test_full)?;
    let stem = eval_file_stem(a, &spec.describe(), &eval);
    let partial = dir.0.join(format!("{stem}.partial"));
    let cascade = Cascade {
        label: spec.label().to_string(),
        steps: spec.steps(),
        eps: eval.eps.value,
        batch_size: usize::try_from(a.batch_size)?,
        seed: run::report_seed(config) as u64,
        randomized: spec.randomized(),
        state_dir: Some(&partial),
        model_id: model.fingerprint()?,
        notes: spec.class_warnings(test.num_classes()),
        verbose: true,
    };
    eprintln!(
        "{} at eps = {} on {} test images ({}); state in {}",
        spec.describe(),
        eval.eps.text,
        test.len(),
        test.origin().description,
        partial.display()
    );
    let out = cascade.run(&model, &test, device)?;
    let (json, md) = free_paths(&dir.0, &stem);
    write_json(&json, "autoattack report", &out.report)?;
    let text = classwise_trainer::eval::autoattack::markdown(&out.report);
    classwise_trainer::io::write_atomic(&md, text.as_bytes())?;
    out.report.evaluation.write_predictions(&json)?;
    if a.save_adv {
        let path = json.with_file_name(format!(
            "{}-adv.safetensors",
            json.file_stem().unwrap_or_default().to_string_lossy()
        ));
        save_adversarial(&path, &test, &indices, &out, &eval.eps, &spec, &model)?;
        eprintln!("wrote {}", path.display());
    }
    std::fs::remove_dir_all(&partial)
        .with_context(|| format!("removing the finished state {}", partial.display()))?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out.report)?);
    } else {
        println!("{text}");
    }
    eprintln!("wrote {} and {}", json.display(), md.display());
    Ok(ExitCode::SUCCESS)
}

/// `classwise eval --protocol`: the configuration's `[[eval.protocol]]` into one report;
/// AutoAttack entries resume from `<run>/<report stem>.partial/entry-<i>/`.
fn protocol(a: &EvalArgs, dir: &RunDir, config: &RunConfig) -> anyhow::Result<ExitCode> {
    use classwise_trainer::eval::protocol::{self, ProtocolOptions};
    anyhow::ensure!(
        !config.eval.protocol.is_empty(),
        "{}: no [[eval.protocol]] entries (list the paper's final evaluation there, e.g. \
         attack = \"autoattack\"; see the presets in configs/)",
        dir.config().display()
    );
    anyhow::ensure!(
        a.robust_counting != Some(RobustCounting::AdversarialOnly),
        "--robust-counting adversarial-only: the protocol counts robust points as AutoAttack does"
    );
    let eps = config.eval.eps.clone(); // with --eps applied by `eval`
    let device = config.device.device()?;
    let format = a.memory_format.unwrap_or(config.memory_format);
    let model = load_eval_model(dir, &a.checkpoint, device, format)?;
    let test_full = data::load(&config.data.source, Part::Test, a.data_dir.as_deref())?;
    let (test, _) = test_subset(a, config, &test_full)?;
    let (checkpoint, subset) = stem_parts(a);
    let stem = format!("eval-{checkpoint}-protocol-eps_{}{subset}", slug(&eps.text));
    let partial = dir.0.join(format!("{stem}.partial"));
    let opts = ProtocolOptions {
        default_eps: &eps,
        batch_size: config.batch_size,
        autoattack_batch_size: usize::try_from(a.batch_size)?,
        seed: run::report_seed(config) as u64,
        state_dir: Some(&partial),
        model_id: model.fingerprint()?,
        verbose: true,
    };
    let report = protocol::run(&model, &test, &config.eval.protocol, &opts, device)?;
    let (json, md) = free_paths(&dir.0, &stem);
    write_json(&json, "protocol report", &report)?;
    let text = protocol::markdown(&report);
    classwise_trainer::io::write_atomic(&md, text.as_bytes())?;
    if partial.exists() {
        std::fs::remove_dir_all(&partial)
            .with_context(|| format!("removing the finished state {}", partial.display()))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{text}");
    }
    eprintln!("wrote {} and {}", json.display(), md.display());
    Ok(ExitCode::SUCCESS)
}

/// The evaluated images with their adversarial examples, for re-evaluation elsewhere
/// (`tools/crosscheck`): `x`, `x_adv` (f32), `y`, `index` (position in the test file), `logits`
/// (clean), `robust` (u8), and metadata `eps`, `eps_value`, `version`, `attacks`, `model_spec`.
pub(crate) fn save_adversarial(
    path: &std::path::Path,
    test: &data::Dataset,
    indices: &[i64],
    out: &classwise_trainer::eval::autoattack::CascadeOutcome,
    eps: &run::Eps,
    spec: &AutoAttackSpec,
    model: &classwise_trainer::model::Model,
) -> anyhow::Result<()> {
    let all: Vec<i64> = (0..test.len() as i64).collect();
    let (x, y) = test.batch(&all, tch::Device::Cpu)?;
    let robust: Vec<u8> = out.robust.iter().map(|&r| u8::from(r)).collect();
    let index = tch::Tensor::from_slice(indices);
    let tensors = vec![
        ("x".to_string(), x),
        ("x_adv".to_string(), out.x_adv.shallow_clone()),
        ("y".to_string(), y),
        ("index".to_string(), index),
        (
            "logits".to_string(),
            classwise_trainer::eval::autoattack::clean_logits(model, test, 500, model.device())?,
        ),
        ("robust".to_string(), tch::Tensor::from_slice(&robust)),
    ];
    let names: Vec<&str> = spec.attacks().iter().map(|a| a.name()).collect();
    let metadata = std::collections::BTreeMap::from([
        ("eps".to_string(), eps.text.clone()),
        ("eps_value".to_string(), format!("{:?}", eps.value)),
        ("version".to_string(), spec.label().to_string()),
        ("attacks".to_string(), names.join(",")),
        (
            "model_spec".to_string(),
            serde_json::to_string(model.spec())?,
        ),
    ]);
    classwise_trainer::model::safetensors::write(path, &tensors, &metadata)?;
    Ok(())
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
    if let Some(run) = &a.autoattack {
        anyhow::ensure!(
            a.test_per_class >= 1 && a.aa_batch_size >= 1,
            "--test-per-class and --aa-batch-size must be >= 1"
        );
        crate::aa_bench::run(&crate::aa_bench::AaBench {
            run,
            checkpoint: &a.checkpoint,
            test_per_class: a.test_per_class,
            batch_size: a.aa_batch_size,
            no_window: a.no_window,
            memory_format: a.memory_format.unwrap_or(MemoryFormat::ChannelsLast),
            settings: a.settings,
            python: a.python.as_deref(),
            data_dir: a.data_dir.as_deref(),
            out: a
                .out
                .clone()
                .unwrap_or_else(|| run.join("bench-autoattack")),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    use classwise_trainer::bench::{BenchModel, BenchPlan, Workload};
    let models = if a.small_only {
        vec![BenchModel::SmallCnn]
    } else if a.model.is_empty() {
        BenchModel::DEFAULT.to_vec()
    } else {
        a.model.clone()
    };
    let plan = BenchPlan {
        models,
        workloads: if a.workload.is_empty() {
            Workload::ALL.to_vec()
        } else {
            a.workload.clone()
        },
        batch: a.batch,
        steps: a.steps,
        memory_format: a.memory_format.unwrap_or(MemoryFormat::RUN_DEFAULT),
        precision: a.precision,
        cudnn_benchmark: !a.no_cudnn_benchmark,
        device: a.device.device()?,
        profile: a.profile,
    };
    if !a.json {
        println!(
            "device {:?}{}, {}, {} threads, {}, batch {}, {} timed steps after 1 warm-up, {} kernels",
            plan.device,
            if plan.device.is_cuda() {
                format!(", cudnn.benchmark {}", plan.cudnn_benchmark)
            } else {
                String::new()
            },
            plan.precision,
            tch::get_num_threads(),
            classwise_trainer::runtime::current(),
            plan.batch,
            plan.steps,
            plan.memory_format.name()
        );
    }
    let mut failed = None;
    classwise_trainer::bench::run(&plan, |row| {
        if a.json {
            match serde_json::to_string(row) {
                Ok(line) => println!("{line}"),
                Err(e) => failed = Some(e),
            }
        } else {
            println!(
                "{:<40} {:<10} {:>8.3} s/step {:>9.1} img/s",
                row.model_description,
                row.workload.name(),
                row.seconds_per_step,
                row.img_per_s
            );
            for phase in row.profile.iter().flatten() {
                let depth = phase.phase.matches('/').count();
                let name = phase.phase.rsplit('/').next().unwrap_or(&phase.phase);
                println!(
                    "    {:indent$}{:<w$} {:>8.4} s/step {:>6.1}% {:>6.1} calls/step",
                    "",
                    name,
                    phase.seconds_per_step,
                    100.0 * phase.share,
                    phase.calls_per_step,
                    indent = 2 * depth,
                    w = 24 - 2 * depth,
                );
            }
        }
    })?;
    if let Some(e) = failed {
        anyhow::bail!("bench: could not write a measurement as JSON: {e}");
    }
    Ok(ExitCode::SUCCESS)
}
