//! `classwise figures`: the theory and toy figures with their data and a gallery page.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use classwise_figures::{Rendered, write_index};

#[derive(Subcommand)]
pub enum FiguresCommand {
    /// Closed-form figures: CFA Figure 1(b), Theorems 1-4, σ scaling, WAT Theorems 1-2.
    Theory {
        /// Output folder (created; files in it are replaced atomically).
        #[arg(long, default_value = "out/figures/theory")]
        out: PathBuf,
    },
    /// Simulation figures: CFA Figure 1(a), Monte Carlo against the closed forms, CFA's CCM on
    /// the binary model, and the multi-class toy (class-wise robust accuracy per method, ε_k
    /// and β_k trajectories).
    Toy {
        /// Output folder (created; files in it are replaced atomically).
        #[arg(long, default_value = "out/figures/toy")]
        out: PathBuf,
        /// Seed of every random stream.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Smaller samples and fewer epochs (seconds instead of a minute).
        #[arg(long)]
        quick: bool,
    },
    /// Figures of a training run: class-wise robust accuracy over the epochs (test and the
    /// training t_k) and, once finished, the final class-wise report.
    Run {
        /// Run directory written by `classwise train`.
        #[arg(long)]
        run: PathBuf,
        /// Output folder [default: <run>/figures].
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Prints what was written and the gallery's path.
fn report(out: &Path, figures: &[Rendered], index: &Path) {
    for f in figures {
        println!("{:<28} {}", f.id, f.files.join(" "));
    }
    println!(
        "{} figures in {}; gallery: {}",
        figures.len(),
        out.display(),
        index.display()
    );
}

/// The theory figures and their gallery in `out`; returns them and the gallery's path.
pub fn render_theory(out: &Path) -> anyhow::Result<(Vec<Rendered>, PathBuf)> {
    let figures = classwise_figures::theory::render_all(out)?;
    let index = write_index(
        out,
        "Theory figures",
        "Closed forms of CFA's binary Gaussian model and of the WAT bounds, computed by \
         `classwise-theory`. Regenerate with `classwise figures theory --out DIR`; every image \
         has an SVG twin and the CSV of exactly the series it draws.",
        &figures,
    )?;
    Ok((figures, index))
}

/// The toy figures and their gallery in `out`; returns them and the gallery's path.
pub fn render_toy(
    out: &Path,
    options: &classwise_figures::toy::Options,
) -> anyhow::Result<(Vec<Rendered>, PathBuf)> {
    let figures = classwise_figures::toy::render_all(out, options)?;
    let index = write_index(
        out,
        "Toy figures",
        &format!(
            "Simulations by `classwise-toy` next to the closed forms of `classwise-theory` \
             (seed {}{}). Regenerate with `classwise figures toy --out DIR`; every image has an \
             SVG twin and the CSV of exactly the series it draws.",
            options.seed,
            if options.quick { ", quick sizes" } else { "" }
        ),
        &figures,
    )?;
    Ok((figures, index))
}

/// The figures of the training run in `run` and their gallery in `out`; returns them and the
/// gallery's path.
pub fn render_run(run: &Path, out: &Path) -> anyhow::Result<(Vec<Rendered>, PathBuf)> {
    let figures = classwise_figures::run::render_all(run, out)?;
    let index = write_index(
        out,
        &format!("Figures of the run {}", run.display()),
        &format!(
            "Drawn from `metrics.jsonl` and `report.json` of {}. Regenerate with `classwise \
             figures run --run {}`; every image has an SVG twin and the CSV of exactly the \
             series it draws.",
            run.display(),
            run.display()
        ),
        &figures,
    )?;
    Ok((figures, index))
}

pub fn run(command: FiguresCommand) -> anyhow::Result<ExitCode> {
    let (out, (figures, index)) = match command {
        FiguresCommand::Theory { out } => {
            let r = render_theory(&out)?;
            (out, r)
        }
        FiguresCommand::Toy { out, seed, quick } => {
            let r = render_toy(&out, &classwise_figures::toy::Options { seed, quick })?;
            (out, r)
        }
        FiguresCommand::Run { run, out } => {
            let out = out.unwrap_or_else(|| run.join("figures"));
            let r = render_run(&run, &out)?;
            (out, r)
        }
    };
    report(&out, &figures, &index);
    Ok(ExitCode::SUCCESS)
}
