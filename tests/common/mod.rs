//! Helpers shared by the end-to-end tests.

use std::process::{Command, Output};

/// The `classwise` binary with `args`, without a data-dir override from the environment.
pub fn classwise(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_classwise"));
    cmd.args(args).env_remove("CLASSWISE_DATA_DIR");
    cmd
}

/// stdout followed by stderr, for failure messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The model flags of CFA Figure 1: d = 1, η = 0.4, σ² = 0.6, p = 0.85/0.7.
#[allow(dead_code)] // Each test file compiles this module; not all use every item.
pub const FIG1: [&str; 10] = [
    "--d",
    "1",
    "--eta",
    "0.4",
    "--sigma",
    "0.7745966692414834",
    "--p-pos",
    "0.85",
    "--p-neg",
    "0.7",
];
