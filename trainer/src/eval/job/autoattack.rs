//! `classwise eval --attack autoattack`: the cascade on the test subset, resumable from
//! `<out dir>/<report stem>.partial/`, optionally saving the adversarial examples.

use std::collections::BTreeMap;
use std::path::Path;

use crate::attack::Eps;
use crate::data::Dataset;
use crate::error::{Result, invalid};
use crate::eval::autoattack::{
    AaAttack, AutoAttackSpec, Cascade, CascadeOutcome, Version, clean_logits,
};
use crate::eval::{RobustCounting, Subject};
use crate::model::{MemoryFormat, Model};

use super::{
    EvalOutput, EvalRequest, file_stem, lay_out, remove_partial, test_subset, write_report,
};

/// AutoAttack's version or custom attack list, its batch size, and whether to save the
/// adversarial examples.
#[derive(Clone, Debug)]
pub struct AutoAttackJob {
    pub version: Version,
    pub attacks: Option<Vec<AaAttack>>,
    /// Points per attack batch (a killed evaluation resumes from its last finished batch).
    pub batch_size: usize,
    /// Also write `<report>-adv.safetensors` ([`save_adversarial`]).
    pub save_adv: bool,
}

/// The job's attacks, after refusing what AutoAttack cannot do (count adversarial-only, an
/// invalid attack list).
fn checked_spec(request: &EvalRequest, job: &AutoAttackJob) -> Result<AutoAttackSpec> {
    if request.robust_counting == Some(RobustCounting::AdversarialOnly) {
        return Err(invalid(
            "--robust-counting",
            "adversarial-only",
            "clean-and-adversarial: AutoAttack counts a point misclassified clean as not robust \
             and never attacks it",
        ));
    }
    let spec = AutoAttackSpec {
        version: job.version,
        attacks: job.attacks.clone(),
    };
    spec.validate()
        .map_err(|e| invalid("--attacks", e, "a valid AutoAttack attack list"))?;
    Ok(spec)
}

/// Runs AutoAttack on the request's model (kernels channels-last unless asked otherwise).
pub(super) fn run(
    request: &EvalRequest,
    mut subject: Subject,
    job: &AutoAttackJob,
) -> Result<EvalOutput> {
    let spec = checked_spec(request, job)?;
    lay_out(&mut subject, request, Some(MemoryFormat::ChannelsLast))?;
    let (test, indices) = test_subset(request, &subject)?;
    subject.settings.robust_counting = RobustCounting::CleanAndAdversarial;
    let stem = file_stem(request, &subject, &spec.describe());
    let partial = subject.out_dir.join(format!("{stem}.partial"));
    let (model, device, eps) = (&subject.model, subject.device, &subject.settings.eps);
    let cascade = Cascade {
        label: spec.label().to_string(),
        steps: spec.steps(),
        eps: eps.value,
        batch_size: job.batch_size,
        seed: subject.settings.seed as u64,
        randomized: spec.randomized(),
        state_dir: Some(&partial),
        model_id: model.fingerprint()?,
        notes: spec.class_warnings(test.num_classes()),
        verbose: true,
    };
    let (what, origin) = (spec.describe(), &test.origin().description);
    eprintln!(
        "{what} at eps = {} on {} test images ({origin}); state in {}",
        eps.text,
        test.len(),
        partial.display()
    );
    let out = cascade.run(model, &test, device)?;
    let text = crate::eval::autoattack::markdown(&out.report);
    let mut written = write_report(
        &subject.out_dir,
        &stem,
        "autoattack report",
        &out.report,
        text,
    )?;
    crate::eval::write_predictions(&out.report.evaluation, &written.json_path)?;
    if job.save_adv {
        let path = adversarial_path(&written.json_path);
        save_adversarial(&path, &test, &indices, &out, eps, &spec, model)?;
        written.other_files.push(path);
    }
    remove_partial(&partial)?;
    Ok(written)
}

/// `<report stem>-adv.safetensors` beside the report `json`.
fn adversarial_path(json: &Path) -> std::path::PathBuf {
    let stem = json.file_stem().unwrap_or_default().to_string_lossy();
    json.with_file_name(format!("{stem}-adv.safetensors"))
}

/// The evaluated images with their adversarial examples, for re-evaluation elsewhere
/// (`tools/crosscheck`): `x`, `x_adv` (f32), `y`, `index` (position in the test file), `logits`
/// (clean), `robust` (u8), and metadata `eps`, `eps_value`, `version`, `attacks`, `model_spec`.
pub fn save_adversarial(
    path: &Path,
    test: &Dataset,
    indices: &[i64],
    out: &CascadeOutcome,
    eps: &Eps,
    spec: &AutoAttackSpec,
    model: &Model,
) -> Result<()> {
    let all: Vec<i64> = (0..test.len() as i64).collect();
    let (x, y) = test.batch(&all, tch::Device::Cpu)?;
    let robust: Vec<u8> = out.robust.iter().map(|&r| u8::from(r)).collect();
    let tensors = vec![
        ("x".to_string(), x),
        ("x_adv".to_string(), out.x_adv.shallow_clone()),
        ("y".to_string(), y),
        ("index".to_string(), tch::Tensor::from_slice(indices)),
        (
            "logits".to_string(),
            clean_logits(model, test, 500, model.device())?,
        ),
        ("robust".to_string(), tch::Tensor::from_slice(&robust)),
    ];
    let names: Vec<&str> = spec.attacks().iter().map(|a| a.name()).collect();
    let model_spec =
        serde_json::to_string(model.spec()).map_err(|source| crate::error::TrainerError::Json {
            what: "model spec",
            source,
        })?;
    let metadata = BTreeMap::from([
        ("eps".to_string(), eps.text.clone()),
        ("eps_value".to_string(), format!("{:?}", eps.value)),
        ("version".to_string(), spec.label().to_string()),
        ("attacks".to_string(), names.join(",")),
        ("model_spec".to_string(), model_spec),
    ]);
    crate::model::safetensors::write(path, &tensors, &metadata)
}
