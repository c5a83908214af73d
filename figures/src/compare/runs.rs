//! What a mean ± std over seeds hides: each group's runs one by one (`runs.md`). Per group,
//! for one model under the comparison's primary evaluation: the range of the clean accuracy
//! over the runs, the weakest class's clean accuracy in each run (how near the floor a
//! worst-class comparison is), each run's worst class under attack (a class that collapsed in
//! one seed), the class whose robust accuracy differs most between seeds, and the other groups
//! whose runs gave the same final reports seed by seed (tables that share runs).

use super::stats::{Comparison, Group, RunMetrics};

/// One group's runs of one model, seed by seed (in the group's order).
struct Runs<'a> {
    group: &'a Group,
    per_run: &'a [RunMetrics],
}

impl Runs<'_> {
    /// `f` of each run, in percent with one decimal, joined by ` / `.
    fn per_seed(&self, f: impl Fn(&RunMetrics) -> f64) -> String {
        let values: Vec<String> = (self.per_run.iter())
            .map(|m| format!("{:.1}", 100.0 * f(m)))
            .collect();
        values.join(" / ")
    }

    fn seeds(&self) -> String {
        let seeds: Vec<String> = (self.group.seeds.iter())
            .map(|s| s.map_or("–".to_owned(), |s| s.to_string()))
            .collect();
        seeds.join(", ")
    }

    /// The lowest and the highest clean accuracy of the runs, in percent.
    fn clean_range(&self) -> String {
        let v = self.per_run.iter().map(|m| m.clean_avg);
        let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        format!("{:.1}–{:.1}", 100.0 * lo, 100.0 * hi)
    }

    /// The class of the lowest clean accuracy averaged over the runs, and its value per run.
    fn weakest_clean(&self, classes: &[String]) -> String {
        // The sum over the runs orders the classes as their mean does.
        let total = |k: usize| {
            self.per_run
                .iter()
                .map(|m| m.clean_per_class[k])
                .sum::<f64>()
        };
        let k = (0..classes.len())
            .min_by(|a, b| total(*a).total_cmp(&total(*b)))
            .expect("a class");
        format!("{} {}", classes[k], self.per_seed(|m| m.clean_per_class[k]))
    }

    /// Each run's worst class under attack and its robust accuracy.
    fn worst_robust(&self, classes: &[String]) -> String {
        let worst: Vec<String> = (self.per_run.iter())
            .map(|m| {
                let k = m.robust_worst_class;
                format!("{} {:.1}", classes[k], 100.0 * m.robust_worst)
            })
            .collect();
        worst.join(" / ")
    }

    /// The class whose robust accuracy spans the widest range over the runs, and its values.
    fn widest_robust(&self, classes: &[String]) -> String {
        let span = |k: usize| {
            let v = self.per_run.iter().map(|m| m.robust_per_class[k]);
            v.clone().fold(f64::NEG_INFINITY, f64::max) - v.fold(f64::INFINITY, f64::min)
        };
        let k = (0..classes.len())
            .max_by(|a, b| span(*a).total_cmp(&span(*b)))
            .expect("a class");
        format!(
            "{} {} (range {:.1})",
            classes[k],
            self.per_seed(|m| m.robust_per_class[k]),
            100.0 * span(k)
        )
    }

    /// Whether `other` has the same seeds and, seed by seed, the same final report numbers
    /// (every per-class accuracy and the confusion matrix under attack, compared exactly).
    fn same_as(&self, other: &Runs<'_>) -> bool {
        self.group.seeds == other.group.seeds && self.per_run == other.per_run
    }
}

/// `runs.md`: the table of the module docs for `model` under the comparison's primary
/// evaluation of it (one every group has), named in its first line.
pub fn markdown(c: &Comparison, model: &str) -> String {
    let mut out = String::from("# The runs one by one\n\n");
    let Some(key) = c.primary_key(model) else {
        out.push_str(&format!(
            "No evaluation of model `{model}` is common to every group.\n"
        ));
        return out;
    };
    out.push_str(&format!(
        "Model `{model}` under {}. Accuracies in percent, one value per run in the order of \
         the seeds column. *Weakest clean class*: the class of the lowest clean accuracy \
         averaged over the runs. *Worst robust class*: each run's own. *Widest robust class*: \
         the class whose robust accuracy differs most between the runs. *Same reports as*: \
         groups whose runs have, seed by seed, exactly the same per-class accuracies and \
         confusion matrix under attack.\n\n\
         | group | seeds | clean, all classes (min–max) | weakest clean class | worst robust \
         class per run | widest robust class | same reports as |\n\
         |---|---|---|---|---|---|---|\n",
        key.describe()
    ));
    let classes = c.class_names();
    let all: Vec<Runs<'_>> = (c.groups.iter())
        .filter_map(|g| {
            let stats = g.get(model, key)?;
            Some(Runs {
                group: g,
                per_run: &stats.per_run,
            })
        })
        .collect();
    for r in &all {
        let same: Vec<&str> = (all.iter())
            .filter(|o| o.group.name != r.group.name && r.same_as(o))
            .map(|o| o.group.name.as_str())
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.group.name,
            r.seeds(),
            r.clean_range(),
            r.weakest_clean(&classes),
            r.worst_robust(&classes),
            r.widest_robust(&classes),
            if same.is_empty() {
                "–".to_owned()
            } else {
                same.join(", ")
            }
        ));
    }
    out
}
