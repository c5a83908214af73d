//! `classwise bench --autoattack RUN`: AutoAttack's time per image on the first N test images of
//! each class, attack by attack, and, with `--python`, torchattacks' AutoAttack on the same
//! images (`tools/crosscheck/crosscheck.py --original-params`) and the ratio of the two.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use classwise_trainer::attack::{Apgd, Attack, Fab, Square};
use classwise_trainer::data::{self, Part};
use classwise_trainer::eval::autoattack::{
    AutoAttackReport, AutoAttackSpec, Cascade, Step, Version,
};
use classwise_trainer::eval::job;
use classwise_trainer::model::MemoryFormat;
use classwise_trainer::run::{self, RunDir};
use serde::Deserialize;

/// Which parameters both sides run AutoAttack standard with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Settings {
    /// The original's (`fra31/auto-attack`): 100 iterations of APGD-CE, APGD-T and FAB-T,
    /// Square's schedule not rescaled; torchattacks runs with crosscheck.py's
    /// `--original-params`.
    Original,
    /// torchattacks 3.5.1's defaults (`torchattacks/attacks/autoattack.py`), as its users run
    /// it: 10 iterations of APGD-CE, APGD-T and FAB-T, Square's schedule rescaled to its 5,000
    /// queries; classwise runs the same settings.
    Torchattacks,
}

impl Settings {
    /// `original` or `torchattacks`.
    fn name(self) -> &'static str {
        match self {
            Settings::Original => "original",
            Settings::Torchattacks => "torchattacks",
        }
    }

    /// The cascade's attacks with these settings.
    fn steps(self) -> Vec<Step> {
        let standard = AutoAttackSpec::version(Version::Standard).steps();
        if self == Settings::Original {
            return standard;
        }
        const ITERATIONS: usize = 10;
        let step = |name: &str, attack: Box<dyn Attack>| Step {
            name: name.to_string(),
            attack,
        };
        vec![
            step(
                "apgd-ce",
                Box::new(Apgd {
                    iterations: ITERATIONS,
                    ..Apgd::ce()
                }),
            ),
            step(
                "apgd-t",
                Box::new(Apgd {
                    iterations: ITERATIONS,
                    ..Apgd::targeted()
                }),
            ),
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

/// What the benchmark runs on.
pub struct AaBench<'a> {
    pub run: &'a Path,
    pub checkpoint: &'a str,
    pub test_per_class: usize,
    pub batch_size: usize,
    /// Square with the model's full forward pass at every query instead of the window pass.
    pub no_window: bool,
    /// The layout of the convolution kernels.
    pub memory_format: MemoryFormat,
    /// The attacks' parameters, on both sides.
    pub settings: Settings,
    /// The crosscheck venv's interpreter: also time torchattacks.
    pub python: Option<&'a Path>,
    pub data_dir: Option<&'a Path>,
    /// Where the report, the images and torchattacks' result go.
    pub out: PathBuf,
}

/// The parts of crosscheck.py's `--json` result the benchmark reads.
#[derive(Deserialize)]
struct CrossCheck {
    passed: bool,
    torchattacks: TorchAttacks,
}

#[derive(Deserialize)]
struct TorchAttacks {
    seconds: f64,
    seconds_per_image: f64,
    components: Vec<Component>,
    robust: Robust,
}

#[derive(Deserialize)]
struct Component {
    attack: String,
    seconds: f64,
}

#[derive(Deserialize)]
struct Robust {
    overall: f64,
}

pub fn run(b: &AaBench<'_>) -> anyhow::Result<()> {
    let dir = RunDir(b.run.to_path_buf());
    let config = job::read_run_config(&dir)?;
    let device = config.device.device()?;
    let mut model = job::load_eval_model(&dir, b.checkpoint, device, b.memory_format)?;
    model.set_window_forward(!b.no_window);
    let test_full = data::load(&config.data.source, Part::Test, b.data_dir)?;
    let (test, indices) = job::head_subset(&test_full, Some(b.test_per_class))?;
    let spec = AutoAttackSpec {
        version: Version::Standard,
        attacks: None,
    };
    let eps = &config.eval.eps;
    std::fs::create_dir_all(&b.out).with_context(|| format!("creating {}", b.out.display()))?;
    println!(
        "AutoAttack standard ({} settings) at eps = {} on {} images ({} per class) of {} ({}), {} threads, \
         Square's window forward pass {}, kernels {}",
        b.settings.name(),
        eps.text,
        test.len(),
        b.test_per_class,
        b.run.display(),
        b.checkpoint,
        tch::get_num_threads(),
        if b.no_window { "off" } else { "on" },
        b.memory_format.name()
    );
    let cascade = Cascade {
        label: spec.label().to_string(),
        steps: b.settings.steps(),
        eps: eps.value,
        batch_size: b.batch_size,
        seed: run::report_seed(&config) as u64,
        randomized: spec.randomized(),
        state_dir: None,
        model_id: model.fingerprint()?,
        notes: Vec::new(),
        verbose: true,
    };
    let out = cascade.run(&model, &test, device)?;
    classwise_trainer::io::write_json(
        &b.out.join("classwise.json"),
        "autoattack report",
        &out.report,
    )?;
    let theirs = match b.python {
        None => None,
        Some(python) => {
            let adv = b.out.join("adv.safetensors");
            job::save_adversarial(&adv, &test, &indices, &out, eps, &spec, &model)?;
            let weights = b.out.join("model.safetensors");
            model.save(&weights)?;
            Some(torchattacks(
                python,
                &weights,
                &adv,
                b.settings,
                &b.out.join("torchattacks.json"),
            )?)
        }
    };
    print!("{}", table(&out.report, theirs.as_ref()));
    Ok(())
}

/// Runs crosscheck.py on the saved images and reads its result.
fn torchattacks(
    python: &Path,
    weights: &Path,
    adv: &Path,
    settings: Settings,
    json: &Path,
) -> anyhow::Result<CrossCheck> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/crosscheck/crosscheck.py");
    let status = Command::new(python)
        .arg(&script)
        .arg("--weights")
        .arg(weights)
        .arg("--adv")
        .arg(adv)
        .args((settings == Settings::Original).then_some("--original-params"))
        .args(["--threads", &tch::get_num_threads().to_string()])
        .arg("--json")
        .arg(json)
        .status()
        .with_context(|| format!("running {} {}", python.display(), script.display()))?;
    anyhow::ensure!(
        status.success(),
        "{} exited with {status}",
        script.display()
    );
    let text =
        std::fs::read_to_string(json).with_context(|| format!("reading {}", json.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not crosscheck.py's result", json.display()))
}

/// The seconds per attack (and per image) of both sides, with the ratio classwise/torchattacks.
fn table(ours: &AutoAttackReport, theirs: Option<&CrossCheck>) -> String {
    let mut s =
        String::from("\n| attack | classwise s | torchattacks s | ratio |\n|---|---|---|---|\n");
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}", a / b)
        } else {
            "-".into()
        }
    };
    for step in &ours.steps {
        let other = theirs.and_then(|t| {
            t.torchattacks
                .components
                .iter()
                .find(|c| c.attack == step.attack)
                .map(|c| c.seconds)
        });
        s += &format!(
            "| {} | {:.1} | {} | {} |\n",
            step.attack,
            step.seconds,
            other.map_or("-".into(), |o| format!("{o:.1}")),
            other.map_or("-".into(), |o| ratio(step.seconds, o))
        );
    }
    let total = theirs.map(|t| t.torchattacks.seconds);
    s += &format!(
        "| **all** (s per image) | {:.1} ({:.3}) | {} | {} |\n",
        ours.seconds,
        ours.seconds_per_image,
        theirs.map_or("-".into(), |t| format!(
            "{:.1} ({:.3})",
            t.torchattacks.seconds, t.torchattacks.seconds_per_image
        )),
        total.map_or("-".into(), |t| ratio(ours.seconds, t))
    );
    s += &format!(
        "\nrobust accuracy: classwise {:.2}%{}\n",
        100.0 * ours.evaluation.robust.average(),
        theirs.map_or(String::new(), |t| format!(
            ", torchattacks {:.2}% (crosscheck checks {})",
            100.0 * t.torchattacks.robust.overall,
            if t.passed { "passed" } else { "FAILED" }
        ))
    );
    s
}
