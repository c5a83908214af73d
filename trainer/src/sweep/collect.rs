//! `classwise sweep collect DIR`: the finished runs of a sweep aggregated over seeds, per group
//! (preset × variant × grid point) and per evaluated model (`last`, the final model; `best`, the
//! selected one; `ema`, `fawa` and their selections when the runs average weights): mean ± sample
//! standard deviation of the clean and robust accuracy, average and worst class, and per class,
//! the numbers of CFA Table 1 and WAT Table 1. Written as `collect.json`, `collect.csv` (long
//! format, one number per line) and `collect.md`.

use std::path::{Path, PathBuf};

use classwise_core::aggregate::MeanStd;
use classwise_core::record::Report;
use serde::Serialize;

use super::SweepDir;
use super::plan::Manifest;
use crate::error::{IoContext, Result};
use crate::run::RunProgress;

/// The report files collected, by the name of the model they evaluate.
pub use classwise_core::record::REPORT_FILES as MODELS;

/// One group's numbers for one model.
#[derive(Clone, Debug, Serialize)]
pub struct ModelSummary {
    /// `last`, `best`, ...
    pub model: String,
    pub attack: String,
    pub eps: f64,
    pub clean_avg: MeanStd,
    pub clean_worst: MeanStd,
    pub robust_avg: MeanStd,
    pub robust_worst: MeanStd,
    pub clean_per_class: Vec<MeanStd>,
    pub robust_per_class: Vec<MeanStd>,
}

/// One group: every seed of a preset × variant × grid point.
#[derive(Clone, Debug, Serialize)]
pub struct GroupSummary {
    pub group: String,
    /// Seeds planned and seeds whose run is complete (the ones aggregated).
    pub seeds_planned: Vec<u64>,
    pub seeds_done: Vec<u64>,
    pub class_names: Vec<String>,
    pub models: Vec<ModelSummary>,
}

/// `collect.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Collected {
    pub sweep: String,
    pub description: Option<String>,
    /// "sample standard deviation over seeds (divisor n - 1)".
    pub std: &'static str,
    pub groups: Vec<GroupSummary>,
}

/// Aggregates the complete runs of the sweep in `dir` (unfinished ones are left out and counted
/// in `seeds_done`).
pub fn collect(dir: &Path) -> Result<Collected> {
    let manifest = Manifest::load(dir)?;
    let sweep = SweepDir(dir.to_path_buf());
    let mut groups: Vec<GroupSummary> = Vec::new();
    let mut reports: Vec<Vec<(String, Vec<Report>)>> = Vec::new();
    for entry in &manifest.runs {
        let g = match groups.iter().position(|g| g.group == entry.group) {
            Some(g) => g,
            None => {
                groups.push(GroupSummary {
                    group: entry.group.clone(),
                    seeds_planned: Vec::new(),
                    seeds_done: Vec::new(),
                    class_names: Vec::new(),
                    models: Vec::new(),
                });
                reports.push(Vec::new());
                groups.len() - 1
            }
        };
        groups[g].seeds_planned.push(entry.seed);
        let run = sweep.run_dir(&entry.id);
        if run.progress()? != RunProgress::Complete {
            continue;
        }
        groups[g].seeds_done.push(entry.seed);
        for (model, file) in MODELS {
            let path = run.0.join(file);
            if !path.exists() {
                continue;
            }
            let report = read_report(&path)?;
            match reports[g].iter_mut().find(|(m, _)| m == model) {
                Some((_, list)) => list.push(report),
                None => reports[g].push((model.to_owned(), vec![report])),
            }
        }
    }
    for (group, per_model) in groups.iter_mut().zip(reports) {
        for (model, list) in per_model {
            group.class_names = list[0].class_names.clone();
            group.models.push(summarise(&group.group, &model, &list)?);
        }
    }
    Ok(Collected {
        sweep: manifest.name,
        description: manifest.description,
        std: "sample standard deviation over seeds (divisor n - 1)",
        groups,
    })
}

fn read_report(path: &Path) -> Result<Report> {
    let text = std::fs::read_to_string(path).at("reading", path)?;
    Ok(Report::parse(&text, &path.display().to_string())?)
}

/// Mean ± std over the seeds' reports of one model; they must agree on attack, ε and classes.
fn summarise(group: &str, model: &str, list: &[Report]) -> Result<ModelSummary> {
    let first = &list[0];
    if let Some(other) = list.iter().find(|r| {
        r.attack != first.attack || r.eps != first.eps || r.class_names != first.class_names
    }) {
        return Err(crate::error::invalid(
            format!("{group}: {model} reports"),
            format!("{} at ε = {}", other.attack, other.eps),
            format!(
                "the same attack, ε and classes in every seed's report ({} at ε = {})",
                first.attack, first.eps
            ),
        ));
    }
    let stat = |f: &dyn Fn(&Report) -> f64| {
        MeanStd::of(&list.iter().map(f).collect::<Vec<_>>()).expect("at least one report")
    };
    let k = first.class_names.len();
    let per_class = |robust: bool| -> Vec<MeanStd> {
        (0..k)
            .map(|c| {
                stat(&|r: &Report| {
                    let s = if robust { &r.robust } else { &r.clean };
                    s.per_class.get(c).copied().unwrap_or(f64::NAN)
                })
            })
            .collect()
    };
    Ok(ModelSummary {
        model: model.to_owned(),
        attack: first.attack.clone(),
        eps: first.eps,
        clean_avg: stat(&|r| r.clean.average()),
        clean_worst: stat(&|r| r.clean.worst.value),
        robust_avg: stat(&|r| r.robust.average()),
        robust_worst: stat(&|r| r.robust.worst.value),
        clean_per_class: per_class(false),
        robust_per_class: per_class(true),
    })
}

/// The CSV: `group,model,attack,eps,metric,class,mean,std,n`, accuracies as fractions; `class` is
/// empty for the average and worst-class rows.
pub fn csv(c: &Collected) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let bad = |e: csv::Error| crate::error::invalid("collect.csv", e, "writable CSV");
    w.write_record([
        "group", "model", "attack", "eps", "metric", "class", "mean", "std", "n",
    ])
    .map_err(bad)?;
    for g in &c.groups {
        for m in &g.models {
            let mut rows: Vec<(&str, String, MeanStd)> = vec![
                ("clean_avg", String::new(), m.clean_avg),
                ("clean_worst", String::new(), m.clean_worst),
                ("robust_avg", String::new(), m.robust_avg),
                ("robust_worst", String::new(), m.robust_worst),
            ];
            for (name, stats) in [
                ("clean", &m.clean_per_class),
                ("robust", &m.robust_per_class),
            ] {
                for (class, s) in g.class_names.iter().zip(stats) {
                    rows.push((name, class.clone(), *s));
                }
            }
            for (metric, class, s) in rows {
                w.write_record([
                    g.group.as_str(),
                    m.model.as_str(),
                    m.attack.as_str(),
                    &m.eps.to_string(),
                    metric,
                    &class,
                    &s.mean.to_string(),
                    &s.std.map(|v| v.to_string()).unwrap_or_default(),
                    &s.n.to_string(),
                ])
                .map_err(bad)?;
            }
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|e| crate::error::invalid("collect.csv", e, "writable CSV"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The markdown: per model, a table of average and worst-class accuracy (CFA Table 1's columns,
/// WAT Table 1's average/worst), then the per-class robust accuracy.
pub fn markdown(c: &Collected) -> String {
    let mut out = format!("# Sweep `{}`\n\n", c.sweep);
    if let Some(d) = &c.description {
        out.push_str(&format!("{d}\n\n"));
    }
    out.push_str(
        "Accuracies in percent, mean ± sample standard deviation over the seeds whose run is \
         complete (`seeds` counts them against those planned).\n",
    );
    let models: Vec<&str> = MODELS
        .iter()
        .map(|(m, _)| *m)
        .filter(|m| {
            c.groups
                .iter()
                .any(|g| g.models.iter().any(|s| s.model == *m))
        })
        .collect();
    for model in models {
        out.push_str(&format!("\n## Model `{model}`\n\n"));
        out.push_str(
            "| group | seeds | attack | clean avg | clean worst | robust avg | robust worst |\n\
             |---|---|---|---|---|---|---|\n",
        );
        for g in &c.groups {
            let seeds = format!("{}/{}", g.seeds_done.len(), g.seeds_planned.len());
            match g.models.iter().find(|m| m.model == model) {
                Some(m) => out.push_str(&format!(
                    "| {} | {seeds} | {} (ε = {}) | {} | {} | {} | {} |\n",
                    g.group,
                    m.attack,
                    m.eps,
                    m.clean_avg.percent(1),
                    m.clean_worst.percent(1),
                    m.robust_avg.percent(1),
                    m.robust_worst.percent(1)
                )),
                None => out.push_str(&format!("| {} | {seeds} | - | - | - | - | - |\n", g.group)),
            }
        }
        for g in &c.groups {
            let Some(m) = g.models.iter().find(|m| m.model == model) else {
                continue;
            };
            out.push_str(&format!(
                "\nRobust accuracy per class, `{}`:\n\n| {} |\n|{}\n| {} |\n",
                g.group,
                g.class_names.join(" | "),
                "---|".repeat(g.class_names.len()),
                m.robust_per_class
                    .iter()
                    .map(|s| s.percent(1))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
    }
    out
}

/// Writes `collect.json`, `collect.csv` and `collect.md` into `dir` (atomically); returns their
/// paths.
pub fn write(dir: &Path, c: &Collected) -> Result<[PathBuf; 3]> {
    let paths = [
        dir.join("collect.json"),
        dir.join("collect.csv"),
        dir.join("collect.md"),
    ];
    crate::io::write_json(&paths[0], "collected sweep", c)?;
    crate::io::write_atomic(&paths[1], csv(c)?.as_bytes())?;
    crate::io::write_atomic(&paths[2], markdown(c).as_bytes())?;
    Ok(paths)
}
