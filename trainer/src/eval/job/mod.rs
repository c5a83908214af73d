//! The jobs of `classwise eval`, as library functions the CLI calls once it has parsed its
//! arguments: a model evaluated with its source's attack or another ([`attack`]), AutoAttack
//! ([`autoattack`]) or the source's paper protocol ([`protocol`]). Each opens the model from its
//! [`ModelSource`] (a run directory, a weight file), loads the test subset, writes its report
//! to the source's directory (never replacing an earlier one) and returns what it wrote.

mod attack;
mod autoattack;
mod protocol;

use std::path::{Path, PathBuf};

use classwise_core::name::slug;

use crate::attack::Eps;
use crate::data::{self, Dataset, Part};
use crate::error::{IoContext, Result, TrainerError};
use crate::eval::{ModelSource, RobustCounting, Subject};
use crate::model::MemoryFormat;

pub use attack::AttackChoice;
pub use autoattack::{AutoAttackJob, save_adversarial};

/// What `classwise eval` is asked to do.
#[derive(Clone, Debug)]
pub struct EvalRequest {
    /// The model, as its source names it (for a run: `last`, `best`, `ema`, `fawa`,
    /// `best-ema`, `best-fawa` or a path to model weights).
    pub checkpoint: String,
    /// The budget instead of the source's (a number or a ratio such as `8/255`).
    pub eps: Option<String>,
    /// The robust counting instead of the source's.
    pub robust_counting: Option<RobustCounting>,
    /// The first N test images of each class instead of the source's test subset.
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
    /// The source's attack or another ([`AttackChoice`]).
    Attack(AttackChoice),
    AutoAttack(AutoAttackJob),
    /// The source's protocol (a run's `[[eval.protocol]]`), with AutoAttack's batches of
    /// this size.
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

/// Runs the job of `request` on the model of `source` it names.
pub fn run(source: &dyn ModelSource, request: &EvalRequest) -> Result<EvalOutput> {
    let mut subject = source.open(&request.checkpoint)?;
    if let Some(e) = &request.eps {
        subject.settings.eps = Eps::parse(e)?;
    }
    if let Some(c) = request.robust_counting {
        subject.settings.robust_counting = c;
    }
    match &request.job {
        EvalJob::Attack(choice) => attack::run(request, subject, choice),
        EvalJob::AutoAttack(job) => autoattack::run(request, subject, job),
        EvalJob::Protocol {
            autoattack_batch_size,
        } => protocol::run(request, subject, *autoattack_batch_size),
    }
}

/// The subject's model with its kernels laid out as the request asks, else in the job's
/// `default`, else in the subject's own layout.
fn lay_out(
    subject: &mut Subject,
    request: &EvalRequest,
    default: Option<MemoryFormat>,
) -> Result<()> {
    let format = (request.memory_format.or(default)).unwrap_or(subject.memory_format);
    subject.model.set_memory_format(format)
}

/// The first `n` test images of each class in file order (all of them when `n` is `None`) and
/// their indices in `test_full`.
pub fn head_subset(test_full: &Dataset, n: Option<usize>) -> Result<(Dataset, Vec<i64>)> {
    let indices = test_full.head_per_class_indices(n);
    Ok((test_full.subset(&indices)?, indices))
}

/// The test images a request evaluates: the first `test_per_class` of each class in file
/// order, or the source's test subset; with their indices in the test file.
fn test_subset(request: &EvalRequest, subject: &Subject) -> Result<(Dataset, Vec<i64>)> {
    let test_full = data::load(&subject.data, Part::Test, request.data_dir.as_deref())?;
    head_subset(
        &test_full,
        request.test_per_class.or(subject.test_per_class),
    )
}

/// The model and test-subset parts of an evaluation's file name: the subject's name (`last`,
/// `file-<path>`) and `-<N>_per_class` when the request chose the images.
fn stem_parts(request: &EvalRequest, subject: &Subject) -> (String, String) {
    let subset = (request.test_per_class)
        .map(|n| format!("-{n}_per_class"))
        .unwrap_or_default();
    (subject.name.clone(), subset)
}

/// The name of an evaluation's files, from everything that determines it: the checkpoint, the
/// attack with its settings, ε, the robust counting and the test subset when the request chose
/// it, e.g. `eval-last-pgd-20_ce_step_0.025_uniform_start-eps_0.1-clean-and-adversarial`.
fn file_stem(request: &EvalRequest, subject: &Subject, attack: &str) -> String {
    let (checkpoint, subset) = stem_parts(request, subject);
    let (eps, counting) = (&subject.settings.eps, subject.settings.robust_counting);
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

/// Writes a report's JSON and markdown to free names for `stem` in `dir`.
fn write_report<T: serde::Serialize>(
    dir: &Path,
    stem: &str,
    what: &'static str,
    report: &T,
    markdown: String,
) -> Result<EvalOutput> {
    let (json_path, markdown_path) = free_paths(dir, stem);
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
