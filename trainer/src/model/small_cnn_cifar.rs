//! FAT's SmallCNN for 3×32×32 inputs (`boqili/WAT:models/small_cnn.py`):
//! 1,639,282 parameters for K = 10. Not the TRADES SmallCNN of [`super::small_cnn`].
//!
//! Three blocks of [conv 3×3 (padding 1, bias) → BN → ReLU] × 2 → maxpool 2 with widths 64,
//! 128, 196 (→ 196×4×4 = 3136 at 32×32), then fc 3136→256, ReLU, fc 256→K. Other input sizes
//! (≥ 8×8) work: fc1 takes 196·⌊H/8⌋·⌊W/8⌋ features. PyTorch default initialisation.
//!
//! Parameter names follow the reference: `block{b}_conv{1,2}`, `batchnorm{b}_{1,2}`, `fc1`,
//! `fc2`.

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::Net;
use super::layers::{Conv2d, Linear, Scope, bn_relu, max_pool2};
use super::window::{LocalOp, Pointwise};

const WIDTHS: [i64; 3] = [64, 128, 196];
const HIDDEN: i64 = 256;

#[derive(Debug)]
pub(crate) struct SmallCnnCifar {
    /// Per block, the two (conv, BN) pairs.
    blocks: Vec<[(Conv2d, nn::BatchNorm); 2]>,
    fc1: Linear,
    fc2: Linear,
}

impl SmallCnnCifar {
    /// `height`/`width` are validated by [`super::ModelSpec::validate`].
    pub(crate) fn new(s: &Scope, in_ch: i64, height: usize, width: usize, classes: i64) -> Self {
        let mut in_width = in_ch;
        let blocks = WIDTHS
            .iter()
            .enumerate()
            .map(|(b, &out)| {
                let b = b + 1;
                let first = in_width;
                in_width = out;
                [(1, first), (2, out)].map(|(j, cin)| {
                    (
                        s.conv(&format!("block{b}_conv{j}"), cin, out, 3, 1, 1, true),
                        s.batch_norm(&format!("batchnorm{b}_{j}"), out),
                    )
                })
            })
            .collect();
        let pooled = |n: usize| super::to_i64(n / 8);
        let flat = in_width * pooled(height) * pooled(width);
        SmallCnnCifar {
            blocks,
            fc1: s.linear("fc1", flat, HIDDEN),
            fc2: s.linear("fc2", HIDDEN, classes),
        }
    }
}

impl SmallCnnCifar {
    /// fc1 → ReLU → fc2 on the last feature map.
    fn classify(&self, features: &Tensor) -> Tensor {
        let o = self.fc1.forward(&features.flatten(1, -1)).relu();
        self.fc2.forward(&o)
    }
}

impl ModuleT for SmallCnnCifar {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let mut o = xs.shallow_clone();
        for block in &self.blocks {
            for (conv, bn) in block {
                o = bn_relu(bn, &conv.forward(&o), train);
            }
            o = max_pool2(&o);
        }
        self.classify(&o)
    }
}

impl Net for SmallCnnCifar {
    /// Per block, two padded convolutions with BN (eval mode: per channel, pointwise) and ReLU,
    /// then the pool; fc1 and fc2 as the head.
    fn local(&self) -> Option<(Vec<LocalOp<'_>>, Pointwise<'_>)> {
        let mut ops = Vec::with_capacity(9);
        for block in &self.blocks {
            for (conv, bn) in block {
                ops.push(LocalOp::Conv {
                    conv,
                    kernel: 3,
                    padding: 1,
                    post: Box::new(move |o: &Tensor| bn_relu(bn, o, false)),
                });
            }
            ops.push(LocalOp::MaxPool2);
        }
        Some((ops, Box::new(|o: &Tensor| self.classify(o))))
    }
}
