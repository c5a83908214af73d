//! The text table of `classwise toy multiclass` (its `--json` prints the [`RunReport`]): the
//! per-epoch robust accuracies and budgets, then the final, FAWA and WAT-selected models.

use std::fmt;

use super::report::{EpochRecord, ModelReport, RunReport};

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} on the toy, seed {}", self.label, self.config.seed)?;
        let (epoch, avg, worst, val) = ("epoch", "rob avg", "rob worst", "val worst");
        writeln!(f, "{epoch:>5} {avg:>9} {worst:>9} {val:>10}  eps_k")?;
        self.history.iter().try_for_each(|r| epoch_row(f, r))?;
        let mut models = vec![("final", &self.final_model)];
        models.extend(self.fawa.as_ref().map(|m| ("FAWA", m)));
        models.push(("WAT-selected", &self.selected.model));
        models
            .into_iter()
            .try_for_each(|(name, m)| model_rows(f, name, m))
    }
}

/// One epoch: the test robust accuracy's class mean and minimum, the validation worst class,
/// and the budgets ε_k.
fn epoch_row(f: &mut fmt::Formatter<'_>, r: &EpochRecord) -> fmt::Result {
    let n = r.test_robust.len() as f64;
    let avg = r.test_robust.iter().sum::<f64>() / n;
    let worst = r.test_robust.iter().copied().fold(f64::INFINITY, f64::min);
    let eps: Vec<String> = r.plan.eps.iter().map(|e| format!("{e:.3}")).collect();
    let (epoch, val, eps) = (r.epoch, r.val_worst_robust, eps.join(" "));
    writeln!(f, "{epoch:>5} {avg:>9.4} {worst:>9.4} {val:>10.4}  {eps}")
}

/// A model's clean and robust summary, then its robust accuracy per class.
fn model_rows(f: &mut fmt::Formatter<'_>, name: &str, m: &ModelReport) -> fmt::Result {
    writeln!(
        f,
        "{name:<13} clean avg {:.4} worst {:.4} | robust avg {:.4} worst {:.4} CV {:.5} MCD {:.4}",
        m.clean_avg(),
        m.clean_worst(),
        m.robust_avg(),
        m.robust_worst(),
        m.robust.cv_fraction2,
        m.robust.mcd
    )?;
    let per: Vec<String> = (m.robust.per_class.iter())
        .map(|v| format!("{v:.3}"))
        .collect();
    writeln!(f, "{:<13} robust per class: {}", "", per.join(" "))
}
