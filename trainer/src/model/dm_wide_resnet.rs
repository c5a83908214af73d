//! DeepMind's WideResNet as RobustBench defines it (`DMWideResNet`,
//! `robustbench/model_zoo/architectures/dm_wide_resnet.py`, from
//! `deepmind-research:adversarial_robustness/pytorch/model_zoo.py`): the network of Gowal et
//! al. (2020) and Rebuffi et al. (2021), 20 of RobustBench's CIFAR-10 L∞ entries.
//!
//! Parameter names follow the reference `state_dict`: `init_conv`,
//! `layer.{0,1,2}.block.{i}.{batchnorm_0,conv_0,batchnorm_1,conv_1,shortcut}`, `batchnorm`,
//! `logits`. Its `mean`/`std` buffers are not persistent (not in the checkpoint): they are the
//! spec's [`super::Normalization`]. Initialisation is PyTorch's default for every layer (the
//! reference sets none).

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::Net;
use super::activation::Activation;
use super::layers::{
    Conv2d, Linear, Scope, forward_blocks, global_avg_pool, residual_stages, same_pad,
};

/// Width of the stem conv.
const STEM_WIDTH: i64 = 16;

/// `_Block(in→out, s)`: if in ≠ out, x ← act(BN(x)) and the shortcut is a 1×1 conv(s) of that
/// x; else o = act(BN(x)) and the shortcut is the raw x. Body: SAME-pad → conv3×3(s, pad 0)
/// → BN → act → conv3×3(pad 1).
#[derive(Debug)]
struct DmBlock {
    batchnorm_0: nn::BatchNorm,
    conv_0: Conv2d,
    batchnorm_1: nn::BatchNorm,
    conv_1: Conv2d,
    shortcut: Option<Conv2d>,
    stride: i64,
    activation: Activation,
}

impl DmBlock {
    fn new(s: &Scope, in_ch: i64, out_ch: i64, stride: i64, activation: Activation) -> Self {
        // The reference tests `in_planes != out_planes` alone; a WRN never keeps its width at
        // a strided block, and if it did the shortcut would have to downsample.
        let projection = in_ch != out_ch || stride != 1;
        DmBlock {
            batchnorm_0: s.batch_norm("batchnorm_0", in_ch),
            conv_0: s.conv("conv_0", in_ch, out_ch, 3, stride, 0, false),
            batchnorm_1: s.batch_norm("batchnorm_1", out_ch),
            conv_1: s.conv3x3("conv_1", out_ch, out_ch, 1),
            shortcut: projection.then(|| s.conv1x1("shortcut", in_ch, out_ch, stride)),
            stride,
            activation,
        }
    }
}

impl ModuleT for DmBlock {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let activated = self
            .activation
            .apply(&self.batchnorm_0.forward_t(xs, train));
        let shortcut = match &self.shortcut {
            Some(conv) => conv.forward(&activated),
            None => xs.shallow_clone(),
        };
        let o = self.conv_0.forward(&same_pad(&activated, self.stride));
        let o = self
            .activation
            .apply(&self.batchnorm_1.forward_t(&o, train));
        self.conv_1.forward(&o) + shortcut
    }
}

/// `DMWideResNet`: conv 3×3 (16) → 3 groups of (depth − 4)/6 blocks (widths 16w, 32w, 64w;
/// strides 1, 2, 2) → BN → act → global average pool → Linear(64w, K).
#[derive(Debug)]
pub(crate) struct DmWideResNet {
    init_conv: Conv2d,
    blocks: Vec<DmBlock>,
    batchnorm: nn::BatchNorm,
    logits: Linear,
    activation: Activation,
}

impl DmWideResNet {
    /// `depth` and `width` are validated by [`super::ModelSpec::validate`].
    pub(crate) fn new(
        s: &Scope,
        (in_ch, classes): (i64, i64),
        depth: i64,
        width: i64,
        activation: Activation,
    ) -> Self {
        let n = usize::try_from((depth - 4) / 6).unwrap_or(0);
        let groups = [(16 * width, 1), (32 * width, 2), (64 * width, 2)];
        let (blocks, final_width) = residual_stages(
            s,
            |g| format!("layer.{g}.block"),
            &groups,
            n,
            STEM_WIDTH,
            |s, i, o, stride| DmBlock::new(s, i, o, stride, activation),
        );
        DmWideResNet {
            init_conv: s.conv3x3("init_conv", in_ch, STEM_WIDTH, 1),
            blocks,
            batchnorm: s.batch_norm("batchnorm", final_width),
            logits: s.linear("logits", final_width, classes),
            activation,
        }
    }
}

impl ModuleT for DmWideResNet {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = forward_blocks(&self.blocks, self.init_conv.forward(xs), train);
        let o = self.activation.apply(&self.batchnorm.forward_t(&o, train));
        self.logits.forward(&global_avg_pool(&o))
    }
}

impl Net for DmWideResNet {}
