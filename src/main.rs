//! `classwise`: the command-line front end of the workspace.

mod compare;
mod data;
mod demo;
mod doctor;
mod figures;
mod sweep;
mod theory;
mod toy;
mod trainer_cli;
mod zoo;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "classwise",
    version,
    about = "Class-wise robust fairness in adversarial training: theory, toys, trainer, figures"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check tch/libtorch versions, CUDA, threads and data sets; exit 1 on any problem.
    Doctor {
        #[command(flatten)]
        data: DataArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The binary Gaussian model of CFA and the WAT bounds: verify the theorems, evaluate.
    Theory {
        #[command(subcommand)]
        command: theory::TheoryCommand,
    },
    /// Monte Carlo simulation of the binary model, toy adversarial training, multi-class toys
    /// with the class-wise fairness rules (no libtorch involved).
    Toy {
        #[command(subcommand)]
        command: toy::ToyCommand,
    },
    /// Regenerate the papers' figures (SVG and PNG, the data of every series as CSV, and an
    /// index.md gallery).
    Figures {
        #[command(subcommand)]
        command: figures::FiguresCommand,
    },
    /// Data-set chores: `synth` writes learnable synthetic CIFAR-10/100 and Tiny-ImageNet in
    /// their real formats (for tests and hardware checks, never for results).
    Data {
        #[command(subcommand)]
        command: data::DataCommand,
    },
    /// Train a model from a TOML configuration (presets in configs/); resumable.
    Train(trainer_cli::TrainArgs),
    /// Sweeps over seeds, presets or variants and a grid of overrides: plan, run locally or as
    /// a Slurm job array (preemption-safe), follow, aggregate over seeds.
    Sweep {
        #[command(subcommand)]
        command: sweep::SweepCommand,
    },
    /// Class-wise evaluation under an attack of a run's checkpoint, of a model card (weights
    /// another library wrote), or of a catalogue model with its weights (--zoo NAME --weights
    /// FILE).
    Eval(trainer_cli::EvalArgs),
    /// Published models class by class: the catalogue of RobustBench's CIFAR-10/100 L∞ zoo
    /// that classwise can build.
    Zoo {
        #[command(subcommand)]
        command: zoo::ZooCommand,
    },
    /// Write a run's model as a PyTorch state dict (safetensors, loadable with
    /// `load_state_dict(safetensors.torch.load_file(FILE))`) with a model card beside it.
    Export(zoo::ExportArgs),
    /// Compare runs and sweeps the way the papers do: CFA Table 1, WAT Tables 1-5, BAT Table 1,
    /// Tian et al.'s per-class table (mean ± std over seeds, ρ against a baseline) and the
    /// papers' class-wise figures.
    Compare(compare::CompareArgs),
    /// Images per second of one PGD-10 AT and one TRADES training step and of one PGD-20
    /// evaluation batch; with --autoattack RUN, AutoAttack's seconds per image (and
    /// torchattacks', with --python).
    Bench(trainer_cli::BenchArgs),
    /// The project's end-to-end showcase, every output written to one folder: the environment
    /// report and a libtorch gradient self-check, the numerical check of the papers' theorems,
    /// the multi-class toy under PGD-AT, the theory and toy figures, a one-minute PGD-AT run on
    /// the real Fashion-MNIST (the fmnist-smoke preset) with its class-wise report and figures,
    /// and its class-wise comparison with AT + CFA and WAT (tables and figures).
    Demo {
        #[command(flatten)]
        data: DataArgs,
        /// Output folder (created; files in it are replaced atomically).
        #[arg(long, default_value = "out/demo")]
        out: PathBuf,
    },
}

#[derive(Args)]
struct DataArgs {
    /// Directory holding the data sets (`fashion-mnist/`, `cifar-10-batches-bin/`, ...); when
    /// given, it is the only place searched [default: the set-up cache's data/, then
    /// /usr/share/datasets].
    #[arg(long, env = "CLASSWISE_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

impl DataArgs {
    fn roots(&self) -> Vec<PathBuf> {
        classwise_trainer::paths::data_roots(self.data_dir.clone())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Demo { .. }
            | Command::Train(_)
            | Command::Eval(_)
            | Command::Bench(_)
            | Command::Sweep { .. }
    ) {
        // Before libtorch starts its threads, which inherit the settings.
        classwise_trainer::runtime::tune();
    }
    let result = match cli.command {
        Command::Doctor { data, json } => doctor::run(&data.roots(), json),
        Command::Demo { data, out } => demo::run(&data.roots(), data.data_dir.clone(), &out),
        Command::Theory { command } => theory::run(command),
        Command::Toy { command } => toy::run(command),
        Command::Figures { command } => figures::run(command),
        Command::Data { command } => data::run(command),
        Command::Train(a) => trainer_cli::train(&a),
        Command::Sweep { command } => sweep::run(command),
        Command::Eval(a) => trainer_cli::eval(&a),
        Command::Zoo { command } => zoo::run(command),
        Command::Export(a) => zoo::export(&a),
        Command::Compare(a) => compare::run(&a),
        Command::Bench(a) => trainer_cli::bench(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
