//! [`ModelSpec`]: what names a model (architecture, number of classes, input shape and the
//! optional normalisation layer). It is serialised next to the weights (in the safetensors
//! metadata, see [`super::Model::save`]), so a weight file alone rebuilds its model.
//!
//! Serialised form (JSON shown; TOML is the same structure):
//!
//! ```json
//! {"architecture": {"kind": "preact_resnet18", "final_bn_relu": true},
//!  "num_classes": 10, "input_shape": [3, 32, 32],
//!  "normalization": {"mean": [0.4914, 0.4822, 0.4465], "std": [0.2471, 0.2435, 0.2616]}}
//! ```

pub use super::activation::Activation;
use super::to_i64;
use serde::{Deserialize, Serialize};

use crate::error::{Result, invalid};

/// Largest accepted number of classes, channels, or pixels along one side: a guard against
/// typos that would allocate absurd layers, far above any data set of the papers.
const MAX_DIM: usize = 1 << 16;

/// The network family and its shape parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
pub enum Architecture {
    /// PreActResNet-18 (`PKU-ML/CFA:model.py`, Rice et al.). `final_bn_relu = true` is CFA's
    /// network (BN + ReLU before pooling, 11,172,170 parameters for K = 10); `false` is FRL's
    /// `hannxu123/fair_robust:pre_resnet.py` (11,171,146). Defaults to `true`.
    #[serde(rename = "preact_resnet18")]
    PreActResNet18 {
        #[serde(default = "default_true")]
        final_bn_relu: bool,
    },
    /// Post-activation ResNet-18 (`boqili/WAT:models/resnet.py`; WAT, Tian, BAT).
    #[serde(rename = "resnet18")]
    ResNet18,
    /// WideResNet-`depth`-`widen` of TRADES/WAT (`boqili/WAT:models/wrn_madry.py` with
    /// TRADES' depth convention): (depth − 4)/6 blocks per group. WRN-34-10 (TRADES) and
    /// Madry's WRN-32-10 (`boqili/WAT:models/wrn_madry.py`) are the same network apart from
    /// TRADES' unused `sub_block1`: both are `depth = 34`.
    ///
    /// `sub_block1 = true` says a checkpoint to be loaded was built with TRADES' and
    /// RobustBench's `sub_block1=True` (`robustbench/model_zoo/architectures/wide_resnet.py`):
    /// its `sub_block1.*` weights are in the file but never used in `forward`, so they are
    /// not built and are dropped on loading ([`super::import`]). Defaults to `false`.
    #[serde(rename = "wide_resnet")]
    WideResNet {
        depth: usize,
        widen: usize,
        #[serde(default, skip_serializing_if = "is_false")]
        sub_block1: bool,
    },
    /// DeepMind's WideResNet as RobustBench defines it (`DMWideResNet`,
    /// `robustbench/model_zoo/architectures/dm_wide_resnet.py`; Gowal et al. 2020, Rebuffi et
    /// al. 2021): `init_conv`, three `layer.{g}.block.{i}` groups of (depth − 4)/6 blocks of
    /// widths 16·width, 32·width, 64·width, `batchnorm`, `logits`; the first convolution of
    /// each block pads explicitly ((1,1,1,1) at stride 1, (0,1,0,1) at stride 2) as
    /// TensorFlow's `SAME`. Its mean/std are the spec's [`Normalization`].
    #[serde(rename = "dm_wide_resnet")]
    DmWideResNet {
        depth: usize,
        width: usize,
        activation: Activation,
    },
    /// DeepMind's pre-activation ResNet as RobustBench defines it (`DMPreActResNet`, same
    /// file): depth 18 (2, 2, 2, 2 blocks) or 34 (3, 4, 6, 3), widths `base_width` × (1, 2,
    /// 4, 8) (64 in the reference, the default), a 3×3 strided shortcut convolution on the
    /// explicitly padded block input.
    #[serde(rename = "dm_preact_resnet")]
    DmPreActResNet {
        depth: usize,
        activation: Activation,
        #[serde(default = "default_base_width")]
        base_width: usize,
    },
    /// TRADES' SmallCNN for 1×28×28 (`boqili/WAT:models/mnist_cnn.py`); any channel count
    /// and any side ≥ 16 are accepted (fc1 is sized from the input). `zero_last_layer = true`
    /// (the default) zeroes fc3 as the reference does; `false` gives fc3 PyTorch's default
    /// initialisation, which lets short runs start learning at once (with a zero fc3 no
    /// gradient reaches the layers below it on the first step, and little for many steps).
    #[serde(rename = "small_cnn")]
    SmallCnn {
        #[serde(default = "default_true")]
        zero_last_layer: bool,
    },
    /// FAT's SmallCNN for 3×32×32 (`boqili/WAT:models/small_cnn.py`); any channel count and
    /// any side ≥ 8 are accepted (fc1 is sized from the input).
    #[serde(rename = "small_cnn_cifar")]
    SmallCnnCifar,
}

fn default_true() -> bool {
    true
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_base_width() -> usize {
    64
}

impl Architecture {
    /// TRADES' SmallCNN as the reference initialises it (zero last layer).
    pub fn small_cnn() -> Self {
        Architecture::SmallCnn {
            zero_last_layer: true,
        }
    }

    /// TRADES' WideResNet-`depth`-`widen` (without `sub_block1` weights).
    pub fn wide_resnet(depth: usize, widen: usize) -> Self {
        Architecture::WideResNet {
            depth,
            widen,
            sub_block1: false,
        }
    }

    /// The name of the classifier's weight (`[K, features]`), whose rows are the classes.
    pub fn head(&self) -> &'static str {
        match self {
            Architecture::WideResNet { .. } => "fc.weight",
            Architecture::DmWideResNet { .. } | Architecture::DmPreActResNet { .. } => {
                "logits.weight"
            }
            Architecture::PreActResNet18 { .. } | Architecture::ResNet18 => "linear.weight",
            Architecture::SmallCnn { .. } => "classifier.fc3.weight",
            Architecture::SmallCnnCifar => "fc2.weight",
        }
    }

    /// A short human-readable name, e.g. `WRN-34-10`.
    pub fn name(&self) -> String {
        match self {
            Architecture::PreActResNet18 {
                final_bn_relu: true,
            } => "PreActResNet-18".to_owned(),
            Architecture::PreActResNet18 {
                final_bn_relu: false,
            } => "PreActResNet-18 (no final BN+ReLU)".to_owned(),
            Architecture::ResNet18 => "ResNet-18".to_owned(),
            Architecture::WideResNet { depth, widen, .. } => format!("WRN-{depth}-{widen}"),
            Architecture::DmWideResNet {
                depth,
                width,
                activation,
            } => format!("DM-WRN-{depth}-{width} ({})", activation.name()),
            Architecture::DmPreActResNet {
                depth,
                activation,
                base_width,
            } => {
                let base = match base_width {
                    64 => String::new(),
                    w => format!(", base width {w}"),
                };
                format!("DM-PreActResNet-{depth} ({}{base})", activation.name())
            }
            Architecture::SmallCnn {
                zero_last_layer: true,
            } => "SmallCNN".to_owned(),
            Architecture::SmallCnn {
                zero_last_layer: false,
            } => "SmallCNN (default-initialised last layer)".to_owned(),
            Architecture::SmallCnnCifar => "SmallCNN-CIFAR".to_owned(),
        }
    }
}

impl Architecture {
    /// Checks the shape parameters against `input_shape`; the error names the field.
    fn validate(&self, input_shape: [usize; 3]) -> Result<()> {
        let [_, h, w] = input_shape;
        let shape = || format!("{input_shape:?}");
        match *self {
            Architecture::WideResNet { depth, widen, .. }
            | Architecture::DmWideResNet {
                depth,
                width: widen,
                ..
            } => {
                let field = match self {
                    Architecture::WideResNet { .. } => "widen",
                    _ => "width",
                };
                check_wrn(depth, field, widen)
            }
            Architecture::DmPreActResNet {
                depth, base_width, ..
            } => check_dm_preact(depth, base_width),
            Architecture::SmallCnn { .. } => {
                let ok = super::small_cnn::feature_side(h).is_some()
                    && super::small_cnn::feature_side(w).is_some();
                ok.then_some(()).ok_or_else(|| {
                    invalid(
                        "model.input_shape",
                        shape(),
                        "height and width >= 16 for SmallCNN (four valid 3x3 convs, two pools)",
                    )
                })
            }
            Architecture::SmallCnnCifar if h < 8 || w < 8 => Err(invalid(
                "model.input_shape",
                shape(),
                "height and width >= 8 for SmallCNN-CIFAR (three 2x2 max-pools)",
            )),
            _ => Ok(()),
        }
    }
}

/// A WideResNet's depth ((depth − 4)/6 blocks per group) and width factor (`field`).
fn check_wrn(depth: usize, field: &str, widen: usize) -> Result<()> {
    if !(10..=1000).contains(&depth) || !(depth - 4).is_multiple_of(6) {
        return Err(invalid(
            "model.architecture.depth",
            depth,
            "10 <= depth <= 1000 with (depth - 4) divisible by 6 (e.g. 28 or 34)",
        ));
    }
    if !(1..=64).contains(&widen) {
        return Err(invalid(
            format!("model.architecture.{field}"),
            widen,
            "an integer in 1..=64",
        ));
    }
    Ok(())
}

/// The depths `DMPreActResNet` defines (18, 34) and a base width in 1..=1024.
fn check_dm_preact(depth: usize, base_width: usize) -> Result<()> {
    if super::dm_preact_resnet::blocks_per_stage(depth).is_none() {
        return Err(invalid(
            "model.architecture.depth",
            depth,
            "18 or 34 (the depths of RobustBench's DMPreActResNet)",
        ));
    }
    if !(1..=1024).contains(&base_width) {
        return Err(invalid(
            "model.architecture.base_width",
            base_width,
            "an integer in 1..=1024 (64 in the reference)",
        ));
    }
    Ok(())
}

/// The model's first layer, so that attacks and ε live in [0, 1] pixel space (as CFA's
/// `normalize_cifar` inside the forward pass). Serialised as `{mean = [..], std = [..]}` or
/// `{per_image = "standardize"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Normalization {
    /// (x − mean)/std per channel. RobustBench's `2x − 1` (Hendrycks2019) is mean = std = 0.5.
    Channels(ChannelStats),
    /// Per-image standardisation (RobustBench's `Ding2020MMANet.forward`,
    /// `robustbench/model_zoo/cifar10.py`): (x − mean(x)) / max(std(x), 1/√(C·H·W)) over each
    /// image, with the unbiased (n − 1) standard deviation of `torch.std`.
    PerImage(PerImage),
}

/// Per-channel statistics of [`Normalization::Channels`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelStats {
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
}

/// The marker of [`Normalization::PerImage`]: `per_image = "standardize"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerImage {
    pub per_image: PerImageKind,
}

/// The per-image rule (one so far).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PerImageKind {
    Standardize,
}

impl Normalization {
    /// (x − mean)/std per channel.
    pub fn channels(mean: Vec<f64>, std: Vec<f64>) -> Self {
        Normalization::Channels(ChannelStats { mean, std })
    }

    /// Per-image standardisation.
    pub fn per_image() -> Self {
        Normalization::PerImage(PerImage {
            per_image: PerImageKind::Standardize,
        })
    }

    /// The CIFAR-10 statistics CFA uses inside its forward pass (`PKU-ML/CFA:utils.py`).
    pub fn cifar10() -> Self {
        Self::channels(vec![0.4914, 0.4822, 0.4465], vec![0.2471, 0.2435, 0.2616])
    }

    /// The CIFAR-100 statistics defined in `PKU-ML/CFA:utils.py` (but unused by CFA's
    /// `train.py`).
    pub fn cifar100() -> Self {
        Self::channels(vec![0.5071, 0.4867, 0.4408], vec![0.2675, 0.2565, 0.2761])
    }

    /// A short description: `mean [..], std [..]` or `per-image standardisation`.
    pub fn describe(&self) -> String {
        match self {
            Normalization::Channels(c) => format!("mean {:?}, std {:?}", c.mean, c.std),
            Normalization::PerImage(_) => "per-image standardisation".to_owned(),
        }
    }

    fn validate(&self, channels: usize) -> Result<()> {
        match self {
            Normalization::Channels(c) => c.validate(channels),
            Normalization::PerImage(_) => Ok(()),
        }
    }
}

impl ChannelStats {
    fn validate(&self, channels: usize) -> Result<()> {
        for (field, values) in [("mean", &self.mean), ("std", &self.std)] {
            if values.len() != channels {
                return Err(invalid(
                    format!("model.normalization.{field}"),
                    format!("{values:?}"),
                    format!("one value per input channel ({channels})"),
                ));
            }
        }
        if let Some(i) = self.mean.iter().position(|m| !m.is_finite()) {
            return Err(invalid(
                format!("model.normalization.mean[{i}]"),
                self.mean[i],
                "a finite number",
            ));
        }
        if let Some(i) = self.std.iter().position(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(invalid(
                format!("model.normalization.std[{i}]"),
                self.std[i],
                "a finite number > 0",
            ));
        }
        Ok(())
    }
}

/// Everything needed to build a model: architecture, number of classes K, input shape
/// (C, H, W) and the optional normalisation layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub architecture: Architecture,
    pub num_classes: usize,
    /// (channels, height, width) of one input image.
    pub input_shape: [usize; 3],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalization: Option<Normalization>,
}

impl ModelSpec {
    /// A spec without normalisation.
    pub fn new(architecture: Architecture, num_classes: usize, input_shape: [usize; 3]) -> Self {
        ModelSpec {
            architecture,
            num_classes,
            input_shape,
            normalization: None,
        }
    }

    /// The same spec with `normalization` as the first layer.
    pub fn with_normalization(mut self, normalization: Normalization) -> Self {
        self.normalization = Some(normalization);
        self
    }

    /// Checks every field; the error names the first invalid one (e.g.
    /// `model.architecture.depth`).
    pub fn validate(&self) -> Result<()> {
        if !(2..=MAX_DIM).contains(&self.num_classes) {
            return Err(invalid(
                "model.num_classes",
                self.num_classes,
                format!("an integer in 2..={MAX_DIM}"),
            ));
        }
        let [c, h, w] = self.input_shape;
        if [c, h, w].iter().any(|d| !(1..=MAX_DIM).contains(d)) {
            return Err(invalid(
                "model.input_shape",
                format!("{:?}", self.input_shape),
                format!("[channels, height, width], each in 1..={MAX_DIM}"),
            ));
        }
        self.architecture.validate(self.input_shape)?;
        if let Some(norm) = &self.normalization {
            norm.validate(c)?;
        }
        Ok(())
    }

    /// The spec as compact JSON (the form stored in weight files).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|source| crate::TrainerError::Json {
            what: "model spec",
            source,
        })
    }

    /// Parses and validates a spec from JSON.
    pub fn from_json(text: &str) -> Result<Self> {
        let spec: ModelSpec = serde_json::from_str(text)
            .map_err(|e| invalid("model", text, format!("a model spec in JSON ({e})")))?;
        spec.validate()?;
        Ok(spec)
    }

    /// A one-line description, e.g. `WRN-34-10, 10 classes, input 3x32x32, normalised`.
    pub fn describe(&self) -> String {
        let [c, h, w] = self.input_shape;
        format!(
            "{}, {} classes, input {c}x{h}x{w}{}",
            self.architecture.name(),
            self.num_classes,
            if self.normalization.is_some() {
                ", normalised"
            } else {
                ""
            }
        )
    }

    /// The input shape as `i64`s for tch (validated specs fit easily).
    pub(crate) fn input_dims(&self) -> [i64; 3] {
        self.input_shape.map(to_i64)
    }

    pub(crate) fn classes(&self) -> i64 {
        to_i64(self.num_classes)
    }
}
