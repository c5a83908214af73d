//! `classwise sweep`: plan a sweep into a manifest, run it locally or as a Slurm job array,
//! follow it and aggregate it over seeds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use classwise_trainer::interrupt;
use classwise_trainer::sweep::local::{LocalOptions, run_local};
use classwise_trainer::sweep::slurm::{SlurmOptions, write_stages};
use classwise_trainer::sweep::task::{TaskOptions, run_task};
use classwise_trainer::sweep::{self, collect, status};

#[derive(Subcommand)]
pub enum SweepCommand {
    /// Expand a sweep file (presets or variants × a grid of overrides × seeds; `sweeps/`) into
    /// DIR/manifest.json, every run's configuration resolved and validated; re-planning keeps
    /// the runs planned again, finished or not, at their index.
    Plan {
        /// The sweep file (TOML).
        spec: PathBuf,
        /// The sweep directory [default: sweeps/out/<name>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override a configuration value of every run, `--set key=value` as in `train`
        /// (`--set epochs=1` for a quick trial of a sweep), repeatable; applied after the sweep
        /// file's own overrides and recorded in the manifest.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Run every unfinished run on this machine, N at a time (skips finished runs, resumes
    /// interrupted ones, goes on past failures and lists them).
    Run {
        dir: PathBuf,
        /// Runs at once.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        workers: u64,
        /// libtorch threads per worker [default: the machine's CPUs divided among the workers].
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        threads: Option<u64>,
        /// Directory holding the data sets [default: as `train`].
        #[arg(long, env = "CLASSWISE_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Write DIR/slurm/sweep.sbatch, the job array of the unfinished runs (array task i runs
    /// `classwise sweep task DIR --index i`; SIGTERM or the time-limit warning checkpoints and
    /// requeues it), and sweep-stageN.sbatch for runs that start from others (`{run:GROUP}`);
    /// with --submit, also submit them with sbatch, each stage after the one before.
    Slurm {
        dir: PathBuf,
        #[command(flatten)]
        slurm: SlurmArgs,
        /// Array over every run, finished ones included (their tasks return at once).
        #[arg(long)]
        all: bool,
        /// Submit with `sbatch --parsable` and print the job id.
        #[arg(long)]
        submit: bool,
        /// Directory holding the data sets, exported to the tasks [default: none; the tasks
        /// inherit the submitting shell's CLASSWISE_DATA_DIR].
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Train run INDEX of the manifest (one array task): resumes it from its checkpoint, does
    /// nothing if it is finished; exit status 75 after a signal (checkpointed: requeue me), 16
    /// when another process trains it, 17 when the runs it starts from are not complete.
    Task {
        dir: PathBuf,
        #[arg(long)]
        index: usize,
        /// libtorch threads [default: libtorch's].
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        threads: Option<u64>,
        /// Directory holding the data sets [default: as `train`].
        #[arg(long, env = "CLASSWISE_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Every run: done, running, failed, interrupted, killed or pending, and how far it got.
    Status {
        dir: PathBuf,
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Mean ± std over seeds of the finished runs, per group and per class: DIR/collect.json,
    /// collect.csv and collect.md (printed).
    Collect { dir: PathBuf },
}

/// What the sbatch script asks of Slurm ([`SlurmOptions`] without the binary and data paths).
#[derive(Args)]
pub struct SlurmArgs {
    #[arg(long)]
    partition: Option<String>,
    /// Time limit per array task (e.g. 04:00:00).
    #[arg(long)]
    time: Option<String>,
    #[arg(long, default_value_t = 1)]
    cpus_per_task: u32,
    /// GPUs per array task (--gres=gpu:G).
    #[arg(long, default_value_t = 0)]
    gpus: u32,
    /// Memory per array task (e.g. 16G).
    #[arg(long)]
    mem: Option<String>,
    #[arg(long)]
    account: Option<String>,
    #[arg(long)]
    qos: Option<String>,
    /// At most this many array tasks at once.
    #[arg(long)]
    max_parallel: Option<usize>,
    /// Seconds before the time limit at which the task checkpoints and requeues.
    #[arg(long, default_value_t = 120)]
    signal_before: u32,
    /// Further sbatch options, written as given (repeatable), e.g. --sbatch=--constraint=a100.
    #[arg(long = "sbatch", value_name = "OPTION", allow_hyphen_values = true)]
    extra: Vec<String>,
}

impl SlurmArgs {
    fn options(self, program: PathBuf, data_dir: Option<PathBuf>) -> SlurmOptions {
        SlurmOptions {
            partition: self.partition,
            time: self.time,
            cpus_per_task: self.cpus_per_task,
            gpus: self.gpus,
            mem: self.mem,
            account: self.account,
            qos: self.qos,
            max_parallel: self.max_parallel,
            signal_before: self.signal_before,
            extra: self.extra,
            program,
            data_dir,
        }
    }
}

pub fn run(command: SweepCommand) -> anyhow::Result<ExitCode> {
    match command {
        SweepCommand::Plan { spec, out, set } => plan(&spec, out, &set),
        SweepCommand::Run {
            dir,
            workers,
            threads,
            data_dir,
        } => run_here(&dir, workers, threads, data_dir),
        SweepCommand::Slurm {
            dir,
            slurm,
            all,
            submit,
            data_dir,
        } => submit_slurm(&dir, slurm, all, submit, data_dir),
        SweepCommand::Task {
            dir,
            index,
            threads,
            data_dir,
        } => task(&dir, index, threads, data_dir),
        SweepCommand::Status { dir, json } => print_status(&dir, json),
        SweepCommand::Collect { dir } => collect(&dir),
    }
}

/// `classwise sweep status`: every run's state, as a table or JSON.
fn print_status(dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let (manifest, rows) = status::status(dir)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        println!("sweep `{}` in {}\n", manifest.name, dir.display());
        print!("{}", status::markdown(&rows));
        println!("\n{}", status::summary_line(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// `classwise sweep collect`: the sweep's table over seeds, written and printed.
fn collect(dir: &Path) -> anyhow::Result<ExitCode> {
    let c = collect::collect(dir)?;
    let paths = collect::write(dir, &c)?;
    print!("{}", collect::markdown(&c));
    for p in paths {
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `classwise sweep run`: the pending runs on this machine, `workers` at a time.
fn run_here(
    dir: &Path,
    workers: u64,
    threads: Option<u64>,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let workers = usize::try_from(workers)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = match threads {
        Some(t) => usize::try_from(t)?,
        None => (cpus / workers).max(1),
    };
    interrupt::install()?;
    let program = std::env::current_exe().context("locating the classwise binary")?;
    let options = LocalOptions {
        workers,
        threads,
        program,
        data_dir,
    };
    let report = run_local(dir, &options)?;
    eprintln!("{report}");
    Ok(ExitCode::from(report.exit_code()))
}

/// `classwise sweep slurm`: the sbatch scripts of the runs not done (or `all`), one per stage,
/// submitted with `submit`.
fn submit_slurm(
    dir: &Path,
    slurm: SlurmArgs,
    all: bool,
    submit: bool,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let dir = absolute(dir)?;
    let (manifest, rows) = status::status(&dir)?;
    let indices = status::pending(&rows, all);
    if indices.is_empty() {
        eprintln!("every run of {} is done: nothing to submit", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let options = slurm.options(
        std::env::current_exe().context("locating the classwise binary")?,
        data_dir.map(|d| absolute(&d)).transpose()?,
    );
    for s in write_stages(&dir, &manifest, &indices, &options, submit)? {
        eprintln!("{}", s.describe(submit));
        println!(
            "{}",
            (s.job).unwrap_or_else(|| s.path.display().to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `classwise sweep task`: run `index` of the sweep (one Slurm array task).
fn task(
    dir: &Path,
    index: usize,
    threads: Option<u64>,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    if let Some(t) = threads {
        classwise_trainer::tch::set_num_threads(i32::try_from(t)?);
    }
    interrupt::install()?;
    let build = crate::trainer_cli::build_info();
    let options = TaskOptions {
        data_dir,
        build,
        verbose: true,
    };
    let outcome = run_task(dir, index, options)?;
    if let Some(message) = outcome.describe(dir, index) {
        eprintln!("{message}");
    }
    Ok(ExitCode::from(outcome.exit_code()))
}

fn plan(spec: &Path, out: Option<PathBuf>, set: &[String]) -> anyhow::Result<ExitCode> {
    let name = sweep::SweepSpec::from_file(spec)?.name;
    let out = out.unwrap_or_else(|| PathBuf::from("sweeps/out").join(name));
    let (manifest, s) = sweep::plan(spec, &out, set)?;
    println!(
        "planned sweep `{}` in {}: {} runs ({} kept from the previous plan, {} new)",
        manifest.name,
        out.display(),
        s.runs,
        s.kept,
        s.added
    );
    if !s.dropped.is_empty() {
        println!(
            "no longer planned (their run directories stay in runs/): {}",
            s.dropped.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("resolving {}", p.display()))
}
