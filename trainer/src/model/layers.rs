//! Layer constructors shared by every architecture: conv, BatchNorm and linear layers created
//! under a [`Scope`] that fixes the parameter names (PyTorch `state_dict` style, `.`-separated)
//! and the initialisation rules ([`super::init`]).

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

use super::init::{InitStyle, ParamInit};
use super::precision::{active, reduced_kind};

/// A 2-D convolution (square kernel, zero padding, dilation 1, one group) computed in the
/// active [`super::precision`]: fp32 as `nn::Conv2D`, or with input, weight and bias cast to
/// bf16 per call (autocast's rule for convolutions).
#[derive(Debug)]
pub(crate) struct Conv2d {
    pub(crate) inner: nn::Conv2D,
    stride: i64,
    padding: i64,
}

impl Conv2d {
    /// The convolution of `xs` with zero padding `padding` (the layer's own, or 0 for an input
    /// padded by the caller, as the windowed forward pass does).
    pub(crate) fn with_padding(&self, xs: &Tensor, padding: i64) -> Tensor {
        let (ws, bs) = (&self.inner.ws, self.inner.bs.as_ref());
        let conv = |x: &Tensor, w: &Tensor, b: Option<&Tensor>| {
            let (s, p) = ([self.stride, self.stride], [padding, padding]);
            x.conv2d(w, b, s, p, [1, 1], 1)
        };
        match reduced_kind(active()) {
            None => conv(xs, ws, bs),
            Some(k) => conv(
                &xs.to_kind(k),
                &ws.to_kind(k),
                bs.map(|b| b.to_kind(k)).as_ref(),
            ),
        }
    }
}

impl Module for Conv2d {
    fn forward(&self, xs: &Tensor) -> Tensor {
        self.with_padding(xs, self.padding)
    }
}

/// A linear layer computed in the active [`super::precision`] (autocast's rule for `linear`).
#[derive(Debug)]
pub(crate) struct Linear(pub(crate) nn::Linear);

impl Module for Linear {
    fn forward(&self, xs: &Tensor) -> Tensor {
        let (ws, bs) = (&self.0.ws, self.0.bs.as_ref());
        match reduced_kind(active()) {
            None => xs.linear(ws, bs),
            Some(k) => xs
                .to_kind(k)
                .linear(&ws.to_kind(k), bs.map(|b| b.to_kind(k)).as_ref()),
        }
    }
}

/// A place in the model's `VarStore` plus the initialisation rules in force there.
#[derive(Clone, Debug)]
pub(crate) struct Scope<'a> {
    path: nn::Path<'a>,
    style: InitStyle,
    /// `false` builds every random parameter as zeros (values about to be overwritten).
    random: bool,
}

impl<'a> Scope<'a> {
    pub(crate) fn new(path: nn::Path<'a>, style: InitStyle, random: bool) -> Self {
        Scope {
            path,
            style,
            random,
        }
    }

    /// The sub-scope `name`; a dotted name (`block1.layer`) descends one level per component.
    pub(crate) fn sub(&self, name: impl ToString) -> Scope<'a> {
        let name = name.to_string();
        Scope {
            path: name
                .split('.')
                .fold(self.path.clone(), |path, part| path.sub(part)),
            style: self.style,
            random: self.random,
        }
    }

    /// A k×k conv `name` with `stride` and `padding`, with or without bias.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn conv(
        &self,
        name: &str,
        in_ch: i64,
        out_ch: i64,
        k: i64,
        stride: i64,
        padding: i64,
        bias: bool,
    ) -> Conv2d {
        let dims = [out_ch, in_ch, k, k];
        let config = nn::ConvConfig {
            stride,
            padding,
            bias,
            ws_init: self.style.conv_weight(&dims).to_tch(&dims, self.random),
            bs_init: self.style.conv_bias(&dims).to_tch(&[out_ch], self.random),
            ..Default::default()
        };
        Conv2d {
            inner: nn::conv2d(self.path.sub(name), in_ch, out_ch, k, config),
            stride,
            padding,
        }
    }

    /// A 3×3 conv, padding 1, no bias (the ResNet family's conv).
    pub(crate) fn conv3x3(&self, name: &str, in_ch: i64, out_ch: i64, stride: i64) -> Conv2d {
        self.conv(name, in_ch, out_ch, 3, stride, 1, false)
    }

    /// A 1×1 conv, no padding, no bias (projection shortcuts).
    pub(crate) fn conv1x1(&self, name: &str, in_ch: i64, out_ch: i64, stride: i64) -> Conv2d {
        self.conv(name, in_ch, out_ch, 1, stride, 0, false)
    }

    /// BatchNorm2d `name` as PyTorch builds it: weight 1, bias 0, eps 1e-5, momentum 0.1,
    /// running mean 0 and variance 1 (tch's default weight init is U(0, 1); not used here).
    pub(crate) fn batch_norm(&self, name: &str, channels: i64) -> nn::BatchNorm {
        let config = nn::BatchNormConfig {
            ws_init: nn::Init::Const(1.0),
            bs_init: nn::Init::Const(0.0),
            eps: 1e-5,
            momentum: 0.1,
            ..Default::default()
        };
        nn::batch_norm2d(self.path.sub(name), channels, config)
    }

    /// A linear layer `name` with the scope's rules.
    pub(crate) fn linear(&self, name: &str, in_dim: i64, out_dim: i64) -> Linear {
        let dims = [out_dim, in_dim];
        self.linear_init(
            name,
            in_dim,
            out_dim,
            self.style.linear_weight(&dims),
            self.style.linear_bias(&dims),
        )
    }

    /// A linear layer `name` with explicit weight and bias rules.
    pub(crate) fn linear_init(
        &self,
        name: &str,
        in_dim: i64,
        out_dim: i64,
        weight: ParamInit,
        bias: ParamInit,
    ) -> Linear {
        let dims = [out_dim, in_dim];
        let config = nn::LinearConfig {
            ws_init: weight.to_tch(&dims, self.random),
            bs_init: Some(bias.to_tch(&[out_dim], self.random)),
            bias: true,
        };
        Linear(nn::linear(self.path.sub(name), in_dim, out_dim, config))
    }
}

/// ReLU(BN(x)), the pre-activation used by every residual family here.
pub(crate) fn bn_relu(bn: &nn::BatchNorm, xs: &Tensor, train: bool) -> Tensor {
    bn.forward_t(xs, train).relu()
}

/// Global average pooling to 1×1 and flattening: `[N, C, H, W]` → `[N, C]`.
///
/// The references pool with `avg_pool2d(4)` (ResNets, 4×4 maps at 32×32 input) or
/// `avg_pool2d(8)` (WRN, 8×8 maps); on those inputs this is the same operation. On 64×64
/// Tiny-ImageNet inputs the last stage is twice as large (8×8 for ResNets, 16×16 for WRN) and
/// the fixed pool would feed 4× too many features to the linear head; adaptive pooling keeps
/// the head at C features for any input size.
pub(crate) fn global_avg_pool(xs: &Tensor) -> Tensor {
    xs.adaptive_avg_pool2d([1, 1]).flatten(1, -1)
}

/// Builds the residual stages of a ResNet-style network: for each `(width, first_stride)` of
/// `stages`, `blocks_per_stage` blocks under the scope `stage_name(index)`, sub-scopes `0, 1, …`;
/// the first block of a stage maps the running width to `width` with `first_stride`, the others
/// keep width and stride 1. `make(scope, in_ch, out_ch, stride)` builds one block. Returns the
/// blocks in forward order and the final width.
pub(crate) fn residual_stages<B>(
    s: &Scope,
    stage_name: impl Fn(usize) -> String,
    stages: &[(i64, i64)],
    blocks_per_stage: usize,
    in_width: i64,
    mut make: impl FnMut(&Scope, i64, i64, i64) -> B,
) -> (Vec<B>, i64) {
    let mut blocks = Vec::with_capacity(stages.len() * blocks_per_stage);
    let mut width = in_width;
    for (index, &(out_ch, first_stride)) in stages.iter().enumerate() {
        let stage = s.sub(stage_name(index));
        for i in 0..blocks_per_stage {
            let stride = if i == 0 { first_stride } else { 1 };
            blocks.push(make(&stage.sub(i), width, out_ch, stride));
            width = out_ch;
        }
    }
    (blocks, width)
}

/// Runs `xs` through `blocks` in order.
pub(crate) fn forward_blocks<B: ModuleT>(blocks: &[B], xs: Tensor, train: bool) -> Tensor {
    let probe = |i: usize, o: Tensor| {
        if crate::diagnose::recording() {
            crate::diagnose::probe(&format!("model.block{i}"), &o);
        }
        o
    };
    let xs = probe(0, xs);
    blocks
        .iter()
        .enumerate()
        .fold(xs, |o, (i, block)| probe(i + 1, block.forward_t(&o, train)))
}

/// 2×2 max-pooling with stride 2 (`nn.MaxPool2d(2, 2)`; odd sizes are floored).
pub(crate) fn max_pool2(xs: &Tensor) -> Tensor {
    xs.max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false)
}

/// TensorFlow's `SAME` padding of a 3×3 convolution as RobustBench's DeepMind models pad
/// before their `padding=0` convolutions (`_Block.forward`, `_PreActBlock._pad` in
/// `robustbench/model_zoo/architectures/dm_wide_resnet.py`): (1, 1, 1, 1) at stride 1 and
/// (0, 1, 0, 1) (right and bottom only) at stride 2, as (left, right, top, bottom).
pub(crate) fn same_pad(xs: &Tensor, stride: i64) -> Tensor {
    let pad: [i64; 4] = match stride {
        1 => [1, 1, 1, 1],
        _ => [0, 1, 0, 1],
    };
    xs.constant_pad_nd(pad)
}
