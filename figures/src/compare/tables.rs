//! A [`Comparison`] in the papers' table formats, as markdown, and every number of it as one
//! long CSV.
//!
//! * CFA Table 1: the best and the last checkpoint, clean and robust, average / worst class,
//!   with rows for the weight averages (`+ EMA`, `+ FAWA`) when the runs have them;
//! * CFA Table 4's worst-20% variant of the same;
//! * WAT Tables 1-3: average / worst / ρ (eq. 7) per attack, the natural accuracy first;
//! * WAT Tables 4-5: the class-wise variance CV (fraction²) per attack;
//! * BAT Table 1: standard, boundary and robust error, average / worst class (percent);
//! * Tian et al. Table 1: robust accuracy per class, total, CV (percent²) and MCD.

use std::fmt::Write as _;

use classwise_core::aggregate::MeanStd;

use super::load::AttackKey;
use super::stats::{Comparison, Group, SCALARS, Stats};
use crate::error::{FigureError, Result};

/// The tracks of CFA Table 1: a row suffix and its last and best models.
const TRACKS: [(&str, &str, &str); 3] = [
    ("", "last", "best"),
    (" + EMA", "ema", "best-ema"),
    (" + FAWA", "fawa", "best-fawa"),
];

fn pct(m: MeanStd) -> String {
    m.percent(1)
}

/// `avg / worst` of a statistic pair, in percent.
fn pair(s: &Stats, a: &str, b: &str) -> String {
    format!("{} / {}", pct(s.get(a)), pct(s.get(b)))
}

fn row(out: &mut String, cells: &[String]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

fn header(out: &mut String, cells: &[&str]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(cells.len()));
}

/// The evaluation whose clean accuracy is the "Natural" column of `model` in `g`: the one on
/// the most test images.
fn natural<'a>(g: &'a Group, model: &str) -> Option<&'a Stats> {
    g.stats
        .iter()
        .filter(|s| s.model == model)
        .max_by_key(|s| s.key.n_samples)
}

/// The keys some group evaluated `model` with.
fn keys_of<'a>(c: &'a Comparison, model: &str) -> Vec<&'a AttackKey> {
    c.keys
        .iter()
        .filter(|k| c.groups.iter().any(|g| g.get(model, k).is_some()))
        .collect()
}

fn rho_text(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |r| format!("{r:.3}"))
}

/// How robust images were counted and the forward passes computed: one sentence each when
/// every evaluation agrees, else per evaluation.
fn conditions(c: &Comparison) -> String {
    let mut per_key: Vec<&Stats> = Vec::new();
    for s in c.groups.iter().flat_map(|g| &g.stats) {
        if !per_key.iter().any(|p| p.key == s.key) {
            per_key.push(s);
        }
    }
    per_key.sort_by(|a, b| a.key.cmp(&b.key));
    let counting = one_or_each(
        &per_key,
        "Robust counting",
        |s| s.robust_counting.describe(),
        |s| s.robust_counting.name(),
    );
    let precision = one_or_each(
        &per_key,
        "Precision of the forward passes",
        |s| s.precision.name(),
        |s| s.precision.name(),
    );
    format!("{counting} {precision}")
}

/// `{label}: {all(first)}.` when every entry has the same `each`, else `{label} per evaluation:
/// {key}: {each}; …`.
fn one_or_each(
    per_key: &[&Stats],
    label: &str,
    all: impl Fn(&Stats) -> &'static str,
    each: impl Fn(&Stats) -> &'static str,
) -> String {
    match per_key.first() {
        Some(first) if per_key.iter().all(|s| each(s) == each(first)) => {
            format!("{label}: {}.", all(first))
        }
        _ => {
            let list: Vec<String> = (per_key.iter())
                .map(|s| format!("{}: {}", s.key.describe(), each(s)))
                .collect();
            format!("{label} per evaluation: {}.", list.join("; "))
        }
    }
}

/// The whole comparison as markdown; `model` is the model of the WAT, BAT and Tian tables.
pub fn markdown(c: &Comparison, model: &str) -> String {
    let mut out = String::from("# Class-wise comparison\n\n");
    out.push_str(
        "Accuracies and errors in percent: mean ± sample standard deviation over each group's \
         runs (seeds), each metric computed per run first (the worst class is each run's worst \
         class). ",
    );
    out.push_str(&conditions(c));
    out.push_str("\n\n");
    header(&mut out, &["group", "runs", "seeds"]);
    for g in &c.groups {
        let seeds: Vec<String> = g
            .seeds
            .iter()
            .map(|s| s.map_or("?".into(), |s| s.to_string()))
            .collect();
        row(
            &mut out,
            &[
                format!("`{}`", g.name),
                g.runs.len().to_string(),
                seeds.join(", "),
            ],
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "\nNote: {n}.");
    }
    cfa_table(&mut out, c, false);
    cfa_table(&mut out, c, true);
    wat_tables(&mut out, c, model);
    bat_tables(&mut out, c, model);
    tian_tables(&mut out, c, model);
    out
}

/// CFA Table 1 (or, with `worst20`, Table 4's worst-20% columns) for every evaluation of a
/// best or last model.
fn cfa_table(out: &mut String, c: &Comparison, worst20: bool) {
    let worst = if worst20 { "worst20" } else { "worst" };
    let mut keys: Vec<&AttackKey> = keys_of(c, "last");
    for k in keys_of(c, "best") {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort();
    for key in keys {
        let _ = write!(
            out,
            "\n## {} — {}\n\n",
            if worst20 {
                "CFA Table 4 format (average / worst 20% of classes)"
            } else {
                "CFA Table 1 format (average / worst class)"
            },
            key.describe()
        );
        header(
            out,
            &[
                "method",
                "best: clean",
                "best: robust",
                "last: clean",
                "last: robust",
            ],
        );
        for g in &c.groups {
            for (suffix, last, best) in TRACKS {
                let (l, b) = (g.get(last, key), g.get(best, key));
                if l.is_none() && b.is_none() {
                    continue;
                }
                let cells = |s: Option<&Stats>| match s {
                    Some(s) => [
                        pair(s, "clean_avg", &format!("clean_{worst}")),
                        pair(s, "robust_avg", &format!("robust_{worst}")),
                    ],
                    None => ["–".to_owned(), "–".to_owned()],
                };
                let [bc, br] = cells(b);
                let [lc, lr] = cells(l);
                row(out, &[format!("{}{suffix}", g.name), bc, br, lc, lr]);
            }
        }
    }
}

/// WAT Tables 1-3 (avg / worst / ρ) and 4-5 (CV) for `model`.
fn wat_tables(out: &mut String, c: &Comparison, model: &str) {
    let keys = keys_of(c, model);
    if keys.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\n## WAT Tables 1-3 format — model `{model}`: average / worst class / ρ\n\n\
         ρ is WAT eq. (7) against {}, from the mean accuracies: \
         (worst − worst_base) / worst_base − (avg_base − avg) / avg_base.\n\n",
        c.baseline
            .as_ref()
            .map_or("no baseline (pass --baseline)".to_owned(), |b| format!(
                "`{b}`"
            ))
    );
    let mut head = vec!["method".to_owned(), "natural".to_owned()];
    head.extend(keys.iter().map(|k| k.describe()));
    let head_ref: Vec<&str> = head.iter().map(String::as_str).collect();
    header(out, &head_ref);
    for g in &c.groups {
        let mut cells = vec![g.name.clone()];
        cells.push(match natural(g, model) {
            Some(s) => format!(
                "{} / {}",
                pair(s, "clean_avg", "clean_worst"),
                rho_text(s.rho.and_then(|r| r.clean))
            ),
            None => "–".into(),
        });
        for k in &keys {
            cells.push(match g.get(model, k) {
                Some(s) => format!(
                    "{} / {}",
                    pair(s, "robust_avg", "robust_worst"),
                    rho_text(s.rho.and_then(|r| r.robust))
                ),
                None => "–".into(),
            });
        }
        row(out, &cells);
    }
    let _ = write!(
        out,
        "\n## WAT Tables 4-5 format — model `{model}`: class-wise variance CV (fraction²)\n\n"
    );
    header(out, &head_ref);
    let cv = |m: MeanStd| match m.std {
        Some(s) => format!("{:.4} ± {:.4}", m.mean, s),
        None => format!("{:.4}", m.mean),
    };
    for g in &c.groups {
        let mut cells = vec![g.name.clone()];
        cells.push(natural(g, model).map_or("–".into(), |s| cv(s.get("clean_cv"))));
        for k in &keys {
            cells.push(
                g.get(model, k)
                    .map_or("–".into(), |s| cv(s.get("robust_cv"))),
            );
        }
        row(out, &cells);
    }
}

/// BAT Table 1 (errors, average / worst class) for every evaluation of `model`.
fn bat_tables(out: &mut String, c: &Comparison, model: &str) {
    for key in keys_of(c, model) {
        let _ = write!(
            out,
            "\n## BAT Table 1 format — model `{model}`, {}: errors, average / worst class\n\n\
             Standard error 1 − clean accuracy, boundary error clean − robust accuracy, robust \
             error 1 − robust accuracy (= standard + boundary); each worst class is taken \
             separately.\n\n",
            key.describe()
        );
        header(out, &["method", "standard", "boundary", "robust"]);
        for g in &c.groups {
            if let Some(s) = g.get(model, key) {
                row(
                    out,
                    &[
                        g.name.clone(),
                        pair(s, "std_err_avg", "std_err_worst"),
                        pair(s, "bndy_err_avg", "bndy_err_worst"),
                        pair(s, "rob_err_avg", "rob_err_worst"),
                    ],
                );
            }
        }
    }
}

/// Tian et al. Table 1 (per-class robust accuracy, total, CV in percent², MCD) for every
/// evaluation of `model`.
fn tian_tables(out: &mut String, c: &Comparison, model: &str) {
    let Some(names) = c.groups.first().map(|g| &g.class_names) else {
        return;
    };
    for key in keys_of(c, model) {
        let _ = write!(
            out,
            "\n## Tian et al. Table 1 format — model `{model}`, {}: robust accuracy per class\n\n\
             CV is the population variance of the per-class robust accuracies in percent² (Tian \
             Def. 4.1), MCD the largest minus the smallest, in points (Def. 4.2).\n\n",
            key.describe()
        );
        let mut head: Vec<String> = vec!["method".into(), "total".into()];
        head.extend(names.iter().enumerate().map(|(i, n)| format!("{i} {n}")));
        head.extend(["CV (%²)".to_owned(), "MCD".to_owned()]);
        header(out, &head.iter().map(String::as_str).collect::<Vec<_>>());
        for g in &c.groups {
            let Some(s) = g.get(model, key) else {
                continue;
            };
            let mut cells = vec![g.name.clone(), pct(s.get("robust_avg"))];
            cells.extend(s.robust_per_class.iter().map(|m| pct(*m)));
            let cv = s.get("robust_cv");
            cells.push(match cv.std {
                Some(sd) => format!("{:.1} ± {:.1}", 1e4 * cv.mean, 1e4 * sd),
                None => format!("{:.1}", 1e4 * cv.mean),
            });
            cells.push(pct(s.get("robust_mcd")));
            row(out, &cells);
        }
    }
}

/// Every number as CSV in long format: `group,model,attack,eps,n_samples,metric,class,mean,std,
/// n` (fractions; CV in fraction²); per-class rows have `class`, ρ rows (`rho_clean`,
/// `rho_robust`) have no std.
pub fn csv(c: &Comparison) -> Result<Vec<u8>> {
    let encode = |e: csv::Error| FigureError::Encode {
        what: "compare.csv".into(),
        message: e.to_string(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "group",
        "model",
        "attack",
        "eps",
        "n_samples",
        "metric",
        "class",
        "mean",
        "std",
        "n",
    ])
    .map_err(encode)?;
    for g in &c.groups {
        for s in &g.stats {
            let mut rows: Vec<(String, String, f64, Option<f64>, usize)> = SCALARS
                .iter()
                .map(|(name, _)| {
                    let m = s.get(name);
                    ((*name).to_owned(), String::new(), m.mean, m.std, m.n)
                })
                .collect();
            for (metric, per) in [
                ("clean", &s.clean_per_class),
                ("robust", &s.robust_per_class),
            ] {
                for (name, m) in g.class_names.iter().zip(per) {
                    rows.push((metric.to_owned(), name.clone(), m.mean, m.std, m.n));
                }
            }
            if let Some(r) = s.rho {
                for (metric, v) in [("rho_clean", r.clean), ("rho_robust", r.robust)] {
                    if let Some(v) = v {
                        rows.push((metric.to_owned(), String::new(), v, None, s.runs.len()));
                    }
                }
            }
            for (metric, class, mean, std, n) in rows {
                w.write_record([
                    g.name.as_str(),
                    s.model.as_str(),
                    s.key.attack.as_str(),
                    s.key.eps.as_str(),
                    &s.key.n_samples.to_string(),
                    &metric,
                    &class,
                    &format!("{mean:?}"),
                    &std.map(|v| format!("{v:?}")).unwrap_or_default(),
                    &n.to_string(),
                ])
                .map_err(encode)?;
            }
        }
    }
    w.into_inner().map_err(|e| FigureError::Encode {
        what: "compare.csv".into(),
        message: e.to_string(),
    })
}
