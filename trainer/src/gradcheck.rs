//! A self-check of libtorch: forward and backward through a small conv net, with the autograd
//! input gradient compared against central finite differences in double precision.
//!
//! It is what `classwise doctor`/`demo` run to show that the linked libtorch computes, and what
//! PGD relies on: attacks step along the input gradient.

use serde::Serialize;
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

use crate::error::Result;

/// Largest acceptable [`GradCheck::max_rel_error`]. Central differences with h = 1e-5 in f64:
/// truncation O(h²) ≈ 1e-10, rounding ≈ 1e-16/h ≈ 1e-11, relative to gradients of order
/// 1e-2..1e-1. 1e-6 leaves a wide margin while any wrong backward (a missing term, a sign) is
/// off by O(1).
pub const GRAD_REL_TOL: f64 = 1e-6;

/// Outcome of [`conv_net_gradcheck`].
#[derive(Clone, Debug, Serialize)]
pub struct GradCheck {
    pub device: String,
    /// Input shape, NCHW.
    pub input_shape: [i64; 4],
    /// Cross-entropy at the input.
    pub loss: f64,
    /// dL/dx from autograd, flattened.
    pub autograd: Vec<f64>,
    /// dL/dx from central differences with step `step`, flattened.
    pub finite_difference: Vec<f64>,
    pub step: f64,
    /// Euclidean norm of the gradient over all parameters (zero would mean backward did nothing).
    pub param_grad_norm: f64,
}

impl GradCheck {
    /// max_i |a_i - f_i| / max(max_i |f_i|, tiny): the error relative to the gradient's scale.
    pub fn max_rel_error(&self) -> f64 {
        rel_error(&self.autograd, &self.finite_difference)
    }
}

/// max_i |a_i - b_i| relative to max_i |b_i|.
pub fn rel_error(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// Conv(1→4, 3×3, pad 1) → tanh → 2×2 average pool → linear(64→3): smooth, so central
/// differences are accurate to O(h²).
fn net(vs: &nn::Path) -> impl Module + use<> {
    let conv = nn::conv2d(
        vs / "conv",
        1,
        4,
        3,
        nn::ConvConfig {
            padding: 1,
            ..Default::default()
        },
    );
    let fc = nn::linear(vs / "fc", 4 * 4 * 4, 3, Default::default());
    nn::func(move |x| {
        x.apply(&conv)
            .tanh()
            .avg_pool2d_default(2)
            .flatten(1, -1)
            .apply(&fc)
    })
}

/// Runs the check on `device` with torch seed `seed`. Every input coordinate is checked
/// (2×1×8×8 = 128 of them, 256 extra forward passes).
pub fn conv_net_gradcheck(device: Device, seed: i64) -> Result<GradCheck> {
    let shape = [2i64, 1, 8, 8];
    let (vs, model, x) = crate::seed::seeded(seed, || -> Result<_> {
        let mut vs = nn::VarStore::new(device);
        let model = net(&vs.root());
        vs.double();
        let x = Tensor::f_randn(shape, (Kind::Double, device))?;
        Ok((vs, model, x))
    })?;
    let x = x.set_requires_grad(true);
    let labels = Tensor::f_from_slice(&[0i64, 2])?.f_to(device)?;
    let loss_of = |x: &Tensor| -> Result<Tensor> {
        Ok(model.forward(x).f_cross_entropy_loss::<Tensor>(
            &labels,
            None,
            tch::Reduction::Mean,
            -100,
            0.0,
        )?)
    };

    let loss = loss_of(&x)?;
    loss.f_backward()?;
    let autograd = to_vec(&x.grad())?;
    let mut sq = 0.0;
    for p in vs.trainable_variables() {
        sq += p
            .grad()
            .f_square()?
            .f_sum(Kind::Double)?
            .f_double_value(&[])?;
    }

    let x0 = to_vec(&x.detach())?;
    let step = 1e-5;
    let _guard = tch::no_grad_guard();
    let mut finite_difference = Vec::with_capacity(x0.len());
    let mut at = x0.clone();
    for i in 0..x0.len() {
        let mut f = [0.0; 2];
        for (k, sign) in [1.0, -1.0].into_iter().enumerate() {
            at[i] = x0[i] + sign * step;
            let xi = Tensor::f_from_slice(&at)?.f_view(shape)?.f_to(device)?;
            f[k] = loss_of(&xi)?.f_double_value(&[])?;
        }
        at[i] = x0[i];
        finite_difference.push((f[0] - f[1]) / (2.0 * step));
    }
    Ok(GradCheck {
        device: format!("{device:?}"),
        input_shape: shape,
        loss: loss.f_double_value(&[])?,
        autograd,
        finite_difference,
        step,
        param_grad_norm: sq.sqrt(),
    })
}

fn to_vec(t: &Tensor) -> Result<Vec<f64>> {
    let flat = t
        .f_to_device(Device::Cpu)?
        .f_to_kind(Kind::Double)?
        .f_flatten(0, -1)?;
    Ok(Vec::<f64>::try_from(&flat)?)
}
