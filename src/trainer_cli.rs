//! `classwise train`, `classwise eval` and `classwise bench`: the libtorch trainer.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use classwise_core::name::slug;
use classwise_trainer::bench::{
    self, AaBench, AaSettings, BenchModel, BenchPlan, Reference, Workload,
};
use classwise_trainer::eval::ModelSource;
use classwise_trainer::eval::autoattack::{AaAttack, Version};
use classwise_trainer::eval::job::{self, AttackChoice, AutoAttackJob, EvalJob, EvalRequest};
use classwise_trainer::eval::{RobustCounting, markdown};
use classwise_trainer::model::MemoryFormat;
use classwise_trainer::run::{self, RunConfig, RunDir, TrainOptions};
use classwise_trainer::zoo::catalogue;
use classwise_trainer::zoo::{CardSource, Catalogue, ModelCard};

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
#[command(group(clap::ArgGroup::new("model").required(true).args(["run", "card", "zoo"])))]
pub struct EvalArgs {
    /// Run directory written by `classwise train`.
    #[arg(long)]
    run: Option<PathBuf>,
    /// A model card (TOML): weights another library wrote, with their architecture,
    /// normalisation, data set and ε (the book's chapter on published models).
    #[arg(long)]
    card: Option<PathBuf>,
    /// A model of the catalogue (RobustBench's CIFAR-10/100 L∞ zoo, `classwise zoo --list`),
    /// e.g. Carmon2019Unlabeled or cifar100/Rice2020Overfitting; with --weights.
    #[arg(long, requires = "weights")]
    zoo: Option<String>,
    /// The weights of the --zoo model: its `torch.save` file (.pt/.pth) or safetensors.
    #[arg(long, requires = "zoo")]
    weights: Option<PathBuf>,
    /// Where the reports of a --card or --zoo model go [default: eval-<name>/ next to the
    /// card; zoo-eval/<dataset>-<name>/ for --zoo].
    #[arg(long, conflicts_with = "run")]
    out: Option<PathBuf>,
    /// The device of a --card or --zoo evaluation: auto (CUDA when available), cpu or cuda.
    #[arg(long, default_value = "auto", conflicts_with = "run", value_parser = |s: &str| s.parse::<classwise_trainer::run::DeviceChoice>().map_err(|e| e.to_string()))]
    device: classwise_trainer::run::DeviceChoice,
    /// last | best | ema, fawa (the last epoch's weight averages) | best-ema, best-fawa (the
    /// selected averages) | a path to model weights (of the run's architecture).
    #[arg(long, default_value = "last", conflicts_with_all = ["card", "zoo"])]
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
    #[command(flatten)]
    autoattack: AutoAttackArgs,
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

/// AutoAttack's options, shared by `eval` and `zoo run`.
#[derive(Args)]
pub struct AutoAttackArgs {
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
}

impl AutoAttackArgs {
    /// The AutoAttack job of these options.
    pub fn job(&self, save_adv: bool) -> anyhow::Result<AutoAttackJob> {
        Ok(AutoAttackJob {
            version: self.version,
            attacks: self.attacks.clone(),
            batch_size: usize::try_from(self.batch_size)?,
            save_adv,
        })
    }
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
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<BenchModel>().map_err(|e| e.to_string()))]
    model: Vec<BenchModel>,
    /// What to time (comma-separated): pgd-at and trades (training steps), eval-pgd20 (a batch
    /// of `eval --attack pgd --steps 20`) [default: all three].
    #[arg(long, value_delimiter = ',', value_parser = |s: &str| s.parse::<Workload>().map_err(|e| e.to_string()))]
    workload: Vec<Workload>,
    /// One JSON object per measurement on stdout (model, workload, batch, img_per_s,
    /// seconds_per_step, settings), the format of `tools/bench/reference.py`.
    #[arg(long, conflicts_with = "autoattack")]
    json: bool,
    /// Also print where the timed steps spend their time, phase by phase (the batch from the
    /// data, the attack's forward passes, input gradients and updates, the loss, the backward
    /// pass, the optimiser); CPU only. With --json, a `profile` list in every object.
    #[arg(long, conflicts_with = "autoattack")]
    profile: bool,
    /// Instead: time AutoAttack (standard) attack by attack, on a run's checkpoint (a run
    /// directory) or on the model of a model card (a .toml file).
    #[arg(long, value_name = "RUN|CARD")]
    autoattack: Option<PathBuf>,
    /// Instead: time loading the weights of this model card (a PyTorch checkpoint or
    /// safetensors) and measure the process's peak memory; one JSON line
    /// (`tools/zoo/bench_load.py` sets it beside `torch.load`).
    #[arg(long, value_name = "CARD", conflicts_with_all = ["autoattack", "json", "profile"])]
    import: Option<PathBuf>,
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
    #[arg(long, default_value = "original", requires = "autoattack", value_parser = |s: &str| s.parse::<AaSettings>().map_err(|e| e.to_string()))]
    settings: AaSettings,
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
    /// times the Python AutoAttacks of --against on the same images and prints the ratios.
    #[arg(long, requires = "autoattack")]
    python: Option<PathBuf>,
    /// With --python: which Python AutoAttacks to time (comma-separated): torchattacks (with
    /// --settings), pyautoattack (the original, fra31's code; --settings original only).
    #[arg(long, value_delimiter = ',', default_value = "torchattacks", requires = "python", value_parser = |s: &str| s.parse::<Reference>().map_err(|e| e.to_string()))]
    against: Vec<Reference>,
    /// With --autoattack: where the reports and images go [default: <RUN>/bench-autoattack, or
    /// bench-autoattack-<card name> beside a card].
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
    let out = job::run(eval_source(a)?.as_ref(), &eval_request(a)?)?;
    if a.json {
        println!("{}", out.json);
    } else {
        println!("{}", out.markdown);
    }
    for other in &out.other_files {
        eprintln!("wrote {}", other.display());
    }
    let (json, md) = (out.json_path.display(), out.markdown_path.display());
    eprintln!("wrote {json} and {md}");
    Ok(ExitCode::SUCCESS)
}

/// The model source `classwise eval` names: a run, a card, or a catalogue entry with weights.
fn eval_source(a: &EvalArgs) -> anyhow::Result<Box<dyn ModelSource>> {
    if let Some(run) = &a.run {
        return Ok(Box::new(RunDir(run.clone())));
    }
    let device = a.device.device()?;
    let (card, origin, default_out) = match (&a.card, &a.zoo, &a.weights) {
        (Some(path), _, _) => {
            let card = ModelCard::read(path)?;
            let dir = path.parent().unwrap_or(Path::new("."));
            let out = dir.join(format!("eval-{}", slug(&card.name)));
            (card, Some(path.clone()), out)
        }
        (None, Some(name), Some(weights)) => {
            let entry = Catalogue::builtin()?.find(name, None)?.clone();
            let out = Path::new("zoo-eval").join(format!(
                "{}-{}",
                catalogue::slug(entry.dataset),
                slug(&entry.name)
            ));
            (entry.card(weights), None, out)
        }
        _ => anyhow::bail!("eval needs --run, --card, or --zoo with --weights"),
    };
    let out_dir = a.out.clone().unwrap_or(default_out);
    Ok(Box::new(CardSource::new(card, device, out_dir, origin)))
}

/// The library's request for `classwise eval`'s arguments.
fn eval_request(a: &EvalArgs) -> anyhow::Result<EvalRequest> {
    let (steps, step) = (usize::try_from(a.steps)?, a.step);
    let job = match (a.protocol, a.attack) {
        (true, _) => EvalJob::Protocol {
            autoattack_batch_size: usize::try_from(a.autoattack.batch_size)?,
        },
        (false, Some(AttackKind::Autoattack)) => EvalJob::AutoAttack(a.autoattack.job(a.save_adv)?),
        (false, kind) => EvalJob::Attack(match kind {
            None | Some(AttackKind::Autoattack) => AttackChoice::Configured,
            Some(AttackKind::Pgd) => AttackChoice::Pgd { steps, step },
            Some(AttackKind::Fgsm) => AttackChoice::Fgsm,
            Some(AttackKind::FgsmRs) => AttackChoice::FgsmRs { step },
            Some(AttackKind::Cw) => AttackChoice::Cw { steps, step },
            Some(AttackKind::Temperature) => AttackChoice::Temperature {
                steps,
                step,
                inv_t: a.inv_t,
            },
            Some(AttackKind::FlipSteps) => AttackChoice::FlipSteps { steps, step },
        }),
    };
    Ok(EvalRequest {
        checkpoint: a.checkpoint.clone(),
        eps: a.eps.clone(),
        robust_counting: a.robust_counting,
        test_per_class: a.test_per_class.map(usize::try_from).transpose()?,
        memory_format: a.memory_format,
        data_dir: a.data_dir.clone(),
        job,
    })
}

pub fn bench(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(card) = &a.import {
        let card = classwise_trainer::zoo::ModelCard::read(card)?;
        println!("{}", serde_json::to_string(&bench::import::run(&card)?)?);
        return Ok(ExitCode::SUCCESS);
    }
    match &a.autoattack {
        Some(run) => bench_autoattack(a, run),
        None => bench_steps(a),
    }
}

/// `bench --autoattack RUN|CARD`: AutoAttack's seconds, and the Python AutoAttacks' with
/// `--python`.
fn bench_autoattack(a: &BenchArgs, path: &Path) -> anyhow::Result<ExitCode> {
    let (source, out) = bench_source(a, path)?;
    let b = AaBench {
        checkpoint: &a.checkpoint,
        test_per_class: a.test_per_class,
        batch_size: a.aa_batch_size,
        no_window: a.no_window,
        memory_format: a.memory_format.unwrap_or(MemoryFormat::ChannelsLast),
        settings: a.settings,
        python: a.python.as_deref(),
        references: &a.against,
        data_dir: a.data_dir.as_deref(),
        out,
    };
    let outcome = bench::autoattack::run(source.as_ref(), &b, |line| println!("{line}"))?;
    print!("{outcome}");
    Ok(ExitCode::SUCCESS)
}

/// The model `bench --autoattack` times: a run directory, or a card (a file), with the output
/// directory: `--out`, else `<RUN>/bench-autoattack` or `bench-autoattack-<card name>` beside
/// the card.
fn bench_source(a: &BenchArgs, path: &Path) -> anyhow::Result<(Box<dyn ModelSource>, PathBuf)> {
    if !path.is_file() {
        let out = a
            .out
            .clone()
            .unwrap_or_else(|| path.join("bench-autoattack"));
        return Ok((Box::new(RunDir(path.to_path_buf())), out));
    }
    let card = ModelCard::read(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let default_out = dir.join(format!("bench-autoattack-{}", slug(&card.name)));
    let out = a.out.clone().unwrap_or(default_out);
    let origin = Some(path.to_path_buf());
    let source = CardSource::new(card, a.device.device()?, out.clone(), origin);
    Ok((Box::new(source), out))
}

/// `bench`: the training and evaluation steps' speeds, as text or JSON lines.
fn bench_steps(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let plan = bench_plan(a)?;
    if !a.json {
        println!("{plan}");
    }
    let mut failed = None;
    bench::run(&plan, |row| match a.json {
        false => println!("{row}"),
        true => match serde_json::to_string(row) {
            Ok(line) => println!("{line}"),
            Err(e) => failed = Some(e),
        },
    })?;
    if let Some(e) = failed {
        anyhow::bail!("bench: could not write a measurement as JSON: {e}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What `bench` times: the models and workloads asked for (all by default).
fn bench_plan(a: &BenchArgs) -> anyhow::Result<BenchPlan> {
    let models = match (a.small_only, a.model.is_empty()) {
        (true, _) => vec![BenchModel::SmallCnn],
        (false, true) => BenchModel::DEFAULT.to_vec(),
        (false, false) => a.model.clone(),
    };
    let workloads = match a.workload.is_empty() {
        true => Workload::ALL.to_vec(),
        false => a.workload.clone(),
    };
    Ok(BenchPlan {
        models,
        workloads,
        batch: a.batch,
        steps: a.steps,
        memory_format: a.memory_format.unwrap_or(MemoryFormat::RUN_DEFAULT),
        precision: a.precision,
        cudnn_benchmark: !a.no_cudnn_benchmark,
        device: a.device.device()?,
        profile: a.profile,
    })
}
