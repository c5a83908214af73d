//! `classwise demo`: the project's best end-to-end result so far, written to one folder.
//! Today: the environment report, the libtorch gradient self-check and the numerical check of
//! the papers' theorems (`classwise theory verify`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use classwise_trainer::{default_device, doctor, gradcheck, io};

pub fn run(roots: &[PathBuf], out: &Path) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let report = doctor::report(roots);
    print!("{}", crate::doctor::render(&report));
    io::write_json(&out.join("doctor.json"), "the doctor report", &report)
        .context("writing the demo outputs")?;

    let device = default_device();
    let g = gradcheck::conv_net_gradcheck(device, 0)
        .with_context(|| format!("libtorch gradient self-check on {device:?}"))?;
    let err = g.max_rel_error();
    io::write_json(&out.join("gradcheck.json"), "the gradient check", &g)?;
    let ok = err < gradcheck::GRAD_REL_TOL;
    println!(
        "\nlibtorch self-check on {}: conv net forward + backward, input gradient vs central \
         differences over {} coordinates: max relative error {err:.2e} ({})",
        g.device,
        g.autograd.len(),
        if ok { "ok" } else { "FAILED" }
    );
    let theory = classwise_theory::verify::run(200, 0);
    io::write_json(
        &out.join("theory-verify.json"),
        "the theory report",
        &theory,
    )?;
    let cases: usize = theory.checks.iter().map(|c| c.cases).sum();
    let confirmed = theory.errata.iter().filter(|e| e.confirmed).count();
    println!(
        "theory: {} checks of CFA Theorems 1-4 and the WAT bounds over {cases} cases: {}; \
         {confirmed}/{} errata of the papers confirmed with counterexamples \
         (table: `classwise theory verify`)",
        theory.checks.len(),
        if theory.ok() { "all hold" } else { "FAILURES" },
        theory.errata.len()
    );
    let summary = format!(
        "classwise demo\n\
         doctor: {} problem(s)\n\
         gradient self-check: max relative error {err:.3e} on {} ({})\n\
         theory: {} checks over {cases} cases ({}), {confirmed}/{} errata confirmed\n\
         files: doctor.json (environment), gradcheck.json (autograd and finite-difference \
         gradients), theory-verify.json (every check and erratum)\n",
        report.problems.len(),
        g.device,
        if ok { "ok" } else { "FAILED" },
        theory.checks.len(),
        if theory.ok() { "all hold" } else { "FAILURES" },
        theory.errata.len()
    );
    io::write_atomic(&out.join("summary.txt"), summary.as_bytes())?;
    println!(
        "outputs in {} ({:.1} s)",
        out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(if ok && report.problems.is_empty() && theory.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
