//! `classwise compare` on synthetic run directories written in the trainer's exact formats
//! (`report.json`, a protocol report of `classwise eval --protocol`, schema-2 `metrics.jsonl`
//! lines), with numbers chosen so that every statistic is known by hand: mean ± sample std over
//! seeds, worst class, CV, boundary errors, the row-normalised confusion matrix and WAT's ρ. The
//! figures are rendered and their CSVs checked against the same numbers.

mod common;

use std::path::{Path, PathBuf};

use classwise_figures::Figure;
use classwise_figures::compare::figures::{
    ClassBars, Confusion, ErrorBars, Radar, WorstOverEpochs,
};
use classwise_figures::compare::{
    Comparison, RunInput, RunResults, render_all, tables, write_tables,
};
use common::{csv, num};

const CLASSES: [&str; 4] = ["a", "b", "c", "d"];
const PGD: &str = "pgd-10 ce step 0.025 uniform start";
const AA: &str = "autoattack standard (apgd-ce, apgd-t, fab-t, square)";

/// A class-wise summary as `classwise_theory::metrics::ClassAccuracySummary` serialises it
/// (10 images per class, so the overall accuracy is the class mean).
fn summary(per_class: [f64; 4]) -> String {
    let mean = per_class.iter().sum::<f64>() / 4.0;
    format!(
        r#"{{"n_classes":4,"per_class":{per_class:?},"overall":{mean},"class_mean":{mean},"worst":{{"class":0,"value":0.0}},"best":{{"class":0,"value":0.0}},"cv_fraction2":0.0,"cv_percent2":0.0,"mcd":0.0}}"#
    )
}

/// An evaluation as `classwise_trainer::eval::Evaluation` serialises it; the fields compare
/// does not read carry placeholder values.
fn report(attack: &str, clean: [f64; 4], robust: [f64; 4], confusion: Option<[u64; 16]>) -> String {
    let confusion = match confusion {
        Some(c) => format!(r#"{{"n_classes":4,"counts":{c:?}}}"#),
        None => "null".into(),
    };
    format!(
        r#"{{"attack":"{attack}","eps":0.1,"robust_counting":"clean-and-adversarial","n_samples":40,"class_names":{CLASSES:?},"clean":{},"robust":{},"robust_worst_20_percent":0.0,"errors":{{}},"confusion_under_attack":{confusion},"warnings":[]}}"#,
        summary(clean),
        summary(robust)
    )
}

/// A protocol report (`classwise eval --protocol`): natural accuracy, then AutoAttack.
fn protocol(clean: [f64; 4], robust: [f64; 4]) -> String {
    format!(
        r#"{{"n_samples":40,"class_names":{CLASSES:?},"entries":[{{"label":"natural","eps":0.0,"eps_text":"0","evaluation":{}}},{{"label":"{AA}","eps":0.1,"eps_text":"0.1","evaluation":{}}}]}}"#,
        report("natural (no attack)", clean, clean, None),
        report(AA, clean, robust, None)
    )
}

/// A schema-2 `metrics.jsonl` line whose test subset has worst class `worst` (and its FAWA
/// model `fawa`).
fn epoch_line(epoch: usize, worst: f64, fawa: Option<f64>) -> String {
    let split = |w: f64| {
        format!(
            r#"{{"clean":[0.9,0.9,0.9,0.9],"robust":[0.6,0.6,0.6,{w}],"clean_avg":0.9,"robust_avg":0.5,"robust_worst":{w},"robust_worst_class":3,"robust_cv":0.01,"robust_mcd":0.3}}"#
        )
    };
    let fawa = fawa.map_or("null".to_owned(), split);
    format!(
        r#"{{"schema":2,"epoch":{epoch},"rule":"uniform","lr":0.1,"train_loss":1.0,"train_robust":[0.5,0.5,0.5,0.5],"plan":{{"eps":[0.1,0.1,0.1,0.1],"beta":[0.0,0.0,0.0,0.0],"natural_weight":[1.0,1.0,1.0,1.0],"boundary_weight":[1.0,1.0,1.0,1.0],"step_size":null}},"val":null,"test":{},"ema_test":null,"fawa_test":{fawa},"averaging":[],"eps_warmup":null,"seconds":1.0,"train_seconds":0.5,"train_images_per_second":100.0,"eval_seconds":0.5}}"#,
        split(worst)
    )
}

struct Seed {
    clean: [f64; 4],
    robust: [f64; 4],
    aa: [f64; 4],
    confusion: [u64; 16],
}

fn write_run(dir: &Path, s: &Seed, worst_per_epoch: &[(f64, Option<f64>)]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("report.json"),
        report(PGD, s.clean, s.robust, Some(s.confusion)),
    )
    .unwrap();
    // The best checkpoint: the same model here, a different file.
    std::fs::write(
        dir.join("report-best.json"),
        report(PGD, s.clean, s.robust, Some(s.confusion)),
    )
    .unwrap();
    std::fs::write(
        dir.join("eval-last-protocol-eps_0.1.json"),
        protocol(s.clean, s.aa),
    )
    .unwrap();
    let lines: Vec<String> = worst_per_epoch
        .iter()
        .enumerate()
        .map(|(e, (w, f))| epoch_line(e, *w, *f))
        .collect();
    std::fs::write(dir.join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
}

/// Two seeds of `base`, one of `fair`.
fn runs(root: &Path) -> Vec<RunInput> {
    let base = [
        Seed {
            clean: [0.9, 0.9, 0.8, 0.6],
            robust: [0.8, 0.6, 0.4, 0.2],
            aa: [0.7, 0.5, 0.3, 0.1],
            confusion: [8, 1, 1, 0, 2, 6, 2, 0, 0, 3, 4, 3, 0, 0, 8, 2],
        },
        Seed {
            clean: [1.0, 0.8, 0.6, 0.6],
            robust: [0.6, 0.6, 0.2, 0.2],
            aa: [0.5, 0.5, 0.2, 0.1],
            confusion: [6, 2, 2, 0, 2, 6, 2, 0, 0, 4, 2, 4, 0, 0, 8, 2],
        },
    ];
    let fair = Seed {
        clean: [0.8, 0.8, 0.8, 0.8],
        robust: [0.5, 0.5, 0.4, 0.4],
        aa: [0.4, 0.4, 0.3, 0.3],
        confusion: [5, 1, 2, 2, 2, 5, 2, 1, 1, 3, 4, 2, 1, 1, 4, 4],
    };
    let mut inputs = Vec::new();
    for (i, s) in base.iter().enumerate() {
        let dir = root.join(format!("base-s{i}"));
        write_run(&dir, s, &[(0.1, None), (0.3, Some(0.2)), (0.2, Some(0.25))]);
        inputs.push(RunInput {
            dir,
            group: "base".into(),
            seed: Some(i as u64),
        });
    }
    let dir = root.join("fair-s0");
    write_run(&dir, &fair, &[(0.2, None), (0.4, Some(0.3))]);
    inputs.push(RunInput {
        dir,
        group: "fair".into(),
        seed: Some(0),
    });
    inputs
}

fn read(inputs: Vec<RunInput>) -> Vec<RunResults> {
    inputs
        .into_iter()
        .map(|i| RunResults::read(i).unwrap())
        .collect()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

#[test]
fn statistics_over_seeds_and_rho_are_the_hand_computed_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let results = read(runs(tmp.path()));
    let c = Comparison::new(&results, Some("base")).unwrap();
    assert_eq!(c.models, ["last", "best"]);
    assert_eq!(c.keys.len(), 2, "{:?}", c.keys);
    let pgd = c.keys.iter().find(|k| k.attack == PGD).unwrap();
    let aa = c.keys.iter().find(|k| k.attack == AA).unwrap();
    assert_eq!(c.primary_key("last"), Some(aa), "AutoAttack is preferred");
    assert_eq!(c.primary_key("best"), Some(pgd), "best has no AutoAttack");

    let base = c.groups[0].get("last", pgd).unwrap();
    assert_eq!(base.runs.len(), 2);
    // Robust average: 0.5 and 0.4 → mean 0.45, sample std √((0.05² + 0.05²) / 1).
    let avg = base.get("robust_avg");
    close(avg.mean, 0.45);
    close(avg.std.unwrap(), (0.005f64).sqrt());
    assert_eq!(avg.n, 2);
    close(base.get("robust_worst").mean, 0.2);
    close(base.get("robust_worst").std.unwrap(), 0.0);
    // CV (population variance): 0.05 and 0.04.
    close(base.get("robust_cv").mean, 0.045);
    // Worst 20% of 4 classes is ⌈0.8⌉ = 1 class: the worst class.
    close(base.get("robust_worst20").mean, 0.2);
    // Boundary errors clean − robust: [.1,.3,.4,.4] and [.4,.2,.4,.4].
    close(base.get("bndy_err_avg").mean, 0.325);
    close(base.get("bndy_err_worst").mean, 0.4);
    close(base.get("std_err_worst").mean, 0.4);
    close(base.get("rob_err_worst").mean, 0.8);
    close(base.get("robust_mcd").mean, (0.6 + 0.4) / 2.0);
    // Per class: class 0 robust 0.8 and 0.6.
    close(base.robust_per_class[0].mean, 0.7);
    // Row-normalised confusion, mean of the seeds: row a = [.8,.1,.1,0] and [.6,.2,.2,0].
    let conf = base.confusion.as_ref().unwrap();
    close(conf[0][0], 0.7);
    close(conf[0][1], 0.15);
    close(conf[3][2], 0.8);

    let fair = c.groups[1].get("last", pgd).unwrap();
    assert_eq!(fair.get("robust_avg").std, None, "one seed has no std");
    // ρ (WAT eq. 7) from the means: robust (0.4 − 0.2)/0.2 − (0.45 − 0.45)/0.45 = 1;
    // clean (0.8 − 0.6)/0.6 − (0.775 − 0.8)/0.775.
    let rho = fair.rho.unwrap();
    close(rho.robust.unwrap(), 1.0);
    close(rho.clean.unwrap(), 0.2 / 0.6 + 0.025 / 0.775);
    close(base.rho.unwrap().robust.unwrap(), 0.0);
    // AutoAttack from the protocol report: base 0.4 and 0.325.
    close(
        c.groups[0].get("last", aa).unwrap().get("robust_avg").mean,
        0.3625,
    );

    let md = tables::markdown(&c, "last");
    for needle in [
        "CFA Table 1 format",
        "CFA Table 4 format",
        "WAT Tables 1-3 format",
        "WAT Tables 4-5 format",
        "BAT Table 1 format",
        "Tian et al. Table 1 format",
        // base, best = last, PGD: clean 77.5 ± 3.5 / 60.0 ± 0.0, robust 45.0 ± 7.1 / 20.0 ± 0.0.
        "| base | 77.5 ± 3.5 / 60.0 ± 0.0 | 45.0 ± 7.1 / 20.0 ± 0.0 | 77.5 ± 3.5 / 60.0 ± 0.0 | 45.0 ± 7.1 / 20.0 ± 0.0 |",
        "45.0 / 40.0 / 1.000",
        // Tian: CV in percent² (0.045 → 450.0 ± 70.7).
        "450.0 ± 70.7",
    ] {
        assert!(md.contains(needle), "{needle} missing from\n{md}");
    }
}

#[test]
fn figures_draw_the_compared_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let results = read(runs(tmp.path()));
    let c = Comparison::new(&results, None).unwrap();
    let aa = c.primary_key("last").unwrap().clone();

    let bars = ClassBars::new(&c, "last", &aa).unwrap();
    let (header, rows) = csv(&bars.tables()[0]);
    assert_eq!(header, "method,group,class,mean,std,n");
    // base: per class, then worst, then average; AA robust [0.7,0.5,0.3,0.1] and [0.5,0.5,0.2,0.1].
    assert_eq!(rows.len(), 2 * 6);
    assert_eq!(rows[0][0], "base");
    assert!((num(&rows[0][3]) - 0.6).abs() < 1e-12);
    assert_eq!(rows[4][2], "worst class");
    assert!((num(&rows[4][3]) - 0.1).abs() < 1e-12);
    assert!((num(&rows[5][3]) - 0.3625).abs() < 1e-12);
    assert_eq!(rows[6][0], "fair");

    let radar = Radar::new(&c, "last", &aa).unwrap();
    let (_, rows) = csv(&radar.tables()[0]);
    assert!((num(&rows[2][3]) - 0.25).abs() < 1e-12, "{:?}", rows[2]);

    let errors = ErrorBars::new(&c, "last", &aa).unwrap();
    let (header, rows) = csv(&errors.tables()[0]);
    assert_eq!(header, "method,class,name,standard,boundary,robust");
    // base class 3: clean 0.6 both seeds, AA robust 0.1 → standard 0.4, boundary 0.5.
    assert!((num(&rows[3][3]) - 0.4).abs() < 1e-12);
    assert!((num(&rows[3][4]) - 0.5).abs() < 1e-12);

    // AutoAttack reports carry no confusion counts; the PGD reports do.
    assert!(Confusion::new(&c, "last", &aa).is_err());
    let pgd = c.keys.iter().find(|k| k.attack == PGD).unwrap();
    let confusion = Confusion::new(&c, "last", pgd).unwrap();
    let (_, rows) = csv(&confusion.tables()[0]);
    assert_eq!(rows.len(), 2 * 16);
    assert!((num(&rows[1][3]) - 0.15).abs() < 1e-12);

    let epochs = WorstOverEpochs::new(&c, &results).unwrap();
    let (header, rows) = csv(&epochs.tables()[0]);
    assert_eq!(header, "method,run,model,epoch,worst");
    let base_fawa: Vec<f64> = rows
        .iter()
        .filter(|r| r[0] == "base" && r[2] == "FAWA")
        .map(|r| num(&r[4]))
        .collect();
    assert_eq!(base_fawa, [0.2, 0.25], "FAWA only where logged");
    let fair_model: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r[0] == "fair" && r[2] == "model")
        .map(|r| (num(&r[3]), num(&r[4])))
        .collect();
    assert_eq!(fair_model, [(1.0, 0.2), (2.0, 0.4)]);

    let out = tmp.path().join("out");
    let paths = write_tables(&c, "last", &out).unwrap();
    assert!(paths.iter().all(|p| p.is_file()));
    let (rendered, skipped) = render_all(&c, &results, "last", &out).unwrap();
    let ids: Vec<&str> = rendered.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "compare-class-bars",
            "compare-radar",
            "compare-class-errors",
            "compare-worst-over-epochs"
        ]
    );
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("confusion"), "{skipped:?}");
    for r in &rendered {
        let img = image::open(out.join(format!("{}.png", r.id))).unwrap();
        assert_eq!((img.width(), img.height()), r.size);
        let svg = std::fs::read_to_string(out.join(format!("{}.svg", r.id))).unwrap();
        for label in &r.axis_labels {
            assert!(svg.contains(label.as_str()), "{}: {label}", r.id);
        }
    }
    // The long CSV holds every statistic: base, last, AA (quoted: it has commas), robust_avg.
    let text = std::fs::read_to_string(&paths[1]).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("base,last,\"{AA}\",0.1,40,robust_avg,,")))
        .unwrap();
    let mean = num(line.split(',').rev().nth(2).unwrap());
    assert!((mean - 0.3625).abs() < 1e-12, "{line}");
}

#[test]
fn bad_inputs_name_the_file_and_what_was_expected() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = runs(tmp.path());
    // A report with three classes' accuracies for four class names.
    let bad: PathBuf = inputs[0].dir.join("report.json");
    let text = std::fs::read_to_string(&bad).unwrap().replacen(
        "[0.9, 0.9, 0.8, 0.6]",
        "[0.9, 0.9, 0.8]",
        1,
    );
    std::fs::write(&bad, text).unwrap();
    let e = RunResults::read(inputs[0].clone()).unwrap_err().to_string();
    assert!(
        e.contains("report.json") && e.contains("clean.per_class"),
        "{e}"
    );

    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let e = RunResults::read(RunInput {
        dir: empty,
        group: "x".into(),
        seed: None,
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("no evaluations") && e.contains("report.json"),
        "{e}"
    );

    let results = read(inputs[1..].to_vec());
    let e = Comparison::new(&results, Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("--baseline") && e.contains("base, fair"), "{e}");
}
