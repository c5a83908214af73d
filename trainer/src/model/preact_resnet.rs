//! PreActResNet-18 (`PKU-ML/CFA:model.py`, Rice et al.), with a flag for the final BN+ReLU that
//! FRL's `hannxu123/fair_robust:pre_resnet.py` lacks.
//!
//! Parameter names follow the reference `state_dict`: `conv1`, `layer{1..4}.{0,1}.{bn1,conv1,
//! bn2,conv2,shortcut.0}`, `bn`, `linear`.

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::Net;
use super::layers::{
    Conv2d, Linear, Scope, bn_relu, forward_blocks, global_avg_pool, residual_stages,
};

/// Stage widths and first strides shared by the two ResNet-18 variants.
pub(crate) const STAGES: [(i64, i64); 4] = [(64, 1), (128, 2), (256, 2), (512, 2)];
/// Blocks per stage of a ResNet-18.
pub(crate) const BLOCKS_PER_STAGE: usize = 2;

/// PreActBlock(in→out, s): o = ReLU(BN(x)); shortcut = 1×1 conv(s) of o if the shape changes,
/// else x; o = conv3×3(s)(o); o = conv3×3(ReLU(BN(o))); o + shortcut.
#[derive(Debug)]
struct PreActBlock {
    bn1: nn::BatchNorm,
    conv1: Conv2d,
    bn2: nn::BatchNorm,
    conv2: Conv2d,
    shortcut: Option<Conv2d>,
}

impl PreActBlock {
    fn new(s: &Scope, in_ch: i64, out_ch: i64, stride: i64) -> Self {
        let shortcut = (stride != 1 || in_ch != out_ch)
            .then(|| s.sub("shortcut").conv1x1("0", in_ch, out_ch, stride));
        PreActBlock {
            bn1: s.batch_norm("bn1", in_ch),
            conv1: s.conv3x3("conv1", in_ch, out_ch, stride),
            bn2: s.batch_norm("bn2", out_ch),
            conv2: s.conv3x3("conv2", out_ch, out_ch, 1),
            shortcut,
        }
    }
}

impl ModuleT for PreActBlock {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = bn_relu(&self.bn1, xs, train);
        let shortcut = match &self.shortcut {
            Some(conv) => conv.forward(&o),
            None => xs.shallow_clone(),
        };
        let o = self.conv1.forward(&o);
        self.conv2.forward(&bn_relu(&self.bn2, &o, train)) + shortcut
    }
}

/// PreActResNet-18: conv 3×3 → 4 stages of 2 PreActBlocks → [BN → ReLU] → global average
/// pool → Linear(512, K).
#[derive(Debug)]
pub(crate) struct PreActResNet18 {
    conv1: Conv2d,
    blocks: Vec<PreActBlock>,
    final_bn: Option<nn::BatchNorm>,
    linear: Linear,
}

impl PreActResNet18 {
    pub(crate) fn new(s: &Scope, in_ch: i64, classes: i64, final_bn_relu: bool) -> Self {
        let conv1 = s.conv3x3("conv1", in_ch, 64, 1);
        let (blocks, width) = residual_stages(
            s,
            |i| format!("layer{}", i + 1),
            &STAGES,
            BLOCKS_PER_STAGE,
            64,
            PreActBlock::new,
        );
        PreActResNet18 {
            conv1,
            blocks,
            final_bn: final_bn_relu.then(|| s.batch_norm("bn", width)),
            linear: s.linear("linear", width, classes),
        }
    }
}

impl ModuleT for PreActResNet18 {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let mut o = forward_blocks(&self.blocks, self.conv1.forward(xs), train);
        if let Some(bn) = &self.final_bn {
            o = bn_relu(bn, &o, train);
        }
        self.linear.forward(&global_avg_pool(&o))
    }
}

impl Net for PreActResNet18 {}
