//! Class-wise evaluation on a linear model whose clean and robust correctness are known by hand,
//! and the AutoAttack-style sanity checks.

use classwise_trainer::Result;
use classwise_trainer::attack::Pgd;
use classwise_trainer::eval::{evaluate, markdown};
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
    let e = evaluate(&model, batches, &names(), &Pgd::fgsm(), 0.2, Device::Cpu).unwrap();
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
}

#[test]
fn a_randomised_model_is_flagged() {
    // Margins ≥ 0.2 ≫ noise 1e-3: predictions are stable, logits are not.
    let model = Threshold {
        noise: 1e-3,
        batch_centred: false,
    };
    let batches = data(&[0.9, 0.1], &[0, 1]);
    let e = evaluate(&model, batches, &names(), &Pgd::fgsm(), 0.01, Device::Cpu).unwrap();
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
    let e = evaluate(&model, batches, &names(), &Pgd::fgsm(), 0.0, Device::Cpu)
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
            Device::Cpu
        )
        .is_err()
    );
    let empty: Vec<Result<(Tensor, Tensor)>> = Vec::new();
    let e = evaluate(&model, empty, &names(), &Pgd::fgsm(), 0.1, Device::Cpu).unwrap_err();
    assert!(e.to_string().contains("`data`"), "{e}");
    let e = evaluate(
        &model,
        data(&[0.9], &[0]),
        &names(),
        &Pgd::fgsm(),
        -1.0,
        Device::Cpu,
    )
    .unwrap_err();
    assert!(e.to_string().contains("eps"), "{e}");
}
