//! Training augmentation (`PKU-ML/CFA:utils.py`, `boqili/WAT:data_loader.py`): random crop with
//! padding, then horizontal flip, as torchvision's `RandomCrop(32, padding=4)` +
//! `RandomHorizontalFlip()`. CFA pads in reflect mode; WAT, FRL, TRADES and FAT pad with zeros.
//! Validation and test sets are never augmented.
//!
//! The random choices are drawn on the CPU from a [`ChaCha8Rng`] the caller owns (so a run can
//! save and restore it), per image in batch order: the crop's row offset, its column offset,
//! then the flip. Crop and flip are then one gather per spatial axis on the batch's device, so
//! pixel values are copied exactly.

use rand::rngs::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tch::{Kind, Tensor};

use crate::error::{Result, invalid};
use rand::RngExt;

/// How the border added before a random crop is filled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PadMode {
    /// Zeros (black), as WAT, FRL, TRADES and FAT.
    #[default]
    Zero,
    /// Mirror without repeating the edge pixel (`reflect`), as CFA.
    Reflect,
}

/// An augmentation config; the default does nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Augment {
    /// Padding in pixels on every side before a random crop back to the input size; 0 means no
    /// crop.
    pub crop_padding: usize,
    pub pad_mode: PadMode,
    /// Flip each image horizontally with probability 1/2.
    pub flip: bool,
}

/// The random choices for one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draw {
    /// Crop offsets into the padded image, each in `0..=2·padding`; `padding` is no shift.
    pub dy: usize,
    pub dx: usize,
    pub flip: bool,
}

impl Augment {
    /// No augmentation.
    pub fn none() -> Self {
        Augment::default()
    }

    /// Random crop with `padding` and random horizontal flip (the CIFAR recipe with 4).
    pub fn crop_flip(padding: usize, pad_mode: PadMode) -> Self {
        Augment {
            crop_padding: padding,
            pad_mode,
            flip: true,
        }
    }

    /// Checks the padding against the image side: a crop must keep some of the image, so the
    /// padding is at most the smaller side (and less than it for reflect padding, which mirrors
    /// the image itself). Errors name `augment.crop_padding`.
    pub fn validate(&self, height: usize, width: usize) -> Result<()> {
        let side = height.min(width);
        let p = self.crop_padding;
        match self.pad_mode {
            PadMode::Zero if p > side => Err(invalid(
                "augment.crop_padding",
                p,
                format!("at most the image side ({height}×{width}); the papers use 4 on 32×32"),
            )),
            PadMode::Reflect if p >= side && p > 0 => Err(invalid(
                "augment.crop_padding",
                p,
                format!("less than the image side ({height}×{width}) for reflect padding"),
            )),
            _ => Ok(()),
        }
    }

    pub fn is_identity(&self) -> bool {
        self.crop_padding == 0 && !self.flip
    }

    /// Draws the choices for a batch of `batch` images. Nothing is drawn for a disabled
    /// operation, so the stream used depends on the config only, not on the data.
    pub fn draw(&self, batch: usize, rng: &mut ChaCha8Rng) -> Vec<Draw> {
        let p = self.crop_padding;
        (0..batch)
            .map(|_| {
                let (dy, dx) = if p > 0 {
                    let dy = rng.random_range(0..2 * p + 1);
                    (dy, rng.random_range(0..2 * p + 1))
                } else {
                    (0, 0)
                };
                let flip = self.flip && rng.random::<bool>();
                Draw { dy, dx, flip }
            })
            .collect()
    }

    /// Appends image `image` (C×H×W bytes, row-major, of `shape`) augmented by `draw` to `out`:
    /// the same map as [`Augment::apply_draws`], on the host, for the data loader's worker.
    /// Output pixel (i, j) reads the padded image at (dy + i, dx + j′), j′ = W−1−j when
    /// flipped; a padded coordinate p is the image's p − padding, or outside it a zero (zero
    /// padding) or its mirror image without the edge (reflect). The caller validated the
    /// padding against the shape ([`Augment::validate`]).
    pub fn apply_to_bytes(&self, image: &[u8], shape: [usize; 3], draw: Draw, out: &mut Vec<u8>) {
        let [c, h, w] = shape;
        let p = self.crop_padding as i64;
        let source = |padded: i64, len: usize| -> Option<usize> {
            let (r, len) = (padded - p, len as i64);
            match self.pad_mode {
                _ if (0..len).contains(&r) => Some(r as usize),
                PadMode::Zero => None,
                PadMode::Reflect if r < 0 => Some((-r) as usize),
                PadMode::Reflect => Some((2 * (len - 1) - r) as usize),
            }
        };
        let cols: Vec<Option<usize>> = (0..w)
            .map(|j| {
                let j = if draw.flip { w - 1 - j } else { j };
                source((draw.dx + j) as i64, w)
            })
            .collect();
        for plane in image.chunks_exact(h * w).take(c) {
            for i in 0..h {
                let row = source((draw.dy + i) as i64, h).map(|r| &plane[r * w..(r + 1) * w]);
                out.extend(cols.iter().map(|&col| match (row, col) {
                    (Some(row), Some(col)) => row[col],
                    _ => 0,
                }));
            }
        }
    }

    /// Augments a batch B×C×H×W (any float kind, any device) with choices drawn from `rng`.
    pub fn apply(&self, x: &Tensor, rng: &mut ChaCha8Rng) -> Result<Tensor> {
        if let &[_, _, h, w] = x.size().as_slice() {
            self.validate(h.max(0) as usize, w.max(0) as usize)?;
        }
        let batch = x.size().first().map_or(0, |&b| b.max(0) as usize);
        let draws = self.draw(batch, rng);
        self.apply_draws(x, &draws)
    }

    /// Augments a batch with given choices (one per image).
    pub fn apply_draws(&self, x: &Tensor, draws: &[Draw]) -> Result<Tensor> {
        let size = x.size();
        let &[b, c, h, w] = size.as_slice() else {
            return Err(invalid("batch", format!("shape {size:?}"), "B×C×H×W"));
        };
        if draws.len() as i64 != b {
            return Err(invalid(
                "draws",
                draws.len(),
                format!("one per image ({b})"),
            ));
        }
        if self.is_identity() {
            return Ok(x.shallow_clone());
        }
        self.validate(h as usize, w as usize)?;
        let p = self.crop_padding as i64;
        if let Some(d) = draws
            .iter()
            .find(|d| d.dy as i64 > 2 * p || d.dx as i64 > 2 * p)
        {
            return Err(invalid(
                "draw",
                format!("{d:?}"),
                format!("offsets in 0..={}", 2 * p),
            ));
        }
        let padded = match (p, self.pad_mode) {
            (0, _) => x.shallow_clone(),
            (_, PadMode::Zero) => x.f_constant_pad_nd([p, p, p, p])?,
            (_, PadMode::Reflect) if p < h && p < w => x.f_reflection_pad2d([p, p, p, p])?,
            (_, PadMode::Reflect) => {
                return Err(invalid(
                    "augment.crop_padding",
                    p,
                    format!("less than the image side ({h}×{w}) for reflect padding"),
                ));
            }
        };
        let device = x.device();
        let wp = w + 2 * p;
        let mut out = padded;
        if p > 0 {
            let rows: Vec<i64> = draws
                .iter()
                .flat_map(|d| (0..h).map(move |i| d.dy as i64 + i))
                .collect();
            let index = Tensor::f_from_slice(&rows)?
                .f_to_device(device)?
                .f_view([b, 1, h, 1])?
                .f_expand([b, c, h, wp], false)?;
            out = out.f_gather(2, &index, false)?;
        }
        let cols: Vec<i64> = draws
            .iter()
            .flat_map(|d| (0..w).map(move |j| d.dx as i64 + if d.flip { w - 1 - j } else { j }))
            .collect();
        let index = Tensor::f_from_slice(&cols)?
            .f_to_device(device)?
            .f_to_kind(Kind::Int64)?
            .f_view([b, 1, 1, w])?
            .f_expand([b, c, h, w], false)?;
        Ok(out.f_gather(3, &index, false)?)
    }
}
