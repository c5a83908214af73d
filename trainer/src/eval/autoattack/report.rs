//! The cascade's report: robust accuracy per class after each attack (the class × attack table)
//! with the final class-wise evaluation, and its markdown.

use serde::{Deserialize, Serialize};

use crate::eval::Report;

/// Robust accuracy after one attack of the cascade.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepReport {
    pub attack: String,
    /// The attack with its settings.
    pub settings: String,
    /// Points it attacked (those still robust before it).
    pub attacked: usize,
    /// Points it broke.
    pub broken: usize,
    pub seconds: f64,
    /// Robust accuracy per class after this attack.
    pub robust_per_class: Vec<f64>,
    /// Robust accuracy over all points after this attack.
    pub robust: f64,
}

/// AutoAttack's class-wise result.
#[derive(Clone, Debug, Serialize)]
pub struct AutoAttackReport {
    /// `standard`, `plus`, `rand` or `custom`.
    pub version: String,
    pub eps: f64,
    pub batch_size: usize,
    pub seed: u64,
    /// Clean accuracy per class (the table's first column).
    pub clean_per_class: Vec<f64>,
    /// The class × attack table, one entry per attack in cascade order.
    pub steps: Vec<StepReport>,
    /// The final class-wise report (robust = survived every attack).
    pub evaluation: Report,
    /// Seconds of the whole evaluation (clean pass included; over all sessions if resumed).
    pub seconds: f64,
    pub seconds_per_image: f64,
    /// Whether the evaluation continued a saved state.
    pub resumed: bool,
}

/// The class × attack table in markdown: clean, then robust accuracy after each attack, per
/// class, with the overall row and the time per attack.
pub fn markdown(r: &AutoAttackReport) -> String {
    use std::fmt::Write as _;
    let pct = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{:.2}", 100.0 * v)
        }
    };
    let e = &r.evaluation;
    let mut out = format!(
        "AutoAttack {} at eps = {} on {} images ({:.1} s, {:.3} s per image{}): robust \
         accuracy per class after each attack, each attack running on the points still robust.\n\n| class | clean % |",
        r.version,
        r.eps,
        e.n_samples,
        r.seconds,
        r.seconds_per_image,
        if r.resumed { ", resumed" } else { "" }
    );
    for s in &r.steps {
        let _ = write!(out, " {} % |", s.attack);
    }
    out.push_str("\n|---|---|");
    for _ in &r.steps {
        out.push_str("---|");
    }
    out.push('\n');
    for (c, name) in e.class_names.iter().enumerate() {
        let _ = write!(out, "| {c} {name} | {} |", pct(r.clean_per_class[c]));
        for s in &r.steps {
            let _ = write!(out, " {} |", pct(s.robust_per_class[c]));
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        "| **all** | {} |",
        pct(e.clean.overall.unwrap_or(e.clean.class_mean))
    );
    for s in &r.steps {
        let _ = write!(out, " {} |", pct(s.robust));
    }
    out.push_str("\n| **seconds** | |");
    for s in &r.steps {
        let _ = write!(out, " {:.1} |", s.seconds);
    }
    out.push_str("\n\n");
    for s in &r.steps {
        let _ = writeln!(
            out,
            "- {}: {} ({} attacked, {} broken)",
            s.attack, s.settings, s.attacked, s.broken
        );
    }
    out.push('\n');
    out.push_str(&crate::eval::markdown(e));
    out
}
