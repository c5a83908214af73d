//! The AutoAttack and protocol reports (`eval-<model>-autoattack-….json`,
//! `eval-<model>-protocol-….json`): a schema-1 file (written by hand here in the trainer's
//! format before `schema` existed) reads, the embedded class-wise report goes through the
//! report's own checks (its worst 20 % derived again), a newer schema and tables of the wrong
//! shape are refused naming the field, and a report reads back equal to what was written.

use classwise_core::record::{
    AUTOATTACK_SCHEMA, AutoAttackReport, PROTOCOL_SCHEMA, ProtocolReport,
};

const CLEAN: &str = r#"{"n_classes":3,"per_class":[0.9,0.8,0.5],"overall":0.7333333333333333,"class_mean":0.7333333333333333,"worst":{"class":2,"value":0.5},"best":{"class":0,"value":0.9},"cv_fraction2":0.031111111111111114,"cv_percent2":311.1111111111111,"mcd":0.4}"#;
const ROBUST: &str = r#"{"n_classes":3,"per_class":[0.6,0.5,0.1],"overall":0.4,"class_mean":0.4,"worst":{"class":2,"value":0.1},"best":{"class":0,"value":0.6},"cv_fraction2":0.04666666666666667,"cv_percent2":466.6666666666667,"mcd":0.5}"#;
const ERRORS: &str = r#"{"standard":[0.1,0.2,0.5],"boundary":[0.3,0.3,0.4],"robust":[0.4,0.5,0.9],"overall_standard":0.26666666666666666,"overall_boundary":0.3333333333333333,"overall_robust":0.6,"totals":[10,10,10],"clean_wrong_robust_correct":[0,0,0]}"#;
const CONFUSION: &str = r#"{"n_classes":3,"counts":[6,3,1,2,5,3,1,8,1]}"#;

/// A class-wise report as AutoAttack's final evaluation, its worst 20 % written wrong (0.3; the
/// accuracies give 0.1).
fn evaluation(attack: &str) -> String {
    format!(
        r#"{{"schema":2,"attack":"{attack}","eps":0.1,"robust_counting":"clean-and-adversarial","n_samples":30,"class_names":["cat","dog","ship"],"clean":{CLEAN},"robust":{ROBUST},"robust_worst_20_percent":0.3,"errors":{ERRORS},"confusion_under_attack":{CONFUSION},"warnings":[]}}"#
    )
}

/// An AutoAttack report of 2026-11-24: no `schema`.
fn autoattack() -> String {
    let e = evaluation("autoattack custom (apgd-ce, fab-t)");
    format!(
        r#"{{"version":"custom","eps":0.1,"batch_size":8,"seed":3,"clean_per_class":[0.9,0.8,0.5],"steps":[{{"attack":"apgd-ce","settings":"apgd-ce 100 iterations","attacked":22,"broken":9,"seconds":1.5,"robust_per_class":[0.7,0.5,0.2],"robust":0.4666666666666667}},{{"attack":"fab-t","settings":"fab-t 100 iterations","attacked":14,"broken":2,"seconds":2.5,"robust_per_class":[0.6,0.5,0.1],"robust":0.4}}],"evaluation":{e},"seconds":4.25,"seconds_per_image":0.14166666666666666,"resumed":false}}"#
    )
}

#[test]
fn a_schema_1_autoattack_report_reads_and_its_evaluation_is_checked() {
    let r = AutoAttackReport::parse(&autoattack(), "run/eval-last-aa.json").unwrap();
    assert_eq!(r.schema, 1);
    assert_eq!((r.version.as_str(), r.batch_size, r.seed), ("custom", 8, 3));
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[1].robust_per_class, [0.6, 0.5, 0.1]);
    // The final report's worst 20 % comes from its accuracies (the lowest of 3 classes).
    assert_eq!(r.evaluation.robust_worst_20_percent, 0.1);
    // Written again at the current schema, it reads back equal.
    let mut written = r.clone();
    written.schema = AUTOATTACK_SCHEMA;
    let text = serde_json::to_string_pretty(&written).unwrap();
    assert!(text.contains("\"schema\": 2"), "{text}");
    assert_eq!(AutoAttackReport::parse(&text, "again").unwrap(), written);
}

#[test]
fn bad_autoattack_reports_are_refused_naming_the_field() {
    let cases = [
        (
            autoattack().replacen('{', r#"{"schema":3,"#, 1),
            "f.json: schema",
        ),
        (
            autoattack().replace("[0.9,0.8,0.5],\"steps\"", "[0.9,0.8],\"steps\""),
            "f.json: clean_per_class",
        ),
        (
            autoattack().replace("[0.7,0.5,0.2]", "[0.7,1.5,0.2]"),
            "f.json: steps[0].robust_per_class",
        ),
        (
            autoattack().replace("\"totals\":[10,10,10]", "\"totals\":[10,10]"),
            "f.json: evaluation: errors.totals",
        ),
        (
            autoattack().replace("\"seed\":3,", ""),
            "f.json: not an AutoAttack report",
        ),
    ];
    for (text, field) in cases {
        let e = AutoAttackReport::parse(&text, "f.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}

/// A protocol report of 2026-11-24 (no `schema`): natural accuracy, PGD-20 and the AutoAttack
/// entry with its table.
fn protocol() -> String {
    let natural = evaluation("natural");
    let pgd = evaluation("pgd-20 ce step 0.025 uniform start");
    let aa = autoattack();
    let aa_eval = evaluation("autoattack custom (apgd-ce, fab-t)");
    format!(
        r#"{{"n_samples":30,"class_names":["cat","dog","ship"],"entries":[{{"label":"natural","eps":0.0,"eps_text":"0","evaluation":{natural}}},{{"label":"pgd-20 ce step 0.025 uniform start","eps":0.1,"eps_text":"0.1","evaluation":{pgd}}},{{"label":"autoattack custom (apgd-ce, fab-t)","eps":0.1,"eps_text":"0.1","evaluation":{aa_eval},"autoattack":{aa}}}]}}"#
    )
}

#[test]
fn a_schema_1_protocol_report_reads_entry_by_entry() {
    let p = ProtocolReport::parse(&protocol(), "run/eval-last-protocol.json").unwrap();
    assert_eq!(p.schema, 1);
    let labels: Vec<&str> = p.entries.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels[0], "natural");
    assert!(
        p.entries
            .iter()
            .all(|e| e.evaluation.robust_worst_20_percent == 0.1)
    );
    let aa = p.entries[2].autoattack.as_ref().unwrap();
    assert_eq!(aa.steps.len(), 2);
    let mut written = p.clone();
    written.schema = PROTOCOL_SCHEMA;
    let text = serde_json::to_string(&written).unwrap();
    assert_eq!(ProtocolReport::parse(&text, "again").unwrap(), written);
}

#[test]
fn bad_protocol_reports_are_refused_naming_the_entry() {
    let other_classes = protocol().replacen(
        r#""class_names":["cat","dog","ship"],"clean""#,
        r#""class_names":["cat","dog","car"],"clean""#,
        1,
    );
    let cases = [
        (
            protocol().replacen('{', r#"{"schema":9,"#, 1),
            "p.json: schema",
        ),
        (other_classes, "p.json: entries[0].evaluation"),
        (
            protocol().replacen("[0.7,0.5,0.2]", "[0.7,0.5]", 1),
            "p.json: entries[2].autoattack: steps[0].robust_per_class",
        ),
    ];
    for (text, field) in cases {
        let e = ProtocolReport::parse(&text, "p.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}
