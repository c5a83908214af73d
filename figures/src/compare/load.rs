//! A run directory's evaluations read back for a comparison: the final reports the run wrote
//! (`report.json`, `report-best.json`, … for each model of
//! [`REPORT_FILES`](classwise_core::record::REPORT_FILES)) and the evaluations made afterwards
//! with `classwise eval` (`eval-<model>-….json`) and `classwise eval --protocol`
//! (`eval-<model>-protocol-….json`, one evaluation per attack of the paper's protocol).

use std::path::{Path, PathBuf};

use classwise_core::record::{
    AutoAttackReport, FinishedModel, PredictionsRecord, ProtocolReport, REPORT_FILES, Report,
    RunConfigView,
};
use serde::Serialize;

use crate::error::{FigureError, Result, invalid};
use crate::run::RunLog;

/// Which evaluation an [`Evaluated`] is: the attack as the report names it, its ε and the
/// number of test images. Evaluations of different seeds are averaged when their keys agree.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct AttackKey {
    /// E.g. `pgd-10 ce step 0.025 uniform start`, `autoattack standard (apgd-ce, …)`.
    pub attack: String,
    /// ε as written in the report (shortest round-trip form).
    pub eps: String,
    pub n_samples: usize,
}

impl AttackKey {
    /// `attack at ε = eps on n images`.
    pub fn describe(&self) -> String {
        format!(
            "{} at ε = {} on {} images",
            self.attack, self.eps, self.n_samples
        )
    }

    /// Whether this is AutoAttack (any version).
    pub fn is_autoattack(&self) -> bool {
        self.attack.starts_with("autoattack")
    }
}

/// One evaluation of one model of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    /// `last`, `best`, `ema`, `best-ema`, `fawa` or `best-fawa`.
    pub model: String,
    pub key: AttackKey,
    /// The file it was read from (relative to the run directory).
    pub file: String,
    pub report: Report,
}

/// A run to compare and the group it is averaged in.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInput {
    pub dir: PathBuf,
    /// Runs of one group are averaged over their seeds.
    pub group: String,
    pub seed: Option<u64>,
}

/// What a comparison reads of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResults {
    pub input: RunInput,
    pub class_names: Vec<String>,
    /// Every evaluation found, natural-accuracy entries of protocols excluded (every evaluation
    /// carries its clean accuracy).
    pub evaluations: Vec<Evaluated>,
    /// `metrics.jsonl` with `report.json`, when the run has them (the per-epoch figures).
    pub log: Option<RunLog>,
    /// The per-image predictions beside the final reports (`predictions/report.json`, …), by
    /// model (the homing matrix of Tian et al. Fig. 4b); runs written before they existed
    /// have none.
    pub predictions: Vec<(String, PredictionsRecord)>,
    /// The classes the run trained without: `data.drop_classes` of its `config.toml` (Tian et
    /// al. §6), empty when it trained on every class or has no `config.toml`.
    pub dropped_classes: Vec<usize>,
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| FigureError::Io {
        action: "reading",
        path: path.to_path_buf(),
        source,
    })
}

/// The class-wise evaluation of a `classwise eval` report: a single attack's report is one;
/// an AutoAttack report (it has the cascade's `version`) ends with one.
fn eval_report(path: &Path) -> Result<Report> {
    let (text, what) = (read(path)?, path.display().to_string());
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| invalid(&what, e, "a JSON report written by `classwise eval`"))?;
    match value.get("version").is_some() && value.get("evaluation").is_some() {
        true => Ok(AutoAttackReport::parse(&text, &what)?.evaluation),
        false => Ok(Report::parse(&text, &what)?),
    }
}

/// The model an `eval-<model>-….json` file evaluates, and whether it is a protocol report;
/// `None` for other files and for evaluations of weight files given by path.
fn eval_file_model(name: &str) -> Option<(&'static str, bool)> {
    let rest = name.strip_prefix("eval-")?.strip_suffix(".json")?;
    // The longest model name that prefixes the rest: `best-ema` rather than `best`.
    let model = REPORT_FILES
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| rest.strip_prefix(m).is_some_and(|r| r.starts_with('-')))
        .max_by_key(|m| m.len())?;
    Some((model, rest[model.len()..].starts_with("-protocol-")))
}

/// Adds `report` of `model` from `file`; a later file with the same model and key
/// (`eval-…-2.json`) replaces an earlier one.
fn push(evaluations: &mut Vec<Evaluated>, model: &str, file: String, report: Report) {
    let key = AttackKey {
        attack: report.attack.clone(),
        eps: format!("{}", report.eps),
        n_samples: report.n_samples,
    };
    evaluations.retain(|e: &Evaluated| !(e.model == model && e.key == key));
    let model = model.to_owned();
    evaluations.push(Evaluated {
        model,
        key,
        file,
        report,
    });
}

/// The final reports a run wrote (`report.json`, `report-best.json`, …), each through
/// [`Report::parse`].
fn final_reports(dir: &Path, evaluations: &mut Vec<Evaluated>) -> Result<()> {
    for (model, file) in REPORT_FILES {
        let path = dir.join(file);
        if path.is_file() {
            let report = Report::parse(&read(&path)?, &path.display().to_string())?;
            push(evaluations, model, file.to_owned(), report);
        }
    }
    Ok(())
}

/// The `eval-<model>-….json` files of `dir` (name, model, whether a protocol report), oldest
/// first, so that the latest evaluation of a key is kept.
fn eval_files(dir: &Path) -> Result<Vec<(String, &'static str, bool)>> {
    let listing = std::fs::read_dir(dir).map_err(|source| FigureError::Io {
        action: "listing",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in listing.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some((model, protocol)) = eval_file_model(&name) {
            let modified = entry.metadata().and_then(|m| m.modified());
            files.push((
                modified.unwrap_or(std::time::UNIX_EPOCH),
                name,
                model,
                protocol,
            ));
        }
    }
    files.sort();
    Ok(files.into_iter().map(|(_, n, m, p)| (n, m, p)).collect())
}

/// The evaluations of `classwise eval` in `dir`: one per report, one per attack of a protocol
/// report (its natural accuracy left out: every evaluation carries the clean accuracy).
fn later_evaluations(dir: &Path, evaluations: &mut Vec<Evaluated>) -> Result<()> {
    for (name, model, protocol) in eval_files(dir)? {
        let path = dir.join(&name);
        if !protocol {
            push(evaluations, model, name, eval_report(&path)?);
            continue;
        }
        let p = ProtocolReport::parse(&read(&path)?, &path.display().to_string())?;
        for entry in p.entries.into_iter().filter(|e| e.label != "natural") {
            push(evaluations, model, name.clone(), entry.evaluation);
        }
    }
    Ok(())
}

/// The model of a leaderboard (`classwise zoo run`, `<board>/models/<name>/`): the report its
/// `finished.json` names, as the model `last` (a card holds one model, its final weights).
fn leaderboard_model(dir: &Path, evaluations: &mut Vec<Evaluated>) -> Result<()> {
    let path = dir.join(FinishedModel::FILE);
    if !path.is_file() {
        return Ok(());
    }
    let finished = FinishedModel::parse(&read(&path)?, &path.display().to_string())?;
    let report = eval_report(&dir.join(&finished.report))?;
    push(evaluations, "last", finished.report, report);
    Ok(())
}

/// The per-image predictions beside the final reports of `evaluations`, each through
/// [`PredictionsRecord::parse`] and matched to its report's images and attack.
fn predictions(
    dir: &Path,
    evaluations: &[Evaluated],
    k: usize,
) -> Result<Vec<(String, PredictionsRecord)>> {
    let mut out = Vec::new();
    for (model, file) in REPORT_FILES {
        let path = dir.join("predictions").join(file);
        let report = (evaluations.iter()).find(|e| e.model == model && e.file == file);
        let (true, Some(report)) = (path.is_file(), report) else {
            continue;
        };
        let what = path.display().to_string();
        let p = PredictionsRecord::parse(&read(&path)?, &what, k)?;
        let r = &report.report;
        if p.labels.len() != r.n_samples || p.attack != r.attack {
            return Err(invalid(
                what,
                format!("{} images under {}", p.labels.len(), p.attack),
                format!("the {} images under {} of {file}", r.n_samples, r.attack),
            ));
        }
        out.push((model.to_owned(), p));
    }
    Ok(out)
}

/// The classes every evaluation of the run shares; no evaluation, or two that disagree, is an
/// error.
fn common_classes(dir: &Path, evaluations: &[Evaluated]) -> Result<Vec<String>> {
    let Some(first) = evaluations.first() else {
        return Err(invalid(
            dir.display().to_string(),
            "no evaluations",
            "a finished run: report.json (written when `classwise train` ends) or \
         eval-<model>-*.json (written by `classwise eval`)",
        ));
    };
    let class_names = first.report.class_names.clone();
    if let Some(other) = evaluations
        .iter()
        .find(|e| e.report.class_names != class_names)
    {
        return Err(invalid(
            dir.join(&other.file).display().to_string(),
            format!("classes {:?}", other.report.class_names),
            format!("the classes of {} ({class_names:?})", first.file),
        ));
    }
    Ok(class_names)
}

impl RunResults {
    /// Reads the evaluations of the run in `input.dir`. A run with none is an error naming the
    /// directory and the files expected; a file that is not a report names itself.
    pub fn read(input: RunInput) -> Result<RunResults> {
        let dir = &input.dir;
        if !dir.is_dir() {
            return Err(invalid(
                dir.display().to_string(),
                "not a directory",
                "a run directory written by `classwise train`",
            ));
        }
        let mut evaluations = Vec::new();
        final_reports(dir, &mut evaluations)?;
        later_evaluations(dir, &mut evaluations)?;
        leaderboard_model(dir, &mut evaluations)?;
        let class_names = common_classes(dir, &evaluations)?;
        let log = match dir.join("metrics.jsonl").is_file() {
            true => Some(RunLog::read(dir)?),
            false => None,
        };
        let predictions = predictions(dir, &evaluations, class_names.len())?;
        let dropped_classes = (RunConfigView::read(dir)?)
            .map(|c| c.data.drop_classes)
            .unwrap_or_default();
        Ok(RunResults {
            input,
            class_names,
            evaluations,
            log,
            predictions,
            dropped_classes,
        })
    }

    /// The evaluation of `model` under `key`.
    pub fn get(&self, model: &str, key: &AttackKey) -> Option<&Evaluated> {
        self.evaluations
            .iter()
            .find(|e| e.model == model && &e.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_file_names() {
        assert_eq!(
            eval_file_model("eval-best-ema-protocol-eps_0.1.json"),
            Some(("best-ema", true))
        );
        assert_eq!(
            eval_file_model("eval-best-protocol-eps_0.1-2.json"),
            Some(("best", true))
        );
        assert_eq!(
            eval_file_model("eval-last-pgd-20-eps_0.1-ce.json"),
            Some(("last", false))
        );
        assert_eq!(eval_file_model("eval-file-x-pgd.json"), None);
        assert_eq!(eval_file_model("report.json"), None);
        assert_eq!(eval_file_model("eval-last-protocol.md"), None);
    }
}
