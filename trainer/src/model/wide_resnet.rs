//! WideResNet-depth-widen of TRADES/WAT (`boqili/WAT:models/wrn_madry.py`,
//! `yaodongyu/TRADES:models/wideresnet.py`).
//!
//! Depth follows TRADES: n = (depth − 4)/6 blocks per group (WRN-34-10: n = 5; WRN-28-10:
//! n = 4). Madry's WRN-32-10 ((32 − 2)/6 = 5) is the same network as WRN-34-10. TRADES'
//! unused `sub_block1` (never called in `forward`) is omitted, so parameter counts and the
//! optimiser state exclude it. Dropout is p = 0 in every paper and is not modelled.
//!
//! Initialisation as the reference: conv weights N(0, √(2/(k²·out))), BN weight 1 bias 0,
//! Linear bias 0 (Linear weight keeps PyTorch's default).
//!
//! Parameter names follow the reference `state_dict`: `conv1`,
//! `block{1,2,3}.layer.{i}.{bn1,conv1,bn2,conv2,convShortcut}`, `bn1`, `fc`.

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::Net;
use super::layers::{
    Conv2d, Linear, Scope, bn_relu, forward_blocks, global_avg_pool, residual_stages,
};

/// Width of the stem conv.
const STEM_WIDTH: i64 = 16;

/// WRN BasicBlock(in→out, s). If in ≠ out: x ← ReLU(BN(x)) and the shortcut is a 1×1 conv(s)
/// of that x; else o = ReLU(BN(x)) and the shortcut is the raw x. Body: conv3×3(s) → BN →
/// ReLU → conv3×3.
#[derive(Debug)]
struct WideBlock {
    bn1: nn::BatchNorm,
    conv1: Conv2d,
    bn2: nn::BatchNorm,
    conv2: Conv2d,
    conv_shortcut: Option<Conv2d>,
}

impl WideBlock {
    fn new(s: &Scope, in_ch: i64, out_ch: i64, stride: i64) -> Self {
        // The reference decides on `in_planes == out_planes` alone; a width-preserving block
        // with stride 2 cannot occur in a WRN (widths grow at every strided group), but if
        // it did, the shortcut must still downsample, so the stride is part of the test.
        let projection = in_ch != out_ch || stride != 1;
        WideBlock {
            bn1: s.batch_norm("bn1", in_ch),
            conv1: s.conv3x3("conv1", in_ch, out_ch, stride),
            bn2: s.batch_norm("bn2", out_ch),
            conv2: s.conv3x3("conv2", out_ch, out_ch, 1),
            conv_shortcut: projection.then(|| s.conv1x1("convShortcut", in_ch, out_ch, stride)),
        }
    }
}

impl ModuleT for WideBlock {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let activated = bn_relu(&self.bn1, xs, train);
        let shortcut = match &self.conv_shortcut {
            Some(conv) => conv.forward(&activated),
            None => xs.shallow_clone(),
        };
        let o = bn_relu(&self.bn2, &self.conv1.forward(&activated), train);
        self.conv2.forward(&o) + shortcut
    }
}

/// WRN: conv 3×3 (16) → 3 groups of n WideBlocks (widths 16k, 32k, 64k; strides 1, 2, 2) →
/// BN → ReLU → global average pool → Linear(64k, K).
#[derive(Debug)]
pub(crate) struct WideResNet {
    conv1: Conv2d,
    blocks: Vec<WideBlock>,
    bn1: nn::BatchNorm,
    fc: Linear,
}

impl WideResNet {
    /// `depth` and `widen` are validated by [`super::ModelSpec::validate`].
    pub(crate) fn new(s: &Scope, in_ch: i64, classes: i64, depth: i64, widen: i64) -> Self {
        let n = usize::try_from((depth - 4) / 6).unwrap_or(0);
        let conv1 = s.conv3x3("conv1", in_ch, STEM_WIDTH, 1);
        let groups = [(16 * widen, 1), (32 * widen, 2), (64 * widen, 2)];
        let (blocks, width) = residual_stages(
            s,
            |g| format!("block{}.layer", g + 1),
            &groups,
            n,
            STEM_WIDTH,
            WideBlock::new,
        );
        WideResNet {
            conv1,
            blocks,
            bn1: s.batch_norm("bn1", width),
            fc: s.linear("fc", width, classes),
        }
    }
}

impl ModuleT for WideResNet {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = forward_blocks(&self.blocks, self.conv1.forward(xs), train);
        self.fc
            .forward(&global_avg_pool(&bn_relu(&self.bn1, &o, train)))
    }
}

impl Net for WideResNet {}
