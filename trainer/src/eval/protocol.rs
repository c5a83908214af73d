//! A paper's final evaluation as data: the list of attacks a run's configuration names in
//! `[[eval.protocol]]`, run on the same test images into one class-wise report.
//!
//! ```toml
//! [[eval.protocol]]
//! attack = "natural"
//! [[eval.protocol]]
//! attack = "pgd"        # CE, uniform start
//! steps = 100
//! step = 0.003
//! [[eval.protocol]]
//! attack = "cw"         # CW∞ margin, κ = 50
//! steps = 30
//! step = 0.003
//! [[eval.protocol]]
//! attack = "autoattack" # version = "standard" | "plus" | "rand", or attacks = [...]
//! eps = "8/255"         # any entry may set its own ε (default: [eval] eps)
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::{Device, Kind};

use super::autoattack::{AaAttack, AutoAttackSpec, Cascade, Version, clean_logits};
use super::{Outcomes, Report, RobustCounting, evaluate, summarize};
use crate::attack::Eps;
use crate::attack::{Attack, Pgd};
use crate::data::Dataset;
use crate::error::{Result, invalid};
use crate::model::Classifier;

/// The kind of a protocol entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolKind {
    /// Clean accuracy.
    Natural,
    /// One step of size ε from the clean input.
    Fgsm,
    /// PGD on cross-entropy from a uniform start (`steps`, `step`).
    Pgd,
    /// PGD on the CW∞ margin, κ = 50 (`steps`, `step`).
    Cw,
    /// Tian et al.'s Temperature-PGD (`steps`, `step`, `inv_t`).
    Temperature,
    /// AutoAttack (`version`, or a custom `attacks` list).
    Autoattack,
}

/// One entry of `[[eval.protocol]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolEntry {
    pub attack: ProtocolKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inv_t: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacks: Option<Vec<AaAttack>>,
    /// This entry's ε (a number or a ratio such as "8/255"; default: `[eval] eps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eps: Option<String>,
}

/// What an entry runs.
#[derive(Clone, Debug, PartialEq)]
pub enum ProtocolStep {
    Natural,
    Attack(Pgd),
    AutoAttack(AutoAttackSpec),
}

impl ProtocolEntry {
    /// The entry's attack, checking that it has the fields its kind needs and no others.
    pub fn resolve(&self) -> Result<ProtocolStep> {
        let kind = self.attack;
        let name = serde_json::to_value(kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let stray = |field: &str, present: bool| -> Result<()> {
            if present {
                Err(invalid(
                    field,
                    "set",
                    format!("no `{field}` for attack = \"{name}\""),
                ))
            } else {
                Ok(())
            }
        };
        let steps_step = || -> Result<(usize, f64)> {
            match (self.steps, self.step) {
                (Some(n), Some(s)) => Ok((n, s)),
                _ => Err(invalid(
                    "steps/step",
                    "missing",
                    format!("`steps` and `step` for attack = \"{name}\""),
                )),
            }
        };
        let aa = matches!(kind, ProtocolKind::Autoattack);
        stray("version", !aa && self.version.is_some())?;
        stray("attacks", !aa && self.attacks.is_some())?;
        stray(
            "inv_t",
            kind != ProtocolKind::Temperature && self.inv_t.is_some(),
        )?;
        let no_steps = matches!(
            kind,
            ProtocolKind::Natural | ProtocolKind::Fgsm | ProtocolKind::Autoattack
        );
        stray("steps", no_steps && self.steps.is_some())?;
        stray("step", no_steps && self.step.is_some())?;
        if let Some(e) = &self.eps {
            Eps::parse(e)?;
        }
        let step = match kind {
            ProtocolKind::Natural => ProtocolStep::Natural,
            ProtocolKind::Fgsm => ProtocolStep::Attack(Pgd::fgsm()),
            ProtocolKind::Pgd => {
                let (n, s) = steps_step()?;
                ProtocolStep::Attack(Pgd::ce(n, s))
            }
            ProtocolKind::Cw => {
                let (n, s) = steps_step()?;
                ProtocolStep::Attack(Pgd::cw(n, s))
            }
            ProtocolKind::Temperature => {
                let (n, s) = steps_step()?;
                let inv_t = self.inv_t.ok_or_else(|| {
                    invalid(
                        "inv_t",
                        "missing",
                        "`inv_t` (1/T) for attack = \"temperature\"",
                    )
                })?;
                ProtocolStep::Attack(Pgd::temperature(n, s, inv_t))
            }
            ProtocolKind::Autoattack => {
                let spec = AutoAttackSpec {
                    version: self.version.unwrap_or_default(),
                    attacks: self.attacks.clone(),
                };
                spec.validate()?;
                ProtocolStep::AutoAttack(spec)
            }
        };
        if let ProtocolStep::Attack(p) = &step {
            p.validate()?;
        }
        Ok(step)
    }
}

/// Checks every entry, naming the failing one (`eval.protocol[2].steps`).
pub fn validate(entries: &[ProtocolEntry]) -> Result<()> {
    for (i, e) in entries.iter().enumerate() {
        e.resolve()
            .map_err(|err| err.in_section(&format!("eval.protocol[{i}]")))?;
    }
    Ok(())
}

/// The protocol's report and its entries: records of `classwise_core`
/// ([`classwise_core::record::protocol`]), written here and read by `compare`.
pub use classwise_core::record::{EntryReport, PROTOCOL_SCHEMA, ProtocolReport};

/// How to run a protocol.
pub struct ProtocolOptions<'a> {
    /// ε of entries without their own.
    pub default_eps: &'a Eps,
    pub batch_size: usize,
    /// AutoAttack's batch size.
    pub autoattack_batch_size: usize,
    /// Entry i draws from seeds mixed from (seed, i, batch).
    pub seed: u64,
    /// Where AutoAttack entries keep their resumable state (`entry-<i>/`).
    pub state_dir: Option<&'a Path>,
    pub model_id: String,
    pub verbose: bool,
}

/// Runs every entry on `data`, the model in eval mode; robust = correct clean and under attack.
pub fn run(
    model: &dyn Classifier,
    data: &Dataset,
    entries: &[ProtocolEntry],
    opts: &ProtocolOptions<'_>,
    device: Device,
) -> Result<ProtocolReport> {
    if entries.is_empty() {
        return Err(invalid(
            "eval.protocol",
            "[]",
            "at least one [[eval.protocol]] entry in the run's configuration",
        ));
    }
    validate(entries)?;
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let eps = match &entry.eps {
            Some(e) => Eps::parse(e)?,
            None => opts.default_eps.clone(),
        };
        if opts.verbose {
            eprintln!(
                "protocol {}/{}: {:?} at eps = {}",
                i + 1,
                entries.len(),
                entry.attack,
                eps.text
            );
        }
        let report = match entry.resolve()? {
            ProtocolStep::Natural => EntryReport {
                label: "natural".into(),
                eps: 0.0,
                eps_text: "0".into(),
                evaluation: natural(model, data, opts.batch_size, device)?,
                autoattack: None,
            },
            ProtocolStep::Attack(pgd) => {
                let batches = crate::data::batches(data, opts.batch_size, device)?;
                let evaluation =
                    crate::seed::seeded(crate::seed::mix(opts.seed, i as u64, 0), || {
                        evaluate(
                            model,
                            batches,
                            data.class_names(),
                            &pgd,
                            eps.value,
                            RobustCounting::CleanAndAdversarial,
                            device,
                        )
                    })?;
                EntryReport {
                    label: pgd.describe(),
                    eps: eps.value,
                    eps_text: eps.text.clone(),
                    evaluation,
                    autoattack: None,
                }
            }
            ProtocolStep::AutoAttack(spec) => {
                let dir = opts.state_dir.map(|d| d.join(format!("entry-{i}")));
                let cascade = Cascade {
                    label: spec.label().to_string(),
                    steps: spec.steps(),
                    eps: eps.value,
                    batch_size: opts.autoattack_batch_size,
                    seed: crate::seed::mix(opts.seed, i as u64, 0) as u64,
                    randomized: spec.randomized(),
                    state_dir: dir.as_deref(),
                    model_id: opts.model_id.clone(),
                    notes: spec.class_warnings(data.num_classes()),
                    verbose: opts.verbose,
                };
                let result = cascade.run(model, data, device)?;
                EntryReport {
                    label: spec.describe(),
                    eps: eps.value,
                    eps_text: eps.text.clone(),
                    evaluation: result.report.evaluation.clone(),
                    autoattack: Some(result.report),
                }
            }
        };
        out.push(report);
    }
    Ok(ProtocolReport {
        schema: PROTOCOL_SCHEMA,
        n_samples: data.len(),
        class_names: data.class_names().to_vec(),
        entries: out,
    })
}

/// Clean accuracy as an evaluation whose "adversarial" example is the clean input.
fn natural(
    model: &dyn Classifier,
    data: &Dataset,
    batch_size: usize,
    device: Device,
) -> Result<Report> {
    let logits = clean_logits(model, data, batch_size, device)?;
    let pred: Vec<i64> = Vec::try_from(&logits.argmax(-1, false))?;
    let probs: Vec<f64> = Vec::try_from(
        &logits
            .softmax(-1, Kind::Double)
            .to_device(Device::Cpu)
            .reshape([-1]),
    )?;
    let labels = data.label_slice();
    let ok: Vec<bool> = pred.iter().zip(labels).map(|(p, l)| p == l).collect();
    summarize(
        "natural (no attack)".into(),
        0.0,
        RobustCounting::CleanAndAdversarial,
        data.class_names(),
        Outcomes {
            labels: labels.iter().map(|&l| l as usize).collect(),
            clean_ok: ok.clone(),
            robust_ok: ok,
            robust_pred: pred.iter().map(|&p| p as usize).collect(),
            clean_probs: Some(probs),
            precision: model.precision(),
            steps: None,
            all_attacked: true,
        },
        Vec::new(),
    )
}

/// One table: a row per class, a column per entry (robust accuracy; clean for `natural`), then
/// the overall, worst-class and worst-20% rows; the entries are listed below it.
pub fn markdown(r: &ProtocolReport) -> String {
    use std::fmt::Write as _;
    let pct = |v: f64| format!("{:.2}", 100.0 * v);
    let mut out = format!(
        "Report protocol on {} test images; robust = correct on the clean input and on \
         its adversarial example.\n\n| class |",
        r.n_samples
    );
    for (i, _) in r.entries.iter().enumerate() {
        let _ = write!(out, " ({}) % |", i + 1);
    }
    out.push_str("\n|---|");
    for _ in &r.entries {
        out.push_str("---|");
    }
    out.push('\n');
    for (c, name) in r.class_names.iter().enumerate() {
        let _ = write!(out, "| {c} {name} |");
        for e in &r.entries {
            let _ = write!(out, " {} |", pct(e.evaluation.robust.per_class[c]));
        }
        out.push('\n');
    }
    type Cell<'a> = &'a dyn Fn(&Report) -> String;
    let rows: [(&str, Cell); 3] = [
        ("**all**", &|e| {
            pct(e.robust.overall.unwrap_or(e.robust.class_mean))
        }),
        ("**worst class**", &|e| {
            format!("{} ({})", pct(e.robust.worst.value), e.robust.worst.class)
        }),
        ("**worst 20%**", &|e| pct(e.robust_worst_20_percent)),
    ];
    for (label, f) in rows {
        let _ = write!(out, "| {label} |");
        for e in &r.entries {
            let _ = write!(out, " {} |", f(&e.evaluation));
        }
        out.push('\n');
    }
    out.push('\n');
    for (i, e) in r.entries.iter().enumerate() {
        let _ = writeln!(out, "({}) {} at eps = {}", i + 1, e.label, e.eps_text);
        for w in &e.evaluation.warnings {
            let _ = writeln!(out, "    warning: {w}");
        }
    }
    out
}
