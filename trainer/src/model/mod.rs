//! Models of the reference codes: PreActResNet-18 (with or without the final BN+ReLU),
//! ResNet-18, WideResNet-depth-widen, TRADES' SmallCNN (1×28×28) and FAT's SmallCNN
//! (3×32×32), and RobustBench's DeepMind families (`DMWideResNet`, `DMPreActResNet`), each
//! named by a [`ModelSpec`] that is saved with its weights.
//!
//! * A [`Model`] owns its `VarStore` and implements [`tch::nn::ModuleT`]; `forward_t(x, train)`
//!   takes images in [0, 1] (the optional [`Normalization`] is the model's first layer, as CFA
//!   normalises inside its forward pass, `PKU-ML/CFA:attack.py`) and returns logits;
//!   `train = true` runs BatchNorm on batch statistics and updates its running statistics (and
//!   enables SmallCNN's dropout). This is the seam the attacks use.
//! * Inputs of any spatial size the architecture admits are accepted: the ResNet family pools
//!   adaptively to 1×1 (identical to the references' `avg_pool2d(4)`/`(8)` at 32×32; on 64×64
//!   Tiny-ImageNet inputs layer4 of a ResNet is 8×8 and is averaged to 512 features).
//! * Initialisation is explicit and follows each reference ([`init`]), and is
//!   deterministic given the seed passed to [`Model::new`] (drawn inside
//!   [`crate::seed::seeded`]).
//! * Weights are saved as safetensors with the spec in the metadata ([`Model::save`],
//!   [`Model::load`]); the whole state, BN running statistics included, is available as named
//!   tensors for EMA/FAWA weight averaging ([`state`]; `weight_average` in `PKU-ML/CFA:utils.py`
//!   averages the whole state dict).
//!
//! Parameter names mirror the reference PyTorch `state_dict`s, so a reference checkpoint
//! converted with `safetensors.torch.save_file(model.state_dict(), …)` loads with
//! [`Model::load_weights`] (its `num_batches_tracked` buffers are ignored: tch's BatchNorm has
//! a fixed momentum of 0.1 and keeps no such counter).

pub mod activation;
mod dm_preact_resnet;
mod dm_wide_resnet;
pub mod import;
pub mod init;
mod layers;
pub mod normalize;
mod preact_resnet;
pub mod precision;
mod resnet;
pub mod safetensors;
mod small_cnn;
mod small_cnn_cifar;
pub mod spec;
pub mod state;
mod weights;
mod wide_resnet;
pub mod window;

pub use normalize::Normalize;
pub use precision::Precision;
pub use spec::{Activation, Architecture, ModelSpec, Normalization};
pub use weights::SPEC_METADATA_KEY;
pub use window::{Window, WindowForward};

use tch::nn::{self, ModuleT};
use tch::{Device, Tensor};

use crate::error::{Result, invalid};
use init::InitStyle;
use layers::Scope;
use window::{LocalOp, Pointwise};

/// The networks behind a [`Model`].
pub(crate) trait Net: ModuleT {
    /// The network as a chain of spatially local layers and a head (eval mode), if it is one
    /// ([`window`]); `None` by default (the residual families: not supported yet).
    fn local(&self) -> Option<(Vec<LocalOp<'_>>, Pointwise<'_>)> {
        None
    }
}

/// What the attacks need of a classifier: its logits ([`ModuleT::forward_t`]) and, where the
/// architecture allows it, a forward pass that recomputes only what a change of one input window
/// affects (Square Attack's queries, [`window`]).
pub trait Classifier: ModuleT {
    /// The cached forward pass of `x` for window queries, or `None` (the default) if the model
    /// cannot give one in this mode; callers then use `forward_t`.
    fn window_forward(&self, x: &Tensor, train: bool) -> Option<WindowForward<'_>> {
        let _ = (x, train);
        None
    }

    /// The arithmetic of the forward passes ([`precision`]); fp32 unless the model says.
    fn precision(&self) -> Precision {
        Precision::Fp32
    }
}

/// A network built from a [`ModelSpec`], owning its parameters and BN statistics.
#[derive(Debug)]
pub struct Model {
    spec: ModelSpec,
    vs: nn::VarStore,
    normalize: Option<Normalize>,
    net: Box<dyn Net>,
    /// Whether [`Classifier::window_forward`] is offered (on by default).
    window: bool,
    /// The layout of the kernels, in which every input is laid out before the first layer.
    format: MemoryFormat,
    /// The arithmetic of the forward pass ([`precision`]).
    precision: Precision,
}

impl Model {
    /// Builds the model of `spec` on `device`, initialised as its reference does ([`init`])
    /// from libtorch's generator seeded with `seed` (inside [`crate::seed::seeded`], so
    /// the same seed gives the same weights on the same device whatever other threads do in
    /// `seeded` sections). Fails if the spec is invalid, naming the field.
    pub fn new(spec: &ModelSpec, device: Device, seed: i64) -> Result<Model> {
        spec.validate()?;
        Ok(crate::seed::seeded(seed, || {
            Self::build(spec, device, true)
        }))
    }

    /// Builds the model of a validated `spec`. With `random = false` every randomly
    /// initialised tensor starts at zero and nothing is drawn from libtorch's generator (for
    /// models whose values are loaded or copied next).
    pub(crate) fn build(spec: &ModelSpec, device: Device, random: bool) -> Model {
        let vs = nn::VarStore::new(device);
        let net = net(spec, &vs, random);
        Model {
            normalize: spec
                .normalization
                .as_ref()
                .map(|n| Normalize::new(n, device)),
            spec: spec.clone(),
            vs,
            net,
            window: true,
            format: MemoryFormat::Contiguous,
            precision: Precision::Fp32,
        }
    }

    /// Computes the forward passes in `precision` from now on ([`precision`]); the parameters
    /// stay fp32. Fails, naming `precision`, if the model's device cannot compute in it.
    pub fn set_precision(&mut self, precision: Precision) -> Result<()> {
        precision::check(precision, self.device())?;
        self.precision = precision;
        Ok(())
    }

    /// The precision set by [`Model::set_precision`] (fp32 for a new or loaded model).
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Offer [`Classifier::window_forward`] (the default) or not, e.g. to measure what it saves
    /// (`classwise bench --autoattack --no-window`).
    pub fn set_window_forward(&mut self, on: bool) {
        self.window = on;
    }

    /// Lays the convolution kernels (every 4-D variable) out in `format`, in place: the
    /// variables keep their identity (`set_data`, as PyTorch's `module.to(memory_format=...)`),
    /// so the variable store, the checkpoints (written contiguous) and the fingerprint are
    /// unchanged. With channels-last kernels libtorch's oneDNN convolutions take and return
    /// channels-last maps, which the ReLUs and max-pools keep: no reorder per call, and a
    /// vectorised max-pool. Every input of [`ModuleT::forward_t`] is laid out in `format` on
    /// entry (a copy when it is not already), so that the first convolution takes the same
    /// path as the others and the input gradient of an attack comes back in the batch's own
    /// layout. The logits change only by float rounding.
    pub fn set_memory_format(&mut self, format: MemoryFormat) -> Result<()> {
        tch::no_grad(|| {
            for (_, mut v) in self.vs.variables() {
                if v.dim() == 4 {
                    let laid = format.apply(&v);
                    v.f_set_data(&laid)?;
                }
            }
            Ok::<_, crate::error::TrainerError>(())
        })?;
        self.format = format;
        Ok(())
    }

    /// The layout set by [`Model::set_memory_format`] (contiguous for a new or loaded model).
    pub fn memory_format(&self) -> MemoryFormat {
        self.format
    }

    /// The spec this model was built from.
    pub fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    /// The device holding the parameters.
    pub fn device(&self) -> Device {
        self.vs.device()
    }

    /// The variable store (parameters and BN running statistics), e.g. for `tch::nn::Optimizer`.
    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// The trainable parameters, in creation order (shallow: they share storage with the model
    /// and require gradients).
    pub fn trainable_variables(&self) -> Vec<Tensor> {
        self.vs.trainable_variables()
    }

    /// The number of trainable scalars (BN running statistics excluded), the count that
    /// `trainer/tests/model.rs` checks against the reference models.
    pub fn num_parameters(&self) -> i64 {
        self.vs
            .trainable_variables()
            .iter()
            .map(|t| t.numel() as i64)
            .sum()
    }

    /// Logits for `xs` after checking that `xs` is a floating `[N, C, H, W]` batch (N ≥ 1) of
    /// the spec's input shape on the model's device; the error names `input`. The
    /// [`ModuleT::forward_t`] of this model does no such check (libtorch panics on a shape it
    /// cannot process).
    pub fn f_forward_t(&self, xs: &Tensor, train: bool) -> Result<Tensor> {
        let size = xs.size();
        let [c, h, w] = self.spec.input_dims();
        let shape_ok = size.len() == 4 && size[0] >= 1 && size[1..] == [c, h, w];
        if !shape_ok {
            return Err(invalid(
                "input",
                format!("a tensor of shape {size:?}"),
                format!("shape [N, {c}, {h}, {w}] with N >= 1"),
            ));
        }
        if !xs.is_floating_point() {
            return Err(invalid(
                "input",
                format!("a tensor of kind {:?}", xs.kind()),
                "a floating-point tensor (images in [0, 1])",
            ));
        }
        if xs.device() != self.device() {
            return Err(invalid(
                "input",
                format!("a tensor on {:?}", xs.device()),
                format!("a tensor on the model's device {:?}", self.device()),
            ));
        }
        Ok(self.forward_t(xs, train))
    }
}

impl ModuleT for Model {
    /// Normalisation (if the spec has one), then the network. `train` selects BatchNorm's
    /// training mode (batch statistics, running statistics updated) and SmallCNN's dropout.
    /// In bf16 the logits come back in fp32 ([`precision`]).
    fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let xs = self.format.apply(xs);
        let logits = precision::scope(self.precision, || match &self.normalize {
            Some(norm) => self.net.forward_t(&norm.forward(&xs), train),
            None => self.net.forward_t(&xs, train),
        });
        let logits = match logits.kind() {
            tch::Kind::Float => logits,
            _ => logits.to_kind(tch::Kind::Float),
        };
        crate::diagnose::probe("model.logits", &logits);
        logits
    }
}

impl Classifier for Model {
    fn precision(&self) -> Precision {
        self.precision
    }

    /// Available in eval mode for SmallCNN and FAT's SmallCNN (normalisation included), whose
    /// layers are all local; `None` in train mode (dropout, BN batch statistics) and for the
    /// residual families; `None` in bf16 (its queries would compute in fp32).
    fn window_forward(&self, x: &Tensor, train: bool) -> Option<WindowForward<'_>> {
        if train || !self.window || self.precision != Precision::Fp32 {
            return None;
        }
        let (mut ops, head) = self.net.local()?;
        if let Some(norm) = &self.normalize {
            ops.insert(
                0,
                LocalOp::Pointwise(Box::new(|t: &Tensor| norm.forward(t))),
            );
        }
        Some(WindowForward::new(ops, head, x))
    }
}

/// The memory layout of 4-D tensors (PyTorch's `torch.memory_format`, which tch does not
/// expose): `[N, C, H, W]` stored row-major (`Contiguous`), or with the channel innermost
/// (`ChannelsLast`, i.e. stored as `[N, H, W, C]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemoryFormat {
    /// NCHW, libtorch's default.
    #[default]
    Contiguous,
    /// NHWC storage of an NCHW-shaped tensor.
    ChannelsLast,
}

impl MemoryFormat {
    /// The layout of a run when its config does not set `memory_format`, and of `bench`:
    /// channels-last, faster on the CPU ([`Model::set_memory_format`]). A new or loaded
    /// [`Model`] starts in libtorch's own default, [`MemoryFormat::Contiguous`].
    pub const RUN_DEFAULT: MemoryFormat = MemoryFormat::ChannelsLast;
    /// The name used on the command line: `contiguous` or `channels-last`.
    pub fn name(self) -> &'static str {
        match self {
            MemoryFormat::Contiguous => "contiguous",
            MemoryFormat::ChannelsLast => "channels-last",
        }
    }

    /// `t` laid out in this format, with exactly the strides libtorch gives
    /// `t.contiguous(memory_format=...)`: `t` itself when it has them, else a copy. Size-1
    /// dimensions count: libtorch reads the layout from all the strides
    /// (`suggest_memory_format`), so a `[N, 1, H, W]` batch or a 1×1 kernel with the other
    /// layout's strides takes the other layout's kernels. Channels-last applies to 4-D
    /// tensors; others are returned as they are.
    pub fn apply(self, t: &Tensor) -> Tensor {
        let size = t.size();
        let want = match self {
            MemoryFormat::Contiguous => {
                let mut strides = vec![1i64; size.len()];
                for d in (0..size.len().saturating_sub(1)).rev() {
                    strides[d] = strides[d + 1] * size[d + 1].max(1);
                }
                strides
            }
            MemoryFormat::ChannelsLast if size.len() == 4 => {
                Self::channels_last_strides(&size).to_vec()
            }
            MemoryFormat::ChannelsLast => return t.shallow_clone(),
        };
        if t.stride() == want {
            return t.shallow_clone();
        }
        let mut out = Tensor::empty_strided(&size, &want, (t.kind(), t.device()));
        out.copy_(t);
        out
    }

    /// The strides of a channels-last `[N, C, H, W]` tensor: (H·W·C, 1, W·C, C).
    fn channels_last_strides(size: &[i64]) -> [i64; 4] {
        [size[1] * size[2] * size[3], 1, size[3] * size[1], size[1]]
    }

    /// Whether the 4-D tensor `t` has exactly the strides of PyTorch's
    /// `t.contiguous(memory_format=torch.channels_last)`, (H·W·C, 1, W·C, C), size-1
    /// dimensions included. With one channel both layouts are the same memory, but libtorch
    /// reads the layout from the strides (`suggest_memory_format`): a `[N, 1, H, W]` batch
    /// with contiguous strides sends the first convolution down the NCHW path and every
    /// layer after it through a reorder.
    pub fn is_channels_last(t: &Tensor) -> bool {
        let size = t.size();
        if size.len() != 4 {
            return false;
        }
        t.stride() == Self::channels_last_strides(&size)
    }
}

impl std::str::FromStr for MemoryFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        [MemoryFormat::Contiguous, MemoryFormat::ChannelsLast]
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("unknown memory format `{s}`: expected contiguous or channels-last")
            })
    }
}

/// tch's sequential networks (no window forward pass).
impl Classifier for nn::SequentialT {}

/// tch's sequential networks (no window forward pass).
impl Classifier for nn::Sequential {}

/// The network of a validated `spec` in `vs` (random parameters zero unless `random`).
fn net(spec: &ModelSpec, vs: &nn::VarStore, random: bool) -> Box<dyn Net> {
    let [c, _, _] = spec.input_dims();
    let [_, height, width] = spec.input_shape;
    let k = spec.classes();
    let scope = |style| Scope::new(vs.root(), style, random);
    match spec.architecture {
        Architecture::PreActResNet18 { final_bn_relu } => Box::new(
            preact_resnet::PreActResNet18::new(&scope(InitStyle::Torch), c, k, final_bn_relu),
        ),
        Architecture::ResNet18 => Box::new(resnet::ResNet18::new(&scope(InitStyle::Torch), c, k)),
        Architecture::WideResNet { depth, widen, .. } => Box::new(wide_resnet::WideResNet::new(
            &scope(InitStyle::TradesWrn),
            c,
            k,
            to_i64(depth),
            to_i64(widen),
        )),
        Architecture::DmWideResNet {
            depth,
            width,
            activation,
        } => Box::new(dm_wide_resnet::DmWideResNet::new(
            &scope(InitStyle::Torch),
            (c, k),
            to_i64(depth),
            to_i64(width),
            activation,
        )),
        Architecture::DmPreActResNet {
            depth,
            activation,
            base_width,
        } => Box::new(dm_preact_resnet::DmPreActResNet::new(
            &scope(InitStyle::Torch),
            (c, k),
            depth,
            to_i64(base_width),
            activation,
        )),
        Architecture::SmallCnn { zero_last_layer } => Box::new(small_cnn::SmallCnn::new(
            &scope(InitStyle::TradesSmallCnn),
            c,
            (height, width),
            k,
            zero_last_layer,
        )),
        Architecture::SmallCnnCifar => Box::new(small_cnn_cifar::SmallCnnCifar::new(
            &scope(InitStyle::Torch),
            c,
            height,
            width,
            k,
        )),
    }
}

/// `usize` → `i64` for dimensions already bounded by [`ModelSpec::validate`].
pub(crate) fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
