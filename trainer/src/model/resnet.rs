//! ResNet-18 with post-activation BasicBlocks (`boqili/WAT:models/resnet.py`, used by WAT,
//! Tian et al. and BAT).
//!
//! Parameter names follow the reference `state_dict`: `conv1`, `bn1`,
//! `layer{1..4}.{0,1}.{conv1,bn1,conv2,bn2,shortcut.0,shortcut.1}`, `linear`.

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::Net;
use super::layers::{
    Conv2d, Linear, Scope, bn_relu, forward_blocks, global_avg_pool, residual_stages,
};
use super::preact_resnet::{BLOCKS_PER_STAGE, STAGES};

/// BasicBlock(in→out, s): ReLU(BN(conv3×3(ReLU(BN(conv3×3(s)(x))))) + shortcut(x)), the
/// shortcut being 1×1 conv(s) + BN when the shape changes, else the identity.
#[derive(Debug)]
struct BasicBlock {
    conv1: Conv2d,
    bn1: nn::BatchNorm,
    conv2: Conv2d,
    bn2: nn::BatchNorm,
    shortcut: Option<(Conv2d, nn::BatchNorm)>,
}

impl BasicBlock {
    fn new(s: &Scope, in_ch: i64, out_ch: i64, stride: i64) -> Self {
        let shortcut = (stride != 1 || in_ch != out_ch).then(|| {
            let sc = s.sub("shortcut");
            (
                sc.conv1x1("0", in_ch, out_ch, stride),
                sc.batch_norm("1", out_ch),
            )
        });
        BasicBlock {
            conv1: s.conv3x3("conv1", in_ch, out_ch, stride),
            bn1: s.batch_norm("bn1", out_ch),
            conv2: s.conv3x3("conv2", out_ch, out_ch, 1),
            bn2: s.batch_norm("bn2", out_ch),
            shortcut,
        }
    }
}

impl ModuleT for BasicBlock {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = bn_relu(&self.bn1, &self.conv1.forward(xs), train);
        let o = self.bn2.forward_t(&self.conv2.forward(&o), train);
        let shortcut = match &self.shortcut {
            Some((conv, bn)) => bn.forward_t(&conv.forward(xs), train),
            None => xs.shallow_clone(),
        };
        (o + shortcut).relu()
    }
}

/// ResNet-18: conv 3×3 → BN → ReLU → 4 stages of 2 BasicBlocks → global average pool →
/// Linear(512, K).
#[derive(Debug)]
pub(crate) struct ResNet18 {
    conv1: Conv2d,
    bn1: nn::BatchNorm,
    blocks: Vec<BasicBlock>,
    linear: Linear,
}

impl ResNet18 {
    pub(crate) fn new(s: &Scope, in_ch: i64, classes: i64) -> Self {
        let conv1 = s.conv3x3("conv1", in_ch, 64, 1);
        let bn1 = s.batch_norm("bn1", 64);
        let (blocks, width) = residual_stages(
            s,
            |i| format!("layer{}", i + 1),
            &STAGES,
            BLOCKS_PER_STAGE,
            64,
            BasicBlock::new,
        );
        ResNet18 {
            conv1,
            bn1,
            blocks,
            linear: s.linear("linear", width, classes),
        }
    }
}

impl ModuleT for ResNet18 {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let o = forward_blocks(
            &self.blocks,
            bn_relu(&self.bn1, &self.conv1.forward(xs), train),
            train,
        );
        self.linear.forward(&global_avg_pool(&o))
    }
}

impl Net for ResNet18 {}
