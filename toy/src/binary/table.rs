//! The text tables of `classwise toy simulate`, `sweep`, `fit` and `ccm` (their `--json` prints
//! the reports themselves), and the sample CSV of `toy scatter`.

use std::fmt::{self, Write as _};

use classwise_theory::model::{Adversary, BinaryModel, Class};

use super::ccm::{CcmEpoch, CcmReport};
use super::fit::FitReport;
use super::sampler::Sampler;
use super::simulate::{Estimate, Point, Sweep};
use crate::error::{Result, require_count};

impl fmt::Display for Sweep {
    /// Per w, accuracy and class: the estimate, its standard error, the closed form and z.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} samples per class, eps = {}, seed {}",
            self.samples_per_class, self.eps, self.seed
        )?;
        let head = [
            "w",
            "accuracy",
            "class",
            "estimate",
            "s.e.",
            "closed form",
            "z",
        ];
        let [w, acc, class, est, se, cf, z] = head;
        writeln!(
            f,
            "{w:>8} {acc:<14} {class:>5} {est:>10} {se:>9} {cf:>11} {z:>7}"
        )?;
        self.points.iter().try_for_each(|p| point_rows(f, p))
    }
}

/// The six rows of one w: clean, robust (paper's adversary), robust (full), for each class.
fn point_rows(f: &mut fmt::Formatter<'_>, p: &Point) -> fmt::Result {
    let (e, c, z) = (&p.estimates, &p.closed_form, &p.z);
    let rows = [
        ("clean", &e.clean, &c.clean, &z.clean),
        (
            "robust paper",
            &e.robust_paper,
            &c.robust_paper,
            &z.robust_paper,
        ),
        (
            "robust full",
            &e.robust_full,
            &c.robust_full,
            &z.robust_full,
        ),
    ];
    for (name, e, c, z) in rows {
        let per: [(&str, &Estimate, f64, f64); 2] =
            [("+1", &e.pos, c.pos, z.pos), ("-1", &e.neg, c.neg, z.neg)];
        for (class, e, c, z) in per {
            writeln!(
                f,
                "{:>8} {name:<14} {class:>5} {:>10.6} {:>9.2e} {c:>11.6} {z:>7.2}",
                p.w, e.mean, e.se
            )?;
        }
    }
    Ok(())
}

impl fmt::Display for FitReport {
    /// Per ε: the exact empirical ŵ, the logistic surrogate's w and the closed form; then
    /// Theorem 2's monotonicity and w*_y (Theorem 3).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (eps, exact, logistic, cf) = ("eps", "w-hat (exact)", "w (logistic)", "closed form");
        writeln!(
            f,
            "{} samples per class, {:?} adversary, seed {}\n{eps:>8} {exact:>14} {logistic:>14} \
             {cf:>14}",
            self.samples_per_class, self.adversary, self.seed
        )?;
        for p in &self.points {
            let cf = p.closed_form.map_or("n/a".to_string(), |c| c.0.label());
            let (exact, logistic) = (short(p.empirical.argmax.0), short(p.surrogate.w.0));
            writeln!(f, "{:>8} {exact:>14} {logistic:>14} {cf:>14}", p.eps)?;
        }
        let erratum = match self.adversary {
            Adversary::Paper => "",
            Adversary::Full => " (Theorem 2 holds for the paper's adversary only: erratum C6)",
        };
        let monotone = self.empirical_monotone;
        writeln!(
            f,
            "empirical w-hat non-decreasing in eps (Theorem 2): {monotone}{erratum}"
        )?;
        let (e, cf) = (&self.w_star_empirical, &self.w_star_closed_form);
        for (c, e, cf) in [(Class::Pos, &e.pos, cf.pos), (Class::Neg, &e.neg, cf.neg)] {
            writeln!(
                f,
                "w*_{c:?}: empirical {} (clean accuracy {:.4}), closed form {}",
                short(e.argmax.0),
                e.accuracy,
                cf.0.label()
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for CcmReport {
    /// Per CCM epoch, then the last uniform epoch and the matched-budget run: the budgets, w,
    /// the training t_y, clean accuracy and robust accuracy at 2η.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "CCM eps_y = ({} + t_y) * {}, {} samples per class, seed {}",
            self.lambda1, self.eps, self.samples_per_class, self.seed
        )?;
        let head = ["run", "epoch", "eps+", "eps-", "w", "t+", "t-", "A+", "A-"];
        let [run, epoch, ep, en, w, tp, tn, ap, an] = head;
        writeln!(
            f,
            "{run:<8} {epoch:>5} {ep:>7} {en:>7} {w:>8} {tp:>7} {tn:>7} {ap:>7} {an:>7} {:>7} {:>7}",
            "R+(2eta)", "R-(2eta)"
        )?;
        let last = self.uniform.last().map(|e| ("uniform", e));
        let rest = last.into_iter().chain([("matched", &self.matched)]);
        for (name, e) in self.ccm.iter().map(|e| ("ccm", e)).chain(rest) {
            ccm_row(f, name, e)?;
        }
        Ok(())
    }
}

/// One row of the CCM table.
fn ccm_row(f: &mut fmt::Formatter<'_>, name: &str, e: &CcmEpoch) -> fmt::Result {
    let values = [
        e.eps.pos,
        e.eps.neg,
        e.w,
        e.train_robust.pos,
        e.train_robust.neg,
        e.clean.pos,
        e.clean.neg,
        e.robust_at_2eta.pos,
        e.robust_at_2eta.neg,
    ];
    write!(f, "{name:<8} {:>5}", e.epoch)?;
    for (i, v) in values.iter().enumerate() {
        let width = if i == 2 { 8 } else { 7 };
        write!(f, " {v:>width$.4}")?;
    }
    writeln!(f)
}

/// A maximiser for a table: 5 decimals, or scientific notation below 1e-3, or its label
/// (`+inf`, `none`).
fn short(a: classwise_theory::model::Argmax) -> String {
    match a.value() {
        Some(v) if v != 0.0 && v.abs() < 1e-3 => format!("{v:.3e}"),
        Some(v) => format!("{v:.5}"),
        None => a.label(),
    }
}

/// `n` samples of each class as CSV with header `y,x1,...,x{d+1}`, the positive class first.
pub fn scatter_csv(model: BinaryModel, n: usize, seed: u64) -> Result<String> {
    require_count("samples", n, 1)?;
    let sampler = Sampler::new(model);
    let dim = model.d() as usize + 1;
    let mut out = String::from("y");
    for j in 1..=dim {
        let _ = write!(out, ",x{j}");
    }
    out.push('\n');
    for (y, label) in [(Class::Pos, "1"), (Class::Neg, "-1")] {
        for row in sampler.sample(y, n, seed).rows() {
            out.push_str(label);
            for v in row {
                let _ = write!(out, ",{v:?}");
            }
            out.push('\n');
        }
    }
    Ok(out)
}
