//! DeepMind's pre-activation ResNet as RobustBench defines it (`DMPreActResNet`,
//! `robustbench/model_zoo/architectures/dm_wide_resnet.py`): 4 of RobustBench's CIFAR-10 L∞
//! entries (Rebuffi et al. 2021, Gowal et al. 2021, Sehwag et al. 2022).
//!
//! Unlike Rice's PreActResNet ([`super::preact_resnet`]) its shortcut is a 3×3 strided
//! convolution of the padded raw block input, and its convolutions pad explicitly (TensorFlow's
//! `SAME`, [`super::layers::same_pad`]). Parameter names follow the reference `state_dict`:
//! `conv_2d`, `layer_{0..3}.{i}.{batchnorm_0,conv_2d_1,batchnorm_1,conv_2d_2,shortcut}`,
//! `batchnorm`, `logits`. Initialisation is PyTorch's default (the reference sets none).

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::Net;
use super::activation::Activation;
use super::layers::{Conv2d, Linear, Scope, global_avg_pool, same_pad};

/// Blocks per stage of the depths the reference defines: 18 → (2, 2, 2, 2), 34 → (3, 4, 6, 3).
pub(crate) fn blocks_per_stage(depth: usize) -> Option<[usize; 4]> {
    match depth {
        18 => Some([2, 2, 2, 2]),
        34 => Some([3, 4, 6, 3]),
        _ => None,
    }
}

/// `_PreActBlock(in→out, s)`: o = act(BN(x)); shortcut = conv3×3(s, pad 0)(SAME-pad(x)) if
/// the shape changes, else x; o = conv3×3(s, pad 0)(SAME-pad(o)); o = conv3×3(act(BN(o)));
/// o + shortcut.
#[derive(Debug)]
struct DmPreActBlock {
    batchnorm_0: nn::BatchNorm,
    conv_2d_1: Conv2d,
    batchnorm_1: nn::BatchNorm,
    conv_2d_2: Conv2d,
    shortcut: Option<Conv2d>,
    stride: i64,
    activation: Activation,
}

impl DmPreActBlock {
    fn new(s: &Scope, in_ch: i64, out_ch: i64, stride: i64, activation: Activation) -> Self {
        let has_shortcut = stride != 1 || in_ch != out_ch;
        DmPreActBlock {
            batchnorm_0: s.batch_norm("batchnorm_0", in_ch),
            conv_2d_1: s.conv("conv_2d_1", in_ch, out_ch, 3, stride, 0, false),
            batchnorm_1: s.batch_norm("batchnorm_1", out_ch),
            conv_2d_2: s.conv3x3("conv_2d_2", out_ch, out_ch, 1),
            shortcut: has_shortcut.then(|| s.conv("shortcut", in_ch, out_ch, 3, stride, 0, false)),
            stride,
            activation,
        }
    }
}

impl ModuleT for DmPreActBlock {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = self
            .activation
            .apply(&self.batchnorm_0.forward_t(xs, train));
        let shortcut = match &self.shortcut {
            Some(conv) => conv.forward(&same_pad(xs, self.stride)),
            None => xs.shallow_clone(),
        };
        let o = self.conv_2d_1.forward(&same_pad(&o, self.stride));
        let o = self
            .activation
            .apply(&self.batchnorm_1.forward_t(&o, train));
        self.conv_2d_2.forward(&o) + shortcut
    }
}

/// `DMPreActResNet`: conv 3×3 (b) → 4 stages `layer_{k}` (widths b, 2b, 4b, 8b; strides 1, 2,
/// 2, 2) → BN → act → global average pool → Linear(8b, K).
#[derive(Debug)]
pub(crate) struct DmPreActResNet {
    conv_2d: Conv2d,
    blocks: Vec<DmPreActBlock>,
    batchnorm: nn::BatchNorm,
    logits: Linear,
    activation: Activation,
}

impl DmPreActResNet {
    /// `depth` and `base` are validated by [`super::ModelSpec::validate`].
    pub(crate) fn new(
        s: &Scope,
        (in_ch, classes): (i64, i64),
        depth: usize,
        base: i64,
        activation: Activation,
    ) -> Self {
        let counts = blocks_per_stage(depth).unwrap_or([2, 2, 2, 2]);
        let mut blocks = Vec::new();
        let mut width = base;
        for (k, (&n, factor)) in counts.iter().zip([1, 2, 4, 8]).enumerate() {
            let stage = s.sub(format!("layer_{k}"));
            for i in 0..n {
                let stride = if i == 0 && k > 0 { 2 } else { 1 };
                let out = base * factor;
                blocks.push(DmPreActBlock::new(
                    &stage.sub(i),
                    width,
                    out,
                    stride,
                    activation,
                ));
                width = out;
            }
        }
        DmPreActResNet {
            conv_2d: s.conv3x3("conv_2d", in_ch, base, 1),
            blocks,
            batchnorm: s.batch_norm("batchnorm", width),
            logits: s.linear("logits", width, classes),
            activation,
        }
    }
}

impl ModuleT for DmPreActResNet {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = super::layers::forward_blocks(&self.blocks, self.conv_2d.forward(xs), train);
        let o = self.activation.apply(&self.batchnorm.forward_t(&o, train));
        self.logits.forward(&global_avg_pool(&o))
    }
}

impl Net for DmPreActResNet {}
