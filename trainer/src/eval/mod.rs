//! Class-wise evaluation under attack (as in CFA Table 1, WAT Tables 1-5, BAT Table 1 and
//! Tian et al. §4): per-class clean and robust accuracy, average, worst, worst-20%, CV, MCD,
//! standard/boundary/robust errors and the confusion matrix under attack, with the sanity checks
//! AutoAttack users rely on.
//!
//! Sanity checks, per batch:
//! * the robust count is **recomputed** from the stored adversarial batch with a different batch
//!   split (two halves) and must equal the count taken right after the attack; a mismatch means
//!   the model's predictions depend on the batch (e.g. BN in train mode) and is an error;
//! * on the first batch, two clean forwards must agree (else the model looks randomised) and
//!   the logits of the halves must equal those of the whole batch (else they depend on the batch
//!   size); both give warnings, as AutoAttack's checks do.

use classwise_theory::metrics::{ConfusionMatrix, class_accuracy_from_flags, class_errors};
use std::path::{Path, PathBuf};

/// How robust samples are counted ([`classwise_core::eval::RobustCounting`]).
pub use classwise_core::eval::RobustCounting;
/// The class-wise report of one model under one attack, the one type that is written and read
/// ([`classwise_core::record::Report`], versioned by [`REPORT_SCHEMA`]).
pub use classwise_core::record::{Counted, FlipSteps, PerImage, REPORT_SCHEMA, Report};
use tch::{Device, Kind, Tensor};

pub mod autoattack;
mod costs;
pub mod job;
pub mod protocol;
mod settings;
mod source;

pub use costs::trades_costs;
pub use settings::{EvalSettings, evaluate_on, evaluate_with};
pub use source::{ModelSource, Subject};

use crate::attack::{Attack, AttackInput, Budget, StepCounts};
use crate::error::{Result, TrainerError, invalid};
use crate::model::Classifier;
use crate::model::Precision;

/// Relative tolerance of the batch-size check on logits.
const LOGIT_TOL: f64 = 1e-4;

/// Writes [`Report::predictions`] of the report written at `report` (`<dir>/<name>`) to
/// `<dir>/predictions/<name>`, atomically and as compact JSON (three numbers per test image).
/// Returns the path written.
pub fn write_predictions(evaluation: &Report, report: &Path) -> Result<PathBuf> {
    let name = report
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = report.parent().unwrap_or(Path::new("."));
    let path = dir.join("predictions").join(&name);
    let mut text = serde_json::to_vec(&evaluation.predictions(&name)).map_err(|source| {
        TrainerError::Json {
            what: "predictions",
            source,
        }
    })?;
    text.push(b'\n');
    crate::io::write_atomic(&path, &text)?;
    Ok(path)
}

/// x' from `attack` at the same budget ε for every sample, the model in eval mode.
fn perturb_uniform(
    model: &dyn Classifier,
    attack: &dyn Attack,
    x: &Tensor,
    y: &Tensor,
    eps: f64,
) -> Result<Tensor> {
    Ok(perturb_uniform_steps(model, attack, x, y, eps)?.0)
}

/// [`perturb_uniform`] with the steps each sample took, when the attack counts them
/// ([`Attack::perturb_with_steps`]).
fn perturb_uniform_steps(
    model: &dyn Classifier,
    attack: &dyn Attack,
    x: &Tensor,
    y: &Tensor,
    eps: f64,
) -> Result<(Tensor, Option<StepCounts>)> {
    let budget = Budget::uniform(eps, x.size()[0], x.device())?;
    let input = AttackInput {
        x,
        y,
        eps: &budget,
        train: false,
    };
    attack.perturb_with_steps(model, &input)
}

/// Evaluates `model` in eval mode on `batches` of (images in [0, 1], labels) against `attack` at
/// budget `eps` (the same for every sample), counting robust samples as `counting` says.
pub fn evaluate(
    model: &dyn Classifier,
    batches: impl IntoIterator<Item = Result<(Tensor, Tensor)>>,
    class_names: &[String],
    attack: &dyn Attack,
    eps: f64,
    counting: RobustCounting,
    device: Device,
) -> Result<Report> {
    let k = class_names.len();
    if k < 2 {
        return Err(invalid("class_names", k, "at least 2 classes"));
    }
    let (mut labels, mut clean_ok, mut robust_ok, mut robust_pred) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut probs, mut steps) = (Vec::new(), Some((Vec::new(), 0)));
    let mut warnings = Vec::new();
    for (i, batch) in batches.into_iter().enumerate() {
        let (x, y) = batch?;
        let (x, y) = (x.to_device(device), y.to_device(device));
        if i == 0 {
            warnings.extend(first_batch_checks(model, &x));
        }
        let (x_adv, taken) = perturb_uniform_steps(model, attack, &x, &y, eps)?;
        steps = match (steps, taken) {
            (Some((mut all, _)), Some(t)) => {
                all.extend(to_usize(&t.taken)?);
                Some((all, t.max))
            }
            _ => None,
        };
        let (clean_logits, adv_pred) = tch::no_grad(|| {
            (
                model.forward_t(&x, false),
                model.forward_t(&x_adv, false).argmax(-1, false),
            )
        });
        let clean_pred = clean_logits.argmax(-1, false);
        probs.extend(Vec::<f64>::try_from(
            &clean_logits
                .softmax(-1, Kind::Double)
                .to_device(Device::Cpu)
                .reshape([-1]),
        )?);
        let recomputed = tch::no_grad(|| predict_in_halves(model, &x_adv));
        let mismatches = i64::try_from(adv_pred.ne_tensor(&recomputed).sum(Kind::Int64))?;
        if mismatches != 0 {
            return Err(TrainerError::Invalid {
                field: "model".into(),
                value: format!("{mismatches} predictions on batch {i}"),
                expected: "the same predictions when the stored adversarial batch is \
                           re-evaluated in two halves (is the model in eval mode?)"
                    .into(),
            });
        }
        let yv = to_usize(&y)?;
        let clean_flags = flags(&clean_pred, &y)?;
        let adv_flags = flags(&adv_pred, &y)?;
        robust_ok.extend(
            clean_flags
                .iter()
                .zip(adv_flags)
                .map(|(&c, a)| match counting {
                    RobustCounting::CleanAndAdversarial => c && a,
                    RobustCounting::AdversarialOnly => a,
                }),
        );
        clean_ok.extend(clean_flags);
        robust_pred.extend(to_usize(&adv_pred)?);
        labels.extend(yv);
    }
    summarize(
        attack.describe(),
        eps,
        counting,
        class_names,
        Outcomes {
            labels,
            clean_ok,
            robust_ok,
            robust_pred,
            clean_probs: Some(probs),
            precision: model.precision(),
            steps,
            all_attacked: true,
        },
        warnings,
    )
}

/// Per-sample outcomes of an evaluation, in sample order.
pub(crate) struct Outcomes {
    pub labels: Vec<usize>,
    pub clean_ok: Vec<bool>,
    pub robust_ok: Vec<bool>,
    /// Predictions on the adversarial examples.
    pub robust_pred: Vec<usize>,
    /// The softmax of each clean image, row-major (for the CVC), when the evaluation has them.
    pub clean_probs: Option<Vec<f64>>,
    /// The ascent steps each sample took and the attack's step count, when the attack counts
    /// them.
    pub steps: Option<(Vec<usize>, usize)>,
    /// The arithmetic of the model's forward passes.
    pub precision: Precision,
    /// Whether every image was attacked (not only those classified correctly when clean), so
    /// that both countings can be told from the predictions.
    pub all_attacked: bool,
}

/// The class-wise report of per-sample outcomes.
pub(crate) fn summarize(
    attack: String,
    eps: f64,
    counting: RobustCounting,
    class_names: &[String],
    o: Outcomes,
    warnings: Vec<String>,
) -> Result<Report> {
    let k = class_names.len();
    if o.labels.is_empty() {
        return Err(invalid("data", "no samples", "at least one batch"));
    }
    let clean = class_accuracy_from_flags(&o.clean_ok, &o.labels, k)?;
    let robust = class_accuracy_from_flags(&o.robust_ok, &o.labels, k)?;
    let robust_other_counting = match o.all_attacked {
        true => Some(other_counting(counting, &o, k)?),
        false => None,
    };
    Ok(Report {
        schema: REPORT_SCHEMA,
        attack,
        eps,
        robust_counting: counting,
        n_samples: o.labels.len(),
        class_names: class_names.to_vec(),
        robust_worst_20_percent: robust.worst_fraction_mean(0.2)?,
        clean: clean.summary(),
        robust: robust.summary(),
        robust_other_counting,
        errors: class_errors(&o.clean_ok, &o.robust_ok, &o.labels, k)?,
        confusion_under_attack: ConfusionMatrix::from_predictions(&o.robust_pred, &o.labels, k)?,
        cvc: match &o.clean_probs {
            Some(p) => Some(classwise_theory::metrics::cvc(p, &o.labels, k)?),
            None => None,
        },
        steps_to_flip: o.steps.as_ref().map(|(steps, max)| {
            let wrong: Vec<bool> = o
                .robust_pred
                .iter()
                .zip(&o.labels)
                .map(|(p, y)| p != y)
                .collect();
            FlipSteps::of(steps, &o.labels, &wrong, k, *max)
        }),
        warnings,
        precision: o.precision,
        per_image: PerImage {
            labels: o.labels,
            adversarial: o.robust_pred,
            robust: o.robust_ok,
        },
    })
}

/// The robust accuracy under the counting other than `counting`, from the same predictions.
fn other_counting(counting: RobustCounting, o: &Outcomes, k: usize) -> Result<Counted> {
    let adversarial_ok = o.robust_pred.iter().zip(&o.labels).map(|(p, y)| p == y);
    let (other, flags): (_, Vec<bool>) = match counting {
        RobustCounting::CleanAndAdversarial => {
            (RobustCounting::AdversarialOnly, adversarial_ok.collect())
        }
        RobustCounting::AdversarialOnly => (
            RobustCounting::CleanAndAdversarial,
            adversarial_ok
                .zip(&o.clean_ok)
                .map(|(a, &c)| a && c)
                .collect(),
        ),
    };
    Ok(Counted {
        robust_counting: other,
        robust: class_accuracy_from_flags(&flags, &o.labels, k)?.summary(),
    })
}

pub(crate) fn predict_in_halves(model: &dyn Classifier, x: &Tensor) -> Tensor {
    let n = x.size()[0];
    let h = (n / 2).max(1).min(n);
    let mut parts = vec![model.forward_t(&x.narrow(0, 0, h), false).argmax(-1, false)];
    if n > h {
        parts.push(
            model
                .forward_t(&x.narrow(0, h, n - h), false)
                .argmax(-1, false),
        );
    }
    Tensor::cat(&parts, 0)
}

/// AutoAttack-style checks on the first batch: randomised forward, batch-size dependence.
pub(crate) fn first_batch_checks(model: &dyn Classifier, x: &Tensor) -> Vec<String> {
    let mut warnings = Vec::new();
    tch::no_grad(|| {
        let a = model.forward_t(x, false);
        let b = model.forward_t(x, false);
        let scale = a.abs().max().double_value(&[]).max(1.0);
        if (&a - &b).abs().max().double_value(&[]) > LOGIT_TOL * scale {
            warnings.push(
                "two forwards of the same batch differ: the model looks randomised, so \
                 robust accuracy under a deterministic attack may be overestimated"
                    .to_string(),
            );
        }
        let n = x.size()[0];
        if n >= 2 {
            let h = n / 2;
            let halves = Tensor::cat(
                &[
                    model.forward_t(&x.narrow(0, 0, h), false),
                    model.forward_t(&x.narrow(0, h, n - h), false),
                ],
                0,
            );
            if (&a - halves).abs().max().double_value(&[]) > LOGIT_TOL * scale {
                warnings.push(
                    "logits change with the batch size (batch statistics in eval mode?)"
                        .to_string(),
                );
            }
        }
    });
    warnings
}

fn to_usize(t: &Tensor) -> Result<Vec<usize>> {
    let v: Vec<i64> = Vec::try_from(&t.to_device(Device::Cpu).to_kind(Kind::Int64))?;
    v.into_iter()
        .map(|c| usize::try_from(c).map_err(|_| invalid("labels", c, "classes >= 0")))
        .collect()
}

fn flags(pred: &Tensor, y: &Tensor) -> Result<Vec<bool>> {
    Ok(Vec::try_from(&pred.eq_tensor(y).to_device(Device::Cpu))?)
}

/// The report as a markdown table: one row per class, then avg, worst, worst-20%, CV and MCD.
pub fn markdown(e: &Report) -> String {
    use std::fmt::Write as _;
    let pct = |v: f64| format!("{:.2}", 100.0 * v);
    let mut out = format!(
        "Attack: {} at eps = {} on {} samples; {}; forward passes in {}.\n\n| class | clean % | robust % | standard err % | boundary err % | robust err % |\n|---|---|---|---|---|---|\n",
        e.attack,
        e.eps,
        e.n_samples,
        e.robust_counting.describe(),
        e.precision
    );
    for (k, name) in e.class_names.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {k} {name} | {} | {} | {} | {} | {} |",
            pct(e.clean.per_class[k]),
            pct(e.robust.per_class[k]),
            pct(e.errors.standard[k]),
            pct(e.errors.boundary[k]),
            pct(e.errors.robust[k]),
        );
    }
    let avg = |s: &classwise_theory::metrics::ClassAccuracySummary| s.average();
    let _ = writeln!(
        out,
        "| **avg** | {} | {} | {} | {} | {} |",
        pct(avg(&e.clean)),
        pct(avg(&e.robust)),
        pct(e.errors.overall_standard),
        pct(e.errors.overall_boundary),
        pct(e.errors.overall_robust)
    );
    let _ = writeln!(
        out,
        "| **worst** | {} (class {}) | {} (class {}) | {} | {} | {} |",
        pct(e.clean.worst.value),
        e.clean.worst.class,
        pct(e.robust.worst.value),
        e.robust.worst.class,
        pct(e.errors.worst_standard().value),
        pct(e.errors.worst_boundary().value),
        pct(e.errors.worst_robust().value)
    );
    let _ = writeln!(
        out,
        "\nRobust: worst-20% {} %, CV {:.2} %² ({:.4} fraction²), MCD {} points.",
        pct(e.robust_worst_20_percent),
        e.robust.cv_percent2,
        e.robust.cv_fraction2,
        pct(e.robust.mcd)
    );
    for w in &e.warnings {
        let _ = writeln!(out, "\nWarning: {w}");
    }
    out
}
