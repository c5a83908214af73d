//! Figures of a trainer run: the series are exactly those of `metrics.jsonl` and `report.json`
//! (written here in the trainer's formats: schema-1 lines without `schema`, as the trainer wrote
//! them before the weight-average decisions were logged, and a schema-2 line), and bad files are
//! errors that name the file and line. The CLI test in tests/train_cli.rs draws a real
//! `fmnist-smoke` run.

mod common;

use std::path::Path;

use classwise_figures::Figure;
use classwise_figures::run::{RunCurves, RunLog, RunReportBars, render_all};
use common::{csv, num};

/// A schema-1 metrics line (no `schema`; a plan with one loss weight per class) as the trainer
/// wrote it, with fields the figures ignore.
fn line(epoch: usize, train: [f64; 3], test: Option<[f64; 3]>, ema: Option<[f64; 3]>) -> String {
    let split = |r: Option<[f64; 3]>| match r {
        None => "null".to_owned(),
        Some(r) => {
            let avg = r.iter().sum::<f64>() / 3.0;
            let worst = r.iter().copied().fold(f64::INFINITY, f64::min);
            format!(
                r#"{{"clean":[0.9,0.8,0.7],"robust":{r:?},"clean_avg":0.8,"robust_avg":{avg},"robust_worst":{worst},"robust_worst_class":2,"robust_cv":0.01,"robust_mcd":0.3}}"#
            )
        }
    };
    format!(
        r#"{{"epoch":{epoch},"lr":0.1,"train_loss":1.5,"train_robust":{train:?},"plan":{{"eps":[0.1,0.1,0.1],"beta":[6.0,6.0,6.0],"weight":[1.0,1.0,1.0]}},"val":null,"test":{},"ema_test":{},"seconds":2.0,"images_per_second":100.0}}"#,
        split(test),
        split(ema)
    )
}

const REPORT: &str = r#"{"attack":"pgd-10 ce step 0.025","eps":0.1,"n_samples":30,"class_names":["cat","dog","ship"],"clean":{"n_classes":3,"per_class":[0.9,0.8,0.5],"overall":0.7333333333333333,"class_mean":0.7333333333333333,"worst":{"class":2,"value":0.5},"best":{"class":0,"value":0.9},"cv_fraction2":0.03,"cv_percent2":300.0,"mcd":0.4},"robust":{"n_classes":3,"per_class":[0.6,0.5,0.1],"overall":0.4,"class_mean":0.4,"worst":{"class":2,"value":0.1},"best":{"class":0,"value":0.6},"cv_fraction2":0.05,"cv_percent2":500.0,"mcd":0.5},"robust_worst_20_percent":0.1,"errors":{"standard":[0.1,0.2,0.5],"boundary":[0.3,0.3,0.4],"robust":[0.4,0.5,0.9],"overall_standard":0.26666666666666666,"overall_boundary":0.3333333333333333,"overall_robust":0.6,"totals":[10,10,10],"clean_wrong_robust_correct":[0,0,0]},"confusion_under_attack":{"n_classes":3,"counts":[8,1,1,2,7,1,0,3,7]},"warnings":[]}"#;

fn write_run(dir: &Path, lines: &[String], report: bool) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
    if report {
        std::fs::write(dir.join("report.json"), REPORT).unwrap();
    }
}

#[test]
fn run_figures_draw_exactly_the_logged_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-run");
    // Epoch 1 (0-based) is not evaluated; epochs 0 and 2 are, and the average only at 2.
    let lines = [
        line(0, [0.1, 0.2, 0.3], Some([0.4, 0.5, 0.0]), None),
        line(1, [0.2, 0.3, 0.4], None, None),
        line(
            2,
            [0.3, 0.4, 0.5],
            Some([0.6, 0.7, 0.2]),
            Some([0.7, 0.7, 0.1]),
        ),
    ];
    write_run(&dir, &lines, true);
    std::fs::write(
        dir.join("config.toml"),
        "name = \"my-run\"\n[data]\ntest_per_class = 1000\n[eval]\ntest_per_class = 50\n",
    )
    .unwrap();
    let log = RunLog::read(&dir).unwrap();
    assert_eq!(log.name, "my-run");
    assert_eq!(log.epoch_test_per_class, Some(50));
    assert_eq!(log.class_names, ["cat", "dog", "ship"]);

    let curves = RunCurves::new(&log).unwrap();
    let tables = curves.tables();
    let (header, rows) = csv(&tables[0]);
    assert_eq!(
        header,
        "epoch,robust_0,robust_1,robust_2,robust_avg,robust_worst"
    );
    assert_eq!(rows.len(), 2, "only evaluated epochs");
    assert_eq!(num(&rows[0][0]), 1.0);
    assert_eq!(num(&rows[1][0]), 3.0);
    assert_eq!(num(&rows[1][2]), 0.7);
    assert_eq!(num(&rows[1][5]), 0.2);
    let (header, rows) = csv(&tables[1]);
    assert_eq!(header, "epoch,train_robust_0,train_robust_1,train_robust_2");
    assert_eq!(rows.len(), 3);
    assert_eq!(num(&rows[1][3]), 0.4);
    let (_, rows) = csv(&tables[2]);
    assert_eq!(rows[2], ["2", "ship"]);
    let (header, rows) = csv(&tables[3]);
    assert_eq!(header, "epoch,robust_avg");
    assert_eq!(rows.len(), 1);
    assert!((num(&rows[0][1]) - 0.5).abs() < 1e-12);

    let bars = RunReportBars::new(&log).unwrap();
    let (header, rows) = csv(&bars.tables()[0]);
    assert_eq!(header, "class,name,clean,robust");
    assert_eq!(rows[2], ["2", "ship", "0.5", "0.1"]);

    let out = tmp.path().join("figs");
    let rendered = render_all(&dir, &out).unwrap();
    let ids: Vec<&str> = rendered.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["run-curves", "run-report"]);
    for r in &rendered {
        let img = image::open(out.join(format!("{}.png", r.id))).unwrap();
        assert_eq!((img.width(), img.height()), r.size);
        let svg = std::fs::read_to_string(out.join(format!("{}.svg", r.id))).unwrap();
        assert!(svg.contains(&r.title), "{}", r.id);
        for label in &r.axis_labels {
            assert!(svg.contains(label.as_str()), "{}: {label}", r.id);
        }
    }
    let svg = std::fs::read_to_string(out.join("run-curves.svg")).unwrap();
    assert!(svg.contains("test subset of 50 images per class"));
    // The class names are drawn (legend of the curves, under the bars).
    let svg = std::fs::read_to_string(out.join("run-report.svg")).unwrap();
    assert!(svg.contains("ship"), "class name missing");
}

#[test]
fn an_unfinished_run_has_curves_but_no_report_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("running");
    write_run(
        &dir,
        &[line(0, [0.1, 0.2, 0.3], Some([0.4, 0.5, 0.0]), None)],
        false,
    );
    let out = tmp.path().join("figs");
    let rendered = render_all(&dir, &out).unwrap();
    assert_eq!(rendered.len(), 1);
    let log = RunLog::read(&dir).unwrap();
    assert_eq!(log.class_names, ["class 0", "class 1", "class 2"]);
    let err = RunReportBars::new(&log).unwrap_err().to_string();
    assert!(err.contains("report.json"), "{err}");
}

#[test]
fn bad_run_files_are_errors_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    // No metrics at all.
    let err = RunLog::read(&tmp.path().join("nothing"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("metrics.jsonl"), "{err}");
    // A broken second line.
    let dir = tmp.path().join("broken");
    write_run(
        &dir,
        &[
            line(0, [0.1, 0.2, 0.3], Some([0.4, 0.5, 0.0]), None),
            r#"{"epoch":1,"lr":0.1}"#.to_owned(),
        ],
        false,
    );
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(
        err.contains("metrics.jsonl line 2") && err.contains("train_loss"),
        "{err}"
    );
    // A line of a newer schema than this build reads.
    let dir = tmp.path().join("newer");
    let newer = line(0, [0.1, 0.2, 0.3], None, None).replacen('{', r#"{"schema":4,"#, 1);
    write_run(&dir, &[newer], false);
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(
        err.contains("metrics.jsonl line 1") && err.contains("schema 4"),
        "{err}"
    );
    // A line with another number of classes.
    let dir = tmp.path().join("classes");
    let mut second = line(1, [0.1, 0.2, 0.3], None, None);
    second = second.replace("[0.1, 0.2, 0.3]", "[0.1, 0.2]");
    write_run(
        &dir,
        &[
            line(0, [0.1, 0.2, 0.3], Some([0.4, 0.5, 0.0]), None),
            second,
        ],
        false,
    );
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("2 classes"), "{err}");
    // A configuration that is not TOML, or whose subset is not a count.
    let dir = tmp.path().join("config");
    write_run(
        &dir,
        &[line(0, [0.1, 0.2, 0.3], Some([0.4, 0.5, 0.0]), None)],
        false,
    );
    std::fs::write(dir.join("config.toml"), "[eval\n").unwrap();
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(err.contains("config.toml"), "{err}");
    std::fs::write(dir.join("config.toml"), "[eval]\ntest_per_class = -3\n").unwrap();
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(err.contains("eval.test_per_class"), "{err}");
    // A report with another number of classes.
    let dir = tmp.path().join("report");
    write_run(
        &dir,
        &[line(0, [0.1, 0.2, 0.3], Some([0.4, 0.5, 0.0]), None)],
        false,
    );
    let two = REPORT.replace(r#"["cat","dog","ship"]"#, r#"["cat","dog"]"#);
    std::fs::write(dir.join("report.json"), &two).unwrap();
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(
        err.contains("report.json")
            && err.contains("clean.per_class")
            && err.contains("one per class name"),
        "{err}"
    );
    // A consistent report of two classes, against a log of three.
    let mut report: serde_json::Value = serde_json::from_str(&two).unwrap();
    let lists = [
        "/clean/per_class",
        "/robust/per_class",
        "/errors/standard",
        "/errors/boundary",
        "/errors/robust",
        "/errors/totals",
        "/errors/clean_wrong_robust_correct",
    ];
    for list in lists {
        report
            .pointer_mut(list)
            .unwrap()
            .as_array_mut()
            .unwrap()
            .pop();
    }
    report["confusion_under_attack"] = serde_json::json!({"n_classes": 2, "counts": [8, 2, 3, 7]});
    report["n_samples"] = 20.into();
    std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
    let err = RunLog::read(&dir).unwrap_err().to_string();
    assert!(
        err.contains("report.json") && err.contains("3 of each"),
        "{err}"
    );
}

/// More than ten classes: one grey band instead of a legend entry per class, and the class
/// names under the bars only up to twenty classes.
#[test]
fn many_classes_are_drawn_as_a_band() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wide");
    let k = 12;
    let values: Vec<f64> = (0..k).map(|c| c as f64 / k as f64).collect();
    let ones = vec![1.0; k];
    let split = format!(
        r#"{{"clean":{values:?},"robust":{values:?},"clean_avg":0.5,"robust_avg":0.4,"robust_worst":0.0,"robust_worst_class":0,"robust_cv":0.3,"robust_mcd":0.9}}"#
    );
    let plan = format!(
        r#"{{"eps":{values:?},"beta":{ones:?},"natural_weight":{ones:?},"boundary_weight":{ones:?}}}"#
    );
    // A schema-2 line.
    let line = format!(
        r#"{{"schema":2,"epoch":0,"rule":"cfa","lr":0.1,"train_loss":1.0,"train_robust":{values:?},"plan":{plan},"val":null,"test":{split},"ema_test":null,"fawa_test":null,"averaging":[{{"name":"fawa","action":"Keep","gate_value":0.0,"updates":0}}],"eps_warmup":null,"seconds":2.0,"train_seconds":1.5,"train_images_per_second":100.0,"eval_seconds":0.5}}"#
    );
    write_run(&dir, &[line], false);
    let out = tmp.path().join("figs");
    let rendered = render_all(&dir, &out).unwrap();
    assert_eq!(rendered.len(), 1);
    let svg = std::fs::read_to_string(out.join("run-curves.svg")).unwrap();
    assert!(svg.contains("each of the 12 classes"));
    assert!(!svg.contains("11 class 11"), "no per-class legend entries");
    let (header, rows) = csv(&RunCurves::new(&RunLog::read(&dir).unwrap())
        .unwrap()
        .tables()[0]);
    assert!(
        header.ends_with("robust_11,robust_avg,robust_worst"),
        "{header}"
    );
    assert_eq!(num(&rows[0][12]), 11.0 / 12.0);
}
