//! `classwise zoo` (the catalogue of published models and their class-wise leaderboard) and
//! `classwise export` (a run's model as a PyTorch state dict with a card).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use classwise_core::name::slug;
use classwise_trainer::data::DataSource;
use classwise_trainer::run::RunDir;
use classwise_trainer::data::DatasetId;
use classwise_trainer::model::Model;
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

/// The model to export with its name, data set and ε.
fn export_subject(a: &ExportArgs) -> anyhow::Result<(Model, String, Option<DatasetId>, String)> {
    if let Some(path) = &a.card {
        let card = ModelCard::read(path)?;
        let source = CardSource { card: card.clone(), device: Device::Cpu, out_dir: PathBuf::new(), origin: Some(path.clone()) };
        return Ok((source.load()?, card.name, Some(card.dataset), card.eps));
    }
    let run = a.run.clone().unwrap_or_default();
    let dir = RunDir(run.clone());
    let config = dir.read_config()?;
    let model = dir.load_model(&a.checkpoint, Device::Cpu)?;
    let dataset = match &config.data.source {
        DataSource::Files { id, .. } => Some(*id),
        DataSource::Synthetic(_) => None,
    };
    let run_name = run.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let name = format!("{}-{}", slug(&run_name), slug(&a.checkpoint));
    Ok((model, name, dataset, config.eval.eps.text))
}

/// `classwise export`.
pub fn export(a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let (model, name, dataset, eps) = export_subject(a)?;
    let out = export::export(&model, &a.out, &name, dataset, &eps)?;
    eprintln!("wrote {} ({})", out.weights.display(), model.spec().describe());
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
}

pub fn run(command: ZooCommand) -> anyhow::Result<ExitCode> {
    match command {
        ZooCommand::List { dataset } => list(dataset.as_deref()),
    }
}

fn list(dataset: Option<&str>) -> anyhow::Result<ExitCode> {
    let cat = Catalogue::builtin()?;
    let keep = |d| dataset.is_none_or(|want| catalogue::slug(d) == want);
    println!("| data set | name | architecture | normalisation | clean % | AutoAttack % |");
    println!("|---|---|---|---|---|---|");
    for e in cat.model.iter().filter(|e| keep(e.dataset)) {
        let norm = e.normalization.as_ref().map_or("none".to_owned(), |n| n.describe());
        let (ds, arch) = (catalogue::slug(e.dataset), e.architecture.name());
        println!("| {ds} | {} | {arch} | {norm} | {:.2} | {:.2} |", e.name, e.clean_acc, e.autoattack_acc);
    }
    println!("\nNot buildable by classwise:\n");
    for u in cat.unsupported.iter().filter(|u| keep(u.dataset)) {
        println!("- {}/{} ({}): {}", catalogue::slug(u.dataset), u.name, u.architecture_text, u.reason);
    }
    Ok(ExitCode::SUCCESS)
}
