//! bf16 mixed precision on the CPU: the forward pass really computes in bf16 and returns fp32
//! logits and fp32 input gradients; a bf16 run trains, resumes bit-identically and names its
//! precision; PGD and AutoAttack's APGD accuracies of a trained model in bf16 stay within a
//! stated tolerance of fp32; bad values name the key.

use classwise_trainer::attack::{Apgd, Attack, Pgd};
use classwise_trainer::data::Part;
use classwise_trainer::eval::{RobustCounting, evaluate};
use classwise_trainer::model::{Architecture, Model, ModelSpec, Precision};
use classwise_trainer::run::{RunConfig, RunDir, TrainOptions, train};
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

/// A 3-class synthetic set of 3×16×16 colour images and FAT's SmallCNN (BatchNorm: bf16
/// activations with fp32 statistics).
const CONFIG: &str = r#"
name = "precision-test"
seed = 11
epochs = 3
device = "cpu"
batch_size = 16
precision = "bf16"

[data]
source = { kind = "synthetic", classes = 3, train_per_class = 24, test_per_class = 40, channels = 3, side = 16, seed = 5, noise = [0.1, 0.3] }
augment = { crop_padding = 2, pad_mode = "zero", flip = true }

[model]
num_classes = 3
input_shape = [3, 16, 16]
architecture = { kind = "small_cnn_cifar" }

[optimizer]
momentum = 0.9
weight_decay = 5e-4

[schedule]
base = 0.02
pieces = [[2, 0.002]]

[train]
eps = "8/255"
method = { method = "pgd-at", attack = { steps = 2, step = { kind = "absolute", value = 0.02 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } } }

[eval]
eps = "8/255"
attack = { steps = 3, step = { kind = "absolute", value = 0.02 }, start = { kind = "uniform" }, loss = { kind = "cross-entropy" } }
"#;

fn config(overrides: &[&str]) -> RunConfig {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    RunConfig::from_toml_with_overrides(CONFIG, &o).unwrap()
}

fn weights(dir: &std::path::Path) -> Vec<(String, Tensor)> {
    Model::load(
        &RunDir(dir.to_path_buf()).weights("last").unwrap(),
        Device::Cpu,
    )
    .unwrap()
    .state()
}

fn json(path: std::path::PathBuf) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

#[test]
fn bf16_logits_and_input_gradients_are_fp32_and_near_the_fp32_ones() {
    let archs = [
        (Architecture::SmallCnnCifar, [3, 16, 16]),
        (Architecture::ResNet18, [3, 16, 16]),
        (
            Architecture::PreActResNet18 {
                final_bn_relu: true,
            },
            [3, 16, 16],
        ),
        (Architecture::wide_resnet(10, 1), [3, 16, 16]),
        (
            Architecture::SmallCnn {
                zero_last_layer: false,
            },
            [1, 28, 28],
        ),
    ];
    for (arch, shape) in archs {
        let spec = ModelSpec::new(arch, 10, shape);
        let mut model = Model::new(&spec, Device::Cpu, 3).unwrap();
        let x = classwise_trainer::seed::seeded(4, || {
            Tensor::rand(
                [6, shape[0] as i64, shape[1] as i64, shape[2] as i64],
                (Kind::Float, Device::Cpu),
            )
        });
        let fp32 = tch::no_grad(|| model.forward_t(&x, false));
        model.set_precision(Precision::Bf16).unwrap();
        let x = x.set_requires_grad(true);
        let bf16 = model.forward_t(&x, false);
        assert_eq!(bf16.kind(), Kind::Float, "{}", spec.describe());
        let grad = Tensor::run_backward(&[bf16.sum(Kind::Float)], &[&x], false, false);
        assert_eq!(
            grad[0].kind(),
            Kind::Float,
            "input gradient of {}",
            spec.describe()
        );
        let bf16 = bf16.detach();
        // bf16 keeps 8 significant bits (relative rounding 2^-9 per operation): the logits move,
        // but by a few per cent of their spread at most.
        let diff = f64::try_from((&bf16 - &fp32).abs().max()).unwrap();
        let spread = f64::try_from(fp32.std(false)).unwrap().max(1e-3);
        assert!(
            diff > 0.0,
            "{}: bf16 logits equal the fp32 ones",
            spec.describe()
        );
        assert!(
            diff <= 0.1 * spread,
            "{}: bf16 logits differ by {diff} (fp32 logits' spread {spread})",
            spec.describe()
        );
    }
}

#[test]
fn a_bf16_run_trains_resumes_bit_identically_and_names_its_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    let bf16 = config(&[]);
    let done = train(&bf16, &a, TrainOptions::default()).unwrap();
    let report = done.report.expect("a report");
    assert_eq!(report.precision, Precision::Bf16);
    // Interrupted inside the second epoch, then resumed.
    let at = TrainOptions {
        interrupt_at: Some((1, 2)),
        ..TrainOptions::default()
    };
    assert!(train(&bf16, &b, at).unwrap().interrupted.is_some());
    let resume = TrainOptions {
        resume: true,
        ..TrainOptions::default()
    };
    train(&bf16, &b, resume).unwrap();
    for ((na, ta), (nb, tb)) in weights(&a).iter().zip(&weights(&b)) {
        assert_eq!(na, nb);
        assert!(ta.equal(tb), "{na} differs after a bf16 resume");
    }
    assert_eq!(json(a.join("report.json"))["precision"], "bf16");
    let md = std::fs::read_to_string(a.join("report.md")).unwrap();
    assert!(md.contains("forward passes in bf16"), "{md}");
    let env = json(b.join("env.json"));
    for s in env["sessions"].as_array().unwrap() {
        assert_eq!(s["precision"], "bf16", "{env}");
    }
    // The same run in fp32 ends elsewhere: the precision took effect.
    train(
        &config(&["precision=\"fp32\""]),
        &c,
        TrainOptions::default(),
    )
    .unwrap();
    let moved = weights(&a)
        .iter()
        .zip(&weights(&c))
        .any(|((_, ta), (_, tc))| !ta.equal(tc));
    assert!(moved, "bf16 and fp32 runs ended with the same weights");
    assert_eq!(json(c.join("report.json"))["precision"], "fp32");
    let loss = |d: &std::path::Path| -> Vec<f64> {
        std::fs::read_to_string(d.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["train_loss"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    let (la, lc) = (loss(&a), loss(&c));
    assert!(la.iter().all(|l| l.is_finite()), "{la:?}");
    assert!(
        la[2] < 0.5 * la[0],
        "the bf16 run's loss did not fall: {la:?}"
    );
    assert!((la[2] - lc[2]).abs() < 0.05, "bf16 {la:?} vs fp32 {lc:?}");
}

/// ε of the comparison: three times the training ε, so that the attacks break a part of the
/// test set of this easy synthetic task.
const EVAL_EPS: f64 = 24.0 / 255.0;

/// Accuracy (clean, robust) of `model` on the run's test set under `attack` at [`EVAL_EPS`].
fn accuracy(model: &Model, cfg: &RunConfig, attack: &dyn Attack) -> (f64, f64) {
    let data = classwise_trainer::data::load(&cfg.data.source, Part::Test, None).unwrap();
    let idx: Vec<i64> = (0..data.len() as i64).collect();
    let batches: Vec<_> = idx.chunks(40).map(|c| data.batch(c, Device::Cpu)).collect();
    let e = classwise_trainer::seed::seeded(9, || {
        evaluate(
            model,
            batches,
            data.class_names(),
            attack,
            EVAL_EPS,
            RobustCounting::CleanAndAdversarial,
            Device::Cpu,
        )
    })
    .unwrap();
    (e.clean.class_mean, e.robust.class_mean)
}

#[test]
fn pgd_and_apgd_accuracy_in_bf16_stay_within_four_points_of_fp32() {
    // Tolerance: 4 percentage points of class-mean accuracy on 120 test images (5 images),
    // for clean, PGD-10 and APGD-CE / APGD-DLR (AutoAttack's first two attacks, 20 iterations).
    const TOLERANCE: f64 = 0.04;
    let tmp = tempfile::tempdir().unwrap();
    // 15 epochs: BatchNorm's running statistics need them to settle on 72 training images.
    let cfg = config(&[
        "precision=\"fp32\"",
        "epochs=15",
        "schedule.pieces=[[12, 0.002]]",
    ]);
    train(&cfg, tmp.path(), TrainOptions::default()).unwrap();
    let path = RunDir(tmp.path().to_path_buf()).weights("last").unwrap();
    let mut model = Model::load(&path, Device::Cpu).unwrap();
    let attacks: [(&str, Box<dyn Attack>); 3] = [
        ("pgd-10", Box::new(Pgd::ce(10, 6.0 / 255.0))),
        (
            "apgd-ce",
            Box::new(Apgd {
                iterations: 20,
                ..Apgd::ce()
            }),
        ),
        (
            "apgd-dlr",
            Box::new(Apgd {
                iterations: 20,
                ..Apgd::dlr()
            }),
        ),
    ];
    for (name, attack) in &attacks {
        model.set_precision(Precision::Fp32).unwrap();
        let (clean32, robust32) = accuracy(&model, &cfg, attack.as_ref());
        model.set_precision(Precision::Bf16).unwrap();
        let (clean16, robust16) = accuracy(&model, &cfg, attack.as_ref());
        eprintln!("{name}: fp32 {clean32} / {robust32}, bf16 {clean16} / {robust16}");
        // The comparison means something only for a model that learned and an attack that bites.
        assert!(clean32 > 0.6, "{name}: fp32 clean accuracy {clean32}");
        assert!(
            robust32 < clean32,
            "{name}: the attack broke nothing ({robust32} vs {clean32})"
        );
        assert!(
            (clean16 - clean32).abs() <= TOLERANCE,
            "{name}: clean {clean16} vs {clean32}"
        );
        assert!(
            (robust16 - robust32).abs() <= TOLERANCE,
            "{name}: robust bf16 {robust16} vs fp32 {robust32}"
        );
    }
}

#[test]
fn bad_precisions_name_the_key() {
    let err = RunConfig::from_toml(&CONFIG.replace("\"bf16\"", "\"fp16\"")).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("precision") && text.contains("fp16"),
        "{text}"
    );
    let err = "half".parse::<Precision>().unwrap_err().to_string();
    assert!(
        err.contains("`precision` = half") && err.contains("bf16"),
        "{err}"
    );
    let err = RunConfig::from_toml_with_overrides(CONFIG, &["eval.batch_size=0".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("`eval.batch_size` = 0"), "{err}");
}

#[test]
fn the_evaluation_batch_defaults_to_the_training_batch_on_the_cpu() {
    let c = config(&[]);
    assert_eq!(c.eval_batch_size(Device::Cpu), 16);
    assert_eq!(c.eval_batch_size(Device::Cuda(0)), 32);
    let c = config(&["eval.batch_size=100"]);
    assert_eq!(c.eval_batch_size(Device::Cpu), 100);
    assert_eq!(c.eval_batch_size(Device::Cuda(0)), 100);
    // An unset key is not written back, so older run directories still resume.
    assert!(
        !config(&["precision=\"fp32\""])
            .to_toml()
            .unwrap()
            .contains("precision =")
    );
}
