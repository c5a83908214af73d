//! Class-wise evaluation on a linear model whose clean and robust correctness are known by hand,
//! and the AutoAttack-style sanity checks.

use classwise_trainer::Result;
use classwise_trainer::attack::Pgd;
use classwise_trainer::attack::{Attack, AttackInput};
use classwise_trainer::eval::{PerImage, Report, RobustCounting, evaluate, markdown};
use classwise_trainer::model::Classifier;
use tch::nn::ModuleT;
use tch::{Device, Kind, Tensor};

/// One input coordinate: logits (x, 0.5) ⇒ class 0 iff x > 0.5; `noise` adds N(0, noise²) to
/// the logits; `batch_centred` subtracts the batch mean of x (a model that depends on the batch).
#[derive(Debug)]
struct Threshold {
    noise: f64,
    batch_centred: bool,
}

impl ModuleT for Threshold {
    fn forward_t(&self, xs: &Tensor, _train: bool) -> Tensor {
        let x = xs.flatten(1, -1);
        let x = if self.batch_centred {
            &x - x.mean(Kind::Float) + 0.5
        } else {
            x
        };
        let z = Tensor::cat(&[x.shallow_clone(), x.full_like(0.5)], 1);
        if self.noise > 0.0 {
            &z + z.randn_like() * self.noise
        } else {
            z
        }
    }
}

impl Classifier for Threshold {}

fn names() -> Vec<String> {
    vec!["high".into(), "low".into()]
}

fn data(xs: &[f32], ys: &[i64]) -> Vec<Result<(Tensor, Tensor)>> {
    vec![Ok((
        Tensor::from_slice(xs).view([-1, 1]),
        Tensor::from_slice(ys),
    ))]
}

#[test]
fn class_wise_report_matches_hand_computed_values() {
    let model = Threshold {
        noise: 0.0,
        batch_centred: false,
    };
    // Class 0 (x > 0.5): 0.95 is robust at ε = 0.2, 0.62 is not. Class 1: 0.2 and 0.25 are
    // robust (x + 0.2 < 0.5). 0.4 is a clean error of class 0.
    let batches = data(&[0.95, 0.62, 0.4, 0.2, 0.25], &[0, 0, 0, 1, 1]);
    let e = evaluate(
        &model,
        batches,
        &names(),
        &Pgd::fgsm(),
        0.2,
        RobustCounting::default(),
        Device::Cpu,
    )
    .unwrap();
    assert_eq!(e.n_samples, 5);
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12);
    assert!(
        close(&e.clean.per_class, &[2.0 / 3.0, 1.0]),
        "{:?}",
        e.clean.per_class
    );
    assert!(
        close(&e.robust.per_class, &[1.0 / 3.0, 1.0]),
        "{:?}",
        e.robust.per_class
    );
    assert_eq!(e.robust.worst.class, 0);
    assert!(close(&e.errors.boundary, &[1.0 / 3.0, 0.0]));
    assert!(close(&e.errors.standard, &[1.0 / 3.0, 0.0]));
    assert_eq!(e.confusion_under_attack.count(0, 1), Some(2));
    assert_eq!(e.confusion_under_attack.count(1, 1), Some(2));
    assert!((e.robust_worst_20_percent - 1.0 / 3.0).abs() < 1e-12);
    assert!(e.warnings.is_empty(), "{:?}", e.warnings);
    let md = markdown(&e);
    assert!(md.contains("| 0 high | 66.67 | 33.33 |"), "{md}");
    assert!(md.contains("**worst**"), "{md}");

    // The one report type: what is written reads back equal (all but the per-image decisions,
    // which go to predictions/), and writes the same text again.
    let text = e.to_pretty().unwrap();
    assert!(
        text.starts_with("{\n  \"schema\": 2,\n  \"attack\""),
        "{text}"
    );
    let read = Report::parse(&text, "report.json").unwrap();
    assert_eq!(read.per_image, PerImage::default());
    assert_eq!(
        read,
        Report {
            per_image: PerImage::default(),
            ..e.clone()
        }
    );
    assert_eq!(read.to_pretty().unwrap(), text);
}

#[test]
fn a_randomised_model_is_flagged() {
    // Margins ≥ 0.2 ≫ noise 1e-3: predictions are stable, logits are not.
    let model = Threshold {
        noise: 1e-3,
        batch_centred: false,
    };
    let batches = data(&[0.9, 0.1], &[0, 1]);
    let e = evaluate(
        &model,
        batches,
        &names(),
        &Pgd::fgsm(),
        0.01,
        RobustCounting::default(),
        Device::Cpu,
    )
    .unwrap();
    assert!(
        e.warnings.iter().any(|w| w.contains("randomised")),
        "{:?}",
        e.warnings
    );
}

#[test]
fn batch_dependent_predictions_are_an_error() {
    let model = Threshold {
        noise: 0.0,
        batch_centred: true,
    };
    let batches = data(&[0.9, 0.8, 0.1, 0.2], &[0, 0, 1, 1]);
    let e = evaluate(
        &model,
        batches,
        &names(),
        &Pgd::fgsm(),
        0.0,
        RobustCounting::default(),
        Device::Cpu,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`model`") && e.contains("eval mode"), "{e}");
}

#[test]
fn bad_input_is_an_error() {
    let model = Threshold {
        noise: 0.0,
        batch_centred: false,
    };
    let one = vec!["only".to_string()];
    assert!(
        evaluate(
            &model,
            data(&[0.9], &[0]),
            &one,
            &Pgd::fgsm(),
            0.1,
            RobustCounting::default(),
            Device::Cpu
        )
        .is_err()
    );
    let empty: Vec<Result<(Tensor, Tensor)>> = Vec::new();
    let e = evaluate(
        &model,
        empty,
        &names(),
        &Pgd::fgsm(),
        0.1,
        RobustCounting::default(),
        Device::Cpu,
    )
    .unwrap_err();
    assert!(e.to_string().contains("`data`"), "{e}");
    let e = evaluate(
        &model,
        data(&[0.9], &[0]),
        &names(),
        &Pgd::fgsm(),
        -1.0,
        RobustCounting::default(),
        Device::Cpu,
    )
    .unwrap_err();
    assert!(e.to_string().contains("eps"), "{e}");
}

/// An "attack" that moves every input by a fixed amount: here it moves a clean error of class 1
/// (x = 0.55, predicted 0) across the threshold, so the adversarial input is classified
/// correctly although the clean one is not.
struct Shift(f64);

impl Attack for Shift {
    fn describe(&self) -> String {
        format!("shift {}", self.0)
    }
    fn perturb(&self, _: &dyn Classifier, input: &AttackInput<'_>) -> Result<Tensor> {
        Ok(input.x + self.0)
    }
}

/// AutoAttack's counting (the default) never counts a clean error as robust, so boundary errors
/// are never negative; the reference codes' counting does, and the report says which was used.
#[test]
fn robust_counting_conventions() {
    let model = Threshold {
        noise: 0.0,
        batch_centred: false,
    };
    // Class 0: 0.9 stays correct (0.7 > 0.5). Class 1: 0.55 is a clean error that the shift
    // fixes (0.35 < 0.5); 0.1 stays correct.
    let run = |counting| {
        evaluate(
            &model,
            data(&[0.9, 0.55, 0.1], &[0, 1, 1]),
            &names(),
            &Shift(-0.2),
            0.2,
            counting,
            Device::Cpu,
        )
        .unwrap()
    };
    let aa = run(RobustCounting::CleanAndAdversarial);
    assert_eq!(aa.clean.per_class, [1.0, 0.5]);
    assert_eq!(aa.robust.per_class, [1.0, 0.5]);
    assert_eq!(aa.errors.boundary, [0.0, 0.0]);
    assert!(markdown(&aa).contains("AutoAttack"), "{}", markdown(&aa));
    let reference = run(RobustCounting::AdversarialOnly);
    assert_eq!(reference.robust.per_class, [1.0, 1.0]);
    assert_eq!(reference.errors.boundary, [0.0, -0.5]);
    assert_eq!(reference.errors.clean_wrong_robust_correct, [0, 1]);
    assert!(
        markdown(&reference).contains("reference codes"),
        "{}",
        markdown(&reference)
    );
    let json = serde_json::to_value(&reference).unwrap();
    assert_eq!(json["robust_counting"], "adversarial-only");
    // Each report also carries the other counting, from the same adversarial examples.
    for (report, other, per_class) in [
        (&aa, RobustCounting::AdversarialOnly, [1.0, 1.0]),
        (&reference, RobustCounting::CleanAndAdversarial, [1.0, 0.5]),
    ] {
        let counted = report.robust_other_counting.as_ref().unwrap();
        assert_eq!(counted.robust_counting, other);
        assert_eq!(counted.robust.per_class, per_class);
        assert_eq!(report.robust_under(other).unwrap().per_class, per_class);
    }
}
