//! `classwise doctor`: the environment report, as text or JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use classwise_trainer::doctor::{self, Report};

pub fn run(roots: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let report = doctor::report(roots);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(exit_code(&report))
}

pub fn exit_code(report: &Report) -> ExitCode {
    if report.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The human-readable report ([`Report`]'s `Display`).
pub fn render(r: &Report) -> String {
    r.to_string()
}
