//! Explicit parameter initialisation (that of each reference model, e.g.
//! `boqili/WAT:models/mnist_cnn.py` and `boqili/WAT:models/wrn_madry.py`).
//!
//! tch's layer defaults differ from PyTorch's: tch's conv/linear weights default to
//! Kaiming-uniform with the ReLU gain (bound √(6/fan_in)) and BatchNorm weights to U(0, 1),
//! whereas PyTorch uses U(±1/√fan_in) for conv/linear weights *and* biases
//! (`kaiming_uniform_(a=√5)` and the bias rule of `reset_parameters`) and BN weight 1, bias 0.
//! Every layer of this module therefore names its initialisation with a [`ParamInit`].

use tch::nn;

/// How one parameter tensor is initialised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamInit {
    /// PyTorch's default for conv and linear layers, weights and biases alike:
    /// U(−1/√fan_in, 1/√fan_in), with fan_in = in_channels·k² of the layer's weight.
    TorchDefault { fan_in: i64 },
    /// `nn.init.kaiming_normal_(w)` with its defaults (mode `fan_in`, ReLU gain):
    /// N(0, √(2/fan_in)) — TRADES SmallCNN convs (`boqili/WAT:models/mnist_cnn.py`).
    KaimingNormalFanIn,
    /// N(0, √(2/(k²·out_channels))) — TRADES/WAT WideResNet convs
    /// (`boqili/WAT:models/wrn_madry.py`: `normal_(0, sqrt(2. / n))`, n = k²·out).
    KaimingNormalFanOut,
    /// A constant (BN weight 1 and bias 0; zero biases; the zero last layer of SmallCNN).
    Const(f64),
}

impl ParamInit {
    /// PyTorch's default rule for a conv or linear layer whose weight has shape `weight_dims`
    /// (`[out, in]` or `[out, in, k, k]`).
    pub fn torch_default(weight_dims: &[i64]) -> Self {
        ParamInit::TorchDefault {
            fan_in: fan_in(weight_dims),
        }
    }

    /// The tch initialiser for a tensor of shape `dims`. With `random = false` every random
    /// rule becomes zeros: used when the values are about to be overwritten (loading,
    /// cloning), so that building the model draws nothing from libtorch's generator.
    pub(crate) fn to_tch(self, dims: &[i64], random: bool) -> nn::Init {
        match self {
            ParamInit::Const(c) => nn::Init::Const(c),
            _ if !random => nn::Init::Const(0.0),
            ParamInit::TorchDefault { fan_in } => {
                let bound = 1.0 / (fan_in.max(1) as f64).sqrt();
                nn::Init::Uniform {
                    lo: -bound,
                    up: bound,
                }
            }
            ParamInit::KaimingNormalFanIn => nn::Init::Randn {
                mean: 0.0,
                stdev: (2.0 / fan_in(dims).max(1) as f64).sqrt(),
            },
            ParamInit::KaimingNormalFanOut => nn::Init::Randn {
                mean: 0.0,
                stdev: (2.0 / fan_out(dims).max(1) as f64).sqrt(),
            },
        }
    }
}

/// in_channels·Πkernel of a weight shaped `[out, in, k…]` (PyTorch's `_calculate_fan_in_and_fan_out`).
pub fn fan_in(dims: &[i64]) -> i64 {
    dims.get(1).copied().unwrap_or(1) * dims.iter().skip(2).product::<i64>()
}

/// out_channels·Πkernel of a weight shaped `[out, in, k…]`.
pub fn fan_out(dims: &[i64]) -> i64 {
    dims.first().copied().unwrap_or(1) * dims.iter().skip(2).product::<i64>()
}

/// The initialisation rules of one architecture family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InitStyle {
    /// PyTorch defaults everywhere (CFA's PreActResNet, WAT's ResNet, FAT's SmallCNN).
    Torch,
    /// TRADES/WAT WideResNet: convs N(0, √(2/(k²·out))), BN 1/0, Linear weight default and
    /// bias 0.
    TradesWrn,
    /// TRADES SmallCNN: Kaiming-normal conv weights, zero conv biases, default fc1/fc2; the
    /// last layer is zeroed explicitly by the architecture.
    TradesSmallCnn,
}

impl InitStyle {
    /// Weight rule for a conv of weight shape `dims`.
    pub(crate) fn conv_weight(self, dims: &[i64]) -> ParamInit {
        match self {
            InitStyle::Torch => ParamInit::torch_default(dims),
            InitStyle::TradesWrn => ParamInit::KaimingNormalFanOut,
            InitStyle::TradesSmallCnn => ParamInit::KaimingNormalFanIn,
        }
    }

    /// Bias rule for a conv of weight shape `dims`.
    pub(crate) fn conv_bias(self, dims: &[i64]) -> ParamInit {
        match self {
            InitStyle::Torch => ParamInit::torch_default(dims),
            InitStyle::TradesWrn | InitStyle::TradesSmallCnn => ParamInit::Const(0.0),
        }
    }

    /// Weight rule for a linear layer of weight shape `[out, in]`.
    pub(crate) fn linear_weight(self, dims: &[i64]) -> ParamInit {
        ParamInit::torch_default(dims)
    }

    /// Bias rule for a linear layer of weight shape `[out, in]`.
    pub(crate) fn linear_bias(self, dims: &[i64]) -> ParamInit {
        match self {
            InitStyle::Torch | InitStyle::TradesSmallCnn => ParamInit::torch_default(dims),
            InitStyle::TradesWrn => ParamInit::Const(0.0),
        }
    }
}
