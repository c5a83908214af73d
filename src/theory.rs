//! `classwise theory`: the binary Gaussian model and the papers' theorems, checked numerically.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use classwise_theory::eval::{Params, evaluate};
use classwise_theory::verify;

#[derive(Subcommand)]
pub enum TheoryCommand {
    /// Check every theorem on random draws within its hypotheses and on boundary cases, and
    /// re-confirm every erratum (C1-C9, W1-W6); exit 1 if a check that should hold fails.
    Verify {
        /// Random parameter draws per check (at least 1).
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
        cases: u64,
        /// Seed of the draws (ChaCha8, one stream per check).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Accuracies and optima of the binary Gaussian model for one parameter set, or for one JSON
    /// object per line with --batch.
    Eval(EvalArgs),
}

#[derive(Args)]
pub struct EvalArgs {
    /// Number of non-robust features.
    #[arg(long, required_unless_present = "batch")]
    d: Option<u32>,
    /// Mean shift η of the non-robust features.
    #[arg(long, required_unless_present = "batch", allow_negative_numbers = true)]
    eta: Option<f64>,
    /// Standard deviation σ of the non-robust features.
    #[arg(long, required_unless_present = "batch")]
    sigma: Option<f64>,
    /// p₊₁ = P(x₁ = +1 | y = +1).
    #[arg(long, required_unless_present = "batch")]
    p_pos: Option<f64>,
    /// p₋₁ = P(x₁ = -1 | y = -1).
    #[arg(long, required_unless_present = "batch")]
    p_neg: Option<f64>,
    /// The classifier's w > 0 (f_w(x) = sign(x₁ + (x₂+…+x_{d+1})/w)).
    #[arg(long, required_unless_present = "batch")]
    w: Option<f64>,
    /// Attack budget ε for R and for ŵ_ε (R is also reported at ε = 2η).
    #[arg(long, required_unless_present = "batch", allow_negative_numbers = true)]
    eps: Option<f64>,
    /// Read parameter objects (keys d, eta, sigma, p_pos, p_neg, w, eps), one per line, from
    /// FILE or `-` (stdin); write one result per line.
    #[arg(long, conflicts_with_all = ["d", "eta", "sigma", "p_pos", "p_neg", "w", "eps"])]
    batch: Option<PathBuf>,
    /// Print JSON (always on with --batch).
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: TheoryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TheoryCommand::Verify { cases, seed, json } => {
            run_verify(usize::try_from(cases)?, seed, json)
        }
        TheoryCommand::Eval(args) => match args.batch.clone() {
            Some(path) => run_batch(&path),
            None => run_eval(&args),
        },
    }
}

fn run_verify(cases: usize, seed: u64, json: bool) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let report = verify::run(cases, seed);
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{report}\n{} checks, {} errata, seed {seed}, {cases} cases per check, {:.1} s: {}",
            report.checks.len(),
            report.errata.len(),
            started.elapsed().as_secs_f64(),
            if report.ok() { "all hold" } else { "FAILURES" }
        );
    }
    Ok(match report.ok() {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

fn run_eval(a: &EvalArgs) -> anyhow::Result<ExitCode> {
    let missing = |name: &str| anyhow::anyhow!("--{name} is required");
    let params = Params {
        d: a.d.ok_or_else(|| missing("d"))?,
        eta: a.eta.ok_or_else(|| missing("eta"))?,
        sigma: a.sigma.ok_or_else(|| missing("sigma"))?,
        p_pos: a.p_pos.ok_or_else(|| missing("p-pos"))?,
        p_neg: a.p_neg.ok_or_else(|| missing("p-neg"))?,
        w: a.w.ok_or_else(|| missing("w"))?,
        eps: a.eps.ok_or_else(|| missing("eps"))?,
    };
    let e = evaluate(params)?;
    if a.json {
        println!("{}", serde_json::to_string(&e)?);
    } else {
        let v = serde_json::to_value(&e)?;
        for key in [
            "clean",
            "robust_paper",
            "robust_full",
            "robust_paper_2eta",
            "robust_full_2eta",
            "w_star",
        ] {
            println!("{key:<18} +1: {:<24} -1: {}", v[key]["pos"], v[key]["neg"]);
        }
        println!("{:<18} {}", "w_hat", v["w_hat"]);
        println!("{:<18} {}", "w_hat_full", v["w_hat_full"]);
    }
    Ok(ExitCode::SUCCESS)
}

/// One JSON result per input line; a bad line yields `{"line": n, "error": "..."}` in its place
/// (and on stderr) and the exit status 1, without stopping the other lines.
fn run_batch(path: &PathBuf) -> anyhow::Result<ExitCode> {
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        Box::new(std::io::BufReader::new(f))
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut failures = 0usize;
    for (i, line) in reader.lines().enumerate() {
        let n = i + 1;
        let line = line.with_context(|| format!("reading line {n} of {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let result = Params::from_json(&line).and_then(|p| evaluate(p).map_err(|e| e.to_string()));
        match result {
            Ok(e) => writeln!(out, "{}", serde_json::to_string(&e)?)?,
            Err(msg) => {
                failures += 1;
                eprintln!("line {n}: {msg}");
                let err = serde_json::json!({ "line": n, "error": msg });
                writeln!(out, "{err}")?;
            }
        }
    }
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
