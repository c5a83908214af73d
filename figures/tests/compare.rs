//! `classwise compare` on synthetic run directories written in the trainer's exact formats
//! (`report.json`, a protocol report of `classwise eval --protocol`, schema-2 `metrics.jsonl`
//! lines), with numbers chosen so that every statistic is known by hand: mean ± sample std over
//! seeds, worst class, CV, boundary errors, the row-normalised confusion matrix and WAT's ρ. The
//! figures are rendered and their CSVs checked against the same numbers.

mod common;

use std::path::{Path, PathBuf};

use classwise_core::eval::RobustCounting;

use classwise_figures::Figure;
use classwise_figures::compare::diagnostics::{ATTACK_STEPS, CVC, ClassDiagnostic};
use classwise_figures::compare::epochs::{
    ClassesOverEpochs, PLAN, PerClassOverEpochs, TRAINING_ATTACK, TrainConfusion, WorstOverEpochs,
};
use classwise_figures::compare::figures::{ClassBars, Confusion, ConfusionKind, ErrorBars, Radar};
use classwise_figures::compare::param::ParamSweep;
use classwise_figures::compare::{
    Comparison, RunInput, RunResults, render_all, tables, write_tables,
};
use common::{assert_on_axis, csv, num, row};

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

/// A report as `classwise_core::record::Report` serialises it, 10 images per class. Without
/// `confusion`, each class's robust images are on the diagonal and its other images predicted
/// as the next class. The statistics compare recomputes (worst, CV, ...) carry placeholders.
fn report(attack: &str, clean: [f64; 4], robust: [f64; 4], confusion: Option<[u64; 16]>) -> String {
    let confusion = confusion.unwrap_or_else(|| {
        let mut c = [0u64; 16];
        for (k, r) in robust.iter().enumerate() {
            let right = (10.0 * r).round() as u64;
            c[k * 4 + k] = right;
            c[k * 4 + (k + 1) % 4] = 10 - right;
        }
        c
    });
    let per = |f: &dyn Fn(usize) -> f64| (0..4).map(f).collect::<Vec<f64>>();
    let errors = format!(
        r#"{{"standard":{:?},"boundary":{:?},"robust":{:?},"overall_standard":0.0,"overall_boundary":0.0,"overall_robust":0.0,"totals":[10,10,10,10],"clean_wrong_robust_correct":[0,0,0,0]}}"#,
        per(&|k| 1.0 - clean[k]),
        per(&|k| clean[k] - robust[k]),
        per(&|k| 1.0 - robust[k]),
    );
    format!(
        r#"{{"schema":2,"attack":"{attack}","eps":0.1,"robust_counting":"clean-and-adversarial","n_samples":40,"class_names":{CLASSES:?},"clean":{},"robust":{},"robust_worst_20_percent":0.0,"errors":{errors},"confusion_under_attack":{{"n_classes":4,"counts":{confusion:?}}},"warnings":[],"precision":"fp32"}}"#,
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
/// model `fawa`), with the uniform plan.
fn epoch_line(epoch: usize, worst: f64, fawa: Option<f64>) -> String {
    epoch_line_plan(epoch, worst, fawa, "uniform", [0.1; 4])
}

/// [`epoch_line`] with the rule `rule` and its budgets ε_k.
fn epoch_line_plan(
    epoch: usize,
    worst: f64,
    fawa: Option<f64>,
    rule: &str,
    eps: [f64; 4],
) -> String {
    let split = |w: f64| {
        format!(
            r#"{{"clean":[0.9,0.9,0.9,0.9],"robust":[0.6,0.6,0.6,{w}],"clean_avg":0.9,"robust_avg":0.5,"robust_worst":{w},"robust_worst_class":3,"robust_cv":0.01,"robust_mcd":0.3}}"#
        )
    };
    let fawa = fawa.map_or("null".to_owned(), split);
    format!(
        r#"{{"schema":2,"epoch":{epoch},"rule":"{rule}","lr":0.1,"train_loss":1.0,"train_robust":[0.5,0.5,0.5,0.5],"plan":{{"eps":{eps:?},"beta":[0.0,0.0,0.0,0.0],"natural_weight":[1.0,1.0,1.0,1.0],"boundary_weight":[1.0,1.0,1.0,1.0],"step_size":null}},"val":null,"test":{},"ema_test":null,"fawa_test":{fawa},"averaging":[],"eps_warmup":null,"seconds":1.0,"train_seconds":0.5,"train_images_per_second":100.0,"eval_seconds":0.5}}"#,
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
    let c = Comparison::new(&results, Some("base"), None).unwrap();
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

    // The weakest class by mean robust accuracy (.7, .6, .3, .2): d, in the summary line.
    assert_eq!(base.weakest_robust_class(), 3);
    assert_eq!(
        base.headline("base", &c.groups[0].class_names),
        "base           clean 77.5%, robust 45.0%, worst class 20.0% (d)"
    );

    let fair = c.groups[1].get("last", pgd).unwrap();
    assert_eq!(fair.get("robust_avg").std, None, "one seed has no std");
    // A tie (.5, .5, .4, .4) names the first of the lowest: c.
    assert_eq!(fair.weakest_robust_class(), 2);
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
    let c = Comparison::new(&results, None, None).unwrap();
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

    // AutoAttack's reports carry confusion counts as every report does (the fixture puts a
    // class's robust images on the diagonal): base's class 3 keeps 0.1 of its images.
    let aa_confusion = Confusion::new(&c, "last", &aa, ConfusionKind::RowNormalised).unwrap();
    let (header, rows) = csv(&aa_confusion.tables()[0]);
    assert_eq!(header, "method,true,predicted,fraction");
    let base_3_3: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r[0] == "base" && r[1] == "3" && r[2] == "3")
        .collect();
    assert_eq!(base_3_3.len(), 1, "{rows:?}");
    assert!(
        (num(&base_3_3[0][3]) - 0.1).abs() < 1e-12,
        "{:?}",
        base_3_3[0]
    );
    let pgd = c.keys.iter().find(|k| k.attack == PGD).unwrap();
    let confusion = Confusion::new(&c, "last", pgd, ConfusionKind::RowNormalised).unwrap();
    let (_, rows) = csv(&confusion.tables()[0]);
    assert_eq!(rows.len(), 2 * 16);
    assert!((num(&rows[1][3]) - 0.15).abs() < 1e-12);
    // Tian Fig. 4a: the counts with the diagonal hidden, the mean over seeds.
    let misclassified = Confusion::new(&c, "last", pgd, ConfusionKind::Misclassified).unwrap();
    let (header, rows) = csv(&misclassified.tables()[0]);
    assert_eq!(header, "method,true,predicted,count");
    let count =
        |method: &str, i: &str, j: &str| num(&row(&rows, &[(0, method), (1, i), (2, j)])[3]);
    // base: true 2 → 1 is 3 and 4 over the seeds; 3 → 2 is 8 in both; diagonals hidden.
    assert_eq!(count("base", "2", "1"), 3.5);
    assert_eq!(count("base", "3", "2"), 8.0);
    assert_eq!(count("base", "0", "0"), 0.0);
    assert_eq!(count("fair", "0", "3"), 2.0);

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
            "compare-confusion",
            "compare-misclassified",
            "compare-worst-over-epochs",
            "compare-classes-over-epochs"
        ]
    );
    // No grid in the group names, no steps or CVC in these reports, uniform plans, schema-2
    // logs without training steps or confusion, no run without a class.
    assert_eq!(skipped.len(), 7, "{skipped:?}");
    for (s, what) in skipped.iter().zip([
        "swept parameter",
        "flip-steps",
        "cvc",
        "plan",
        "training-attack-steps",
        "training confusion",
        "homing",
    ]) {
        assert!(s.contains(what), "{s} should be about {what}");
    }
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

/// One run per group (as the demo compares): `aa` are each run's AutoAttack accuracies.
fn single_runs(root: &Path, aa: &[[f64; 4]]) -> Vec<RunResults> {
    let inputs = aa
        .iter()
        .enumerate()
        .map(|(i, aa)| {
            let dir = root.join(format!("method-{i}"));
            let seed = Seed {
                clean: [1.0; 4],
                robust: *aa,
                aa: *aa,
                confusion: [10, 0, 0, 0, 0, 10, 0, 0, 0, 0, 10, 0, 0, 0, 0, 10],
            };
            write_run(&dir, &seed, &[(aa[3], None)]);
            RunInput {
                dir,
                group: format!("method-{i}"),
                seed: None,
            }
        })
        .collect();
    read(inputs)
}

/// The class bars of runs without error bars (one run per method) start at 0 when the classes
/// are spread, and zoom (saying so) when they are close; issue 37, item 6: the demo's axis was
/// 0.9..0.95, hiding nine classes of ten.
#[test]
fn class_bars_of_single_runs_show_every_bar() {
    let tmp = tempfile::tempdir().unwrap();
    // Per class, then the worst class and the average: 0.1 to 0.7.
    let results = single_runs(tmp.path(), &[[0.7, 0.5, 0.3, 0.1], [0.6, 0.4, 0.2, 0.1]]);
    let c = Comparison::new(&results, None, None).unwrap();
    let bars = ClassBars::new(&c, "last", c.primary_key("last").unwrap()).unwrap();
    // 0.7 − 0.1 > 0.1 / 4: from 0, to ⌈(0.7 + 0.04)·20⌉/20 = ⌈14.8⌉/20 = 0.75.
    let (y, truncated) = bars.y_range();
    assert!(
        !truncated && y.start == 0.0 && (y.end - 0.75).abs() < 1e-12,
        "{y:?}"
    );
    let (_, rows) = csv(&bars.tables()[0]);
    let means: Vec<f64> = rows.iter().map(|r| num(&r[3])).collect();
    assert_eq!(means.len(), 2 * 6);
    assert_on_axis(&y, &means, "spread class bars");

    let tmp = tempfile::tempdir().unwrap();
    let results = single_runs(
        tmp.path(),
        &[[0.95, 0.93, 0.92, 0.91], [0.94, 0.93, 0.92, 0.90]],
    );
    let c = Comparison::new(&results, None, None).unwrap();
    let bars = ClassBars::new(&c, "last", c.primary_key("last").unwrap()).unwrap();
    // 0.95 − 0.90 ≤ 0.90 / 4: from ⌊(0.90 − 0.08)·10⌋/10 = 0.8 to ⌈0.99·20⌉/20 = 1.
    let (y, truncated) = bars.y_range();
    assert!(
        truncated && (y.start - 0.8).abs() < 1e-12 && y.end == 1.0,
        "{y:?}"
    );
    let (_, rows) = csv(&bars.tables()[0]);
    let means: Vec<f64> = rows.iter().map(|r| num(&r[3])).collect();
    assert_on_axis(&y, &means, "close class bars");
    let svg = classwise_figures::render::svg(&bars).unwrap();
    assert!(
        svg.contains("the y axis starts at 0.8"),
        "the zoom is stated"
    );
}

/// Every figure with a value axis draws every value of its CSV inside that axis: the class bars
/// with their error bars (mean ± std), the robust errors, the radar's spokes and the worst
/// class over the epochs (the diagnostics' bars: in
/// `attack_steps_target_shares_and_cvc_are_the_reported_ones`).
#[test]
fn every_value_of_the_figures_lies_on_their_axes() {
    let tmp = tempfile::tempdir().unwrap();
    let results = read(runs(tmp.path()));
    let c = Comparison::new(&results, None, None).unwrap();
    let aa = c.primary_key("last").unwrap();

    let bars = ClassBars::new(&c, "last", aa).unwrap();
    let (_, rows) = csv(&bars.tables()[0]);
    let ends: Vec<f64> = rows
        .iter()
        .flat_map(|r| [num(&r[3]) - num(&r[4]), num(&r[3]), num(&r[3]) + num(&r[4])])
        .collect();
    assert_on_axis(&bars.y_range().0, &ends, "class bars and error bars");

    let errors = ErrorBars::new(&c, "last", aa).unwrap();
    let (_, rows) = csv(&errors.tables()[0]);
    let robust: Vec<f64> = rows.iter().map(|r| num(&r[5])).collect();
    // The largest robust error is base's class 3: 1 − 0.1 = 0.9; ⌈(0.9 + 0.05)·10⌉/10 = 1.
    assert_eq!(errors.y_range(), 0.0..1.0);
    assert_on_axis(&errors.y_range(), &robust, "robust errors");

    let radar = Radar::new(&c, "last", aa).unwrap();
    let (_, rows) = csv(&radar.tables()[0]);
    let spokes: Vec<f64> = rows.iter().map(|r| num(&r[3])).collect();
    // The largest class mean is base's class 0: (0.7 + 0.5) / 2 = 0.6, the outer ring 0.6.
    assert!((radar.outer() - 0.6).abs() < 1e-12, "{}", radar.outer());
    assert_on_axis(&(0.0..radar.outer()), &spokes, "radar");

    let epochs = WorstOverEpochs::new(&c, &results).unwrap();
    let (_, rows) = csv(&epochs.tables()[0]);
    let worst: Vec<f64> = rows.iter().map(|r| num(&r[4])).collect();
    // The largest worst class is fair's 0.4 at epoch 2: ⌈(0.4 + 0.05)·10⌉/10 = 0.5.
    assert_eq!(epochs.y_range(), 0.0..0.5);
    assert_on_axis(&epochs.y_range(), &worst, "worst class over the epochs");
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
    let e = Comparison::new(&results, Some("nope"), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--baseline") && e.contains("base, fair"), "{e}");
}

/// A report with CVC and, when `steps` is given, the attack steps of `--attack flip-steps`.
fn diagnostic_report(
    robust: [f64; 4],
    confusion: [u64; 16],
    cvc: [f64; 4],
    steps: Option<[f64; 4]>,
) -> String {
    let base = report(PGD, [0.9; 4], robust, Some(confusion));
    let steps = steps.map_or(String::new(), |m| {
        format!(r#","steps_to_flip":{{"max_steps":50,"mean":{m:?},"flipped":[0.5,0.5,0.5,0.5]}}"#)
    });
    format!(
        "{},\"cvc\":{cvc:?}{steps}}}",
        base.strip_suffix('}').unwrap()
    )
}

#[test]
fn sweep_plan_and_class_figures_draw_the_logged_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    // A training-ε sweep of three points (written out of order), one seed each, and a
    // vanilla baseline outside it.
    for (group, robust, rule, eps) in [
        (
            "at/train.eps=0.2",
            [0.8, 0.6, 0.4, 0.2],
            "cfa",
            [0.1, 0.12, 0.08, 0.06],
        ),
        (
            "at/train.eps=0.05",
            [0.6, 0.5, 0.4, 0.3],
            "uniform",
            [0.05; 4],
        ),
        (
            "at/train.eps=0.1",
            [0.7, 0.5, 0.5, 0.3],
            "uniform",
            [0.1; 4],
        ),
        ("vanilla", [0.5, 0.5, 0.5, 0.1], "uniform", [0.1; 4]),
    ] {
        let dir = tmp.path().join(group.replace(['/', '='], "_"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("report.json"), report(PGD, [0.9; 4], robust, None)).unwrap();
        // The plan moves between the two epochs only in the `cfa` run.
        let first = if rule == "cfa" { [0.1; 4] } else { eps };
        let lines = [
            epoch_line_plan(0, 0.2, None, rule, first),
            epoch_line_plan(1, 0.3, None, rule, eps),
        ];
        std::fs::write(dir.join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
        inputs.push(RunInput {
            dir,
            group: group.into(),
            seed: Some(0),
        });
    }
    let results = read(inputs);
    let c = Comparison::new(&results, Some("vanilla"), None).unwrap();
    let key = c.primary_key("last").unwrap().clone();

    let sweep = ParamSweep::new(&c, "last", &key).unwrap();
    assert_eq!(sweep.series.len(), 1);
    assert_eq!(sweep.series[0].key, "train.eps");
    assert_eq!(sweep.series[0].rest, "at");
    let xs: Vec<f64> = sweep.series[0].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, [0.05, 0.1, 0.2]);
    assert_eq!(sweep.baseline.as_ref().unwrap().0, "vanilla");
    let (header, rows) = csv(&sweep.tables()[0]);
    assert_eq!(
        header,
        "parameter,series,value,group,accuracy,class,mean,std,n"
    );
    // Per point: 4 classes + avg + worst, robust then clean.
    assert_eq!(rows.len(), 3 * 2 * 6);
    let at =
        |x: &str, side: &str, class: &str| num(&row(&rows, &[(2, x), (4, side), (5, class)])[6]);
    close(at("0.2", "robust", "c"), 0.4);
    close(at("0.05", "robust", "d"), 0.3);
    close(at("0.1", "robust", "avg"), 0.5);
    close(at("0.2", "robust", "worst"), 0.2);
    close(at("0.1", "clean", "a"), 0.9);

    let plan = PerClassOverEpochs::new(&PLAN, &c, &results).unwrap();
    assert_eq!(plan.methods.len(), 1, "only the run whose plan moves");
    assert_eq!(plan.methods[0].method, "at/train.eps=0.2");
    let (header, rows) = csv(&plan.tables()[0]);
    assert_eq!(header, "method,run,rule,quantity,epoch,class,value");
    // Epoch 2, class 3: ε = 0.06; only ε varies.
    close(num(&row(&rows, &[(3, "eps"), (4, "2"), (5, "3")])[6]), 0.06);
    assert!(rows.iter().all(|r| r[3] == "eps"));

    let classes = ClassesOverEpochs::new(&c, &results).unwrap();
    let (header, rows) = csv(&classes.tables()[0]);
    assert_eq!(header, "method,run,epoch,class,name,robust");
    assert_eq!(rows.len(), 4 * 2 * 4);
    close(
        num(&row(&rows, &[(0, "vanilla"), (2, "2"), (3, "3")])[5]),
        0.3,
    );

    let out = tmp.path().join("out");
    let (rendered, skipped) = render_all(&c, &results, "last", &out).unwrap();
    let ids: Vec<&str> = rendered.iter().map(|r| r.id.as_str()).collect();
    for id in [
        "compare-param-sweep",
        "compare-plan-over-epochs",
        "compare-classes-over-epochs",
    ] {
        assert!(
            ids.contains(&id),
            "{id} not in {ids:?} (skipped: {skipped:?})"
        );
    }
    for r in &rendered {
        let svg = std::fs::read_to_string(out.join(format!("{}.svg", r.id))).unwrap();
        for label in &r.axis_labels {
            assert!(svg.contains(label.as_str()), "{}: {label}", r.id);
        }
    }
}

#[test]
fn attack_steps_target_shares_and_cvc_are_the_reported_ones() {
    let tmp = tempfile::tempdir().unwrap();
    // Two seeds of `base`, one of `fair`; confusion rows are true classes.
    let runs = [
        (
            "base",
            [0, 2, 1, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 3, 1, 0],
            [0.02, 0.04, 0.01, 0.05],
            [30.0, 20.0, 10.0, 40.0],
        ),
        (
            "base",
            [0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0],
            [0.04, 0.02, 0.03, 0.05],
            [10.0, 20.0, 30.0, 40.0],
        ),
        (
            "fair",
            [0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            [0.05, 0.05, 0.05, 0.05],
            [25.0, 25.0, 25.0, 25.0],
        ),
    ];
    let mut inputs = Vec::new();
    for (i, (group, off_diagonal, cvc, steps)) in runs.iter().enumerate() {
        // Five correct predictions per class on the diagonal (every row has samples).
        let mut confusion = *off_diagonal;
        for d in [0, 5, 10, 15] {
            confusion[d] = 5;
        }
        let dir = tmp.path().join(format!("r{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("report.json"),
            diagnostic_report([0.5; 4], confusion, *cvc, None),
        )
        .unwrap();
        std::fs::write(
            dir.join("eval-last-early-stopped-pgd-50.json"),
            diagnostic_report([0.4; 4], confusion, *cvc, Some(*steps))
                .replace(PGD, "early-stopped-pgd-50 ce tau 0 Original"),
        )
        .unwrap();
        inputs.push(RunInput {
            dir,
            group: (*group).into(),
            seed: Some(i as u64),
        });
    }
    let results = read(inputs);
    let c = Comparison::new(&results, None, None).unwrap();
    let steps = ClassDiagnostic::new(&c, "last", c.primary_key("last"), &ATTACK_STEPS).unwrap();
    assert!(steps.selection.key.attack.starts_with("early-stopped"));
    let (header, rows) = csv(&steps.tables()[0]);
    assert_eq!(header, "method,class,name,steps,std,target_share,std,n");
    // base, class 0: steps 30 and 10 → 20 ± √200.
    close(num(&rows[0][3]), 20.0);
    close(num(&rows[0][4]), 200f64.sqrt());
    // Seed 0's off-diagonal column sums: [0, 5, 2, 3] of 10; seed 1's: [2, 0, 1, 1] of 4.
    close(num(&rows[0][5]), (0.0 + 0.5) / 2.0);
    close(num(&rows[1][5]), (0.5 + 0.0) / 2.0);
    close(num(&rows[2][5]), (0.2 + 0.25) / 2.0);
    close(num(&rows[3][5]), (0.3 + 0.25) / 2.0);
    // fair: one run, no std; [1, 1, 0, 0] of 2.
    close(num(&rows[4][5]), 0.5);
    close(num(&rows[4][6]), 0.0);
    // Every bar with its error bar lies on its panel's axis.
    for (panel, column) in [(0, 3), (1, 5)] {
        let ends: Vec<f64> = rows
            .iter()
            .flat_map(|r| [num(&r[column]), num(&r[column]) + num(&r[column + 1])])
            .collect();
        assert_on_axis(
            &steps.y_range(panel),
            &ends,
            ATTACK_STEPS.panels[panel].column,
        );
    }

    let cvc = ClassDiagnostic::new(&c, "last", c.primary_key("last"), &CVC).unwrap();
    let (header, rows) = csv(&cvc.tables()[0]);
    assert_eq!(header, "method,class,name,cvc,std,n");
    close(num(&rows[1][3]), 0.03);
    close(num(&rows[3][3]), 0.05);

    // Without a flip-steps evaluation the figure names the command that makes one.
    let plain = read(
        results
            .iter()
            .map(|r| {
                std::fs::remove_file(r.input.dir.join("eval-last-early-stopped-pgd-50.json"))
                    .unwrap();
                r.input.clone()
            })
            .collect(),
    );
    let c = Comparison::new(&plain, None, None).unwrap();
    let e = ClassDiagnostic::new(&c, "last", None, &ATTACK_STEPS)
        .unwrap_err()
        .to_string();
    assert!(e.contains("flip-steps"), "{e}");
    assert!(ClassDiagnostic::new(&c, "last", None, &CVC).is_ok());
}

/// A schema-3 line as the trainer writes it for a BAT run with `[train] log_confusion`: the
/// schema-2 line of [`epoch_line`] with the training attack's mean steps and the confusion
/// counts of the training inputs.
fn training_line(epoch: usize, steps: [f64; 4], confusion: [[u64; 4]; 4]) -> String {
    epoch_line(epoch, 0.3, None)
        .replacen(r#""schema":2"#, r#""schema":3"#, 1)
        .replacen(
            r#""plan":"#,
            &format!(
                r#""train_attack_steps":{steps:?},"train_confusion":{:?},"plan":"#,
                confusion.map(|r| r.to_vec()).to_vec()
            ),
            1,
        )
}

#[test]
fn training_steps_and_confusion_are_the_logged_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let confusion = |e: u64| [[8 - e, e, 0, 0], [0, 10, 0, 0], [0, 2, 6, 2], [1, 1, 1, 7]];
    // `bat` logs steps and confusion in its three epochs; `at` (schema 2) logs neither.
    let bat: Vec<String> = (0..3)
        .map(|e| training_line(e, [1.0 + e as f64, 2.0, 3.0, 4.0], confusion(e as u64)))
        .collect();
    let at = vec![epoch_line(0, 0.3, None), epoch_line(1, 0.3, None)];
    let mut inputs = Vec::new();
    for (group, lines) in [("bat", bat), ("at", at)] {
        let dir = tmp.path().join(group);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("report.json"),
            report(PGD, [0.9; 4], [0.5; 4], None),
        )
        .unwrap();
        std::fs::write(dir.join("metrics.jsonl"), lines.join("\n") + "\n").unwrap();
        inputs.push(RunInput {
            dir,
            group: group.into(),
            seed: Some(0),
        });
    }
    let results = read(inputs);
    let c = Comparison::new(&results, None, None).unwrap();

    let steps = PerClassOverEpochs::new(&TRAINING_ATTACK, &c, &results).unwrap();
    assert_eq!(steps.methods.len(), 1, "only the run that logged its steps");
    let (_, rows) = csv(&steps.tables()[0]);
    let value = |quantity: &str, epoch: &str, class: &str| {
        num(&row(&rows, &[(3, quantity), (4, epoch), (5, class)])[6])
    };
    assert_eq!(value("attack_steps", "3", "0"), 3.0);
    assert_eq!(value("attack_steps", "1", "3"), 4.0);
    assert_eq!(value("train_robust", "2", "1"), 0.5);
    assert_eq!(rows.len(), 2 * 3 * 4);

    // BAT Fig. 3: the middle (epoch 2) and the last (epoch 3) logged epochs, rows normalised.
    let training = TrainConfusion::new(&c, &results).unwrap();
    let epochs: Vec<usize> = training.panels.iter().map(|p| p.2).collect();
    assert_eq!(epochs, [2, 3]);
    let (header, rows) = csv(&training.tables()[0]);
    assert_eq!(header, "method,run,epoch,true,predicted,fraction");
    let cell = |epoch: &str, i: &str, j: &str| num(&row(&rows, &[(2, epoch), (3, i), (4, j)])[5]);
    // Epoch 3 (e = 2): row 0 is [6, 2, 0, 0] of 8; row 2 [0, 2, 6, 2] of 10.
    close(cell("3", "0", "1"), 0.25);
    close(cell("2", "0", "1"), 0.125);
    close(cell("3", "2", "3"), 0.2);

    // Both render, with their axis labels in the SVG.
    let out = tmp.path().join("out");
    let (rendered, _) = render_all(&c, &results, "last", &out).unwrap();
    for id in [
        "compare-training-attack-steps",
        "compare-training-confusion",
    ] {
        let r = rendered.iter().find(|r| r.id == id).expect(id);
        let svg = std::fs::read_to_string(out.join(format!("{id}.svg"))).unwrap();
        for label in &r.axis_labels {
            assert!(svg.contains(label.as_str()), "{id}: {label}");
        }
    }

    // Without any such log, the error names the setting that writes it.
    let plain = read(results[1..].iter().map(|r| r.input.clone()).collect());
    let c = Comparison::new(&plain, None, None).unwrap();
    let e = TrainConfusion::new(&c, &plain).unwrap_err().to_string();
    assert!(e.contains("log_confusion"), "{e}");
    let e = PerClassOverEpochs::new(&TRAINING_ATTACK, &c, &plain)
        .unwrap_err()
        .to_string();
    assert!(e.contains("train_attack_steps"), "{e}");
}

/// `predictions/report.json` as `classwise_trainer::eval::write_predictions` writes
/// it: for 40 images (10 per class, in class order), the adversarial prediction and robustness.
fn predictions(adversarial: &[usize], robust: &[bool]) -> String {
    let labels: Vec<usize> = (0..40).map(|i| i / 10).collect();
    format!(
        r#"{{"schema":1,"report":"report.json","attack":"{PGD}","eps":0.1,"robust_counting":"clean-and-adversarial","labels":{labels:?},"adversarial":{adversarial:?},"robust":{robust:?}}}"#
    )
}

/// A run of group `p/data.drop_classes=[…]` trained without `dropped`, with its predictions.
fn homing_run(root: &Path, dropped: &[usize], seed: u64, predicted: &str) -> RunInput {
    let dir = root.join(format!("drop{dropped:?}-s{seed}"));
    std::fs::create_dir_all(dir.join("predictions")).unwrap();
    std::fs::write(
        dir.join("report.json"),
        report(PGD, [0.9; 4], [0.5; 4], None),
    )
    .unwrap();
    std::fs::write(dir.join("predictions/report.json"), predicted).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("name = \"p\"\n\n[data]\ndrop_classes = {dropped:?}\n"),
    )
    .unwrap();
    RunInput {
        dir,
        group: format!("p/data.drop_classes={dropped:?}"),
        seed: Some(seed),
    }
}

/// Predictions of a retrained model: the images in `robust` are robust (predicted right), the
/// others go to the next class.
fn retrained(robust: &[usize]) -> String {
    let flags: Vec<bool> = (0..40).map(|i| robust.contains(&i)).collect();
    let adversarial: Vec<usize> = (0..40)
        .map(|i| if flags[i] { i / 10 } else { (i / 10 + 1) % 4 })
        .collect();
    predictions(&adversarial, &flags)
}

#[test]
fn homing_counts_the_errors_that_retraining_without_their_class_fixes() {
    use classwise_figures::compare::homing::Homing;
    let tmp = tempfile::tempdir().unwrap();
    // The full model, seed 0: class 0 sends images 5-8 to 1 and 9 to 2, class 1 sends 14-19 to
    // 0, class 2 sends 27-29 to 3; seed 1 gets image 9 right.
    let full = |seed: u64| {
        let adversarial: Vec<usize> = (0..40)
            .map(|i| match i {
                5..=8 => 1,
                9 if seed == 0 => 2,
                14..=19 => 0,
                27..=29 => 3,
                _ => i / 10,
            })
            .collect();
        let robust: Vec<bool> = adversarial
            .iter()
            .enumerate()
            .map(|(i, a)| *a == i / 10)
            .collect();
        predictions(&adversarial, &robust)
    };
    let root = tmp.path();
    let mut inputs = vec![
        homing_run(root, &[], 0, &full(0)),
        homing_run(root, &[], 1, &full(1)),
        // Without class 1, seed 0: images 5 and 6 home (14 is of class 1 itself).
        homing_run(root, &[1], 0, &retrained(&[5, 6, 14])),
        homing_run(root, &[1], 1, &retrained(&[5, 6, 7])),
        // Without class 0: 14-16 home; image 9 is robust but was an error into 2, not 0.
        homing_run(root, &[0], 0, &retrained(&[14, 15, 16, 9])),
        homing_run(root, &[0], 1, &retrained(&[14, 15, 16, 17])),
        // Without class 3 for seed 0 only: column 3 is not measured for every seed.
        homing_run(root, &[3], 0, &retrained(&[27])),
        // Two classes dropped: not a homing run.
        homing_run(root, &[0, 1], 0, &retrained(&(0..40).collect::<Vec<_>>())),
    ];
    // A run of another configuration, without any dropped class, is left alone.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("report.json"),
        report(PGD, [0.9; 4], [0.5; 4], None),
    )
    .unwrap();
    inputs.push(RunInput {
        dir: other,
        group: "other".into(),
        seed: Some(0),
    });
    let results = read(inputs.clone());
    assert_eq!(results[7].dropped_classes, [0, 1]);
    let h = Homing::new(&results, "last").unwrap();
    assert_eq!(h.panels.len(), 1);
    let p = &h.panels[0];
    assert_eq!((p.base.as_str(), p.seeds), ("p", 2));
    assert_eq!(p.missing, [2, 3]);
    let m = [
        [0.0, 4.0, 0.5, 0.0],
        [6.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 3.0],
        [0.0; 4],
    ];
    for (row, expected) in p.misclassified.iter().zip(m) {
        assert_eq!(row.as_slice(), expected);
    }
    // Column 0: (3 + 4) / 2 for class 1; column 1: (2 + 3) / 2 for class 0.
    close(p.homing[1][0], 3.5);
    close(p.homing[0][1], 2.5);
    let measured_zero = [(0, 0), (2, 0), (3, 0), (1, 1), (2, 1), (3, 1)];
    for (i, j) in measured_zero {
        assert_eq!(p.homing[i][j], 0.0, "({i}, {j})");
    }
    assert!((0..4).all(|i| p.homing[i][2].is_nan() && p.homing[i][3].is_nan()));

    // The CSV holds both matrices, NaN where not measured; render_all draws it.
    let (header, rows) = csv(&h.tables()[0]);
    assert_eq!(
        header,
        "configuration,seeds,true,predicted,misclassified,homing"
    );
    assert_eq!(rows.len(), 16);
    let cells = |i: &str, j: &str| row(&rows, &[(2, i), (3, j)]);
    assert_eq!(
        (num(&cells("1", "0")[4]), num(&cells("1", "0")[5])),
        (6.0, 3.5)
    );
    assert_eq!(cells("2", "3")[5], "NaN");
    let c = Comparison::new(&results, None, None).unwrap();
    // The same cell for one seed at a time, as a claim reads it: of class a's images the full
    // model sends to b (5-8 in both seeds), 2 and 3 home without b, none without a (a control).
    let claims = classwise_figures::compare::claims::ClaimsFile::parse(
        &format!(
            "attack = \"{PGD}\"\neps = \"0.1\"\n[[claim]]\nid = \"home\"\nmetric = \"homing:a->b\"\nsign = \"+\"\na = {{ group = \"p/data.drop_classes=[1]\", model = \"last\" }}\nb = {{ group = \"p/data.drop_classes=[0]\", model = \"last\" }}\n"
        ),
        "claims.toml",
    )
    .unwrap();
    let home = &claims.decide(&c, &results).unwrap().decided[0];
    assert_eq!(home.seeds, [0, 1]);
    for (d, want) in home.paired.differences.iter().zip([0.5, 0.75]) {
        close(*d, want);
    }
    let out = tmp.path().join("out");
    let (rendered, _) = render_all(&c, &results, "last", &out).unwrap();
    let r = rendered.iter().find(|r| r.id == "compare-homing").unwrap();
    let svg = std::fs::read_to_string(out.join("compare-homing.svg")).unwrap();
    for label in &r.axis_labels {
        assert!(svg.contains(label.as_str()), "{label}");
    }

    // A retrained run evaluated on other images is an error naming it.
    let mut shifted = retrained(&[9]);
    shifted = shifted.replacen("\"labels\":[0, ", "\"labels\":[1, ", 1);
    inputs.push(homing_run(root, &[2], 0, &shifted));
    let results = read(inputs.clone());
    let e = Homing::new(&results, "last").unwrap_err().to_string();
    assert!(e.contains("drop[2]-s0") && e.contains("same labels"), "{e}");

    // Without the full runs there is nothing to compare with.
    let e = Homing::new(&read(inputs[2..].to_vec()), "last")
        .unwrap_err()
        .to_string();
    assert!(e.contains("data.drop_classes"), "{e}");

    // Predictions that disagree with their report are refused when read.
    let bad = inputs[0].dir.join("predictions/report.json");
    std::fs::write(&bad, full(0).replace(PGD, "fgsm")).unwrap();
    let e = RunResults::read(inputs[0].clone()).unwrap_err().to_string();
    assert!(
        e.contains("predictions/report.json") && e.contains("fgsm"),
        "{e}"
    );
}

/// Edits `dir/file` as JSON.
fn edit_json(path: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, v.to_string()).unwrap();
}

/// Reports that differ in counting, precision or test images per class are refused, naming
/// both files; with the other counting in every report, `--robust-counting` reads it.
#[test]
fn unlike_reports_are_refused_and_either_counting_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = runs(tmp.path());
    let report = |i: usize| inputs[i].dir.join("report.json");
    let refused = |what: &str| {
        let e = Comparison::new(&read(inputs.clone()), None, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fair-s0/report.json")
                && e.contains("base-s0/report.json")
                && e.contains(what),
            "{e}"
        );
        e
    };
    edit_json(&report(2), |v| {
        v["robust_counting"] = "adversarial-only".into();
    });
    let e = refused("robust counting adversarial-only");
    assert!(e.contains("--robust-counting"), "{e}");
    edit_json(&report(2), |v| {
        v["robust_counting"] = "clean-and-adversarial".into();
        v["precision"] = "bf16".into();
    });
    refused("precision bf16");
    edit_json(&report(2), |v| {
        v["precision"] = "fp32".into();
        v["errors"]["totals"] = serde_json::json!([10, 10, 9, 11]);
    });
    refused("test images per class [10, 10, 9, 11]");

    // Every PGD report also carries the adversarial-only counting: each class 0.1 higher.
    let mut inputs = runs(&tmp.path().join("both"));
    for input in &mut inputs {
        for file in ["report.json", "report-best.json"] {
            edit_json(&input.dir.join(file), |v| {
                let mut other = v["robust"].clone();
                for a in other["per_class"].as_array_mut().unwrap() {
                    *a = (a.as_f64().unwrap() + 0.1).into();
                }
                other["overall"] = serde_json::Value::Null;
                v["robust_other_counting"] =
                    serde_json::json!({"robust_counting": "adversarial-only", "robust": other});
            });
        }
    }
    let results = read(inputs);
    let own = Comparison::new(&results, None, None).unwrap();
    let adv = Comparison::new(&results, None, Some(RobustCounting::AdversarialOnly)).unwrap();
    let pgd = own.keys.iter().find(|k| k.attack == PGD).unwrap();
    let aa = own.keys.iter().find(|k| k.attack == AA).unwrap();
    let (own_pgd, adv_pgd) = (
        own.groups[0].get("last", pgd).unwrap(),
        adv.groups[0].get("last", pgd).unwrap(),
    );
    assert_eq!(own_pgd.robust_counting, RobustCounting::CleanAndAdversarial);
    assert_eq!(adv_pgd.robust_counting, RobustCounting::AdversarialOnly);
    // base's robust averages 0.5 and 0.4 (mean 0.45) become 0.6 and 0.5 (the class means).
    close(own_pgd.get("robust_avg").mean, 0.45);
    close(adv_pgd.get("robust_avg").mean, 0.55);
    close(adv_pgd.get("robust_worst").mean, 0.3);
    // AutoAttack's reports have only their own counting, which they keep.
    let adv_aa = adv.groups[0].get("last", aa).unwrap();
    assert_eq!(adv_aa.robust_counting, RobustCounting::CleanAndAdversarial);
    let md = classwise_figures::compare::tables::markdown(&adv, "last");
    assert!(
        md.contains("Robust counting per evaluation:")
            && md.contains(&format!("{}: adversarial-only", pgd.describe()))
            && md.contains(&format!("{}: clean-and-adversarial", aa.describe()))
            && md.contains("Precision of the forward passes: fp32."),
        "{md}"
    );
    let md = classwise_figures::compare::tables::markdown(&own, "last");
    assert!(
        md.contains(&format!(
            "Robust counting: {}.",
            RobustCounting::CleanAndAdversarial.describe()
        )),
        "{md}"
    );
}

/// A `[[claim]]` of a claims file on the `last` models: A's group, B's when there is one.
fn claim(id: &str, a: &str, b: Option<&str>, metric: &str, sign: &str) -> String {
    let b = b.map_or(String::new(), |b| {
        format!("b = {{ group = \"{b}\", model = \"last\" }}\n")
    });
    format!(
        "[[claim]]\nid = \"{id}\"\na = {{ group = \"{a}\", model = \"last\" }}\n{b}\
         metric = \"{metric}\"\nsign = \"{sign}\"\n"
    )
}

/// Claims decided by paired seeds, against differences and intervals computed by hand.
#[test]
fn claims_are_decided_by_paired_seeds() {
    use classwise_core::aggregate::{SeedsNeeded, Verdict};
    use classwise_figures::compare::claims::ClaimsFile;
    let tmp = tempfile::tempdir().unwrap();
    // Class d is each run's worst: A's 0.30, 0.35, 0.40 and B's 0.10, 0.20, 0.20 robust.
    let (a, b) = ([0.30, 0.35, 0.40], [0.10, 0.20, 0.20]);
    let mut inputs = Vec::new();
    for (group, worst) in [("A", a), ("B", b)] {
        // Seeds written in the order 2, 0, 1: pairing is by seed, not by order.
        for seed in [2usize, 0, 1] {
            let dir = tmp.path().join(format!("{group}-s{seed}"));
            std::fs::create_dir_all(&dir).unwrap();
            let robust = [0.8, 0.7, 0.6, worst[seed]];
            std::fs::write(dir.join("report.json"), report(PGD, [0.9; 4], robust, None)).unwrap();
            // A FAWA model in two of A's runs (the third one's FAWA accepted no epoch).
            if group == "A" && seed != 2 {
                let fawa = report(PGD, [0.9; 4], robust, None);
                std::fs::write(dir.join("report-fawa.json"), fawa).unwrap();
            }
            inputs.push(RunInput {
                dir,
                group: group.into(),
                seed: Some(seed as u64),
            });
        }
    }
    // Groups still training: D has seeds 1 and 2 (class d: 0.25, 0.30), E seed 0 only.
    for (group, seed, worst) in [("D", 1, 0.25), ("D", 2, 0.30), ("E", 0, 0.1)] {
        let dir = tmp.path().join(format!("{group}-s{seed}"));
        std::fs::create_dir_all(&dir).unwrap();
        let robust = [0.8, 0.7, 0.6, worst];
        std::fs::write(dir.join("report.json"), report(PGD, [0.9; 4], robust, None)).unwrap();
        inputs.push(RunInput {
            dir,
            group: group.into(),
            seed: Some(seed),
        });
    }
    let results = read(inputs);
    let c = Comparison::new(&results, None, None).unwrap();
    let file = |claims: &str| {
        ClaimsFile::parse(
            &format!("attack = \"{PGD}\"\neps = \"0.1\"\n{claims}"),
            "claims.toml",
        )
    };
    let claims = file(
        &[
            claim("worst", "A", Some("B"), "robust_worst", "+"),
            claim("against", "A", Some("B"), "robust:d", "-"),
            claim("gap", "B", None, "robust_gap:d", "-"),
            claim("spread", "A", Some("B"), "robust_cv", "-"),
        ]
        .concat(),
    )
    .unwrap();
    let decisions = claims.decide(&c, &results).unwrap();
    assert!(decisions.undecided.is_empty());
    let decided = &decisions.decided;
    // d = 0.2, 0.15, 0.2: mean 0.18333, s = 0.028868, half-width 4.302653 · s / √3 = 0.071711.
    let worst = &decided[0];
    assert_eq!(worst.seeds, [0, 1, 2]);
    for (d, want) in worst.paired.differences.iter().zip([0.2, 0.15, 0.2]) {
        close(*d, want);
    }
    assert!((worst.paired.interval[0] - (0.183333 - 0.071711)).abs() < 1e-5);
    assert_eq!(worst.paired.verdict, Verdict::Reproduced);
    assert_eq!(decided[1].paired.verdict, Verdict::Refuted);
    // B's class d minus its lowest other class (0.6): −0.5, −0.4, −0.4.
    let gap = &decided[2];
    assert!(gap.b.is_none());
    for (d, want) in gap.paired.differences.iter().zip([-0.5, -0.4, -0.4]) {
        close(*d, want);
    }
    assert_eq!(gap.paired.verdict, Verdict::Reproduced);
    let md = classwise_figures::compare::claims::markdown(&decisions, "adversarial-only");
    assert!(
        md.contains("| worst | A (last) | B (last) | robust_worst |"),
        "{md}"
    );
    assert!(
        md.contains("s0: +20.0, s1: +15.0, s2: +20.0 | +18.3 [+11.2, +25.5] | reproduced | – |"),
        "{md}"
    );
    // The class-wise variance is written as a fraction², not in points: the population
    // variances of [0.8, 0.7, 0.6, d] are A 0.035, 0.027969, 0.021875 and B 0.0725, 0.051875,
    // 0.051875 (seeds 0, 1, 2).
    assert!(
        md.contains(
            "| robust_cv | 0.0283 ± 0.0066 | 0.0588 ± 0.0119 | s0: -0.0375, s1: -0.0239, \
             s2: -0.0300 | -0.0305 ["
        ),
        "{md}"
    );

    // Bad claims name what is wrong.
    let err = |claims: &str| {
        file(claims)
            .unwrap()
            .decide(&c, &results)
            .unwrap_err()
            .to_string()
    };
    let one = |group: &str, metric: &str| claim("x", group, None, metric, "+");
    // A claim on a group not compared is left undecided, unless no claim can be decided.
    assert!(err(&one("C", "robust_worst")).contains("not compared: C"));
    assert!(err(&one("C", "robust_worst")).contains("one of A, B, D, E"));
    let partial = file(&format!(
        "{}{}",
        one("A", "robust_worst"),
        one("C", "robust_worst")
    ));
    let partial = partial.unwrap().decide(&c, &results).unwrap();
    assert_eq!(partial.decided.len(), 1);
    assert_eq!(partial.undecided[0].reason, "not compared: C");
    let md = classwise_figures::compare::claims::markdown(&partial, "adversarial-only");
    assert!(
        md.ends_with("\nNot decided: x (not compared: C).\n"),
        "{md}"
    );
    // Pairs are the seeds both sides have: A − D on seeds 1, 2 (0.35 − 0.25, 0.40 − 0.30);
    // A − E on seed 0 alone cannot be decided.
    let two = |b: &str| claim(b, "A", Some(b), "robust:d", "+");
    let paired = file(&format!("{}{}", two("D"), two("E")))
        .unwrap()
        .decide(&c, &results)
        .unwrap();
    assert_eq!(paired.decided[0].seeds, [1, 2]);
    for (d, want) in paired.decided[0].paired.differences.iter().zip([0.1, 0.1]) {
        close(*d, want);
    }
    assert!(
        paired.undecided[0].reason.starts_with("seeds [0]: "),
        "{}",
        paired.undecided[0].reason
    );
    assert!(err(&one("A", "robust_best")).contains("robust_gap:CLASS"));
    // A model that is not in every run of the group leaves the claim undecided; a model name
    // that does not exist is an error.
    let fawa = one("A", "robust_worst").replace("\"last\"", "\"fawa\"");
    let mixed = file(&format!("{}{fawa}", one("A", "robust_worst"))).unwrap();
    let mixed = mixed.decide(&c, &results).unwrap();
    assert_eq!(
        mixed.undecided[0].reason,
        "`fawa` is not in every run of A (compare.md's notes say in how many)"
    );
    // With pair_available the claim pairs the seeds whose runs have the model: A's FAWA (seeds
    // 0, 1: class d 0.30, 0.35) against B (0.10, 0.20): d = 0.2, 0.15, mean 0.175,
    // s = 0.035355, half-width t(0.975, 1) · s / √2 = 12.7062 · 0.025 = 0.31766: inconclusive.
    // Seeds to decide: n = 3 gives 4.302653 · 0.035355 / √3 = 0.0878 < 0.175.
    let available = claim("avail", "A", Some("B"), "robust:d", "+")
        .replacen("\"last\"", "\"fawa\"", 1)
        + "pair_available = true\n";
    let available = file(&available).unwrap().decide(&c, &results).unwrap();
    let d = &available.decided[0];
    assert_eq!(d.seeds, [0, 1]);
    for (x, want) in d.paired.differences.iter().zip([0.2, 0.15]) {
        close(*x, want);
    }
    assert!((d.paired.interval[1] - (0.175 + 0.31766)).abs() < 1e-4);
    assert_eq!(d.paired.verdict, Verdict::Inconclusive);
    assert_eq!(d.seeds_needed, SeedsNeeded::Seeds(3));
    let md = classwise_figures::compare::claims::markdown(&available, "adversarial-only");
    assert!(
        md.contains("| s0: +20.0, s1: +15.0 | +17.5 [-14.3, +49.3] | inconclusive | 3 |"),
        "{md}"
    );
    // Two runs of one seed in a group (two sweeps' groups of the same name) are refused.
    let mut twice = results.clone();
    twice.push(
        RunResults::read(RunInput {
            dir: tmp.path().join("B-s0"),
            group: "B".into(),
            seed: Some(0),
        })
        .unwrap(),
    );
    let c2 = Comparison::new(&twice, None, None).unwrap();
    assert!(
        c2.notes.iter().any(|n| n.contains("are both seed 0")),
        "{:?}",
        c2.notes
    );
    let e = claims.decide(&c2, &twice).unwrap_err().to_string();
    assert!(
        e.contains("two runs of seed 0") && e.contains("--label"),
        "{e}"
    );
    // A claim's own evaluation, when the comparison has none such, is an error naming it.
    let other = format!("{}attack = \"fgsm\"\n", one("A", "robust_worst"));
    assert!(err(&other).contains("claim x: attack"), "{}", err(&other));
    let typo = one("A", "robust_worst").replace("\"last\"", "\"faw\"");
    assert!(err(&typo).contains("no such model"), "{}", err(&typo));
    assert!(err(&one("A", "robust:e")).contains("a class of"));
    let e = file("").unwrap_err().to_string();
    assert!(e.contains("claims.toml"), "{e}");
}

/// `runs.md` lists each group's runs one by one (here under AutoAttack, the primary evaluation),
/// and finds a group whose runs gave the same reports as another's, seed by seed.
#[test]
fn runs_table_shows_each_run_and_identical_groups() {
    let tmp = tempfile::tempdir().unwrap();
    let mut inputs = runs(tmp.path());
    // A copy of base's two runs as a group of its own: the same reports, seed by seed.
    for seed in 0..2u64 {
        let (from, to) = (
            tmp.path().join(format!("base-s{seed}")),
            tmp.path().join(format!("copy-s{seed}")),
        );
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(&from).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
        }
        inputs.push(RunInput {
            dir: to,
            group: "copy".into(),
            seed: Some(seed),
        });
    }
    let c = Comparison::new(&read(inputs), None, None).unwrap();
    let md = classwise_figures::compare::runs::markdown(&c, "last");
    assert!(md.contains(&format!("Model `last` under {AA}")), "{md}");
    // base: clean averages 0.8 and 0.75; the weakest clean class is d (0.6 in both runs); under
    // AutoAttack d is each run's worst (0.1, 0.1) and a's 0.7 / 0.5 spans the widest range.
    assert!(
        md.contains(
            "| base | 0, 1 | 75.0–80.0 | d 60.0 / 60.0 | d 10.0 / d 10.0 | a 70.0 / 50.0 \
             (range 20.0) | copy |"
        ),
        "{md}"
    );
    assert!(md.contains("| copy | 0, 1 | 75.0–80.0 |"), "{md}");
    assert!(md.ends_with("(range 20.0) | base |\n"), "{md}");
    // fair: one run, every class clean at 0.8 (the first is named), AutoAttack 0.4, 0.4, 0.3,
    // 0.3 (c is the first lowest); no class spans a range.
    assert!(
        md.contains("| fair | 0 | 80.0–80.0 | a 80.0 | c 30.0 | d 30.0 (range 0.0) | – |"),
        "{md}"
    );
    // A model no group has: said, no table.
    let none = classwise_figures::compare::runs::markdown(&c, "fawa");
    assert!(none.contains("No evaluation of model `fawa` is common to every group"));
}
