//! The optional first layer: x ↦ (x − mean)/std per channel (as CFA's `normalize_cifar`,
//! `PKU-ML/CFA:utils.py`, and the `mean`/`std` buffers of RobustBench's DeepMind models), or
//! per-image standardisation (RobustBench's `Ding2020MMANet.forward`,
//! `robustbench/model_zoo/cifar10.py`).
//!
//! CFA normalises inside its forward pass; WAT, FRL, TRADES, FAT and MART feed raw [0, 1]
//! images. Keeping the normalisation inside the model means every attack perturbs pixels and
//! ε is always in [0, 1] units. mean and std are constants (not parameters): they are not in
//! the `VarStore`, receive no gradient and are restored from the [`super::ModelSpec`].

use tch::{Device, Kind, Tensor};

use super::spec::Normalization;

/// The normalisation layer of a model.
#[derive(Debug)]
pub enum Normalize {
    /// Per-channel constants shaped `[1, C, 1, 1]`.
    Channels { mean: Tensor, std: Tensor },
    /// Per-image standardisation.
    PerImage,
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
        match norm {
            Normalization::Channels(c) => Normalize::Channels {
                mean: channel_constant(&c.mean),
                std: channel_constant(&c.std),
            },
            Normalization::PerImage(_) => Normalize::PerImage,
        }
    }

    /// The normalised `xs` (`[N, C, H, W]`); differentiable in `xs`.
    pub fn forward(&self, xs: &Tensor) -> Tensor {
        match self {
            Normalize::Channels { mean, std } => (xs - mean) / std,
            Normalize::PerImage => standardize_per_image(xs),
        }
    }
}

/// (x − mean(x)) / max(std(x), 1/√n) over the n = C·H·W values of each image, with the
/// unbiased standard deviation (`torch.std`'s default), as `Ding2020MMANet.forward`.
fn standardize_per_image(xs: &Tensor) -> Tensor {
    let dims: &[i64] = &[1, 2, 3];
    let mean = xs.mean_dim(dims, true, Kind::Float);
    let std = xs.std_dim(dims, true, true);
    let size = xs.size();
    let n = size[1..].iter().product::<i64>().max(1) as f64;
    let floor = std.ones_like() / n.sqrt();
    (xs - mean) / std.maximum(&floor)
}
