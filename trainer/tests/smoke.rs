//! libtorch smoke test: a real forward and backward pass through a small conv net on the CPU,
//! with the input gradient checked against finite differences.

use classwise_trainer::gradcheck::{GRAD_REL_TOL, conv_net_gradcheck, rel_error};
use tch::Device;

#[test]
fn conv_net_input_gradient_matches_finite_differences_on_cpu() {
    tch::set_num_threads(1);
    let g = conv_net_gradcheck(Device::Cpu, 7).expect("gradcheck runs on the CPU");
    assert_eq!(g.autograd.len(), 128);
    assert_eq!(g.finite_difference.len(), 128);
    assert!(g.loss.is_finite() && g.loss > 0.0, "loss {}", g.loss);
    let scale = g
        .finite_difference
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 1e-4, "gradient is (nearly) zero: {scale}");
    assert!(
        g.param_grad_norm > 0.0,
        "backward left parameter gradients at zero"
    );
    let err = g.max_rel_error();
    assert!(
        err < GRAD_REL_TOL,
        "autograd vs finite differences: {err:e}"
    );
}

#[test]
fn the_comparison_detects_a_wrong_gradient() {
    tch::set_num_threads(1);
    let g = conv_net_gradcheck(Device::Cpu, 7).unwrap();
    // A gradient off by 1% in scale, or with one coordinate's sign flipped, must fail the check.
    let scaled: Vec<f64> = g.autograd.iter().map(|v| v * 1.01).collect();
    assert!(rel_error(&scaled, &g.finite_difference) > GRAD_REL_TOL);
    let i = (0..g.autograd.len())
        .max_by(|&a, &b| g.autograd[a].abs().total_cmp(&g.autograd[b].abs()))
        .unwrap();
    let mut flipped = g.autograd.clone();
    flipped[i] = -flipped[i];
    assert!(rel_error(&flipped, &g.finite_difference) > 1.0);
}

#[test]
fn same_seed_same_gradient() {
    tch::set_num_threads(1);
    let a = conv_net_gradcheck(Device::Cpu, 11).unwrap();
    let b = conv_net_gradcheck(Device::Cpu, 11).unwrap();
    assert_eq!(a.autograd, b.autograd);
}
