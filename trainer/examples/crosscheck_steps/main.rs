//! Writes the files of the step cross-check (`tools/crosscheck/STEP_FORMAT.md`): step files,
//! rule files and weight-average files, each made by classwise's own code.
//!
//! ```sh
//! cargo run --release -p classwise-trainer --example crosscheck_steps -- OUT_DIR
//! $PY tools/crosscheck/steps.py OUT_DIR/* --markdown results/crosscheck.md
//! ```
//!
//! * `steps.rs`: one SGD step of each method on the same WideResNet-10-1 (BatchNorm, no
//!   dropout) and the same class-balanced batch, with the training attack's random draws
//!   recorded unscaled: PGD-AT, TRADES (both scalings; uniform, CFA, class-β, WAT, FRL RW and
//!   RWRM, CSL plans), MART (uniform and class-β), FAT (CFA's variant with the attack in train
//!   and in eval mode, the original with ω noise and the τ schedule) and BAT (the boundary pair
//!   and the TRADES-source ablation), and a control with classwise's defaults against CFA's
//!   code. The cases are in `cases.rs`.
//! * `rules.rs`: the updates of the class-wise rules (CFA, WAT, FRL RW and RWRM, RWRM at the
//!   clamp of its ε multiplier, CSL, class-β) over a few epochs of chosen statistics, one JSON
//!   file per update, and a control with WAT's default loss scale.
//! * `averages.rs`: FAWA's and the EMA's decisions and averaged states over a few epochs.
//!
//! Not covered: classwise's `class-weight` rule (no reference computes it) and WAT's `paper`
//! normalisation (no code). BAT under a rule that sets the step cannot be configured: the only
//! such rule, FRL-RWRM, refuses any method but TRADES. What the table measured:
//! `tools/crosscheck/README.md`.

mod averages;
mod cases;
mod common;
mod rules;
mod steps;

use std::path::PathBuf;

use classwise_trainer::Result;
use classwise_trainer::error::invalid;

fn main() -> Result<()> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "crosscheck-steps".into()),
    );
    std::fs::create_dir_all(&out).map_err(|e| invalid("OUT", out.display(), e.to_string()))?;
    let mut files = steps::write_all(&out, cases::all()?)?;
    files.extend(rules::write_all(&out)?);
    files.extend(averages::write_all(&out)?);
    for (path, what) in files {
        println!("wrote {}{what}", path.display());
    }
    Ok(())
}
