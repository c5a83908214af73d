//! The numbers of a comparison: for every group of runs (one method, several seeds), every
//! model it evaluated (`last`, `best`, …) and every evaluation (attack, ε, test images), the
//! class-wise metrics of the four papers, each computed per run and then summarised as
//! mean ± sample standard deviation over the group's seeds:
//!
//! * clean and robust accuracy, average and worst class (CFA Table 1, WAT Tables 1-3);
//! * the mean of the worst 20% of classes (CFA Table 4);
//! * the class-wise variance CV, in fraction² (WAT Tables 4-5) and the maximal class-wise
//!   discrepancy MCD (Tian et al. Def. 4.1-4.2);
//! * standard, boundary and robust error, average and worst class (BAT Table 1, FRL);
//! * the robust confusion matrix, row-normalised (Tian et al. Fig. 2, BAT Fig. 3);
//!
//! and ρ of WAT eq. (7) against a baseline group, from the mean accuracies as WAT applies it
//! to its printed numbers.

use classwise_core::aggregate::MeanStd;
use classwise_core::eval::{Precision, RobustCounting};
use classwise_core::record::Report;
use classwise_theory::metrics::{ClassAccuracy, ClassAccuracySummary, wat_rho};
use serde::Serialize;

use super::alike::{self, counting_of};
use super::load::{AttackKey, RunResults};
use crate::error::{Result, invalid};

/// One run's metrics of one evaluation (fractions).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunMetrics {
    pub clean_avg: f64,
    pub clean_worst: f64,
    pub clean_worst20: f64,
    pub robust_avg: f64,
    pub robust_worst: f64,
    /// The class of `robust_worst` (the first of the lowest, as [`ClassAccuracy::worst`]).
    pub robust_worst_class: usize,
    pub robust_worst20: f64,
    /// Population variance of the per-class robust accuracy, fraction².
    pub robust_cv: f64,
    pub clean_cv: f64,
    pub robust_mcd: f64,
    /// Standard error 1 − clean, boundary error clean − robust, robust error 1 − robust: the
    /// average (over all images) and the worst class of each, maximised separately.
    pub std_err_avg: f64,
    pub std_err_worst: f64,
    pub bndy_err_avg: f64,
    pub bndy_err_worst: f64,
    pub rob_err_avg: f64,
    pub rob_err_worst: f64,
    pub clean_per_class: Vec<f64>,
    pub robust_per_class: Vec<f64>,
    /// Row-normalised confusion under attack (fractions; rows: true classes), when logged.
    pub confusion: Option<Vec<Vec<f64>>>,
    /// The confusion counts under attack with the diagonal 0 (Tian et al. Fig. 4a, the
    /// "misclassified confusion matrix"), when logged.
    pub misclassified: Option<Vec<Vec<f64>>>,
    /// Per class, its share of the misclassified adversarial examples' predictions: the
    /// off-diagonal column sums of the confusion counts over their total (BAT Fig. 2b, the
    /// target-class distribution), when the counts are logged and some image was misclassified.
    pub target_share: Option<Vec<f64>>,
    /// Tian et al.'s CVC per class (Def. 5.1), when the report has it.
    pub cvc: Option<Vec<f64>>,
    /// Mean attack steps to the first misclassification per class (BAT Fig. 2b), and the
    /// attack's step count, in reports of `classwise eval --attack flip-steps`.
    pub flip_steps: Option<(Vec<f64>, usize)>,
}

impl RunMetrics {
    /// The metrics of one report, its robust accuracy under `counting`; `what` names it in
    /// errors.
    pub fn of(r: &Report, what: &str, counting: RobustCounting) -> Result<RunMetrics> {
        let accuracy = |s: &ClassAccuracySummary| {
            ClassAccuracy::from_values(s.per_class.clone())
                .map_err(|e| invalid(what.to_owned(), e, "per-class accuracies"))
        };
        let counted = r.robust_under(counting).ok_or_else(|| {
            invalid(
                what.to_owned(),
                format!("robust counting {}", r.robust_counting),
                format!("a report with robust accuracy under {counting}"),
            )
        })?;
        let (clean, robust) = (accuracy(&r.clean)?, accuracy(counted)?);
        let worst20 = |a: &ClassAccuracy| {
            a.worst_fraction_mean(0.2)
                .map_err(|e| invalid(what.to_owned(), e, "per-class accuracies"))
        };
        let max = |v: &mut dyn Iterator<Item = f64>| v.fold(f64::NEG_INFINITY, f64::max);
        let pairs = || clean.per_class().iter().zip(robust.per_class());
        let matrix = &r.confusion_under_attack;
        let confusion = matrix
            .row_normalized_percent()
            .map_err(|e| {
                invalid(
                    format!("{what}: confusion_under_attack"),
                    e,
                    "a sample in every class",
                )
            })?
            .into_iter()
            .map(|row| row.into_iter().map(|v| v / 100.0).collect())
            .collect();
        let misclassified = matrix
            .misclassified()
            .into_iter()
            .map(|row| row.into_iter().map(|n| n as f64).collect())
            .collect();
        Ok(RunMetrics {
            clean_avg: r.clean.average(),
            clean_worst: clean.worst().value,
            clean_worst20: worst20(&clean)?,
            robust_avg: counted.average(),
            robust_worst: robust.worst().value,
            robust_worst_class: robust.worst().class,
            robust_worst20: worst20(&robust)?,
            robust_cv: robust.cv(),
            clean_cv: clean.cv(),
            robust_mcd: robust.mcd(),
            std_err_avg: 1.0 - r.clean.average(),
            std_err_worst: 1.0 - clean.worst().value,
            bndy_err_avg: r.clean.average() - counted.average(),
            bndy_err_worst: max(&mut pairs().map(|(c, r)| c - r)),
            rob_err_avg: 1.0 - counted.average(),
            rob_err_worst: 1.0 - robust.worst().value,
            clean_per_class: clean.per_class().to_vec(),
            robust_per_class: robust.per_class().to_vec(),
            confusion: Some(confusion),
            misclassified: Some(misclassified),
            target_share: matrix.target_shares(),
            cvc: r.cvc.clone(),
            flip_steps: r
                .steps_to_flip
                .as_ref()
                .map(|s| (s.mean.clone(), s.max_steps)),
        })
    }
}

/// Reads one scalar of [`RunMetrics`].
pub type Scalar = fn(&RunMetrics) -> f64;

/// The scalar metrics of [`RunMetrics`] by name, in table order.
pub const SCALARS: [(&str, Scalar); 15] = [
    ("clean_avg", |m| m.clean_avg),
    ("clean_worst", |m| m.clean_worst),
    ("clean_worst20", |m| m.clean_worst20),
    ("robust_avg", |m| m.robust_avg),
    ("robust_worst", |m| m.robust_worst),
    ("robust_worst20", |m| m.robust_worst20),
    ("clean_cv", |m| m.clean_cv),
    ("robust_cv", |m| m.robust_cv),
    ("robust_mcd", |m| m.robust_mcd),
    ("std_err_avg", |m| m.std_err_avg),
    ("std_err_worst", |m| m.std_err_worst),
    ("bndy_err_avg", |m| m.bndy_err_avg),
    ("bndy_err_worst", |m| m.bndy_err_worst),
    ("rob_err_avg", |m| m.rob_err_avg),
    ("rob_err_worst", |m| m.rob_err_worst),
];

/// ρ of WAT eq. (7) for the natural (clean) and the robust accuracy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rho {
    pub clean: Option<f64>,
    pub robust: Option<f64>,
}

/// One group's numbers for one model under one evaluation, over its seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub model: String,
    pub key: AttackKey,
    /// How the runs' robust accuracies were counted ([`alike`] checks that they agree).
    pub robust_counting: RobustCounting,
    /// The arithmetic of the runs' forward passes.
    pub precision: Precision,
    /// The runs averaged (their directories), in the group's order.
    pub runs: Vec<String>,
    /// Each scalar of [`SCALARS`], in that order.
    pub scalars: Vec<(String, MeanStd)>,
    pub clean_per_class: Vec<MeanStd>,
    pub robust_per_class: Vec<MeanStd>,
    /// The mean of the runs' row-normalised confusion matrices (all runs logged one).
    pub confusion: Option<Vec<Vec<f64>>>,
    /// The mean of the runs' misclassified counts (Tian et al. Fig. 4a; all runs logged them).
    pub misclassified: Option<Vec<Vec<f64>>>,
    /// Per class over the runs (when every run has it): the target-class share, the CVC and
    /// the mean attack steps to misclassification ([`RunMetrics`]).
    pub target_share: Option<Vec<MeanStd>>,
    pub cvc: Option<Vec<MeanStd>>,
    pub flip_steps: Option<Vec<MeanStd>>,
    /// The step count of the attack that counted `flip_steps`.
    pub max_steps: Option<usize>,
    /// Against the baseline group's same model and evaluation (`None` without a baseline or
    /// when the baseline lacks that evaluation; a side is `None` when the baseline's accuracy
    /// is 0, a denominator of eq. (7)).
    pub rho: Option<Rho>,
    /// Per run, for the CSV and the figures.
    #[serde(skip)]
    pub per_run: Vec<RunMetrics>,
}

impl Stats {
    /// The summary of a scalar of [`SCALARS`].
    pub fn get(&self, name: &str) -> MeanStd {
        self.scalars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
            .unwrap_or_else(|| panic!("{name} is not one of compare::stats::SCALARS"))
    }

    /// The class whose robust accuracy, averaged over the runs, is lowest (the one worst-class
    /// rule, [`ClassAccuracy::worst`]: the first of a tie).
    pub fn weakest_robust_class(&self) -> usize {
        let means = self.robust_per_class.iter().map(|m| m.mean).collect();
        ClassAccuracy::from_values(means).map_or(0, |a| a.worst().class)
    }

    /// One line of a summary: `label`, the average clean and robust accuracy and the
    /// worst-class robust accuracy (each the mean over the runs, percent) with the class whose
    /// mean robust accuracy is lowest.
    pub fn headline(&self, label: &str, class_names: &[String]) -> String {
        let pct = |name: &str| 100.0 * self.get(name).mean;
        let class = (class_names.get(self.weakest_robust_class())).map_or("?", String::as_str);
        format!(
            "{label:<14} clean {:.1}%, robust {:.1}%, worst class {:.1}% ({class})",
            pct("clean_avg"),
            pct("robust_avg"),
            pct("robust_worst")
        )
    }
}

/// A group: the runs of one method (seeds), and their statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub name: String,
    pub seeds: Vec<Option<u64>>,
    pub runs: Vec<String>,
    pub class_names: Vec<String>,
    pub stats: Vec<Stats>,
}

impl Group {
    /// The statistics of `model` under `key`.
    pub fn get(&self, model: &str, key: &AttackKey) -> Option<&Stats> {
        self.stats
            .iter()
            .find(|s| s.model == model && &s.key == key)
    }
}

/// Everything `classwise compare` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub groups: Vec<Group>,
    /// The group ρ is computed against.
    pub baseline: Option<String>,
    /// "sample standard deviation over seeds (divisor n - 1)".
    pub std: &'static str,
    /// The models evaluated in some group, in [`REPORT_FILES`] order.
    ///
    /// [`REPORT_FILES`]: classwise_core::record::REPORT_FILES
    pub models: Vec<String>,
    /// The evaluations found, sorted.
    pub keys: Vec<AttackKey>,
    /// Evaluations not present in every run of a group (left out of its statistics).
    pub notes: Vec<String>,
    /// The counting robust accuracy was read under where a report has it (`prefer` of
    /// [`Comparison::new`]).
    #[serde(skip)]
    pub prefer: Option<RobustCounting>,
}

impl Comparison {
    /// Groups `runs` by [`RunInput::group`](super::load::RunInput) in first-seen order and
    /// summarises each model and evaluation that every run of the group has; `baseline` names
    /// the group ρ is computed against; robust accuracy is read under the counting `prefer`
    /// where a report has it (else under its own). All runs must have the same classes, and
    /// the reports of one evaluation the same counting, precision and test images
    /// ([`alike::check`]).
    pub fn new(
        runs: &[RunResults],
        baseline: Option<&str>,
        prefer: Option<RobustCounting>,
    ) -> Result<Comparison> {
        let Some(first) = runs.first() else {
            return Err(invalid("runs", "none", "at least one run directory"));
        };
        if let Some(other) = runs.iter().find(|r| r.class_names != first.class_names) {
            return Err(invalid(
                other.input.dir.display().to_string(),
                format!("classes {:?}", other.class_names),
                format!(
                    "the classes of {} ({:?}): runs on different data cannot be compared",
                    first.input.dir.display(),
                    first.class_names
                ),
            ));
        }
        alike::check(runs, prefer)?;
        let mut names: Vec<&str> = Vec::new();
        for r in runs {
            if !names.contains(&r.input.group.as_str()) {
                names.push(&r.input.group);
            }
        }
        if let Some(b) = baseline
            && !names.contains(&b)
        {
            return Err(invalid(
                "--baseline",
                b,
                format!("one of the groups compared: {}", names.join(", ")),
            ));
        }
        let mut notes = Vec::new();
        let mut groups = Vec::new();
        let mut keys: Vec<AttackKey> = Vec::new();
        let mut models: Vec<String> = Vec::new();
        for name in names {
            let members: Vec<&RunResults> = runs.iter().filter(|r| r.input.group == name).collect();
            notes.extend(repeated_seeds(name, &members));
            let mut pairs: Vec<(&str, &AttackKey)> = Vec::new();
            for e in members.iter().flat_map(|r| &r.evaluations) {
                if !pairs.contains(&(e.model.as_str(), &e.key)) {
                    pairs.push((&e.model, &e.key));
                }
            }
            let mut stats = Vec::new();
            for (model, key) in pairs {
                let found: Vec<_> = members.iter().filter_map(|r| r.get(model, key)).collect();
                if found.len() < members.len() {
                    notes.push(format!(
                        "{name}: `{model}` under {} is in {} of its {} runs; left out",
                        key.describe(),
                        found.len(),
                        members.len()
                    ));
                    continue;
                }
                let per_run = found
                    .iter()
                    .zip(&members)
                    .map(|(e, r)| {
                        let what = r.input.dir.join(&e.file).display().to_string();
                        RunMetrics::of(&e.report, &what, counting_of(&e.report, prefer))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let conditions = alike::conditions(&found[0].report, prefer);
                stats.push(summarise(model, key, &members, per_run, &conditions));
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
                if !models.iter().any(|m| m == model) {
                    models.push(model.to_owned());
                }
            }
            groups.push(Group {
                name: name.to_owned(),
                seeds: members.iter().map(|r| r.input.seed).collect(),
                runs: members
                    .iter()
                    .map(|r| r.input.dir.display().to_string())
                    .collect(),
                class_names: first.class_names.clone(),
                stats,
            });
        }
        if let Some(b) = baseline {
            let base = groups
                .iter()
                .find(|g| g.name == b)
                .cloned()
                .expect("checked");
            // The baseline against itself is ρ = 0, as WAT Table 1 prints it.
            for g in &mut groups {
                for s in &mut g.stats {
                    s.rho = base.get(&s.model, &s.key).map(|bs| Rho {
                        clean: rho(bs, s, "clean"),
                        robust: rho(bs, s, "robust"),
                    });
                }
            }
        }
        keys.sort();
        let order = |m: &String| {
            classwise_core::record::REPORT_FILES
                .iter()
                .position(|(n, _)| n == m)
        };
        models.sort_by_key(order);
        Ok(Comparison {
            groups,
            baseline: baseline.map(str::to_owned),
            std: "sample standard deviation over seeds (divisor n - 1)",
            models,
            keys,
            notes,
            prefer,
        })
    }

    /// The class names of the runs compared ([`Comparison::new`] checks that every run has the
    /// same); none without a group.
    pub fn class_names(&self) -> Vec<String> {
        self.groups
            .first()
            .map(|g| g.class_names.clone())
            .unwrap_or_default()
    }

    /// The evaluation the figures show: among those every group has for `model`, AutoAttack if
    /// there is one, else the one with the lowest robust accuracy averaged over the groups (the
    /// strongest attack).
    pub fn primary_key(&self, model: &str) -> Option<&AttackKey> {
        let common: Vec<&AttackKey> = self
            .keys
            .iter()
            .filter(|k| self.groups.iter().all(|g| g.get(model, k).is_some()))
            .collect();
        let mean_robust = |k: &AttackKey| {
            self.groups
                .iter()
                .map(|g| g.get(model, k).expect("common").get("robust_avg").mean)
                .sum::<f64>()
        };
        common
            .iter()
            .copied()
            .find(|k| k.is_autoattack())
            .or_else(|| {
                common
                    .iter()
                    .copied()
                    .min_by(|a, b| mean_robust(a).total_cmp(&mean_robust(b)))
            })
    }
}

/// A note for each seed that two runs of the group share (two sweeps with a group of the same
/// name, or run directories labelled alike): they are averaged as separate runs.
fn repeated_seeds(name: &str, members: &[&RunResults]) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, r) in members.iter().enumerate() {
        let Some(seed) = r.input.seed else { continue };
        if let Some(o) = members[..i].iter().find(|o| o.input.seed == Some(seed)) {
            notes.push(format!(
                "{name}: {} and {} are both seed {seed}; averaged as two runs (name them apart \
                 with --label DIR=NAME)",
                o.input.dir.display(),
                r.input.dir.display()
            ));
        }
    }
    notes
}

/// ρ of WAT eq. (7) of `s` against `base` from their mean `clean` or `robust` accuracies.
fn rho(base: &Stats, s: &Stats, which: &str) -> Option<f64> {
    let m = |st: &Stats, what: &str| st.get(&format!("{which}_{what}")).mean;
    wat_rho(m(base, "avg"), m(base, "worst"), m(s, "avg"), m(s, "worst")).ok()
}

fn summarise(
    model: &str,
    key: &AttackKey,
    members: &[&RunResults],
    per_run: Vec<RunMetrics>,
    conditions: &alike::Conditions,
) -> Stats {
    let over = |f: &dyn Fn(&RunMetrics) -> f64| {
        MeanStd::of(&per_run.iter().map(f).collect::<Vec<_>>()).expect("at least one run")
    };
    let k = per_run[0].clean_per_class.len();
    // A K × K matrix every run has, averaged cell by cell.
    let matrix_mean_of = |f: &dyn Fn(&RunMetrics) -> Option<&Vec<Vec<f64>>>| {
        let all = per_run.iter().map(f).collect::<Option<Vec<_>>>()?;
        Some(
            (0..k)
                .map(|i| {
                    (0..k)
                        .map(|j| all.iter().map(|c| c[i][j]).sum::<f64>() / all.len() as f64)
                        .collect()
                })
                .collect(),
        )
    };
    let confusion = matrix_mean_of(&|m| m.confusion.as_ref());
    let misclassified = matrix_mean_of(&|m| m.misclassified.as_ref());
    // A per-class list every run has, summarised class by class.
    let per_class_of = |f: &dyn Fn(&RunMetrics) -> Option<&Vec<f64>>| -> Option<Vec<MeanStd>> {
        let all = per_run.iter().map(f).collect::<Option<Vec<_>>>()?;
        (0..k)
            .map(|c| MeanStd::of(&all.iter().map(|v| v[c]).collect::<Vec<_>>()))
            .collect()
    };
    let target_share = per_class_of(&|m| m.target_share.as_ref());
    let cvc = per_class_of(&|m| m.cvc.as_ref());
    let flip_steps = per_class_of(&|m| m.flip_steps.as_ref().map(|(v, _)| v));
    let max_steps = per_run
        .iter()
        .filter_map(|m| m.flip_steps.as_ref().map(|(_, k)| *k))
        .max();
    Stats {
        model: model.to_owned(),
        robust_counting: conditions.counting,
        precision: conditions.precision,
        key: key.clone(),
        runs: members
            .iter()
            .map(|r| r.input.dir.display().to_string())
            .collect(),
        scalars: SCALARS
            .iter()
            .map(|(n, f)| ((*n).to_owned(), over(f)))
            .collect(),
        clean_per_class: (0..k).map(|c| over(&|m| m.clean_per_class[c])).collect(),
        robust_per_class: (0..k).map(|c| over(&|m| m.robust_per_class[c])).collect(),
        confusion,
        misclassified,
        target_share,
        cvc,
        flip_steps,
        max_steps,
        rho: None,
        per_run,
    }
}
