//! The class-wise report (`report.json`, `eval-*.json`): a schema-1 report (written by hand here
//! in the trainer's format before `schema`, `robust_counting` and `precision` existed) reads
//! with the documented defaults, the derived statistics are recomputed from the accuracies, a
//! newer schema and inconsistent lists are refused naming the field, and a report reads back
//! equal to what was written.

use classwise_core::eval::{Precision, RobustCounting};
use classwise_core::record::{REPORT_SCHEMA, Report};

/// Summaries of 3 classes of 10 images, as the trainer wrote them; `worst`, `best`, the CV and
/// the MCD of the robust summary are deliberately wrong (they are not read).
const CLEAN: &str = r#"{"n_classes":3,"per_class":[0.9,0.8,0.5],"overall":0.7333333333333333,"class_mean":0.7333333333333333,"worst":{"class":2,"value":0.5},"best":{"class":0,"value":0.9},"cv_fraction2":0.031111111111111114,"cv_percent2":311.1111111111111,"mcd":0.4}"#;
const ROBUST: &str = r#"{"n_classes":3,"per_class":[0.6,0.5,0.1],"overall":0.4,"class_mean":0.4,"worst":{"class":0,"value":0.9},"best":{"class":0,"value":0.0},"cv_fraction2":7.0,"cv_percent2":7.0,"mcd":7.0}"#;
const ERRORS: &str = r#"{"standard":[0.1,0.2,0.5],"boundary":[0.3,0.3,0.4],"robust":[0.4,0.5,0.9],"overall_standard":0.26666666666666666,"overall_boundary":0.3333333333333333,"overall_robust":0.6,"totals":[10,10,10],"clean_wrong_robust_correct":[0,0,0]}"#;
const CONFUSION: &str = r#"{"n_classes":3,"counts":[6,3,1,2,5,3,1,8,1]}"#;

/// The first reports (2026-11-22): no `schema`, `robust_counting`, `precision`, `cvc`.
fn first_report() -> String {
    format!(
        r#"{{"attack":"pgd-10 ce step 0.025","eps":0.1,"n_samples":30,"class_names":["cat","dog","ship"],"clean":{CLEAN},"robust":{ROBUST},"robust_worst_20_percent":0.1,"errors":{ERRORS},"confusion_under_attack":{CONFUSION},"warnings":[]}}"#
    )
}

#[test]
fn a_schema_1_report_reads_with_the_documented_defaults() {
    // A worst 20 % that disagrees with the accuracies (0.1, the lowest of 3 classes).
    let text = first_report().replace(
        "\"robust_worst_20_percent\":0.1",
        "\"robust_worst_20_percent\":0.3",
    );
    let r = Report::parse(&text, "old/report.json").unwrap();
    assert_eq!(r.robust_worst_20_percent, 0.1);
    assert_eq!(r.schema, 1);
    assert_eq!(r.robust_counting, RobustCounting::CleanAndAdversarial);
    assert_eq!(r.precision, Precision::Fp32);
    assert_eq!((r.cvc.as_ref(), r.steps_to_flip.as_ref()), (None, None));
    assert_eq!(r.class_names, ["cat", "dog", "ship"]);
    assert_eq!(r.errors.totals, [10, 10, 10]);
    assert_eq!(r.confusion_under_attack.count(2, 1), Some(8));
    // Kept from the file: the accuracies and the overall accuracy.
    assert_eq!(r.robust.per_class, [0.6, 0.5, 0.1]);
    assert_eq!(r.robust.overall, Some(0.4));
    // Recomputed from the accuracies: worst class 2 (0.1), best class 0 (0.6), MCD 0.5, and
    // CV = ((0.6 − 0.4)² + (0.5 − 0.4)² + (0.1 − 0.4)²)/3 = 0.14/3.
    assert_eq!((r.robust.worst.class, r.robust.worst.value), (2, 0.1));
    assert_eq!((r.robust.best.class, r.robust.best.value), (0, 0.6));
    assert!((r.robust.mcd - 0.5).abs() < 1e-15);
    assert!((r.robust.cv_fraction2 - 0.14 / 3.0).abs() < 1e-15);
    assert!((r.robust.class_mean - 0.4).abs() < 1e-15);
    assert_eq!(r.robust.n_classes, 3);
}

#[test]
fn a_report_reads_back_as_written() {
    let mut r = Report::parse(&first_report(), "old/report.json").unwrap();
    r.schema = REPORT_SCHEMA;
    r.robust_counting = RobustCounting::AdversarialOnly;
    r.precision = Precision::Bf16;
    r.cvc = Some(vec![0.01, 0.02, 0.0]);
    let text = r.to_pretty().unwrap();
    assert!(text.starts_with("{\n  \"schema\": 2,\n"), "{text}");
    assert!(
        text.contains("\"robust_counting\": \"adversarial-only\""),
        "{text}"
    );
    assert!(text.contains("\"precision\": \"bf16\""), "{text}");
    assert!(!text.contains("steps_to_flip"), "absent, not null: {text}");
    let again = Report::parse(&text, "new/report.json").unwrap();
    assert_eq!(again, r);
    assert_eq!(again.to_pretty().unwrap(), text);
}

#[test]
fn the_other_counting_is_read_under_its_name() {
    let with_other = |counting: &str| {
        first_report().replacen(
            ",\"robust_worst_20_percent\"",
            &format!(
                ",\"robust_other_counting\":{{\"robust_counting\":\"{counting}\",\"robust\":{{\"per_class\":[0.7,0.5,0.2]}}}},\"robust_worst_20_percent\""
            ),
            1,
        )
    };
    let r = Report::parse(&with_other("adversarial-only"), "r.json").unwrap();
    let own = RobustCounting::CleanAndAdversarial;
    assert_eq!(r.robust_under(own).unwrap().per_class, [0.6, 0.5, 0.1]);
    let other = r.robust_under(RobustCounting::AdversarialOnly).unwrap();
    assert_eq!(other.per_class, [0.7, 0.5, 0.2]);
    assert_eq!((other.worst.class, other.worst.value), (2, 0.2));
    let text = r.to_pretty().unwrap();
    assert_eq!(Report::parse(&text, "again.json").unwrap(), r);
    // Without it, only the report's own counting; the report's own counting twice is refused.
    let plain = Report::parse(&first_report(), "r.json").unwrap();
    assert!(
        plain
            .robust_under(RobustCounting::AdversarialOnly)
            .is_none()
    );
    let e = Report::parse(&with_other("clean-and-adversarial"), "r.json")
        .unwrap_err()
        .to_string();
    assert!(e.contains("robust_other_counting.robust_counting"), "{e}");
}

#[test]
fn bad_reports_are_refused_naming_the_field() {
    let err = |text: &str| {
        Report::parse(text, "runs/a/report.json")
            .unwrap_err()
            .to_string()
    };
    let with_schema = |v: u32| first_report().replacen('{', &format!("{{\"schema\":{v},"), 1);
    let e = err(&with_schema(3));
    assert!(
        e.contains("runs/a/report.json: schema") && e.contains("= 3") && e.contains("1 to 2"),
        "{e}"
    );
    assert!(err(&with_schema(0)).contains("schema"));
    // Accuracies outside [0, 1], one too few, a confusion matrix of the wrong size.
    let e = err(&first_report().replace("[0.6,0.5,0.1]", "[0.6,1.5,0.1]"));
    assert!(
        e.contains("runs/a/report.json") && e.contains("per_class"),
        "{e}"
    );
    let e = err(&first_report().replace("[0.6,0.5,0.1]", "[0.6,0.5]"));
    assert!(
        e.contains("robust.per_class") && e.contains("2 entries") && e.contains("expected 3"),
        "{e}"
    );
    let e = err(&first_report().replace("[6,3,1,2,5,3,1,8,1]", "[6,3,1,2,5,3,1,8]"));
    assert!(
        e.contains("runs/a/report.json") && e.contains("counts"),
        "{e}"
    );
    let e = err(&first_report().replace("\"totals\":[10,10,10]", "\"totals\":[10,10]"));
    assert!(e.contains("errors.totals"), "{e}");
    let e = err(&first_report().replace("\"totals\":[10,10,10]", "\"totals\":[10,10,9]"));
    assert!(
        e.contains("errors.totals") && e.contains("29 images") && e.contains("n_samples = 30"),
        "{e}"
    );
    let e = err(&first_report().replace(",\"errors\"", ",\"no_errors\""));
    assert!(e.contains("missing field `errors`"), "{e}");
    let e = err(&first_report().replace(
        "\"robust_worst_20_percent\":0.1",
        "\"robust_worst_20_percent\":2.0",
    ));
    assert!(e.contains("robust_worst_20_percent"), "{e}");
}
