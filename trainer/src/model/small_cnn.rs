//! TRADES' SmallCNN for 1×28×28 inputs (`boqili/WAT:models/mnist_cnn.py`,
//! identical to TRADES `models/small_cnn.py`): 312,202 parameters for K = 10.
//!
//! | layer | output (28×28 input) |
//! |---|---|
//! | conv C→32, 3×3 valid, ReLU | 32×26×26 |
//! | conv 32→32, 3×3, ReLU | 32×24×24 |
//! | maxpool 2 | 32×12×12 |
//! | conv 32→64, 3×3, ReLU | 64×10×10 |
//! | conv 64→64, 3×3, ReLU | 64×8×8 |
//! | maxpool 2 | 64×4×4 |
//! | fc 1024→200, ReLU, Dropout(0.5) | 200 |
//! | fc 200→200, ReLU | 200 |
//! | fc 200→K | K |
//!
//! Other input sizes (≥ 16×16) work: fc1 takes 64·h'·w' features, h' = ((H − 4)/2 − 4)/2.
//! Dropout is active in train mode only (`forward_t(.., true)`), as in the reference, so a
//! train-mode attack sees a random network.
//!
//! Initialisation as the reference: Kaiming-normal conv weights, zero conv biases, PyTorch
//! defaults for fc1 and fc2, **fc3 weight and bias zero** (the initial logits are all zero).
//! With `zero_last_layer = false` fc3 gets PyTorch's default instead: with a zero fc3 the
//! gradient reaching fc2 and below is proportional to fc3's weights, so it is zero on the first
//! step and small for many after, and a short run barely leaves the uniform prediction.
//!
//! Parameter names: `feature_extractor.conv{1..4}`, `classifier.fc{1,2,3}`.

use tch::Tensor;
use tch::nn::{Module, ModuleT};

use super::Net;
use super::init::ParamInit;
use super::layers::{Conv2d, Linear, Scope, max_pool2};
use super::window::{LocalOp, Pointwise};

const CONV_WIDTHS: [i64; 4] = [32, 32, 64, 64];
const HIDDEN: i64 = 200;
const DROPOUT: f64 = 0.5;

/// The side of the last feature map for an input side `side`, or `None` if the input is too
/// small: ((side − 4)/2 − 4)/2 ≥ 1.
pub(crate) fn feature_side(side: usize) -> Option<usize> {
    let after_pool1 = side.checked_sub(4)? / 2;
    let after_pool2 = after_pool1.checked_sub(4)? / 2;
    (after_pool2 >= 1).then_some(after_pool2)
}

#[derive(Debug)]
pub(crate) struct SmallCnn {
    convs: Vec<Conv2d>,
    fc1: Linear,
    fc2: Linear,
    fc3: Linear,
}

impl SmallCnn {
    /// `height`/`width` are validated by [`super::ModelSpec::validate`]; `zero_last_layer` as in
    /// the reference, else fc3 gets PyTorch's default initialisation.
    pub(crate) fn new(
        s: &Scope,
        in_ch: i64,
        (height, width): (usize, usize),
        classes: i64,
        zero_last_layer: bool,
    ) -> Self {
        let features = s.sub("feature_extractor");
        let mut in_width = in_ch;
        let convs = CONV_WIDTHS
            .iter()
            .enumerate()
            .map(|(i, &out)| {
                let conv = features.conv(&format!("conv{}", i + 1), in_width, out, 3, 1, 0, true);
                in_width = out;
                conv
            })
            .collect();
        let side = |n: usize| super::to_i64(feature_side(n).unwrap_or(1));
        let flat = in_width * side(height) * side(width);
        let classifier = s.sub("classifier");
        SmallCnn {
            convs,
            fc1: classifier.linear("fc1", flat, HIDDEN),
            fc2: classifier.linear("fc2", HIDDEN, HIDDEN),
            fc3: if zero_last_layer {
                classifier.linear_init(
                    "fc3",
                    HIDDEN,
                    classes,
                    ParamInit::Const(0.0),
                    ParamInit::Const(0.0),
                )
            } else {
                classifier.linear("fc3", HIDDEN, classes)
            },
        }
    }
}

impl SmallCnn {
    /// fc1 → ReLU → dropout (train mode) → fc2 → ReLU → fc3 on the last feature map.
    fn classify(&self, features: &Tensor, train: bool) -> Tensor {
        let o = self.fc1.forward(&features.flatten(1, -1)).relu();
        let o = o.dropout(DROPOUT, train);
        let o = self.fc2.forward(&o).relu();
        self.fc3.forward(&o)
    }
}

impl ModuleT for SmallCnn {
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let mut o = xs.shallow_clone();
        for (i, conv) in self.convs.iter().enumerate() {
            o = conv.forward(&o).relu();
            if i % 2 == 1 {
                o = max_pool2(&o);
            }
        }
        self.classify(&o, train)
    }
}

impl Net for SmallCnn {
    /// The four valid convolutions with their ReLUs and the two pools; the classifier (eval
    /// mode) as the head.
    fn local(&self) -> Option<(Vec<LocalOp<'_>>, Pointwise<'_>)> {
        let mut ops = Vec::with_capacity(6);
        for (i, conv) in self.convs.iter().enumerate() {
            ops.push(LocalOp::Conv {
                conv,
                kernel: 3,
                padding: 0,
                post: Box::new(Tensor::relu),
            });
            if i % 2 == 1 {
                ops.push(LocalOp::MaxPool2);
            }
        }
        Some((ops, Box::new(|o: &Tensor| self.classify(o, false))))
    }
}
