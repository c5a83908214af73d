//! The optional first layer x ↦ (x − mean)/std per channel (as CFA's `normalize_cifar`,
//! `PKU-ML/CFA:utils.py`).
//!
//! CFA normalises inside its forward pass; WAT, FRL, TRADES, FAT and MART feed raw [0, 1]
//! images. Keeping the normalisation inside the model means every attack perturbs pixels and
//! ε is always in [0, 1] units. mean and std are constants (not parameters): they are not in
//! the `VarStore`, receive no gradient and are restored from the [`super::ModelSpec`].

use tch::{Device, Kind, Tensor};

use super::spec::Normalization;

/// Per-channel normalisation with constants shaped `[1, C, 1, 1]`.
#[derive(Debug)]
pub struct Normalize {
    mean: Tensor,
    std: Tensor,
}

impl Normalize {
    /// The layer for `norm` (validated: one finite mean and one positive std per channel) on
    /// `device`, in f32.
    pub fn new(norm: &Normalization, device: Device) -> Self {
        let channel_constant = |values: &[f64]| {
            let len = i64::try_from(values.len()).unwrap_or(i64::MAX);
            Tensor::from_slice(values)
                .to_kind(Kind::Float)
                .reshape([1, len, 1, 1])
                .to_device(device)
        };
        Normalize {
            mean: channel_constant(&norm.mean),
            std: channel_constant(&norm.std),
        }
    }

    /// (xs − mean)/std for `xs` shaped `[N, C, H, W]`; differentiable in `xs`.
    pub fn forward(&self, xs: &Tensor) -> Tensor {
        (xs - &self.mean) / &self.std
    }
}
