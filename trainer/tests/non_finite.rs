//! Non-finite values: the KL of TRADES/MART/BAT keeps a finite, exact gradient where a softmax
//! probability underflows to 0 (the root cause of the ResNet-18 presets' NaN, issue 36), and
//! diagnostic mode names the operation whose output or gradient is not finite.

use classwise_trainer::diagnose::{Finding, probe, record};
use classwise_trainer::loss::kl;
use tch::{Kind, Tensor};

/// Logits whose softmax underflows to exactly 0 in float32 at class 1 (a gap of 200), and a
/// second distribution.
const Z: [f64; 3] = [0.0, -200.0, 1.0];
const Z_ADV: [f64; 3] = [0.5, 0.0, -0.5];

fn log_softmax(z: &[f64]) -> Vec<f64> {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = m + z.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
    z.iter().map(|v| v - lse).collect()
}

fn leaf(v: &[f64]) -> Tensor {
    Tensor::from_slice(v)
        .to_kind(Kind::Float)
        .unsqueeze(0)
        .set_requires_grad(true)
}

/// ∂/∂z_j KL(softmax(z) ‖ q) = p_j (log p_j − log q_j − KL), by hand in f64.
#[test]
fn kl_gradient_is_exact_where_the_softmax_underflows() {
    let (lp, lq) = (log_softmax(&Z), log_softmax(&Z_ADV));
    let p: Vec<f64> = lp.iter().map(|v| v.exp()).collect();
    let value: f64 = (0..3).map(|k| p[k] * (lp[k] - lq[k])).sum();
    let expected: Vec<f64> = (0..3).map(|j| p[j] * (lp[j] - lq[j] - value)).collect();
    let z = leaf(&Z);
    let out = kl(
        &z,
        &Tensor::from_slice(&Z_ADV).to_kind(Kind::Float).unsqueeze(0),
    );
    assert!((out.double_value(&[0]) - value).abs() < 1e-6);
    out.sum(Kind::Float).backward();
    let grad = Vec::<f64>::try_from(z.grad().squeeze_dim(0).to_kind(Kind::Double)).unwrap();
    for j in 0..3 {
        assert!(
            (grad[j] - expected[j]).abs() < 1e-6,
            "{grad:?} vs {expected:?}"
        );
    }
}

/// The probability-space form, `xlogy(p, p) − p·log q` (PyTorch's `kl_div` since 1.13), has a
/// NaN gradient at the same point: libtorch's xlogy backward divides p by p there.
#[test]
fn the_xlogy_form_has_a_nan_gradient_there_and_diagnosis_names_it() {
    let z = leaf(&Z);
    let log_q = Tensor::from_slice(&Z_ADV)
        .to_kind(Kind::Float)
        .unsqueeze(0)
        .log_softmax(-1, Kind::Float);
    let (loss, trace) = record(|| {
        probe("z", &z);
        let p = z.softmax(-1, Kind::Float);
        probe("softmax", &p);
        let plogp = p.xlogy(&p);
        probe("xlogy(p, p)", &plogp);
        let kl = (plogp - &p * &log_q).sum(Kind::Float);
        probe("kl", &kl);
        kl
    });
    assert_eq!(trace.names(), ["z", "softmax", "xlogy(p, p)", "kl"]);
    assert!(loss.double_value(&[]).is_finite());
    assert_eq!(trace.forward(), None);
    let finding = trace.backward(&loss).unwrap();
    assert_eq!(
        finding,
        Some(Finding::Backward {
            op: "softmax".into(),
            next: Some("xlogy(p, p)".into()),
        })
    );
    loss.backward();
    let grad = Vec::<f64>::try_from(z.grad().squeeze_dim(0).to_kind(Kind::Double)).unwrap();
    assert!(grad.iter().any(|g| g.is_nan()), "{grad:?}");
}

/// A NaN in the forward pass is named by the first probe that holds it.
#[test]
fn diagnosis_names_the_first_non_finite_output() {
    let x = leaf(&[1.0, -1.0, 0.0]);
    let (_, trace) = record(|| {
        let a = &x * 2.0;
        probe("double", &a);
        let b = a.log();
        probe("log", &b);
        let c = &b * 0.0;
        probe("times zero", &c);
        c
    });
    assert_eq!(trace.forward(), Some(Finding::Forward { op: "log".into() }));
    // Outside `record`, probes record nothing.
    probe("ignored", &x);
    let (_, empty) = record(|| ());
    assert!(empty.names().is_empty());
}
