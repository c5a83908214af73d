//! AutoAttack (Croce & Hein 2020), class by class: the cascade of
//! `fra31/auto-attack:autoattack/autoattack.py` over a data set.
//!
//! * Versions ([`Version`]): `standard` = APGD-CE, APGD-T (9 targets), FAB-T (9 targets),
//!   Square (5,000 queries); `plus` = APGD-CE and APGD-DLR with 5 restarts, FAB with 5
//!   restarts, Square, APGD-T, FAB-T; `rand` = APGD-CE and APGD-DLR with EOT over 20 forwards.
//!   A custom list takes the `standard` settings of each attack (1 restart).
//! * The cascade: a point misclassified clean is not robust and is never attacked; each attack
//!   runs only on the points still robust, in batches; a point is robust iff it survives all.
//!   The result keeps per-sample flags and predictions, the robust accuracy per class after each
//!   attack (a class × attack table) and the time each attack took.
//! * Checks, as AutoAttack's `checks.py`: randomised forwards and batch-size dependence on the
//!   first batch (not for `rand`), probabilities instead of logits, too few classes for the DLR
//!   losses, zero gradients at APGD's start, Square breaking points the white-box attacks did not.
//!   Every adversarial example is checked to be in the ε-ball and [0, 1], and the final flags are
//!   recomputed from the stored adversarial examples in another batch split.
//! * Resumable: with a state directory, the flags, the finished attacks and the finished
//!   batches of the current attack are saved atomically after every batch (the adversarial
//!   examples of a batch in their own file), so a killed evaluation continues from its last
//!   finished batch. Each batch's random draws come from its own seed (evaluation seed, attack,
//!   batch), so a resumed evaluation gives the result an uninterrupted one would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use classwise_theory::metrics::class_accuracy_from_flags;
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::{Evaluation, Outcomes, RobustCounting, first_batch_checks, summarize};
use crate::attack::{Apgd, Attack, AttackInput, Budget, Fab, Square};
use crate::data::Dataset;
use crate::error::{IoContext, Result, TrainerError, invalid};
use crate::io::write_json;
use crate::model::Classifier;
use crate::model::safetensors::{load_tensors, save_tensors};

/// Version of the state file.
const STATE_SCHEMA: u32 = 1;
/// Slack of the ε-ball check (float rounding of x ± ε).
const BALL_TOL: f64 = 1e-6;
/// AutoAttack's threshold for the Square warning (`check_square_sr`: 0.2 points).
const SQUARE_TOL: f64 = 0.002;

/// One of AutoAttack's attacks, by the reference's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AaAttack {
    ApgdCe,
    ApgdDlr,
    ApgdT,
    Fab,
    FabT,
    Square,
}

impl AaAttack {
    pub const ALL: [AaAttack; 6] = [
        AaAttack::ApgdCe,
        AaAttack::ApgdDlr,
        AaAttack::ApgdT,
        AaAttack::Fab,
        AaAttack::FabT,
        AaAttack::Square,
    ];

    /// `apgd-ce`, `apgd-dlr`, `apgd-t`, `fab`, `fab-t`, `square`.
    pub fn name(self) -> &'static str {
        match self {
            AaAttack::ApgdCe => "apgd-ce",
            AaAttack::ApgdDlr => "apgd-dlr",
            AaAttack::ApgdT => "apgd-t",
            AaAttack::Fab => "fab",
            AaAttack::FabT => "fab-t",
            AaAttack::Square => "square",
        }
    }

    /// The attack with the settings `version` gives it (a custom list: `standard`'s).
    pub fn build(self, version: Option<Version>) -> Box<dyn Attack> {
        let restarts = if version == Some(Version::Plus) { 5 } else { 1 };
        let eot_iter = if version == Some(Version::Rand) {
            20
        } else {
            1
        };
        match self {
            AaAttack::ApgdCe => Box::new(Apgd {
                restarts,
                eot_iter,
                ..Apgd::ce()
            }),
            AaAttack::ApgdDlr => Box::new(Apgd {
                restarts,
                eot_iter,
                ..Apgd::dlr()
            }),
            AaAttack::ApgdT => Box::new(Apgd {
                eot_iter,
                ..Apgd::targeted()
            }),
            AaAttack::Fab => Box::new(Fab {
                restarts,
                ..Fab::untargeted()
            }),
            AaAttack::FabT => Box::new(Fab::targeted()),
            AaAttack::Square => Box::new(Square::autoattack()),
        }
    }
}

impl std::str::FromStr for AaAttack {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
                format!("unknown attack `{s}`: expected one of {}", names.join(", "))
            })
    }
}

/// AutoAttack's versions (`set_version` in `fra31/auto-attack:autoattack/autoattack.py`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Version {
    #[default]
    Standard,
    Plus,
    Rand,
}

impl Version {
    pub const ALL: [Version; 3] = [Version::Standard, Version::Plus, Version::Rand];

    pub fn name(self) -> &'static str {
        match self {
            Version::Standard => "standard",
            Version::Plus => "plus",
            Version::Rand => "rand",
        }
    }

    /// The attacks it runs, in order.
    pub fn attacks(self) -> Vec<AaAttack> {
        use AaAttack::*;
        match self {
            Version::Standard => vec![ApgdCe, ApgdT, FabT, Square],
            Version::Plus => vec![ApgdCe, ApgdDlr, Fab, Square, ApgdT, FabT],
            Version::Rand => vec![ApgdCe, ApgdDlr],
        }
    }
}

impl std::str::FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown version `{s}`: expected standard, plus or rand"))
    }
}

/// Which attacks AutoAttack runs: a version, or a custom list (with `standard`'s settings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoAttackSpec {
    #[serde(default)]
    pub version: Version,
    /// A custom list of attacks, run in this order, instead of the version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacks: Option<Vec<AaAttack>>,
}

impl AutoAttackSpec {
    pub fn version(version: Version) -> Self {
        AutoAttackSpec {
            version,
            attacks: None,
        }
    }

    /// Checks a custom list: not empty, no attack twice.
    pub fn validate(&self) -> Result<()> {
        if let Some(list) = &self.attacks {
            if list.is_empty() {
                return Err(invalid("attacks", "[]", "at least one attack"));
            }
            for (i, a) in list.iter().enumerate() {
                if list[..i].contains(a) {
                    return Err(invalid("attacks", a.name(), "each attack at most once"));
                }
            }
        }
        Ok(())
    }

    /// The attacks in order.
    pub fn attacks(&self) -> Vec<AaAttack> {
        self.attacks
            .clone()
            .unwrap_or_else(|| self.version.attacks())
    }

    /// `standard`, `plus`, `rand` or `custom`.
    pub fn label(&self) -> &'static str {
        if self.attacks.is_some() {
            "custom"
        } else {
            self.version.name()
        }
    }

    /// The cascade's steps with their settings.
    pub fn steps(&self) -> Vec<Step> {
        let version = self.attacks.is_none().then_some(self.version);
        self.attacks()
            .into_iter()
            .map(|a| Step {
                name: a.name().to_string(),
                attack: a.build(version),
            })
            .collect()
    }

    /// Whether the model is expected to be randomised (the `rand` version skips that check).
    pub fn randomized(&self) -> bool {
        self.attacks.is_none() && self.version == Version::Rand
    }

    /// AutoAttack's `check_n_classes` for a model with `k` classes: the DLR losses need 3
    /// (untargeted) or 4 (targeted) classes (the attacks refuse fewer), and a targeted attack
    /// has at most k − 1 targets (the extra ones are skipped).
    pub fn class_warnings(&self, k: usize) -> Vec<String> {
        let mut out = Vec::new();
        for a in self.attacks() {
            let min = match a {
                AaAttack::ApgdDlr => 3,
                AaAttack::ApgdT => 4,
                _ => 2,
            };
            if k < min {
                out.push(format!(
                    "{}: needs at least {min} classes, the model has {k}",
                    a.name()
                ));
            }
            if matches!(a, AaAttack::ApgdT | AaAttack::FabT) && k < 10 {
                out.push(format!(
                    "{}: 9 target classes but only {} wrong classes; the extra targets are skipped",
                    a.name(),
                    k.saturating_sub(1)
                ));
            }
        }
        out
    }

    /// E.g. `autoattack standard (apgd-ce, apgd-t, fab-t, square)`.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.attacks().iter().map(|a| a.name()).collect();
        format!("autoattack {} ({})", self.label(), names.join(", "))
    }
}

/// One attack of the cascade.
pub struct Step {
    /// A short name for tables and file names (`apgd-ce`).
    pub name: String,
    pub attack: Box<dyn Attack>,
}

/// The cascade's settings.
pub struct Cascade<'a> {
    /// A label for reports (e.g. `standard`).
    pub label: String,
    pub steps: Vec<Step>,
    pub eps: f64,
    /// Points per attack batch (the last batch may be smaller).
    pub batch_size: usize,
    /// Each batch of each attack draws from libtorch's generator seeded with
    /// mix(seed, attack, batch).
    pub seed: u64,
    /// Skip the randomised-model check (AutoAttack's `rand` version).
    pub randomized: bool,
    /// Where the resumable state lives; `None`: not resumable.
    pub state_dir: Option<&'a Path>,
    /// Identifies the model (e.g. [`crate::model::Model::fingerprint`]): a saved state of
    /// another model is refused.
    pub model_id: String,
    /// Warnings known before the run (e.g. [`AutoAttackSpec::class_warnings`]), reported with
    /// the result.
    pub notes: Vec<String>,
    /// Progress lines on stderr.
    pub verbose: bool,
}

/// Robust accuracy after one attack of the cascade.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepReport {
    pub attack: String,
    /// The attack with its settings.
    pub settings: String,
    /// Points it attacked (those still robust before it).
    pub attacked: usize,
    /// Points it broke.
    pub broken: usize,
    pub seconds: f64,
    /// Robust accuracy per class after this attack.
    pub robust_per_class: Vec<f64>,
    /// Robust accuracy over all points after this attack.
    pub robust: f64,
}

/// AutoAttack's class-wise result.
#[derive(Clone, Debug, Serialize)]
pub struct AutoAttackReport {
    /// `standard`, `plus`, `rand` or `custom`.
    pub version: String,
    pub eps: f64,
    pub batch_size: usize,
    pub seed: u64,
    /// Clean accuracy per class (the table's first column).
    pub clean_per_class: Vec<f64>,
    /// The class × attack table, one entry per attack in cascade order.
    pub steps: Vec<StepReport>,
    /// The final class-wise report (robust = survived every attack).
    pub evaluation: Evaluation,
    /// Seconds of the whole evaluation (clean pass included; over all sessions if resumed).
    pub seconds: f64,
    pub seconds_per_image: f64,
    /// Whether the evaluation continued a saved state.
    pub resumed: bool,
}

/// The cascade's result.
pub struct CascadeOutcome {
    pub report: AutoAttackReport,
    /// The adversarial examples [N, …] on the CPU (x itself where no attack succeeded).
    pub x_adv: Tensor,
    /// Per sample: robust after every attack.
    pub robust: Vec<bool>,
}

/// What a state must match to be resumed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct StateKey {
    model: String,
    data: String,
    attacks: Vec<String>,
    eps: f64,
    batch_size: usize,
    seed: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Current {
    step: usize,
    /// The points still robust when the attack started, in order; batch b is
    /// queue[b·bs .. (b+1)·bs].
    queue: Vec<i64>,
    batches_done: usize,
    broken: usize,
    seconds: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct State {
    schema: u32,
    key: StateKey,
    clean_pred: Vec<i64>,
    robust: Vec<bool>,
    /// Predictions on the current adversarial examples (the clean ones where none).
    adv_pred: Vec<i64>,
    finished: Vec<StepReport>,
    current: Option<Current>,
    warnings: Vec<String>,
    seconds: f64,
}

impl Cascade<'_> {
    /// The cascade on every sample of `data`, the model in eval mode.
    pub fn run(
        &self,
        model: &dyn Classifier,
        data: &Dataset,
        device: Device,
    ) -> Result<CascadeOutcome> {
        if self.steps.is_empty() {
            return Err(invalid("attacks", "[]", "at least one attack"));
        }
        if self.batch_size == 0 {
            return Err(invalid("batch_size", 0, ">= 1"));
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return Err(invalid("eps", self.eps, "finite and >= 0"));
        }
        let n = data.len();
        if n == 0 {
            return Err(invalid("data", "no samples", "at least one image"));
        }
        let k = data.num_classes();
        let key = StateKey {
            model: self.model_id.clone(),
            data: data_fingerprint(data)?,
            attacks: self.steps.iter().map(|s| s.attack.describe()).collect(),
            eps: self.eps,
            batch_size: self.batch_size,
            seed: self.seed,
        };
        let labels: Vec<i64> = data.label_slice().to_vec();
        let labels_usize: Vec<usize> = labels.iter().map(|&l| l as usize).collect();
        // The images as the attacks see them (f32 in [0, 1], as `Dataset::batch` gives them).
        let mut x_adv = data.images().to_device(Device::Cpu).to_kind(Kind::Float) / 255.0;
        let (mut state, resumed) = match self.load_state(&key)? {
            Some(state) => {
                self.restore_adversarial(&state, &mut x_adv)?;
                if self.verbose {
                    eprintln!(
                        "autoattack: resuming {} ({} of {} attacks finished)",
                        self.state_path()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default(),
                        state.finished.len(),
                        self.steps.len()
                    );
                }
                (state, true)
            }
            None => (self.clean_pass(model, data, device, key)?, false),
        };
        let t_session = Instant::now();
        let seconds_before = state.seconds;

        for (si, step) in self.steps.iter().enumerate() {
            if si < state.finished.len() {
                continue;
            }
            let mut current = match state.current.take() {
                Some(c) if c.step == si => c,
                _ => Current {
                    step: si,
                    queue: (0..n as i64)
                        .filter(|&i| state.robust[i as usize])
                        .collect(),
                    batches_done: 0,
                    broken: 0,
                    seconds: 0.0,
                },
            };
            let batches: Vec<Vec<i64>> = current
                .queue
                .chunks(self.batch_size)
                .map(<[i64]>::to_vec)
                .collect();
            for (bi, chunk) in batches.iter().enumerate().skip(current.batches_done) {
                let t0 = Instant::now();
                let (x, y) = data.batch(chunk, device)?;
                let budget = Budget::uniform(self.eps, x.size()[0], device)?;
                let input = AttackInput {
                    x: &x,
                    y: &y,
                    eps: &budget,
                    train: false,
                };
                let (adv, warnings) =
                    crate::seed::seeded(crate::seed::mix(self.seed, si as u64, bi as u64), || {
                        step.attack.perturb_checked(model, &input)
                    })?;
                for w in warnings {
                    if !state.warnings.contains(&w) {
                        state.warnings.push(w);
                    }
                }
                check_ball(&adv, &x, self.eps, &step.name)?;
                let pred = tch::no_grad(|| model.forward_t(&adv, false).argmax(-1, false));
                let broken = pred.ne_tensor(&y);
                let rows = broken.nonzero().squeeze_dim(1);
                let at = Tensor::from_slice(chunk).index_select(0, &rows.to_device(Device::Cpu));
                let adv_rows = adv.index_select(0, &rows).to_device(Device::Cpu);
                let pred_rows: Vec<i64> =
                    Vec::try_from(&pred.index_select(0, &rows).to_device(Device::Cpu))?;
                if let Some(dir) = self.state_dir {
                    save_tensors(
                        &batch_file(dir, si, bi),
                        &[
                            ("index".to_string(), at.shallow_clone()),
                            ("x_adv".to_string(), adv_rows.shallow_clone()),
                        ],
                    )?;
                }
                let _ = x_adv.index_copy_(0, &at, &adv_rows);
                let at: Vec<i64> = Vec::try_from(&at)?;
                for (&i, &p) in at.iter().zip(&pred_rows) {
                    state.robust[i as usize] = false;
                    state.adv_pred[i as usize] = p;
                }
                current.batches_done = bi + 1;
                current.broken += at.len();
                current.seconds += t0.elapsed().as_secs_f64();
                if self.verbose {
                    eprintln!(
                        "autoattack {} batch {}/{}: {} of {} broken, robust {:.2}% ({:.1} s)",
                        step.name,
                        bi + 1,
                        batches.len(),
                        at.len(),
                        chunk.len(),
                        100.0 * fraction(&state.robust),
                        current.seconds
                    );
                }
                state.current = Some(current.clone());
                state.seconds = seconds_before + t_session.elapsed().as_secs_f64();
                self.save_state(&state)?;
            }
            let robust = class_accuracy_from_flags(&state.robust, &labels_usize, k)?;
            state.finished.push(StepReport {
                attack: step.name.clone(),
                settings: step.attack.describe(),
                attacked: current.queue.len(),
                broken: current.broken,
                seconds: current.seconds,
                robust_per_class: robust.per_class().to_vec(),
                robust: robust.overall().unwrap_or(robust.class_mean()),
            });
            state.current = None;
            state.seconds = seconds_before + t_session.elapsed().as_secs_f64();
            self.save_state(&state)?;
        }

        // The final flags from the stored adversarial examples, in another batch split.
        self.recheck(model, &x_adv, &state, &labels, device)?;
        let mut warnings = state.warnings.clone();
        if let Some(w) = square_check(&state) {
            warnings.push(w);
        }
        let outcomes = Outcomes {
            labels: labels_usize,
            clean_ok: state
                .clean_pred
                .iter()
                .zip(&labels)
                .map(|(p, l)| p == l)
                .collect(),
            robust_ok: state.robust.clone(),
            robust_pred: state.adv_pred.iter().map(|&p| p as usize).collect(),
            clean_probs: None,
            steps: None,
            precision: model.precision(),
        };
        let names: Vec<&str> = self.steps.iter().map(|s| s.name.as_str()).collect();
        let evaluation = summarize(
            format!("autoattack {} ({})", self.label, names.join(", ")),
            self.eps,
            RobustCounting::CleanAndAdversarial,
            data.class_names(),
            outcomes,
            warnings,
        )?;
        let seconds = seconds_before + t_session.elapsed().as_secs_f64();
        Ok(CascadeOutcome {
            report: AutoAttackReport {
                version: self.label.clone(),
                eps: self.eps,
                batch_size: self.batch_size,
                seed: self.seed,
                clean_per_class: evaluation.clean.per_class.clone(),
                steps: state.finished.clone(),
                evaluation,
                seconds,
                seconds_per_image: seconds / n as f64,
                resumed,
            },
            x_adv,
            robust: state.robust,
        })
    }

    fn state_path(&self) -> Option<PathBuf> {
        self.state_dir.map(|d| d.join("state.json"))
    }

    fn save_state(&self, state: &State) -> Result<()> {
        match self.state_path() {
            Some(p) => write_json(&p, "autoattack state", state),
            None => Ok(()),
        }
    }

    /// A saved state with this key, if any; a state of another evaluation is an error.
    fn load_state(&self, key: &StateKey) -> Result<Option<State>> {
        let Some(path) = self.state_path() else {
            return Ok(None);
        };
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).at("reading", &path)?;
        let state: State = serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
            path: path.clone(),
            offset: None,
            reason: format!("not an AutoAttack state file: {e}"),
        })?;
        if state.schema != STATE_SCHEMA {
            return Err(TrainerError::BadData {
                path,
                offset: None,
                reason: format!(
                    "state schema {} (this build reads schema {STATE_SCHEMA})",
                    state.schema
                ),
            });
        }
        if &state.key != key {
            return Err(TrainerError::BadData {
                path: path.clone(),
                offset: None,
                reason: format!(
                    "saved by another evaluation ({}); delete {} to start afresh",
                    key_difference(&state.key, key),
                    path.parent().unwrap_or(&path).display()
                ),
            });
        }
        Ok(Some(state))
    }

    /// Reloads the adversarial examples of the finished batches.
    fn restore_adversarial(&self, state: &State, x_adv: &mut Tensor) -> Result<()> {
        let Some(dir) = self.state_dir else {
            return Ok(());
        };
        let mut done: Vec<(usize, usize)> = Vec::new();
        for (si, _) in state.finished.iter().enumerate() {
            done.extend(batch_range(dir, si)?);
        }
        if let Some(c) = &state.current {
            done.extend((0..c.batches_done).map(|b| (c.step, b)));
        }
        for (si, bi) in done {
            let path = batch_file(dir, si, bi);
            let tensors = load_tensors(&path)?;
            let get = |name: &str| {
                tensors
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, t)| t.shallow_clone())
                    .ok_or_else(|| TrainerError::BadData {
                        path: path.clone(),
                        offset: None,
                        reason: format!("no tensor `{name}`"),
                    })
            };
            let (index, adv) = (get("index")?, get("x_adv")?);
            let _ = x_adv.index_copy_(0, &index, &adv.to_kind(Kind::Float));
        }
        Ok(())
    }

    /// Clean predictions and the initial flags.
    fn clean_pass(
        &self,
        model: &dyn Classifier,
        data: &Dataset,
        device: Device,
        key: StateKey,
    ) -> Result<State> {
        let t0 = Instant::now();
        let n = data.len();
        let mut warnings = Vec::new();
        let first: Vec<i64> = (0..n.min(self.batch_size) as i64).collect();
        let (x, _) = data.batch(&first, device)?;
        warnings.extend(
            first_batch_checks(model, &x)
                .into_iter()
                .filter(|w| !(self.randomized && w.contains("randomised"))),
        );
        warnings.extend(probability_check(model, &x));
        let logits = clean_logits(model, data, self.batch_size, device)?;
        let clean_pred: Vec<i64> = Vec::try_from(&logits.argmax(-1, false))?;
        warnings.extend(self.notes.iter().cloned());
        let labels = data.label_slice();
        let robust: Vec<bool> = clean_pred.iter().zip(labels).map(|(p, l)| p == l).collect();
        let state = State {
            schema: STATE_SCHEMA,
            key,
            adv_pred: clean_pred.clone(),
            clean_pred,
            robust,
            finished: Vec::new(),
            current: None,
            warnings,
            seconds: t0.elapsed().as_secs_f64(),
        };
        if self.verbose {
            eprintln!(
                "autoattack {}: clean accuracy {:.2}% on {} images",
                self.label,
                100.0 * fraction(&state.robust),
                n
            );
        }
        self.save_state(&state)?;
        Ok(state)
    }

    /// Recomputes every prediction on the stored adversarial examples with another batch
    /// split and checks it gives the same flags (fra31/auto-attack#74).
    fn recheck(
        &self,
        model: &dyn Classifier,
        x_adv: &Tensor,
        state: &State,
        labels: &[i64],
        device: Device,
    ) -> Result<()> {
        let n = labels.len() as i64;
        let bs = (self.batch_size as i64 / 2).max(1) + 1;
        let mut mismatches = Vec::new();
        let mut start = 0;
        while start < n {
            let len = bs.min(n - start);
            let x = x_adv.narrow(0, start, len).to_device(device);
            let pred = tch::no_grad(|| model.forward_t(&x, false).argmax(-1, false));
            let pred: Vec<i64> = Vec::try_from(&pred.to_device(Device::Cpu))?;
            for (j, p) in pred.into_iter().enumerate() {
                let i = start as usize + j;
                let clean_ok = state.clean_pred[i] == labels[i];
                let robust_again = clean_ok && p == labels[i];
                if robust_again != state.robust[i] {
                    mismatches.push(i);
                }
            }
            start += len;
        }
        if mismatches.is_empty() {
            Ok(())
        } else {
            Err(invalid(
                "model",
                format!(
                    "{} samples (first: {:?}) whose robustness changes when the stored \
                     adversarial examples are re-evaluated",
                    mismatches.len(),
                    &mismatches[..mismatches.len().min(5)]
                ),
                "the same flags in any batch split (is the model deterministic and in eval mode?)",
            ))
        }
    }
}

/// The model's clean logits [N, K] on `data`, on the CPU, in batches (eval mode).
pub fn clean_logits(
    model: &dyn Classifier,
    data: &Dataset,
    batch_size: usize,
    device: Device,
) -> Result<Tensor> {
    let idx: Vec<i64> = (0..data.len() as i64).collect();
    let mut parts = Vec::new();
    for chunk in idx.chunks(batch_size.max(1)) {
        let (x, _) = data.batch(chunk, device)?;
        parts.push(tch::no_grad(|| model.forward_t(&x, false)).to_device(Device::Cpu));
    }
    Ok(Tensor::cat(&parts, 0))
}

/// The file of batch `b` of attack `s`.
fn batch_file(dir: &Path, s: usize, b: usize) -> PathBuf {
    dir.join(format!("adv-{s:02}-{b:05}.safetensors"))
}

/// The batches of attack `s` that have a file.
fn batch_range(dir: &Path, s: usize) -> Result<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    let mut b = 0;
    while batch_file(dir, s, b).exists() {
        out.push((s, b));
        b += 1;
    }
    Ok(out)
}

/// Every adversarial example in the ε-ball around its image and in [0, 1].
fn check_ball(adv: &Tensor, x: &Tensor, eps: f64, attack: &str) -> Result<()> {
    if adv.numel() == 0 {
        return Ok(());
    }
    let dist = (adv - x).abs().max().double_value(&[]);
    let (lo, hi) = (adv.min().double_value(&[]), adv.max().double_value(&[]));
    if !(dist <= eps + BALL_TOL && lo >= 0.0 && hi <= 1.0) {
        return Err(invalid(
            attack,
            format!("an adversarial batch with ‖δ‖∞ = {dist}, values in [{lo}, {hi}]"),
            format!("‖δ‖∞ <= eps = {eps} and values in [0, 1]"),
        ));
    }
    Ok(())
}

/// AutoAttack's `check_range_output`: outputs that look like probabilities, not logits.
fn probability_check(model: &dyn Classifier, x: &Tensor) -> Option<String> {
    let z = tch::no_grad(|| model.forward_t(x, false));
    let (lo, hi) = (z.min().double_value(&[]), z.max().double_value(&[]));
    let sum_err = (z.sum_dim_intlist(-1, false, Kind::Float) - 1.0)
        .abs()
        .max()
        .double_value(&[]);
    (hi < 1.0 + 1e-5 && lo > -1e-5 && sum_err < 1e-5).then(|| {
        "the model's outputs look like probabilities; the attacks need logits (numerical \
         problems of the losses may then overestimate robustness)"
            .to_string()
    })
}

/// AutoAttack's `check_square_sr`: Square, a black-box attack, lowering the robust accuracy of
/// the white-box attacks by more than 0.2 points hints at gradient masking.
fn square_check(state: &State) -> Option<String> {
    let sq = state.finished.iter().find(|s| s.attack == "square")?;
    if state.finished.len() < 2 {
        return None;
    }
    let others = state
        .finished
        .iter()
        .filter(|s| s.attack != "square")
        .map(|s| s.robust)
        .fold(f64::INFINITY, f64::min);
    (sq.robust < others - SQUARE_TOL).then(|| {
        format!(
            "Square lowered the robust accuracy of the white-box attacks by {:.2} points: \
             the gradient-based attacks may be masked; consider more Square queries or an \
             adaptive attack",
            100.0 * (others - sq.robust)
        )
    })
}

/// The fraction of `true`.
fn fraction(flags: &[bool]) -> f64 {
    flags.iter().filter(|&&f| f).count() as f64 / flags.len().max(1) as f64
}

/// SHA-256 of the images and labels.
fn data_fingerprint(data: &Dataset) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let images = data.images().to_device(Device::Cpu).contiguous();
    let mut bytes = vec![0u8; images.numel() * images.kind().elt_size_in_bytes()];
    images.f_copy_data_u8(&mut bytes, images.numel())?;
    h.update(&bytes);
    for l in data.label_slice() {
        h.update(l.to_le_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Which part of two state keys differs, for the error message.
fn key_difference(saved: &StateKey, now: &StateKey) -> String {
    if saved.model != now.model {
        "another model".into()
    } else if saved.data != now.data {
        "other images".into()
    } else if saved.attacks != now.attacks {
        format!("attacks {:?}, now {:?}", saved.attacks, now.attacks)
    } else if saved.eps != now.eps {
        format!("eps {}, now {}", saved.eps, now.eps)
    } else if saved.batch_size != now.batch_size {
        format!("batch size {}, now {}", saved.batch_size, now.batch_size)
    } else {
        format!("seed {}, now {}", saved.seed, now.seed)
    }
}

/// The class × attack table in markdown: clean, then robust accuracy after each attack, per
/// class, with the overall row and the time per attack.
pub fn markdown(r: &AutoAttackReport) -> String {
    use std::fmt::Write as _;
    let pct = |v: f64| {
        if v.is_nan() {
            "-".to_string()
        } else {
            format!("{:.2}", 100.0 * v)
        }
    };
    let e = &r.evaluation;
    let mut out = format!(
        "AutoAttack {} at eps = {} on {} images ({:.1} s, {:.3} s per image{}): robust \
         accuracy per class after each attack, each attack running on the points still robust.\n\n| class | clean % |",
        r.version,
        r.eps,
        e.n_samples,
        r.seconds,
        r.seconds_per_image,
        if r.resumed { ", resumed" } else { "" }
    );
    for s in &r.steps {
        let _ = write!(out, " {} % |", s.attack);
    }
    out.push_str("\n|---|---|");
    for _ in &r.steps {
        out.push_str("---|");
    }
    out.push('\n');
    for (c, name) in e.class_names.iter().enumerate() {
        let _ = write!(out, "| {c} {name} | {} |", pct(r.clean_per_class[c]));
        for s in &r.steps {
            let _ = write!(out, " {} |", pct(s.robust_per_class[c]));
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        "| **all** | {} |",
        pct(e.clean.overall.unwrap_or(e.clean.class_mean))
    );
    for s in &r.steps {
        let _ = write!(out, " {} |", pct(s.robust));
    }
    out.push_str("\n| **seconds** | |");
    for s in &r.steps {
        let _ = write!(out, " {:.1} |", s.seconds);
    }
    out.push_str("\n\n");
    for s in &r.steps {
        let _ = writeln!(
            out,
            "- {}: {} ({} attacked, {} broken)",
            s.attack, s.settings, s.attacked, s.broken
        );
    }
    out.push('\n');
    out.push_str(&super::markdown(e));
    out
}
