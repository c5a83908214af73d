//! The Python side of the AutoAttack benchmark: `tools/crosscheck/crosscheck.py` run on the saved
//! images with torchattacks' AutoAttack, the original one (PyPI `pyautoattack`, fra31's code),
//! or both; the parts of its `--json` result the benchmark reads; and the table of the sides'
//! seconds.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::error::{IoContext, Result, TrainerError, bad_data, invalid};
use crate::eval::autoattack::AutoAttackReport;

/// A Python AutoAttack the benchmark can time beside classwise's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// torchattacks 3.5.1's `AutoAttack`, run as a timed cascade of its components.
    Torchattacks,
    /// The original AutoAttack (`fra31/auto-attack`, PyPI `pyautoattack` 0.2.0), timed whole.
    Pyautoattack,
}

impl Reference {
    pub const ALL: [Reference; 2] = [Reference::Torchattacks, Reference::Pyautoattack];

    /// `torchattacks` or `pyautoattack`.
    pub fn name(self) -> &'static str {
        match self {
            Reference::Torchattacks => "torchattacks",
            Reference::Pyautoattack => "pyautoattack",
        }
    }
}

impl std::str::FromStr for Reference {
    type Err = TrainerError;

    fn from_str(s: &str) -> Result<Self> {
        super::by_name(&Reference::ALL, Reference::name, "reference", s)
    }
}

/// The parts of crosscheck.py's `--json` result the benchmark reads.
#[derive(Debug, Deserialize)]
pub struct CrossCheck {
    pub passed: bool,
    /// Checks a-c (and torchattacks' d) on the saved images.
    #[serde(default)]
    pub checks: Vec<Check>,
    #[serde(default)]
    pub torchattacks: Option<Timed>,
    #[serde(default)]
    pub pyautoattack: Option<Timed>,
}

impl CrossCheck {
    /// The result of `reference`, if it ran.
    pub fn of(&self, reference: Reference) -> Option<&Timed> {
        match reference {
            Reference::Torchattacks => self.torchattacks.as_ref(),
            Reference::Pyautoattack => self.pyautoattack.as_ref(),
        }
    }
}

/// One of crosscheck.py's checks on the saved images.
#[derive(Debug, Deserialize)]
pub struct Check {
    /// `a: logits`, `b: x_adv`, ...
    pub name: String,
    pub passed: bool,
    /// What it measured.
    pub text: String,
}

/// One Python AutoAttack's timings and robust accuracy.
#[derive(Debug, Deserialize)]
pub struct Timed {
    pub seconds: f64,
    pub seconds_per_image: f64,
    /// The seconds attack by attack (torchattacks only: the original is timed whole).
    #[serde(default)]
    pub components: Vec<Component>,
    pub robust: Robust,
}

/// One attack's seconds.
#[derive(Debug, Deserialize)]
pub struct Component {
    pub attack: String,
    pub seconds: f64,
}

/// The robust accuracy over all images.
#[derive(Debug, Deserialize)]
pub struct Robust {
    pub overall: f64,
}

/// What crosscheck.py runs.
pub struct PythonRun<'a> {
    /// The crosscheck venv's interpreter.
    pub python: &'a Path,
    /// `crosscheck.py` (found by [`script`]).
    pub script: &'a Path,
    pub weights: &'a Path,
    /// The file of `save_adversarial`.
    pub adv: &'a Path,
    pub references: &'a [Reference],
    /// torchattacks with the original's parameters (`--original-params`).
    pub original_params: bool,
    pub batch_size: usize,
    /// Where the Python attacks run: classwise's device.
    pub device: tch::Device,
    /// Where its `--json` result goes.
    pub json: &'a Path,
}

/// The crosscheck script, relative to a classwise checkout.
const SCRIPT: &str = "tools/crosscheck/crosscheck.py";

/// The crosscheck script: under the current directory (a checkout the binary runs from, which
/// is how a binary built elsewhere finds it on a GPU machine), else in the checkout the binary
/// was built from.
pub fn script() -> Result<PathBuf> {
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(SCRIPT);
    let candidates = [PathBuf::from(SCRIPT), built];
    let found = candidates.iter().find(|p| p.is_file()).cloned();
    found.ok_or_else(|| {
        let expected = format!(
            "a classwise checkout as the current directory: {SCRIPT} is found there or at {}",
            candidates[1].display()
        );
        invalid("--python", format!("(no {SCRIPT})"), expected)
    })
}

/// crosscheck.py's flags for `run`.
fn flags(run: &PythonRun<'_>) -> Vec<String> {
    let mut flags = vec![
        "--threads".to_string(),
        tch::get_num_threads().to_string(),
        "--batch-size".into(),
        run.batch_size.to_string(),
        "--device".into(),
        torch_device(run.device),
    ];
    if run.original_params {
        flags.push("--original-params".into());
    }
    if run.references.contains(&Reference::Pyautoattack) {
        flags.push("--pyautoattack".into());
    }
    if !run.references.contains(&Reference::Torchattacks) {
        flags.push("--no-torchattacks".into());
    }
    flags
}

/// PyTorch's name of `device`: `cpu`, `cuda:0`, ...
fn torch_device(device: tch::Device) -> String {
    match device {
        tch::Device::Cuda(i) => format!("cuda:{i}"),
        tch::Device::Mps => "mps".into(),
        tch::Device::Vulkan => "vulkan".into(),
        tch::Device::Cpu => "cpu".into(),
    }
}

/// Runs crosscheck.py and reads its result. A failed check (exit status 1 with the result
/// written) is in the result's `checks`, not an error: the timings stand, and the table says
/// which check failed. Any other failure is an error.
pub fn run(run: &PythonRun<'_>) -> Result<CrossCheck> {
    let command = format!("{} {}", run.python.display(), run.script.display());
    // An earlier result must not stand in for this one (an exception also exits with 1).
    if run.json.exists() {
        std::fs::remove_file(run.json).at("removing", run.json)?;
    }
    let status = Command::new(run.python)
        .arg(run.script)
        .arg("--weights")
        .arg(run.weights)
        .arg("--adv")
        .arg(run.adv)
        .args(flags(run))
        .arg("--json")
        .arg(run.json)
        .status()
        .map_err(|e| TrainerError::Command {
            command: command.clone(),
            reason: e.to_string(),
        })?;
    let checks_failed = status.code() == Some(1) && run.json.is_file();
    if !status.success() && !checks_failed {
        let reason = format!("exited with {status}");
        return Err(TrainerError::Command { command, reason });
    }
    let text = std::fs::read_to_string(run.json).at("reading", run.json)?;
    serde_json::from_str(&text)
        .map_err(|e| bad_data(run.json, format!("not crosscheck.py's result: {e}")))
}

/// `a / b` to two decimals, `-` when `b` is not positive.
fn ratio(a: f64, b: f64) -> String {
    match b > 0.0 {
        true => format!("{:.2}", a / b),
        false => "-".into(),
    }
}

/// The cells `| s | ratio |` of a side that took `theirs` seconds where classwise took `ours`.
fn cells(ours: f64, theirs: Option<f64>) -> String {
    match theirs {
        Some(t) => format!(" {t:.1} | {} |", ratio(ours, t)),
        None => " - | - |".into(),
    }
}

/// The seconds per attack (and per image) of classwise and of each reference that ran, with
/// the ratios classwise / reference, and the robust accuracies.
pub fn table(ours: &AutoAttackReport, theirs: Option<&CrossCheck>) -> String {
    let ran: Vec<(Reference, &Timed)> = Reference::ALL
        .iter()
        .filter_map(|&r| Some((r, theirs?.of(r)?)))
        .collect();
    let mut s = String::from("\n| attack | classwise s |");
    for (r, _) in &ran {
        s += &format!(" {} s | ratio |", r.name());
    }
    s += &format!("\n|---|---|{}\n", "---|---|".repeat(ran.len()));
    for step in &ours.steps {
        s += &format!("| {} | {:.1} |", step.attack, step.seconds);
        for (_, t) in &ran {
            let other = t.components.iter().find(|c| c.attack == step.attack);
            s += &cells(step.seconds, other.map(|c| c.seconds));
        }
        s.push('\n');
    }
    s += &format!(
        "| **all** | {:.1} ({:.3} per image) |",
        ours.seconds, ours.seconds_per_image
    );
    for (_, t) in &ran {
        s += &cells(ours.seconds, Some(t.seconds));
    }
    s + &accuracies(ours, theirs, &ran)
}

/// The line of robust accuracies under the table.
fn accuracies(
    ours: &AutoAttackReport,
    theirs: Option<&CrossCheck>,
    ran: &[(Reference, &Timed)],
) -> String {
    let mut s = format!(
        "\n\nrobust accuracy: classwise {:.2}%",
        100.0 * ours.evaluation.robust.average()
    );
    for (r, t) in ran {
        s += &format!(", {} {:.2}%", r.name(), 100.0 * t.robust.overall);
    }
    if let Some(t) = theirs {
        let verdict = if t.passed { "passed" } else { "FAILED" };
        s += &format!(" (crosscheck checks {verdict})");
        for c in t.checks.iter().filter(|c| !c.passed) {
            s += &format!("\nFAILED check {}: {}", c.name, c.text);
        }
    }
    s + "\n"
}
