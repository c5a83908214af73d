//! `classwise bench --autoattack RUN|CARD`: AutoAttack's time per image on the first N test
//! images of each class, attack by attack, and, with a crosscheck interpreter, torchattacks'
//! AutoAttack and/or the original one (`pyautoattack`) on the same images
//! ([`super::crosscheck`]) with the ratios. Prints numbers, asserts nothing.

use std::path::{Path, PathBuf};

use crate::attack::{Apgd, Attack, Fab, Square};
use crate::data::{self, Part};
use crate::error::{IoContext, Result, invalid};
use crate::eval::autoattack::{AutoAttackReport, AutoAttackSpec, Cascade, Step, Version};
use crate::eval::job::{head_subset, save_adversarial};
use crate::eval::{ModelSource, Subject};
use crate::model::MemoryFormat;

use super::crosscheck::{self, CrossCheck, PythonRun, Reference};

/// Which parameters both sides run AutoAttack standard with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AaSettings {
    /// The original's (`fra31/auto-attack`): 100 iterations of APGD-CE, APGD-T and FAB-T,
    /// Square's schedule not rescaled; torchattacks runs with crosscheck.py's
    /// `--original-params`.
    Original,
    /// torchattacks 3.5.1's defaults (`torchattacks/attacks/autoattack.py`), as its users run
    /// it: 10 iterations of APGD-CE, APGD-T and FAB-T, Square's schedule rescaled to its 5,000
    /// queries; classwise runs the same settings.
    Torchattacks,
}

impl AaSettings {
    pub const ALL: [AaSettings; 2] = [AaSettings::Original, AaSettings::Torchattacks];

    /// `original` or `torchattacks`.
    pub fn name(self) -> &'static str {
        match self {
            AaSettings::Original => "original",
            AaSettings::Torchattacks => "torchattacks",
        }
    }

    /// The cascade's attacks with these settings.
    fn steps(self) -> Vec<Step> {
        if self == AaSettings::Original {
            return AutoAttackSpec::version(Version::Standard).steps();
        }
        const ITERATIONS: usize = 10;
        let step = |name: &str, attack: Box<dyn Attack>| Step {
            name: name.to_string(),
            attack,
        };
        let apgd = |base: Apgd| Apgd {
            iterations: ITERATIONS,
            ..base
        };
        vec![
            step("apgd-ce", Box::new(apgd(Apgd::ce()))),
            step("apgd-t", Box::new(apgd(Apgd::targeted()))),
            step(
                "fab-t",
                Box::new(Fab {
                    iterations: ITERATIONS,
                    ..Fab::targeted()
                }),
            ),
            step(
                "square",
                Box::new(Square {
                    rescale_schedule: true,
                    ..Square::autoattack()
                }),
            ),
        ]
    }
}

impl std::str::FromStr for AaSettings {
    type Err = crate::error::TrainerError;

    fn from_str(s: &str) -> Result<Self> {
        super::by_name(&AaSettings::ALL, AaSettings::name, "settings", s)
    }
}

/// What the benchmark runs on.
pub struct AaBench<'a> {
    /// The model, as its source names it (a run's `last`, `best`, ... or a weight file).
    pub checkpoint: &'a str,
    pub test_per_class: usize,
    pub batch_size: usize,
    /// Square with the model's full forward pass at every query instead of the window pass.
    pub no_window: bool,
    /// The layout of the convolution kernels.
    pub memory_format: MemoryFormat,
    /// The attacks' parameters, on both sides.
    pub settings: AaSettings,
    /// The crosscheck venv's interpreter: also time `references` on the same images.
    pub python: Option<&'a Path>,
    /// The Python AutoAttacks to time with `python`.
    pub references: &'a [Reference],
    pub data_dir: Option<&'a Path>,
    /// Where the report, the images and the Python side's result go.
    pub out: PathBuf,
}

/// Both sides' timings.
pub struct AaBenchOutcome {
    pub ours: AutoAttackReport,
    pub theirs: Option<CrossCheck>,
}

impl std::fmt::Display for AaBenchOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crosscheck::table(&self.ours, self.theirs.as_ref()))
    }
}

/// Times AutoAttack on the model `b.checkpoint` of `source`; `announce` receives a line saying
/// what runs before it starts. Writes `classwise.json` (and, with `b.python`, the images,
/// the weights and torchattacks' result) to `b.out`.
pub fn run(
    source: &dyn ModelSource,
    b: &AaBench<'_>,
    announce: impl FnOnce(&str),
) -> Result<AaBenchOutcome> {
    if b.test_per_class == 0 || b.batch_size == 0 {
        let (n, m) = (b.test_per_class, b.batch_size);
        let field = "--test-per-class, --aa-batch-size";
        return Err(invalid(field, format!("{n}, {m}"), "both >= 1"));
    }
    check_references(b)?;
    // Found before the attacks run, so that a missing script costs no minutes.
    let script = b.python.map(|_| crosscheck::script()).transpose()?;
    let mut subject = source.open(b.checkpoint)?;
    subject.model.set_memory_format(b.memory_format)?;
    subject.model.set_window_forward(!b.no_window);
    let test_full = data::load(&subject.data, Part::Test, b.data_dir)?;
    let (test, indices) = head_subset(&test_full, Some(b.test_per_class))?;
    std::fs::create_dir_all(&b.out).at("creating", &b.out)?;
    announce(&describe(b, &subject, test.len()));
    let spec = AutoAttackSpec::version(Version::Standard);
    let (model, eps) = (&subject.model, &subject.settings.eps);
    let cascade = Cascade {
        label: spec.label().to_string(),
        steps: b.settings.steps(),
        eps: eps.value,
        batch_size: b.batch_size,
        seed: subject.settings.seed as u64,
        randomized: spec.randomized(),
        state_dir: None,
        model_id: model.fingerprint()?,
        notes: Vec::new(),
        verbose: true,
    };
    let out = cascade.run(model, &test, subject.device)?;
    crate::io::write_json(
        &b.out.join("classwise.json"),
        "autoattack report",
        &out.report,
    )?;
    let theirs = match (b.python, &script) {
        (Some(python), Some(script)) => {
            let adv = b.out.join("adv.safetensors");
            save_adversarial(&adv, &test, &indices, &out, eps, &spec, model)?;
            Some(python_side((python, script), b, &subject, &adv)?)
        }
        _ => None,
    };
    let ours = out.report;
    Ok(AaBenchOutcome { ours, theirs })
}

/// Refuses a reference list that cannot run with `b.settings`: the original AutoAttack has
/// only its own parameters.
fn check_references(b: &AaBench<'_>) -> Result<()> {
    if b.references.is_empty() && b.python.is_some() {
        return Err(invalid(
            "--against",
            "nothing",
            "torchattacks and/or pyautoattack",
        ));
    }
    let original = b.settings == AaSettings::Original;
    if b.references.contains(&Reference::Pyautoattack) && !original {
        let settings = format!("--settings {}", b.settings.name());
        let expected = "--settings original with pyautoattack (it runs only its own parameters)";
        return Err(invalid("--against", settings, expected));
    }
    Ok(())
}

/// The Python AutoAttacks with `python` running `script` on the saved images `adv`, the
/// model's weights saved beside them.
fn python_side(
    (python, script): (&Path, &Path),
    b: &AaBench<'_>,
    subject: &Subject,
    adv: &Path,
) -> Result<CrossCheck> {
    let weights = b.out.join("model.safetensors");
    subject.model.save(&weights)?;
    crosscheck::run(&PythonRun {
        python,
        script,
        weights: &weights,
        adv,
        references: b.references,
        original_params: b.settings == AaSettings::Original,
        batch_size: b.batch_size,
        device: subject.device,
        json: &b.out.join("crosscheck.json"),
    })
}

/// The line saying what the benchmark runs.
fn describe(b: &AaBench<'_>, subject: &Subject, images: usize) -> String {
    format!(
        "AutoAttack standard ({} settings) at eps = {} on {images} images ({} per class) of {} \
         ({}), {} threads, Square's window forward pass {}, kernels {}",
        b.settings.name(),
        subject.settings.eps.text,
        b.test_per_class,
        subject.out_dir.display(),
        b.checkpoint,
        tch::get_num_threads(),
        if b.no_window { "off" } else { "on" },
        b.memory_format.name()
    )
}
