//! The arithmetic of the forward pass: `fp32`, or `bf16` mixed precision.
//!
//! bf16 follows the policy of PyTorch's CUDA autocast (`torch.autocast("cuda",
//! dtype=torch.bfloat16)`, the "lower precision" op list of `aten/src/ATen/autocast_mode.cpp`)
//! for the operations our models use: convolutions and linear layers run in bf16 (their input,
//! weight and bias cast per call, so the weights, their gradients and the optimiser stay fp32:
//! the master copy); BatchNorm takes the bf16 activations with its fp32 parameters and
//! statistics (mixed-type kernels, as autocast leaves it); ReLU, pooling and residual sums run
//! in the activations' type; the logits are returned in fp32, so that every loss, softmax, KL
//! and reduction is fp32. The input image, the attacks' steps and projections stay fp32: the
//! cast of the image is differentiable and its gradient arrives in fp32.
//!
//! libtorch's autocast switch reachable from tch selects fp16 on CUDA only, so the casts are
//! explicit, in [`super::layers::Conv2d`] and [`super::layers::Linear`], while
//! [`super::Model`]'s forward pass holds a [`scope`].

use std::cell::Cell;

use tch::{Device, Kind, Tensor};

use crate::error::{Result, invalid};

pub use classwise_core::eval::Precision;

/// The kind convolutions and linear layers compute in under `precision`, when it is not fp32.
pub fn reduced_kind(precision: Precision) -> Option<Kind> {
    match precision {
        Precision::Fp32 => None,
        Precision::Bf16 => Some(Kind::BFloat16),
    }
}

/// Checks that `device` computes in `precision`: a bf16 convolution is tried there. On the CPU
/// bf16 is allowed but slow unless the processor has bf16 instructions (AVX-512 BF16, AMX),
/// which the caller should say.
pub fn check(precision: Precision, device: Device) -> Result<()> {
    let Some(kind) = reduced_kind(precision) else {
        return Ok(());
    };
    let probe = || -> std::result::Result<Tensor, tch::TchError> {
        let x = Tensor::f_ones([1, 1, 3, 3], (kind, device))?;
        x.f_conv2d(&x, None::<Tensor>, [1, 1], [0, 0], [1, 1], 1)
    };
    probe().map(drop).map_err(|e| {
        invalid(
            "precision",
            format!("\"{}\" on {device:?}", precision.name()),
            format!(
                "a device that computes in bf16 (a bf16 convolution failed there: {e}); \
                 use precision = \"fp32\""
            ),
        )
    })
}

thread_local! {
    static ACTIVE: Cell<Precision> = const { Cell::new(Precision::Fp32) };
}

/// The precision of the forward pass running on this thread.
pub fn active() -> Precision {
    ACTIVE.with(Cell::get)
}

/// Runs `f` with `precision` active on this thread (restored afterwards, also on unwinding).
pub fn scope<T>(precision: Precision, f: impl FnOnce() -> T) -> T {
    struct Restore(Precision);
    impl Drop for Restore {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
        }
    }
    let _restore = Restore(ACTIVE.with(|a| a.replace(precision)));
    f()
}
