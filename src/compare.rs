//! `classwise compare RUN_OR_SWEEP... --out DIR`: the papers' class-wise tables and figures from
//! run directories and sweeps.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use classwise_core::eval::RobustCounting;
use classwise_core::name::slug;
use classwise_core::record::{Leaderboard, REPORT_FILES, RunConfigView};
use classwise_figures::compare::claims::{self, ClaimsFile};
use classwise_figures::compare::{self, Comparison, RunInput, RunResults};
use classwise_trainer::sweep::{Manifest, SweepDir};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// Run directories (`classwise train --out`), sweep directories (every finished run,
    /// grouped by its sweep group and averaged over its seeds) and leaderboards (`classwise
    /// zoo run --out`: each model a group, compared as its model `last`).
    #[arg(required = true, value_name = "RUN_OR_SWEEP")]
    inputs: Vec<PathBuf>,
    /// The baseline of ρ (WAT eq. 7): a group name or one of the run directories
    /// [default: the first group].
    #[arg(long)]
    baseline: Option<String>,
    /// The model of the WAT, BAT and Tian tables and of the figures: last, best, ema, best-ema,
    /// fawa or best-fawa (CFA's tables show best and last of every model).
    #[arg(long, default_value = "last")]
    model: String,
    /// Name the group of a run directory: DIR=NAME (repeatable). Runs given the same name are
    /// averaged as seeds of one method [default: the directory's name]. For a sweep directory,
    /// NAME prefixes each of its groups (NAME:GROUP), so that two sweeps with groups of the same
    /// name stay apart.
    #[arg(long = "label", value_name = "DIR=NAME")]
    labels: Vec<String>,
    /// Output folder: compare.md, compare.csv, compare.json, runs.md, the figures and index.md.
    #[arg(long)]
    out: PathBuf,
    /// Print the comparison as JSON instead of markdown.
    #[arg(long)]
    json: bool,
    /// Read robust accuracy under this counting where a report has it (`adversarial-only`, as
    /// the papers' code counts, or `clean-and-adversarial`): reports of attacks on every image
    /// carry both, AutoAttack's only the second [default: each report's own].
    #[arg(long, value_parser = |s: &str| s.parse::<RobustCounting>())]
    robust_counting: Option<RobustCounting>,
    /// A claims file (TOML; see results/fmnist/claims.toml): decides each claim by the paired
    /// differences over seeds, under both countings, into claims.md and claims.json.
    #[arg(long, value_name = "FILE")]
    claims: Option<PathBuf>,
    /// Write the tables (and the claims) only: no figures and no gallery.
    #[arg(long)]
    no_figures: bool,
}

/// How [`compare_into`] compares.
pub struct Options<'a> {
    /// The group ρ is computed against (a group name or a run directory; default: the first).
    pub baseline: Option<&'a str>,
    /// The counting robust accuracy is read under where a report has it.
    pub counting: Option<RobustCounting>,
    /// The model of the WAT, BAT and Tian tables and of the figures.
    pub model: &'a str,
    /// A claims file to decide.
    pub claims: Option<&'a Path>,
    /// Render the figures and the gallery.
    pub figures: bool,
}

/// The seed in a run's `config.toml`, if it has one.
fn config_seed(dir: &Path) -> anyhow::Result<Option<u64>> {
    Ok(RunConfigView::read(dir)?.and_then(|c| c.seed))
}

/// The runs named on the command line: sweeps expanded to their finished runs (those with
/// `selection.json`, the last file a run writes: a run writing its final reports is left out),
/// the others listed in the returned notes.
fn inputs(a: &CompareArgs) -> anyhow::Result<(Vec<RunInput>, Vec<String>)> {
    let labels = a
        .labels
        .iter()
        .map(|l| label(l))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    for input in &a.inputs {
        let prefix = label_of(&labels, input);
        if Manifest::path(input).is_file() {
            runs.extend(sweep_runs(input, prefix.as_deref(), &mut notes)?);
        } else if input.join(LEADERBOARD_FILE).is_file() {
            runs.extend(leaderboard_models(input, prefix.as_deref())?);
        } else {
            runs.push(run_dir(input, prefix)?);
        }
    }
    for (dir, _) in &labels {
        anyhow::ensure!(
            a.inputs
                .iter()
                .any(|i| std::fs::canonicalize(i).is_ok_and(|d| d == *dir)),
            "--label {}: not one of the run or sweep directories compared",
            dir.display()
        );
    }
    Ok((runs, notes))
}

/// A `--label DIR=NAME`: the directory (canonical) and the name.
fn label(l: &str) -> anyhow::Result<(PathBuf, String)> {
    let (dir, name) = l
        .split_once('=')
        .with_context(|| format!("--label {l}: expected DIR=NAME"))?;
    anyhow::ensure!(!name.is_empty(), "--label {l}: the NAME is empty");
    let dir =
        std::fs::canonicalize(dir).with_context(|| format!("--label {l}: no directory {dir}"))?;
    Ok((dir, name.to_owned()))
}

/// The finished runs of the sweep `input`, their groups prefixed `PREFIX:` when labelled; a
/// note for each run not finished. A sweep with no finished run is an error.
fn sweep_runs(
    input: &Path,
    prefix: Option<&str>,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<RunInput>> {
    let manifest = Manifest::load(input)?;
    let sweep = SweepDir(input.to_path_buf());
    let mut runs = Vec::new();
    for entry in &manifest.runs {
        if !sweep.is_complete(&entry.id)? {
            notes.push(format!(
                "sweep {}: run {} (group {}, seed {}) has not finished; left out",
                input.display(),
                entry.id,
                entry.group,
                entry.seed
            ));
            continue;
        }
        runs.push(RunInput {
            dir: sweep.run(&entry.id),
            group: prefix.map_or(entry.group.clone(), |p| format!("{p}:{}", entry.group)),
            seed: Some(entry.seed),
        });
    }
    anyhow::ensure!(
        !runs.is_empty(),
        "sweep {}: none of its {} runs has finished (no selection.json, the last file a run \
         writes; see `classwise sweep status {}`)",
        input.display(),
        manifest.runs.len(),
        input.display()
    );
    Ok(runs)
}

/// The leaderboard's file in a `classwise zoo run` directory.
const LEADERBOARD_FILE: &str = "leaderboard.json";

/// The models of the leaderboard `input` (`classwise zoo run --out`), one group each named
/// after the model (prefixed `PREFIX:` when labelled), compared as their model `last`.
fn leaderboard_models(input: &Path, prefix: Option<&str>) -> anyhow::Result<Vec<RunInput>> {
    let path = input.join(LEADERBOARD_FILE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let board = Leaderboard::parse(&text, &path.display().to_string())?;
    let runs = board.models.iter().map(|row| RunInput {
        dir: input.join("models").join(slug(&row.name)),
        group: prefix.map_or(row.name.clone(), |p| format!("{p}:{}", row.name)),
        seed: None,
    });
    Ok(runs.collect())
}

/// A run directory: its group is its `--label` NAME, else the directory's name.
fn run_dir(input: &Path, label: Option<String>) -> anyhow::Result<RunInput> {
    anyhow::ensure!(
        input.is_dir(),
        "{}: no such run or sweep directory",
        input.display()
    );
    let group = label
        .or_else(|| {
            let dir = std::fs::canonicalize(input).ok()?;
            dir.file_name().map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| input.display().to_string());
    Ok(RunInput {
        dir: input.to_path_buf(),
        group,
        seed: config_seed(input)?,
    })
}

/// The `--label` NAME of the run or sweep directory `input`, if it has one.
fn label_of(labels: &[(PathBuf, String)], input: &Path) -> Option<String> {
    let canonical = std::fs::canonicalize(input).ok()?;
    labels
        .iter()
        .find(|(d, _)| *d == canonical)
        .map(|(_, n)| n.clone())
}

/// The baseline's group: a group name, or the group of a run directory.
fn baseline_group(baseline: &str, runs: &[RunInput]) -> Option<String> {
    if runs.iter().any(|r| r.group == baseline) {
        return Some(baseline.to_owned());
    }
    let dir = std::fs::canonicalize(baseline).ok()?;
    runs.iter()
        .find(|r| std::fs::canonicalize(&r.dir).is_ok_and(|d| d == dir))
        .map(|r| r.group.clone())
}

/// Reads the runs, compares them and writes the tables, figures and gallery into `out`.
pub fn compare_into(
    runs: Vec<RunInput>,
    options: &Options<'_>,
    out: &Path,
) -> anyhow::Result<(Comparison, Vec<classwise_figures::Rendered>, Vec<String>)> {
    let model = options.model;
    anyhow::ensure!(
        REPORT_FILES.iter().any(|(m, _)| *m == model),
        "--model {model}: expected one of {}",
        REPORT_FILES
            .iter()
            .map(|(m, _)| *m)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let baseline = match options.baseline {
        Some(b) => Some(baseline_group(b, &runs).with_context(|| {
            format!("--baseline {b}: neither a group nor one of the run directories compared")
        })?),
        None => runs.first().map(|r| r.group.clone()),
    };
    let results = runs
        .into_iter()
        .map(RunResults::read)
        .collect::<Result<Vec<_>, _>>()?;
    let comparison = Comparison::new(&results, baseline.as_deref(), options.counting)?;
    compare::write_tables(&comparison, model, out)?;
    if let Some(path) = options.claims {
        write_claims(&results, baseline.as_deref(), path, out)?;
    }
    compare::write_runs(&comparison, model, out)?;
    if !options.figures {
        return Ok((comparison, Vec::new(), Vec::new()));
    }
    let (figures, skipped) = compare::render_all(&comparison, &results, model, out)?;
    write_gallery(out, model, &figures, &skipped)?;
    Ok((comparison, figures, skipped))
}

/// The gallery (`index.md`) of the figures rendered into `out`, naming those left out.
fn write_gallery(
    out: &Path,
    model: &str,
    figures: &[classwise_figures::Rendered],
    skipped: &[String],
) -> anyhow::Result<()> {
    let not_drawn: String = skipped
        .iter()
        .map(|s| format!("\n\nNot drawn: {s}."))
        .collect();
    classwise_figures::write_index(
        out,
        "Class-wise comparison",
        &format!(
            "Figures of the runs compared in [compare.md](compare.md) (model `{model}`), drawn \
             from their reports and `metrics.jsonl`. Regenerate with `classwise compare`; every \
             image has an SVG twin and the CSV of exactly the numbers it draws.{not_drawn}"
        ),
        figures,
    )?;
    Ok(())
}

/// Decides the claims of `path` under both countings into `out/claims.md` and
/// `out/claims.json`.
fn write_claims(
    results: &[RunResults],
    baseline: Option<&str>,
    path: &Path,
    out: &Path,
) -> anyhow::Result<()> {
    let what = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {what}"))?;
    let file = ClaimsFile::parse(&text, &what)?;
    let mut markdown = format!(
        "# Claims decided by paired seeds\n\nFrom `{what}`; {} claims, read from the \
         evaluation {} at ε = {}.\n",
        file.claim.len(),
        file.attack,
        file.eps
    );
    let mut json = serde_json::Map::new();
    for counting in RobustCounting::ALL {
        let c = Comparison::new(results, baseline, Some(counting))?;
        let decided = file.decide(&c, results)?;
        markdown.push_str(&format!(
            "\n## {}\n\n{}",
            counting.name(),
            claims::markdown(&decided, counting.describe())
        ));
        json.insert(counting.name().to_owned(), serde_json::to_value(&decided)?);
    }
    write_file(&out.join("claims.md"), markdown.as_bytes())?;
    let json = serde_json::to_string_pretty(&json)? + "\n";
    write_file(&out.join("claims.json"), json.as_bytes())
}

fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    classwise_core::io::write_atomic(path, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

pub fn run(a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let (runs, notes) = inputs(a)?;
    for n in &notes {
        eprintln!("note: {n}");
    }
    let options = Options {
        baseline: a.baseline.as_deref(),
        counting: a.robust_counting,
        model: &a.model,
        claims: a.claims.as_deref(),
        figures: !a.no_figures,
    };
    let (comparison, figures, skipped) = compare_into(runs, &options, &a.out)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        print!("{}", compare::tables::markdown(&comparison, &a.model));
    }
    for s in &skipped {
        eprintln!("not drawn: {s}");
    }
    let figures = match a.no_figures {
        true => "no figures".to_owned(),
        false => format!("{} figures (gallery index.md)", figures.len()),
    };
    eprintln!(
        "wrote compare.md, compare.csv, compare.json, runs.md and {figures} in {}",
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
