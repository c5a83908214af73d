//! `classwise zoo` (the catalogue of published models and their class-wise leaderboard) and
//! `classwise export` (a run's model as a PyTorch state dict with a card).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use classwise_core::name::slug;
use classwise_core::record::Reported;
use classwise_trainer::data::DataSource;
use classwise_trainer::eval::job::{EvalJob, EvalRequest};

use crate::trainer_cli::AutoAttackArgs;
use classwise_trainer::model::Model;
use classwise_trainer::run::DeviceChoice;
use classwise_trainer::run::RunDir;
use classwise_trainer::zoo::export::CardFacts;
use classwise_trainer::zoo::leaderboard::{self, Arena, Contender};
use classwise_trainer::zoo::{CardSource, Catalogue, ModelCard, catalogue, export};
use tch::Device;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("model").required(true).args(["run", "card"])))]
pub struct ExportArgs {
    /// Run directory written by `classwise train`.
    #[arg(long)]
    run: Option<PathBuf>,
    /// last | best | ema, fawa | best-ema, best-fawa | a path to weights of the run's
    /// architecture.
    #[arg(long, default_value = "last", conflicts_with = "card")]
    checkpoint: String,
    /// A model card instead of a run: converts its weights (e.g. a `torch.save` file) to
    /// safetensors with the reference names.
    #[arg(long)]
    card: Option<PathBuf>,
    /// The safetensors file to write (a card goes to FILE.card.toml when the run's data set
    /// is CIFAR-10/100, Fashion-MNIST or Tiny-ImageNet).
    #[arg(long)]
    out: PathBuf,
}

/// The model of a card to export, with what the card says.
fn card_subject(path: &std::path::Path) -> anyhow::Result<(Model, CardFacts)> {
    let card = ModelCard::read(path)?;
    let source = CardSource::new(card.clone(), Device::Cpu, PathBuf::new(), Some(path.into()));
    let facts = CardFacts {
        name: card.name.clone(),
        dataset: Some(card.dataset),
        eps: card.eps.clone(),
        source: format!(
            "classwise export of the card {} ({})",
            path.display(),
            card.source
        ),
    };
    Ok((source.load()?, facts))
}

/// The model of a run to export, with what its card will say.
fn run_subject(run: &std::path::Path, checkpoint: &str) -> anyhow::Result<(Model, CardFacts)> {
    let dir = RunDir(run.to_path_buf());
    let config = dir.read_config()?;
    let model = dir.load_model(checkpoint, Device::Cpu)?;
    let dataset = match &config.data.source {
        DataSource::Files { id, .. } => Some(*id),
        DataSource::Synthetic(_) => None,
    };
    let run_name = run.file_name().map(|n| n.to_string_lossy().into_owned());
    let facts = CardFacts {
        name: format!(
            "{}-{}",
            slug(&run_name.unwrap_or_default()),
            slug(checkpoint)
        ),
        dataset,
        eps: config.eval.eps.text,
        source: format!(
            "classwise export of the run {} (checkpoint {checkpoint})",
            run.display()
        ),
    };
    Ok((model, facts))
}

/// `classwise export`.
pub fn export(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let (model, facts) = match (&a.card, &a.run) {
        (Some(card), _) => card_subject(card)?,
        (None, Some(run)) => run_subject(run, &a.checkpoint)?,
        (None, None) => anyhow::bail!("export needs --run or --card"),
    };
    let out = export::export(&model, &a.out, &facts)?;
    eprintln!(
        "wrote {} ({})",
        out.weights.display(),
        model.spec().describe()
    );
    match out.card {
        Some(card) => eprintln!("wrote {}", card.display()),
        None => eprintln!("no card: the run's data set is synthetic (a card names a data set)"),
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Subcommand)]
pub enum ZooCommand {
    /// The catalogue: RobustBench's CIFAR-10/100 L∞ models classwise can build (architecture,
    /// normalisation, reported clean and AutoAttack accuracy), and those it cannot, with why.
    List {
        /// Only this data set (cifar10 or cifar100).
        #[arg(long)]
        dataset: Option<String>,
    },
    /// A class-wise leaderboard: evaluate models (cards, or catalogue names with their
    /// weights) on one data set with AutoAttack, resumable per model and per batch, and write
    /// one table (per-class clean and robust accuracy, worst class, spread, rank by average
    /// against rank by worst class, the reported accuracy beside ours) and its figures.
    Run(RunArgs),
}

pub fn run(command: ZooCommand) -> anyhow::Result<ExitCode> {
    match command {
        ZooCommand::List { dataset } => list(dataset.as_deref()),
        ZooCommand::Run(a) => leaderboard(&a),
    }
}

#[derive(Args)]
pub struct RunArgs {
    /// A model card (repeatable).
    #[arg(long)]
    card: Vec<PathBuf>,
    /// A catalogue model with its weights, NAME=FILE (repeatable), e.g.
    /// Carmon2019Unlabeled=weights/Carmon2019Unlabeled.pt.
    #[arg(long, value_name = "NAME=FILE")]
    zoo: Vec<String>,
    /// The leaderboard's directory (one sub-directory per model; rerun to resume).
    #[arg(long, default_value = "zoo-leaderboard")]
    out: PathBuf,
    /// Evaluate the first N test images of each class [default: the whole test set].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    test_per_class: Option<u64>,
    #[command(flatten)]
    autoattack: AutoAttackArgs,
    /// Directory holding the data sets.
    #[arg(long, env = "CLASSWISE_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// auto (CUDA when available), cpu or cuda.
    #[arg(long, default_value = "auto", value_parser = |s: &str| s.parse::<DeviceChoice>().map_err(|e| e.to_string()))]
    device: DeviceChoice,
}

/// The contenders of `zoo run`: cards, then catalogue entries with their weights.
fn contenders(a: &RunArgs, cat: &Catalogue) -> anyhow::Result<Vec<Contender>> {
    let reported = |e: &catalogue::Entry| Reported {
        clean: e.clean_acc,
        robust: e.autoattack_acc,
        source: e.source.clone(),
    };
    let mut out = Vec::new();
    for path in &a.card {
        let card = ModelCard::read(path)?;
        let name = card.catalogue.clone().unwrap_or_else(|| card.name.clone());
        let entry = cat.find(&name, Some(card.dataset)).ok();
        out.push(Contender {
            reported: entry.map(reported),
            card,
        });
    }
    for pair in &a.zoo {
        let (name, file) = pair
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--zoo {pair}: expected NAME=FILE"))?;
        let entry = cat.find(name, None)?;
        out.push(Contender {
            card: entry.card(std::path::Path::new(file)),
            reported: Some(reported(entry)),
        });
    }
    Ok(out)
}

/// `classwise zoo run`.
fn leaderboard(a: &RunArgs) -> anyhow::Result<ExitCode> {
    let cat = Catalogue::builtin()?;
    let contenders = contenders(a, &cat)?;
    let request = EvalRequest {
        checkpoint: String::new(),
        eps: None,
        robust_counting: None,
        test_per_class: a.test_per_class.map(usize::try_from).transpose()?,
        memory_format: None,
        data_dir: a.data_dir.clone(),
        job: EvalJob::AutoAttack(a.autoattack.job(false)?),
    };
    std::fs::create_dir_all(&a.out)?;
    let arena = Arena {
        request,
        device: a.device.device()?,
        out: a.out.clone(),
        data: None,
    };
    let board = leaderboard::run(&contenders, &arena)?;
    let figures = a.out.join("figures");
    classwise_figures::zoo::render_all(&board, &figures)?;
    print!("{}", std::fs::read_to_string(a.out.join("leaderboard.md"))?);
    eprintln!(
        "wrote {} (leaderboard.json, leaderboard.md) and {}",
        a.out.display(),
        figures.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn list(dataset: Option<&str>) -> anyhow::Result<ExitCode> {
    let cat = Catalogue::builtin()?;
    let keep = |d| dataset.is_none_or(|want| catalogue::slug(d) == want);
    println!("| data set | name | architecture | normalisation | clean % | AutoAttack % |");
    println!("|---|---|---|---|---|---|");
    for e in cat.model.iter().filter(|e| keep(e.dataset)) {
        let norm = e
            .normalization
            .as_ref()
            .map_or("none".to_owned(), |n| n.describe());
        let (ds, arch) = (catalogue::slug(e.dataset), e.architecture.name());
        println!(
            "| {ds} | {} | {arch} | {norm} | {:.2} | {:.2} |",
            e.name, e.clean_acc, e.autoattack_acc
        );
    }
    println!("\nNot buildable by classwise:\n");
    for u in cat.unsupported.iter().filter(|u| keep(u.dataset)) {
        println!(
            "- {}/{} ({}): {}",
            catalogue::slug(u.dataset),
            u.name,
            u.architecture_text,
            u.reason
        );
    }
    Ok(ExitCode::SUCCESS)
}
