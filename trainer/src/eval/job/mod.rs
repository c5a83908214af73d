//! The jobs of `classwise eval`, as library functions the CLI calls once it has parsed its
//! arguments: a run's model evaluated with its own attack or another ([`attack`]), AutoAttack
//! ([`autoattack`]) or the configuration's paper protocol ([`protocol`]). Each loads the run's
//! configuration, model and test subset, writes its report next to the run's files (never
//! replacing an earlier one) and returns what it wrote.

mod attack;
mod autoattack;
mod protocol;

use std::path::{Path, PathBuf};

use classwise_core::name::slug;

use crate::attack::Eps;
use crate::data::{self, Dataset, Part};
use crate::error::{IoContext, Result, TrainerError};
use crate::eval::RobustCounting;
use crate::model::{MemoryFormat, Model};
use crate::run::{RunConfig, RunDir, head_per_class_indices};

pub use attack::AttackChoice;
pub use autoattack::{AutoAttackJob, save_adversarial};

/// What `classwise eval` is asked to do.
#[derive(Clone, Debug)]
pub struct EvalRequest {
    /// The run directory.
    pub run: PathBuf,
    /// `last`, `best`, `ema`, `fawa`, `best-ema`, `best-fawa` or a path to model weights.
    pub checkpoint: String,
    /// The budget instead of the run's (a number or a ratio such as `8/255`).
    pub eps: Option<String>,
    /// The robust counting instead of the run's.
    pub robust_counting: Option<RobustCounting>,
    /// The first N test images of each class instead of the run's test subset.
    pub test_per_class: Option<usize>,
    /// The kernels' layout instead of the job's default.
    pub memory_format: Option<MemoryFormat>,
    /// Where the data sets are (`None`: as `train` searches).
    pub data_dir: Option<PathBuf>,
    pub job: EvalJob,
}

/// The evaluation itself.
#[derive(Clone, Debug)]
pub enum EvalJob {
    /// The run's attack or another ([`AttackChoice`]).
    Attack(AttackChoice),
    AutoAttack(AutoAttackJob),
    /// The configuration's `[[eval.protocol]]`, with AutoAttack's batches of this size.
    Protocol {
        autoattack_batch_size: usize,
    },
}

/// What a job wrote: the report's JSON and markdown (their paths and texts), and any other
/// file.
#[derive(Debug)]
pub struct EvalOutput {
    pub json_path: PathBuf,
    pub markdown_path: PathBuf,
    /// The report as written to `json_path` (pretty JSON, fields in the report's order).
    pub json: String,
    pub markdown: String,
    pub other_files: Vec<PathBuf>,
}

/// Runs the job of `request`.
pub fn run(request: &EvalRequest) -> Result<EvalOutput> {
    let dir = RunDir(request.run.clone());
    let mut config = read_run_config(&dir)?;
    if let Some(e) = &request.eps {
        config.eval.eps = Eps::parse(e)?;
    }
    if let Some(c) = request.robust_counting {
        config.eval.robust_counting = c;
    }
    match &request.job {
        EvalJob::Attack(choice) => attack::run(request, &dir, config, choice),
        EvalJob::AutoAttack(job) => autoattack::run(request, &dir, config, job),
        EvalJob::Protocol {
            autoattack_batch_size,
        } => protocol::run(request, &dir, &config, *autoattack_batch_size),
    }
}

/// The configuration a run directory was trained with (`<run>/config.toml`).
pub fn read_run_config(dir: &RunDir) -> Result<RunConfig> {
    let text = std::fs::read_to_string(dir.config()).at("reading", dir.config())?;
    RunConfig::from_toml(&text).map_err(|e| TrainerError::BadData {
        path: dir.config(),
        offset: None,
        reason: e.to_string(),
    })
}

/// The model of `checkpoint` in `dir`, its kernels laid out in `format`, for evaluation.
pub fn load_eval_model(
    dir: &RunDir,
    checkpoint: &str,
    device: tch::Device,
    format: MemoryFormat,
) -> Result<Model> {
    let mut model = dir.load_model(checkpoint, device)?;
    model.set_memory_format(format)?;
    Ok(model)
}

/// The first `n` test images of each class in file order (all of them when `n` is `None`) and
/// their indices in `test_full`.
pub fn head_subset(test_full: &Dataset, n: Option<usize>) -> Result<(Dataset, Vec<i64>)> {
    let indices = head_per_class_indices(test_full, n);
    Ok((test_full.subset(&indices)?, indices))
}

/// The test images a request evaluates: the first `test_per_class` of each class in file
/// order, or the run's test subset; with their indices in the test file.
fn test_subset(request: &EvalRequest, config: &RunConfig) -> Result<(Dataset, Vec<i64>)> {
    let source = &config.data.source;
    let test_full = data::load(source, Part::Test, request.data_dir.as_deref())?;
    head_subset(
        &test_full,
        request.test_per_class.or(config.data.test_per_class),
    )
}

/// The checkpoint and test-subset parts of an evaluation's file name: `last` (or `file-<path>`)
/// and `-<N>_per_class` when the request chose the images.
fn stem_parts(request: &EvalRequest) -> (String, String) {
    let checkpoint = match request.checkpoint.as_str() {
        "best" | "last" | "ema" | "fawa" | "best-ema" | "best-fawa" => request.checkpoint.clone(),
        path => format!("file-{}", slug(path)),
    };
    let subset = (request.test_per_class)
        .map(|n| format!("-{n}_per_class"))
        .unwrap_or_default();
    (checkpoint, subset)
}

/// The name of an evaluation's files, from everything that determines it: the checkpoint, the
/// attack with its settings, ε, the robust counting and the test subset when the request chose
/// it, e.g. `eval-last-pgd-20_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial`.
fn file_stem(request: &EvalRequest, attack: &str, eps: &Eps, counting: RobustCounting) -> String {
    let (checkpoint, subset) = stem_parts(request);
    let (attack, eps, counting) = (slug(attack), slug(&eps.text), counting.name());
    format!("eval-{checkpoint}-{attack}-eps_{eps}-{counting}{subset}")
}

/// `dir/stem.json` and `dir/stem.md`, or with `-2`, `-3`, ... after the stem when an earlier
/// evaluation holds those names: an evaluation never replaces another.
fn free_paths(dir: &Path, stem: &str) -> (PathBuf, PathBuf) {
    let pair = |s: &str| (dir.join(format!("{s}.json")), dir.join(format!("{s}.md")));
    let mut paths = pair(stem);
    let mut n = 1;
    while paths.0.exists() || paths.1.exists() {
        n += 1;
        paths = pair(&format!("{stem}-{n}"));
    }
    paths
}

/// Writes a report's JSON and markdown to free names for `stem` in the run directory.
fn write_report<T: serde::Serialize>(
    dir: &RunDir,
    stem: &str,
    what: &'static str,
    report: &T,
    markdown: String,
) -> Result<EvalOutput> {
    let (json_path, markdown_path) = free_paths(&dir.0, stem);
    let json = serde_json::to_string_pretty(report)
        .map_err(|source| TrainerError::Json { what, source })?;
    crate::io::write_atomic(&json_path, format!("{json}\n").as_bytes())?;
    crate::io::write_atomic(&markdown_path, markdown.as_bytes())?;
    Ok(EvalOutput {
        json_path,
        markdown_path,
        json,
        markdown,
        other_files: Vec::new(),
    })
}

/// Removes the state of a finished resumable evaluation.
fn remove_partial(partial: &Path) -> Result<()> {
    match partial.exists() {
        true => std::fs::remove_dir_all(partial).at("removing the finished state", partial),
        false => Ok(()),
    }
}
