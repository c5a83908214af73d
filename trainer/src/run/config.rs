//! The run configuration (`classwise train --config FILE.toml`), with every default spelled out
//! in the resolved copy a run saves.

use serde::{Deserialize, Serialize};

use crate::attack::{Eps, Pgd};
use crate::data::{Augment, DataSource, SplitSpec};
use crate::error::{Bound, IoContext, Result, check, invalid};
use crate::eval::RobustCounting;
use crate::model::{MemoryFormat, ModelSpec, Precision};
use crate::train::{LrSchedule, Method, Needs, Objective as _, RuleConfig, RuleContext, SgdConfig};
use classwise_core::average::{Averaging, EmaSettings, FawaSettings};
use classwise_core::select::Selection;

/// Where to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceChoice {
    /// CUDA when available, else the CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

fn is_fp32(p: &Precision) -> bool {
    *p == Precision::Fp32
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn default_memory_format() -> MemoryFormat {
    MemoryFormat::RUN_DEFAULT
}

impl std::str::FromStr for DeviceChoice {
    type Err = crate::error::TrainerError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(DeviceChoice::Auto),
            "cpu" => Ok(DeviceChoice::Cpu),
            "cuda" => Ok(DeviceChoice::Cuda),
            _ => Err(invalid("device", s, "auto, cpu or cuda")),
        }
    }
}

impl DeviceChoice {
    pub fn device(self) -> Result<tch::Device> {
        match self {
            DeviceChoice::Auto => Ok(tch::Device::cuda_if_available()),
            DeviceChoice::Cpu => Ok(tch::Device::Cpu),
            DeviceChoice::Cuda if tch::Cuda::is_available() => Ok(tch::Device::Cuda(0)),
            DeviceChoice::Cuda => Err(invalid(
                "device",
                "cuda",
                "a CUDA device visible to libtorch (run `classwise doctor`)",
            )),
        }
    }
}

/// The data of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    pub source: DataSource,
    /// The validation split taken from the training part.
    #[serde(default = "SplitSpec::none")]
    pub split: SplitSpec,
    #[serde(default)]
    pub augment: Augment,
    /// Train on only the first N images per class of the training split (CPU presets).
    #[serde(default)]
    pub train_per_class: Option<usize>,
    /// Evaluate on only the first N test images per class.
    #[serde(default)]
    pub test_per_class: Option<usize>,
    /// Train without these classes: every training image of them is removed, while the model
    /// keeps one output per class and the validation and test images stay (Tian et al. §6:
    /// retraining without a confound class, for the homing matrix of their Fig. 4b). Empty
    /// (the default) trains on every class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_classes: Vec<usize>,
    /// The paper's final evaluation, run by `classwise eval --protocol`
    /// ([`crate::eval::protocol`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol: Vec<crate::eval::protocol::ProtocolEntry>,
}

/// What is trained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// The training budget ε (every class, before any class-wise rule).
    pub eps: Eps,
    /// The TRADES β (every class, before any class-wise rule).
    #[serde(default = "default_beta")]
    pub beta: f64,
    pub method: Method,
    /// ε warm-up: every class's training ε grows linearly, batch by batch, from ε/B to ε over
    /// the first `eps_warmup_epochs` epochs (B batches each), then stays at ε. 0 (the default)
    /// trains at ε from the first batch, as the papers do.
    #[serde(default)]
    pub eps_warmup_epochs: usize,
    /// Log the confusion counts of the training inputs in every epoch's line of
    /// `metrics.jsonl` (`train_confusion`, K² numbers; BAT Fig. 3). Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub log_confusion: bool,
    /// After every update, a forward pass of the clean batch in train mode without gradient, as
    /// `PKU-ML/CFA:train.py` makes (to log the training clean accuracy): BatchNorm's running
    /// statistics then lean to clean data, and dropout draws a mask. Off by default; on in the
    /// CFA presets, for parity with the reference.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clean_forward_after_step: bool,
    /// Start from another run's weights instead of a fresh initialisation (FRL fine-tunes a
    /// pretrained robust model, `hannxu123/fair_robust:frlrw.py`). Read once, when the run
    /// starts; a resumed run continues from its own checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from: Option<InitFrom>,
}

/// The weights a run starts from (`[train] init_from`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitFrom {
    /// A run directory, or a model `.safetensors` file; a relative path is taken from the
    /// directory `classwise train` runs in.
    pub path: std::path::PathBuf,
    /// Of a run directory: `last` (the default), `best` or `ema`.
    #[serde(default = "last_checkpoint")]
    pub checkpoint: String,
}

fn last_checkpoint() -> String {
    "last".to_owned()
}

impl TrainConfig {
    /// The factor on ε for batch `step` of `batches` in 0-based epoch `epoch`.
    pub fn eps_scale(&self, epoch: usize, step: usize, batches: usize) -> f64 {
        if self.eps_warmup_epochs == 0 || epoch >= self.eps_warmup_epochs {
            return 1.0;
        }
        let done = (epoch * batches + step + 1) as f64;
        (done / (self.eps_warmup_epochs * batches.max(1)) as f64).min(1.0)
    }
}

fn default_beta() -> f64 {
    6.0
}

/// The per-epoch evaluation and the final report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    pub attack: Pgd,
    pub eps: Eps,
    /// When a sample counts as robust: `clean-and-adversarial` (AutoAttack's counting, the
    /// default) or `adversarial-only` (the reference codes').
    #[serde(default)]
    pub robust_counting: RobustCounting,
    /// Evaluate every this many epochs (and always after the last one).
    #[serde(default = "one")]
    pub every: usize,
    /// Per-epoch evaluation on only the first N validation / test images per class (the final
    /// report uses the whole test subset of `data.test_per_class`).
    #[serde(default)]
    pub val_per_class: Option<usize>,
    #[serde(default)]
    pub test_per_class: Option<usize>,
    /// Batch size of the per-epoch and final evaluations [default: the training batch on the
    /// CPU, twice it on CUDA, where a larger batch keeps the GPU busy; an evaluation holds no
    /// optimiser state and one graph at a time, so twice the training batch fits where
    /// training does]. Results differ from another batch size only by float rounding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// The paper's final evaluation, run by `classwise eval --protocol`
    /// ([`crate::eval::protocol`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocol: Vec<crate::eval::protocol::ProtocolEntry>,
}

fn one() -> usize {
    1
}

/// Which split picks the "best" checkpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BestSplit {
    /// Validation (falls back to test when the run has no validation split).
    #[default]
    Val,
    /// Test, as CFA's and Rice et al.'s "best checkpoint" protocol does (`PKU-ML/CFA:train.py`).
    Test,
}

/// Checkpoint policy: `last` always; `best` by avg + worst-class robust accuracy on
/// `best_split`; every `every` epochs when `every > 0`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointConfig {
    pub every: usize,
    pub best_split: BestSplit,
}

/// Per-epoch EMA of the whole state (CFA's EMA, `PKU-ML/CFA:train.py`).
pub type EmaConfig = EmaSettings;

/// A whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    pub name: String,
    pub seed: u64,
    pub epochs: usize,
    #[serde(default)]
    pub device: DeviceChoice,
    /// The layout of the kernels and activations in training and in the run's evaluations:
    /// `channels-last` (the default; libtorch's oneDNN convolutions then need no reorder per
    /// call and the max-pools vectorise) or `contiguous` (NCHW, PyTorch's default). The two
    /// differ only by float rounding (`classwise bench --memory-format` measures both).
    #[serde(default = "default_memory_format")]
    pub memory_format: MemoryFormat,
    /// The arithmetic of the forward passes: `"fp32"` (the default, the papers') or `"bf16"`
    /// (mixed precision: bf16 convolutions and linear layers, fp32 weights, optimiser, losses
    /// and attack steps; [`crate::model::precision`]). On the CPU bf16 runs, slowly unless the
    /// processor has bf16 instructions.
    #[serde(default, skip_serializing_if = "is_fp32")]
    pub precision: Precision,
    /// cuDNN's autotuner (`torch.backends.cudnn.benchmark`): on CUDA, each convolution shape
    /// is timed once with every algorithm and the fastest kept. On by default; `false` picks
    /// algorithms by heuristics, which some users want for run-to-run determinism on the GPU.
    /// No effect on the CPU.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub cudnn_benchmark: bool,
    pub batch_size: usize,
    pub data: DataConfig,
    pub model: ModelSpec,
    pub optimizer: SgdConfig,
    pub schedule: LrSchedule,
    pub train: TrainConfig,
    pub eval: EvalConfig,
    #[serde(default)]
    pub checkpoint: CheckpointConfig,
    /// The class-wise rule (`kind = "uniform"`, the default, `"cfa"`, `"wat"`, `"frl"`, `"csl"`,
    /// `"class-beta"`).
    #[serde(default)]
    pub rule: RuleConfig,
    #[serde(default)]
    pub ema: Option<EmaConfig>,
    /// Fairness-aware weight averaging (CFA §4.3), gated on the validation split.
    #[serde(default)]
    pub fawa: Option<FawaSettings>,
    /// Model selection (`kind = "best-avg-worst"`, the default, `"last"`, `"cfa"`, `"wat"`),
    /// applied to the raw model and to each average, scored on `checkpoint.best_split`.
    #[serde(default)]
    pub select: Selection,
}

impl RunConfig {
    /// Parses TOML; errors name the file's field (toml's messages carry line and column).
    pub fn from_toml(text: &str) -> Result<RunConfig> {
        let c: RunConfig = toml::from_str(text).map_err(|e| {
            invalid(
                "config",
                e.message(),
                format!("a valid run configuration ({e})"),
            )
        })?;
        c.validate()?;
        Ok(c)
    }

    /// Parses TOML after applying `--set key=value` overrides: `key` is a dotted path
    /// (`train.eps`, `rule.lambda1`, `data.train_per_class`), created when missing; `value` is a
    /// TOML value (`0.1`, `"8/255"`, `[[1, 0.005]]`, `{ kind = "cfa", lambda1 = 0.5, begin = 1 }`)
    /// or, when it does not parse as one, a string. The result is validated like a file.
    pub fn from_toml_with_overrides(text: &str, overrides: &[String]) -> Result<RunConfig> {
        if overrides.is_empty() {
            return RunConfig::from_toml(text);
        }
        let mut table: toml::Table = toml::from_str(text).map_err(|e| {
            invalid(
                "config",
                e.message(),
                format!("a valid run configuration ({e})"),
            )
        })?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        let text = toml::to_string(&table).map_err(|e| invalid("--set", e, "serialisable"))?;
        RunConfig::from_toml(&text)
    }

    /// Reads a configuration file, following `extends = "other.toml"` (a path relative to the
    /// file): the file's tables are merged key by key into the one it extends, its values
    /// winning (arrays and non-table values are replaced whole), so that a preset of a sweep
    /// (WAT Table 3's η) states only what differs. Chains are followed; a cycle is refused.
    /// Then the `--set` overrides are applied and the result is validated like
    /// [`RunConfig::from_toml`]. The run directory's `config.toml` holds the resolved
    /// configuration, without `extends`.
    pub fn from_file(path: &std::path::Path, overrides: &[String]) -> Result<RunConfig> {
        let table = read_extended(path, &mut Vec::new())?;
        let text = toml::to_string(&table).map_err(|e| invalid("config", e, "serialisable"))?;
        RunConfig::from_toml_with_overrides(&text, overrides)
    }

    /// The evaluations' batch size on `device` (see [`EvalConfig::batch_size`]).
    pub fn eval_batch_size(&self, device: tch::Device) -> usize {
        let default = if device.is_cuda() {
            2 * self.batch_size
        } else {
            self.batch_size
        };
        self.eval.batch_size.unwrap_or(default)
    }

    pub fn to_toml(&self) -> Result<String> {
        toml::to_string_pretty(self).map_err(|e| invalid("config", e, "serialisable"))
    }

    /// Checks the values serde cannot.
    pub fn validate(&self) -> Result<()> {
        self.validate_counts()?;
        let classes = self.validate_data_and_model()?;
        self.validate_training()?;
        self.validate_rule(classes)
    }

    /// Counts that must be at least 1, β, and the averages' and the selection's settings.
    fn validate_counts(&self) -> Result<()> {
        for (field, v) in [
            ("epochs", self.epochs),
            ("batch_size", self.batch_size),
            ("eval.every", self.eval.every),
        ] {
            if v == 0 {
                return Err(invalid(field, 0, ">= 1"));
            }
        }
        if self.eval.batch_size == Some(0) {
            return Err(invalid("eval.batch_size", 0, ">= 1"));
        }
        check("train.beta", self.train.beta, Bound::NonNegative)?;
        if let Some(ema) = self.ema {
            Averaging::Ema(ema).validate()?;
        }
        if let Some(fawa) = self.fawa {
            Averaging::Fawa(fawa).validate()?;
        }
        Ok(self.select.validate()?)
    }

    /// The subsets, the model against the data (classes, image shape) and the augmentation;
    /// returns the number of classes.
    fn validate_data_and_model(&self) -> Result<usize> {
        for (field, v) in [
            ("data.train_per_class", self.data.train_per_class),
            ("data.test_per_class", self.data.test_per_class),
            ("eval.val_per_class", self.eval.val_per_class),
            ("eval.test_per_class", self.eval.test_per_class),
        ] {
            if v == Some(0) {
                return Err(invalid(field, 0, ">= 1 (or leave it out)"));
            }
        }
        self.model.validate()?;
        let (classes, shape) = self.data.source.classes_and_shape();
        if self.model.num_classes != classes {
            return Err(invalid(
                "model.num_classes",
                self.model.num_classes,
                format!("{classes}, the number of classes of the data"),
            ));
        }
        check_dropped(&self.data.drop_classes, classes)?;
        if self.model.input_shape != shape {
            return Err(invalid(
                "model.input_shape",
                format!("{:?}", self.model.input_shape),
                format!("{shape:?}, the image shape of the data"),
            ));
        }
        let augment = self.data.augment.validate(shape[1], shape[2]);
        augment.map_err(|e| e.in_section("data"))?;
        Ok(classes)
    }

    /// The optimiser, the schedule, the method, the evaluation attack and the protocol.
    fn validate_training(&self) -> Result<()> {
        self.optimizer.validate()?;
        self.schedule.validate()?;
        let method = self.train.method.validate();
        method.map_err(|e| e.in_section("train.method"))?;
        let attack = self.eval.attack.validate();
        attack.map_err(|e| e.in_section("eval"))?;
        crate::eval::protocol::validate(&self.eval.protocol)
    }

    /// The rule on this method, the starting weights, and a validation split for whatever
    /// measures on it.
    fn validate_rule(&self, classes: usize) -> Result<()> {
        let rule = self.rule.build(self.rule_context(classes))?;
        if let Some(init) = &self.train.init_from
            && !["last", "best", "ema"].contains(&init.checkpoint.as_str())
        {
            return Err(invalid(
                "train.init_from.checkpoint",
                &init.checkpoint,
                "last, best or ema",
            ));
        }
        let needs = self
            .needs()
            .or(rule.needs_initial())
            .or(rule.needs(self.epochs - 1));
        if needs.any() && self.data.split == SplitSpec::none() {
            return Err(invalid(
                "data.split",
                "none",
                "a validation split: the rule, [fawa] or [select] measure on it every epoch",
            ));
        }
        Ok(())
    }

    /// The context the class-wise rule is built with.
    pub fn rule_context(&self, n_classes: usize) -> RuleContext {
        let objective = self.train.method.objective();
        let eps = self.train.eps.value;
        RuleContext {
            base: self.train.method.base(),
            n_classes,
            eps,
            beta: objective.uses_beta().then_some(self.train.beta),
            step_size: objective.attack_step(eps),
        }
    }

    /// What the averaging and the selection need every epoch, besides the rule.
    pub fn needs(&self) -> Needs {
        let fawa = self
            .fawa
            .map_or(Needs::default(), |f| Averaging::Fawa(f).needs());
        fawa.or(self.select.needs())
    }
}

/// The table of `path` merged over the one it `extends` (see [`RunConfig::from_file`]);
/// `seen` holds the files already on the chain.
fn read_extended(
    path: &std::path::Path,
    seen: &mut Vec<std::path::PathBuf>,
) -> Result<toml::Table> {
    let text = std::fs::read_to_string(path).at("reading", path)?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| {
        invalid(
            path.display().to_string(),
            e.message(),
            format!("a valid run configuration ({e})"),
        )
    })?;
    let Some(parent) = table.remove("extends") else {
        return Ok(table);
    };
    let name = parent.as_str().ok_or_else(|| {
        invalid(
            format!("{}: extends", path.display()),
            &parent,
            "the path of another configuration file, as a string",
        )
    })?;
    let parent_path = path
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(name);
    let canonical = parent_path.canonicalize().at("reading", &parent_path)?;
    if seen.contains(&canonical) {
        return Err(invalid(
            format!("{}: extends", path.display()),
            name,
            "a chain of configurations without a cycle",
        ));
    }
    seen.push(canonical);
    let mut base = read_extended(&parent_path, seen)?;
    merge(&mut base, table);
    Ok(base)
}

/// Merges `over` into `base`: tables key by key, anything else replaced. A table that names
/// another variant (its `kind` or `method` differs, e.g. `[rule]` or `train.method`) replaces
/// the base's whole, so that no field of the other variant leaks into it.
fn merge(base: &mut toml::Table, over: toml::Table) {
    let variant = |t: &toml::Table| {
        ["kind", "method"]
            .iter()
            .find_map(|k| t.get(*k).and_then(toml::Value::as_str).map(str::to_owned))
    };
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o))
                if variant(&o).is_none() || variant(&o) == variant(b) =>
            {
                merge(b, o)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Applies one `key=value` override to a parsed configuration.
fn apply_override(table: &mut toml::Table, item: &str) -> Result<()> {
    let (key, value) = item.split_once('=').ok_or_else(|| {
        invalid(
            "--set",
            item,
            "key=value with a dotted key, e.g. train.eps=0.1",
        )
    })?;
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(invalid("--set", item, "a dotted key such as rule.lambda1"));
    }
    let value = match toml::from_str::<toml::Table>(&format!("v = {}", value.trim())) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| value.trim().into()),
        Err(_) => toml::Value::String(value.trim().to_string()),
    };
    let (last, path) = parts.split_last().unwrap_or((&key, &[]));
    let mut here = table;
    for (i, p) in path.iter().enumerate() {
        let entry = here
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        here = entry.as_table_mut().ok_or_else(|| {
            invalid(
                "--set",
                item,
                format!(
                    "a key inside a table, but `{}` is not a table",
                    parts[..=i].join(".")
                ),
            )
        })?;
    }
    here.insert(last.to_string(), value);
    Ok(())
}

/// `data.drop_classes` names distinct classes below `k` and leaves at least one.
fn check_dropped(drop: &[usize], k: usize) -> Result<()> {
    let field = "data.drop_classes";
    if let Some(c) = drop.iter().find(|&&c| c >= k) {
        return Err(invalid(field, c, format!("classes 0..{k} of the data set")));
    }
    if let Some((i, c)) = drop
        .iter()
        .enumerate()
        .find(|(i, c)| drop[..*i].contains(c))
    {
        return Err(invalid(
            field,
            c,
            format!("distinct classes (entry {i} repeats an earlier one)"),
        ));
    }
    if drop.len() >= k {
        return Err(invalid(
            field,
            format!("{} classes", drop.len()),
            format!("fewer than the {k} classes of the data set"),
        ));
    }
    Ok(())
}
