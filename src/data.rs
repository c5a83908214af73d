//! `classwise data`: data-set chores. `synth` writes learnable synthetic stand-ins for CIFAR-10,
//! CIFAR-100 and Tiny-ImageNet in their real formats ([`classwise_trainer::data::synth`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use classwise_trainer::data::DatasetId;
use classwise_trainer::data::synth::{self, SynthSpec};

#[derive(Subcommand)]
pub enum DataCommand {
    /// Write learnable synthetic CIFAR-10, CIFAR-100 and Tiny-ImageNet in their real on-disk
    /// formats (class colour-and-block templates plus noise, with hard class pairs), seeded. A
    /// stand-in for tests and hardware checks where the real sets cannot be had: never for
    /// results. Then train with `--data-dir OUT` (or CLASSWISE_DATA_DIR=OUT).
    Synth(SynthArgs),
}

#[derive(Args)]
pub struct SynthArgs {
    /// The data root to write into (each set goes to its usual directory name under it).
    #[arg(long)]
    out: PathBuf,
    /// Which sets, comma-separated: cifar10, cifar100, tiny-imagenet.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cifar10,cifar100,tiny-imagenet"
    )]
    dataset: Vec<String>,
    /// Training images per class [default: the official count: 5,000 for CIFAR-10, 500 for
    /// CIFAR-100 and Tiny-ImageNet]. Other counts need `options = { counts = "any" }` in the
    /// run's `[data] source`.
    #[arg(long)]
    train_per_class: Option<usize>,
    /// Test images per class [default: the official count: 1,000, 100, 50].
    #[arg(long)]
    test_per_class: Option<usize>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Noise standard deviation, in [0, 1] pixel units.
    #[arg(long, default_value_t = 0.2)]
    noise: f64,
    /// Replace a data set already in OUT.
    #[arg(long)]
    force: bool,
}

fn dataset_id(name: &str) -> Result<DatasetId> {
    match name {
        "cifar10" => Ok(DatasetId::Cifar10),
        "cifar100" => Ok(DatasetId::Cifar100),
        "tiny-imagenet" => Ok(DatasetId::TinyImagenet),
        other => anyhow::bail!(
            "--dataset: {other:?} is not a set synth writes; expected cifar10, cifar100 or \
             tiny-imagenet"
        ),
    }
}

pub fn run(command: DataCommand) -> Result<ExitCode> {
    let DataCommand::Synth(a) = command;
    let ids = a
        .dataset
        .iter()
        .map(|d| dataset_id(d))
        .collect::<Result<Vec<_>>>()?;
    for id in ids {
        let official = SynthSpec::official(id)?;
        let spec = SynthSpec {
            train_per_class: a.train_per_class.unwrap_or(official.train_per_class),
            test_per_class: a.test_per_class.unwrap_or(official.test_per_class),
            seed: a.seed,
            noise: a.noise,
            ..official
        };
        let start = std::time::Instant::now();
        let w = synth::write(&spec, &a.out, a.force)?;
        println!(
            "{}: {} train and {} test images (synthetic, seed {}) in {} ({:.1} s){}",
            id.name(),
            w.train,
            w.test,
            spec.seed,
            w.dir.display(),
            start.elapsed().as_secs_f64(),
            if spec.is_official() {
                ""
            } else {
                "; not the official counts: load with options = { counts = \"any\" }"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
