//! The records of `metrics.jsonl`: lines of schema 1 (written by hand here in the format of the
//! trainer before `schema` existed), 2 and 3 are read, a newer schema is refused by number, and
//! a record written by `to_line` reads back the same.

use classwise_core::CoreError;
use classwise_core::record::{
    AveragingRecord, EpochRecord, METRICS_SCHEMA, READABLE_SCHEMAS, SplitRecord, schema_of,
};
use classwise_core::{ClassPlan, Result};
use classwise_theory::calibration::AverageAction;

const SPLIT: &str = r#"{"clean":[0.9,0.8,0.7],"robust":[0.5,0.4,0.1],"clean_avg":0.8,"robust_avg":0.3333333333333333,"robust_worst":0.1,"robust_worst_class":2,"robust_cv":0.25,"robust_mcd":0.4}"#;

fn split() -> SplitRecord {
    SplitRecord {
        clean: vec![0.9, 0.8, 0.7],
        robust: vec![0.5, 0.4, 0.1],
        clean_avg: 0.8,
        robust_avg: 0.3333333333333333,
        robust_worst: 0.1,
        robust_worst_class: 2,
        robust_cv: 0.25,
        robust_mcd: 0.4,
    }
}

/// The first schema-1 lines: a plan with one loss weight per class, `images_per_second`, no
/// `ema_test`, no warm-up and no split timings.
fn first_schema_1_line() -> String {
    format!(
        r#"{{"epoch":4,"lr":0.05,"train_loss":1.25,"train_robust":[0.3,0.2,0.1],"plan":{{"eps":[0.1,0.1,0.1],"beta":[6.0,6.0,6.0],"weight":[1.0,2.0,1.0]}},"val":null,"test":{SPLIT},"seconds":12.5,"images_per_second":480.0}}"#
    )
}

/// The last schema-1 lines: `ema_test`, `eps_warmup` and the split timings.
fn last_schema_1_line() -> String {
    format!(
        r#"{{"epoch":0,"lr":0.1,"train_loss":2.0,"train_robust":[0.3,0.2,0.1],"plan":{{"eps":[0.1,0.1,0.1],"beta":[6.0,6.0,6.0],"weight":[1.0,1.0,1.0]}},"val":{SPLIT},"test":{SPLIT},"ema_test":{SPLIT},"eps_warmup":[0.25,0.5],"seconds":12.5,"train_seconds":10.0,"train_images_per_second":600.0,"eval_seconds":2.0}}"#
    )
}

/// A schema-2 line as the trainer writes it for a CFA run with EMA and FAWA.
fn schema_2_line() -> String {
    format!(
        r#"{{"schema":2,"epoch":7,"rule":"cfa","lr":0.01,"train_loss":0.9,"train_robust":[0.6,0.5,0.2],"plan":{{"eps":[0.11,0.1,0.07],"beta":[6.0,6.0,6.0],"natural_weight":[1.0,1.0,1.0],"boundary_weight":[1.0,1.0,1.0],"step_size":0.025}},"val":{SPLIT},"test":{SPLIT},"ema_test":{SPLIT},"fawa_test":null,"averaging":[{{"name":"ema","action":{{"Average":{{"alpha":0.88}}}},"gate_value":null,"updates":7}},{{"name":"fawa","action":"Keep","gate_value":0.05,"updates":0}}],"eps_warmup":null,"seconds":30.0,"train_seconds":25.0,"train_images_per_second":240.0,"eval_seconds":4.5}}"#
    )
}

fn schema_2_record() -> EpochRecord {
    EpochRecord {
        schema: METRICS_SCHEMA,
        epoch: 7,
        rule: "cfa".to_owned(),
        lr: 0.01,
        train_loss: 0.9,
        train_robust: vec![0.6, 0.5, 0.2],
        train_attack_steps: None,
        train_confusion: None,
        plan: ClassPlan {
            eps: vec![0.11, 0.1, 0.07],
            beta: vec![6.0; 3],
            natural_weight: vec![1.0; 3],
            boundary_weight: vec![1.0; 3],
            step_size: Some(0.025),
        },
        rule_state: None,
        val: Some(split()),
        test: Some(split()),
        ema_test: Some(split()),
        fawa_test: None,
        averaging: vec![
            AveragingRecord {
                name: "ema".to_owned(),
                action: AverageAction::Average { alpha: 0.88 },
                gate_value: None,
                updates: 7,
            },
            AveragingRecord {
                name: "fawa".to_owned(),
                action: AverageAction::Keep,
                gate_value: Some(0.05),
                updates: 0,
            },
        ],
        eps_warmup: None,
        seconds: 30.0,
        train_seconds: Some(25.0),
        train_images_per_second: Some(240.0),
        eval_seconds: Some(4.5),
    }
}

#[test]
fn schema_1_lines_are_converted_to_the_current_records() -> Result<()> {
    assert_eq!(schema_of(&first_schema_1_line())?, 1);
    let r = EpochRecord::parse(&first_schema_1_line())?;
    assert_eq!(r.schema, METRICS_SCHEMA);
    assert_eq!((r.epoch, r.lr, r.train_loss), (4, 0.05, 1.25));
    assert_eq!(r.rule, "uniform");
    // w_k weighted the whole loss: it is the weight of both terms, with the attack's own step.
    assert_eq!(
        r.plan,
        ClassPlan {
            eps: vec![0.1; 3],
            beta: vec![6.0; 3],
            natural_weight: vec![1.0, 2.0, 1.0],
            boundary_weight: vec![1.0, 2.0, 1.0],
            step_size: None,
        }
    );
    assert_eq!(r.val, None);
    assert_eq!(r.test, Some(split()));
    assert_eq!(
        r.test.as_ref().map(SplitRecord::score),
        Some(0.3333333333333333 + 0.1)
    );
    assert_eq!((&r.ema_test, &r.fawa_test), (&None, &None));
    assert!(r.averaging.is_empty());
    assert_eq!(r.eps_warmup, None);
    assert_eq!(r.seconds, 12.5);
    assert_eq!(
        (r.train_seconds, r.train_images_per_second, r.eval_seconds),
        (None, None, None)
    );

    let r = EpochRecord::parse(&last_schema_1_line())?;
    assert_eq!(r.ema_test, Some(split()));
    assert_eq!(r.eps_warmup, Some([0.25, 0.5]));
    assert_eq!(
        (r.train_seconds, r.train_images_per_second, r.eval_seconds),
        (Some(10.0), Some(600.0), Some(2.0))
    );
    assert_eq!(r.plan, ClassPlan::uniform(3, 0.1, 6.0));
    Ok(())
}

#[test]
fn schema_2_lines_are_read_as_written() -> Result<()> {
    // (as the current schema: schema 3 only added optional fields)
    assert_eq!(schema_of(&schema_2_line())?, 2);
    assert_eq!(EpochRecord::parse(&schema_2_line())?, schema_2_record());
    Ok(())
}

/// A schema-3 line of a BAT run that logs its training confusion: the schema-2 line with the
/// mean attack steps and the confusion counts of the training inputs.
fn schema_3_line() -> String {
    schema_2_line().replace(r#""schema":2"#, r#""schema":3"#).replace(
        r#""plan":"#,
        r#""train_attack_steps":[4.5,3.0,0.25],"train_confusion":[[6,3,1],[2,5,3],[0,8,2]],"plan":"#,
    )
}

#[test]
fn schema_3_lines_carry_the_training_attack_steps_and_confusion() -> Result<()> {
    assert_eq!(schema_of(&schema_3_line())?, 3);
    let r = EpochRecord::parse(&schema_3_line())?;
    assert_eq!(r.train_attack_steps, Some(vec![4.5, 3.0, 0.25]));
    assert_eq!(
        r.train_confusion,
        Some(vec![vec![6, 3, 1], vec![2, 5, 3], vec![0, 8, 2]])
    );
    let line = r.to_line()?;
    assert!(line.contains(r#""train_confusion":[[6,3,1],"#), "{line}");
    assert_eq!(EpochRecord::parse(&line)?, r);
    // A schema-2 line is read as the current schema, without the fields it never logged.
    let old = EpochRecord::parse(&schema_2_line())?;
    assert_eq!((old.schema, old.train_attack_steps.as_ref()), (3, None));
    // One entry per class, a square matrix: else the field and the epoch are named.
    for (bad, field) in [
        ("[4.5,3.0]", "train_attack_steps"),
        ("[[6,3,1],[2,5,3]]", "train_confusion"),
        ("[[6,3,1],[2,5],[0,8,2]]", "train_confusion row"),
    ] {
        let line = match field {
            "train_attack_steps" => schema_3_line().replace("[4.5,3.0,0.25]", bad),
            _ => schema_3_line().replace("[[6,3,1],[2,5,3],[0,8,2]]", bad),
        };
        let err = EpochRecord::parse(&line).unwrap_err().to_string();
        assert!(
            err.contains(&format!("`metrics.{field}`")) && err.contains("epoch 7"),
            "{err}"
        );
    }
    Ok(())
}

#[test]
fn a_newer_schema_is_refused_by_number() {
    let line = schema_2_line().replace(r#""schema":2"#, r#""schema":4"#);
    let err = EpochRecord::parse(&line).unwrap_err();
    assert_eq!(
        err,
        CoreError::UnsupportedSchema {
            schema: 4,
            readable: "1, 2, 3".to_owned()
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("schema 4") && msg.contains("1, 2, 3"), "{msg}");
    assert_eq!(READABLE_SCHEMAS.last(), Some(&METRICS_SCHEMA));
}

#[test]
fn malformed_lines_name_the_field_and_the_schema() {
    let err = EpochRecord::parse(r#"{"epoch":1,"lr":0.1}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("schema 1") && err.contains("train_loss"),
        "{err}"
    );
    // A schema-2 line with the schema-1 plan.
    let line = schema_2_line().replace(r#""natural_weight""#, r#""weight""#);
    let err = EpochRecord::parse(&line).unwrap_err().to_string();
    assert!(
        err.contains("schema 2") && err.contains("natural_weight"),
        "{err}"
    );
    for bad in [
        "",
        "not json",
        "[1, 2]",
        r#"{"schema":"2"}"#,
        r#"{"schema":-1}"#,
    ] {
        assert!(
            matches!(
                EpochRecord::parse(bad),
                Err(CoreError::Record { schema: None, .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn records_round_trip_through_a_line() -> Result<()> {
    let record = schema_2_record();
    let line = record.to_line()?;
    assert!(line.starts_with(r#"{"schema":3,"#), "{line}");
    assert!(!line.contains('\n'));
    assert_eq!(EpochRecord::parse(&line)?, record);
    // Every f64 reads back to the same bits (serde_json's default parser can be one ulp off,
    // e.g. for this loss logged by a trainer run).
    let mut exact = schema_2_record();
    exact.train_loss = 1.1036719381809235;
    exact.train_robust = vec![0.1 + 0.2, 1.0 / 3.0, 2.0f64.sqrt() / 7.0];
    exact.lr = 5e-324;
    let line = exact.to_line()?;
    assert_eq!(EpochRecord::parse(&line)?.to_line()?, line);
    assert_eq!(EpochRecord::parse(&line)?, exact);
    // A converted schema-1 record is written, and read back, in the current schema.
    for old in [first_schema_1_line(), last_schema_1_line()] {
        let converted = EpochRecord::parse(&old)?;
        let line = converted.to_line()?;
        assert_eq!(schema_of(&line)?, METRICS_SCHEMA);
        assert_eq!(EpochRecord::parse(&line)?, converted);
    }
    Ok(())
}

/// serde_json writes NaN and the infinities as null; `to_line` refuses them by field, and
/// writes null only for the `None`s.
#[test]
fn numbers_json_cannot_hold_are_refused_by_field() -> Result<()> {
    let mut all_none = schema_2_record();
    all_none.val = None;
    all_none.test = None;
    all_none.ema_test = None;
    all_none.fawa_test = None;
    all_none.eps_warmup = None;
    all_none.train_seconds = None;
    all_none.train_images_per_second = None;
    all_none.eval_seconds = None;
    for a in &mut all_none.averaging {
        a.gate_value = None;
    }
    assert_eq!(EpochRecord::parse(&all_none.to_line()?)?, all_none);

    let refused = |change: &dyn Fn(&mut EpochRecord), field: &str| {
        let mut r = schema_2_record();
        change(&mut r);
        let err = r.to_line().unwrap_err().to_string();
        assert!(
            err.contains(&format!("`metrics.{field}`")) && err.contains("epoch 7"),
            "{field}: {err}"
        );
    };
    refused(
        &|r| r.test.as_mut().unwrap().robust[1] = f64::NAN,
        "test.robust[1]",
    );
    refused(&|r| r.train_loss = f64::INFINITY, "train_loss");
    refused(&|r| r.train_seconds = Some(f64::NAN), "train_seconds");
    refused(&|r| r.eps_warmup = Some([0.5, f64::NAN]), "eps_warmup[1]");
    refused(
        &|r| r.averaging[1].gate_value = Some(f64::NEG_INFINITY),
        "averaging[1].gate_value",
    );
    refused(
        &|r| r.averaging[0].action = AverageAction::Average { alpha: f64::NAN },
        "averaging[0].action.Average.alpha",
    );
    refused(&|r| r.plan.eps[0] = f64::NAN, "plan.eps[0]");
    // Records are written in the current schema only.
    let mut old = schema_2_record();
    old.schema = 1;
    let err = old.to_line().unwrap_err().to_string();
    assert!(err.contains("`metrics.schema` = 1"), "{err}");
    Ok(())
}

/// `predictions/<report>`: three lists of one length, classes below K, this schema.
#[test]
fn predictions_are_checked_by_field() {
    use classwise_core::record::{PREDICTIONS_SCHEMA, PredictionsRecord};
    let line = r#"{"schema":1,"report":"report.json","attack":"pgd-5","eps":0.1,"robust_counting":"clean-and-adversarial","labels":[0,1,2],"adversarial":[0,2,2],"robust":[true,false,true]}"#;
    let p: PredictionsRecord = serde_json::from_str(line).unwrap();
    assert_eq!(p.schema, PREDICTIONS_SCHEMA);
    p.check("p.json", 3).unwrap();
    assert_eq!(serde_json::to_string(&p).unwrap(), line, "written as read");
    let err = |p: &PredictionsRecord, k: usize| p.check("p.json", k).unwrap_err().to_string();
    let e = err(&p, 2);
    assert!(e.contains("p.json: labels") && e.contains("below 2"), "{e}");
    let mut short = p.clone();
    short.robust.pop();
    let e = err(&short, 3);
    assert!(
        e.contains("p.json: robust") && e.contains("2 entries"),
        "{e}"
    );
    let mut wrong = p.clone();
    wrong.adversarial[0] = 7;
    let e = err(&wrong, 3);
    assert!(e.contains("p.json: adversarial") && e.contains('7'), "{e}");
    let mut newer = p.clone();
    newer.schema = 2;
    let e = err(&newer, 3);
    assert!(e.contains("p.json: schema"), "{e}");
    assert!(
        serde_json::from_str::<PredictionsRecord>(&line.replace("\"eps\"", "\"extra\":1,\"eps\""))
            .is_err(),
        "unknown fields are refused"
    );
}
