//! The activation functions of the architectures whose activation is a parameter.

use serde::{Deserialize, Serialize};

/// The activation of the DeepMind families: `relu`, or `swish` (x·σ(x); RobustBench's custom
/// `Swish` and `nn.SiLU` compute the same function and have no parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Relu,
    #[serde(alias = "silu")]
    Swish,
}

impl Activation {
    /// The activation applied to `xs`.
    pub(crate) fn apply(self, xs: &tch::Tensor) -> tch::Tensor {
        match self {
            Activation::Relu => xs.relu(),
            Activation::Swish => xs.silu(),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Activation::Relu => "ReLU",
            Activation::Swish => "Swish",
        }
    }
}
