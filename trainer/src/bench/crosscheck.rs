//! torchattacks' side of the AutoAttack benchmark: `tools/crosscheck/crosscheck.py` run on the
//! saved images, the parts of its `--json` result the benchmark reads, and the table of both
//! sides' seconds.

use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use crate::error::{IoContext, Result, TrainerError};
use crate::eval::autoattack::AutoAttackReport;

/// The parts of crosscheck.py's `--json` result the benchmark reads.
#[derive(Debug, Deserialize)]
pub struct CrossCheck {
    pub passed: bool,
    pub torchattacks: TorchAttacks,
}

/// torchattacks' timings and robust accuracy.
#[derive(Debug, Deserialize)]
pub struct TorchAttacks {
    pub seconds: f64,
    pub seconds_per_image: f64,
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

/// The repository's crosscheck script.
fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/crosscheck/crosscheck.py")
}

/// Runs crosscheck.py with `python` on the saved images (with `--original-params` when
/// `original_params`) and reads its result from `json`.
pub fn torchattacks(
    python: &Path,
    weights: &Path,
    adv: &Path,
    original_params: bool,
    json: &Path,
) -> Result<CrossCheck> {
    let script = script();
    let command = format!("{} {}", python.display(), script.display());
    let status = Command::new(python)
        .arg(&script)
        .arg("--weights")
        .arg(weights)
        .arg("--adv")
        .arg(adv)
        .args(original_params.then_some("--original-params"))
        .args(["--threads", &tch::get_num_threads().to_string()])
        .arg("--json")
        .arg(json)
        .status()
        .map_err(|e| TrainerError::Command {
            command: command.clone(),
            reason: e.to_string(),
        })?;
    if !status.success() {
        let reason = format!("exited with {status}");
        return Err(TrainerError::Command { command, reason });
    }
    let text = std::fs::read_to_string(json).at("reading", json)?;
    serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
        path: json.to_path_buf(),
        offset: None,
        reason: format!("not crosscheck.py's result: {e}"),
    })
}

/// `a / b` to two decimals, `-` when `b` is not positive.
fn ratio(a: f64, b: f64) -> String {
    match b > 0.0 {
        true => format!("{:.2}", a / b),
        false => "-".into(),
    }
}

/// The seconds per attack (and per image) of both sides, with the ratio classwise/torchattacks.
pub fn table(ours: &AutoAttackReport, theirs: Option<&CrossCheck>) -> String {
    let mut s =
        String::from("\n| attack | classwise s | torchattacks s | ratio |\n|---|---|---|---|\n");
    let theirs_of = |attack: &str| {
        let components = theirs.map(|t| t.torchattacks.components.as_slice());
        let found = components
            .unwrap_or_default()
            .iter()
            .find(|c| c.attack == attack);
        found.map(|c| c.seconds)
    };
    for step in &ours.steps {
        let other = theirs_of(&step.attack);
        s += &format!(
            "| {} | {:.1} | {} | {} |\n",
            step.attack,
            step.seconds,
            other.map_or("-".into(), |o| format!("{o:.1}")),
            other.map_or("-".into(), |o| ratio(step.seconds, o))
        );
    }
    let t = theirs.map(|t| &t.torchattacks);
    s += &format!(
        "| **all** (s per image) | {:.1} ({:.3}) | {} | {} |\n",
        ours.seconds,
        ours.seconds_per_image,
        t.map_or("-".into(), |t| format!(
            "{:.1} ({:.3})",
            t.seconds, t.seconds_per_image
        )),
        t.map_or("-".into(), |t| ratio(ours.seconds, t.seconds))
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
