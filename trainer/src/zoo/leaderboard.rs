//! `classwise zoo run`: a class-wise leaderboard of several models on one data set under one
//! protocol (AutoAttack standard by default). Each model is evaluated in its own directory
//! `<out>/models/<name>/` by the same job as `classwise eval --attack autoattack`, so a
//! killed evaluation resumes from its last finished batch, and a finished model is never
//! evaluated again (`finished.json` names its report and the weights' SHA-256). The table is
//! [`Leaderboard`] (`<out>/leaderboard.json`, `.md`).

use std::path::{Path, PathBuf};

use classwise_core::name::slug;
use classwise_core::record::{
    AutoAttackReport, FinishedModel, LEADERBOARD_SCHEMA, Leaderboard, LeaderboardRow, Reported,
};

use super::card::ModelCard;
use super::source::CardSource;
use crate::error::{IoContext, Result, invalid};
use crate::eval::job::{self, EvalRequest};

/// One model of the leaderboard: its card and what its source reports.
#[derive(Clone, Debug)]
pub struct Contender {
    pub card: ModelCard,
    pub reported: Option<Reported>,
}

/// Everything in a request that changes a model's report.
/// The data set is named, not hashed: where it is found (`--data-dir`) is not part of the key,
/// so the same files reached another way reuse the reports.
fn settings_key(arena: &Arena, card: &ModelCard) -> String {
    let r = &arena.request;
    format!(
        "{:?}; eps {}; test_per_class {:?}; data {:?}",
        r.job, card.eps, r.test_per_class, arena.data
    )
}

/// The leaderboard's directory layout.
fn model_dir(out: &Path, card: &ModelCard) -> PathBuf {
    out.join("models").join(slug(&card.name))
}

/// All contenders must share the data set and ε, and have distinct names.
fn check_alike(contenders: &[Contender]) -> Result<()> {
    let Some(first) = contenders.first() else {
        return Err(invalid(
            "models",
            "none",
            "at least one model (--card or --zoo)",
        ));
    };
    for (i, c) in contenders.iter().enumerate() {
        let (a, b) = (&c.card, &first.card);
        if a.dataset != b.dataset || a.eps != b.eps {
            return Err(invalid(
                format!("model `{}`", a.name),
                format!("{} at eps {}", a.dataset.name(), a.eps),
                format!(
                    "the first model's data set and eps: {} at {}",
                    b.dataset.name(),
                    b.eps
                ),
            ));
        }
        if contenders[..i]
            .iter()
            .any(|d| slug(&d.card.name) == slug(&a.name))
        {
            return Err(invalid("models", &a.name, "distinct model names"));
        }
    }
    Ok(())
}

/// Where and how the leaderboard's models are evaluated.
#[derive(Clone, Debug)]
pub struct Arena {
    pub request: EvalRequest,
    pub device: tch::Device,
    /// The leaderboard's directory.
    pub out: PathBuf,
    /// Another source of the models' data set than its official files (a reduced copy).
    pub data: Option<crate::data::DataSource>,
}

/// Evaluates every contender (or reads its finished report) and writes the leaderboard.
pub fn run(contenders: &[Contender], arena: &Arena) -> Result<Leaderboard> {
    let out = arena.out.as_path();
    check_alike(contenders)?;
    let mut rows = Vec::new();
    let mut protocol = (String::new(), 0);
    for c in contenders {
        let (report, row) = evaluate_one(c, arena)?;
        protocol = (
            report.evaluation.attack.clone(),
            report.evaluation.n_samples,
        );
        rows.push((report, row));
    }
    let first = &rows[0].0;
    let board = Leaderboard {
        schema: LEADERBOARD_SCHEMA,
        dataset: contenders[0].card.dataset.name().to_owned(),
        eps: first.eps,
        eps_text: contenders[0].card.eps.clone(),
        protocol: protocol.0,
        n_samples: protocol.1,
        class_names: first.evaluation.class_names.clone(),
        models: rows.into_iter().map(|(_, r)| r).collect(),
    }
    .ranked();
    write(&board, out)?;
    Ok(board)
}

/// The model's finished report, evaluating it first if it has none.
fn evaluate_one(c: &Contender, arena: &Arena) -> Result<(AutoAttackReport, LeaderboardRow)> {
    let out = arena.out.as_path();
    let dir = model_dir(out, &c.card);
    let marker = dir.join(FinishedModel::FILE);
    let sha = c.card.verify_file()?;
    let settings = settings_key(arena, &c.card);
    let finished =
        (read_finished(&marker)?).filter(|f| f.weights_sha256 == sha && f.settings == settings);
    let mark = FinishedModel {
        report: String::new(),
        weights_sha256: sha.clone(),
        settings,
    };
    let report_path = match finished {
        Some(f) => dir.join(f.report),
        None => evaluate_fresh(c, arena, &dir, mark)?,
    };
    let text = std::fs::read_to_string(&report_path).at("reading", &report_path)?;
    let report = AutoAttackReport::parse(&text, &report_path.display().to_string())?;
    let relative = report_path
        .strip_prefix(out)
        .unwrap_or(&report_path)
        .display()
        .to_string();
    let row = row_of(c, &report, relative, sha);
    Ok((report, row))
}

/// Evaluates `c` into `dir` and marks it finished (`mark` with the report's name filled in).
fn evaluate_fresh(
    c: &Contender,
    arena: &Arena,
    dir: &Path,
    mut mark: FinishedModel,
) -> Result<PathBuf> {
    let mut source = CardSource::new(c.card.clone(), arena.device, dir.to_path_buf(), None);
    if let Some(data) = &arena.data {
        source.data = data.clone();
    }
    let written = job::run(&source, &arena.request)?;
    mark.report = written
        .json_path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let text = serde_json::to_string(&mark).map_err(|source| crate::TrainerError::Json {
        what: "finished.json",
        source,
    })?;
    crate::io::write_atomic(&dir.join(FinishedModel::FILE), text.as_bytes())?;
    Ok(written.json_path)
}

fn read_finished(path: &Path) -> Result<Option<FinishedModel>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).at("reading", path)?;
    Ok(Some(FinishedModel::parse(
        &text,
        &path.display().to_string(),
    )?))
}

/// The leaderboard row of a finished report (ranks and flags are filled by
/// [`Leaderboard::ranked`]).
fn row_of(
    c: &Contender,
    report: &AutoAttackReport,
    report_path: String,
    sha: String,
) -> LeaderboardRow {
    let e = &report.evaluation;
    LeaderboardRow {
        name: c.card.name.clone(),
        architecture: c.card.architecture.name(),
        report: report_path,
        weights_sha256: sha,
        clean_per_class: e.clean.per_class.clone(),
        robust_per_class: e.robust.per_class.clone(),
        clean: e.clean.average(),
        robust: e.robust.average(),
        worst_class: e.robust.worst.class,
        worst_robust: e.robust.worst.value,
        robust_std: classwise_core::record::std_dev(&e.robust.per_class),
        robust_worst_20: e.robust_worst_20_percent,
        rank_by_average: 0,
        rank_by_worst: 0,
        reported: c.reported.clone(),
        difference: None,
        flagged: false,
    }
}

/// `<out>/leaderboard.json` and `<out>/leaderboard.md`.
fn write(board: &Leaderboard, out: &Path) -> Result<()> {
    let json = serde_json::to_string_pretty(board).map_err(|source| crate::TrainerError::Json {
        what: "leaderboard",
        source,
    })?;
    crate::io::write_atomic(
        &out.join("leaderboard.json"),
        format!("{json}\n").as_bytes(),
    )?;
    let md = super::text::markdown(board);
    crate::io::write_atomic(&out.join("leaderboard.md"), md.as_bytes())
}
