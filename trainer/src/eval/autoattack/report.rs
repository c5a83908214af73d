//! The cascade's report (robust accuracy per class after each attack, the class × attack table,
//! with the final class-wise evaluation) and its markdown.

/// The report's types are records of `classwise_core` ([`classwise_core::record::autoattack`]):
/// versioned, written here and read by `compare` through one checking `parse`.
pub use classwise_core::record::{AUTOATTACK_SCHEMA, AutoAttackReport, StepReport};

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
