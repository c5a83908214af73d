//! `classwise toy`: Monte Carlo simulation of the binary model and the multi-class toys.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use classwise_theory::model::{Adversary, BinaryModel, Class};
use classwise_toy::binary::{
    CcmReport, Estimate, Sampler, Sweep, ccm_run, fit_report, simulate, sweep,
};

/// σ of CFA Figure 1 (σ² = 0.6).
const FIGURE1_SIGMA: f64 = 0.774_596_669_241_483_4;

#[derive(Subcommand)]
pub enum ToyCommand {
    /// Empirical clean and robust accuracies of f_w (N samples per class, exact worst-case
    /// ℓ∞ perturbation) with standard errors, next to the closed forms and the z-scores.
    Simulate {
        #[command(flatten)]
        model: ModelArgs,
        /// The classifier's w > 0 (f_w(x) = sign(x₁ + (x₂+…+x_{d+1})/w)).
        #[arg(long, allow_negative_numbers = true)]
        w: f64,
        /// Attack budget ε (as in `theory eval`).
        #[arg(long, allow_negative_numbers = true)]
        eps: f64,
        #[command(flatten)]
        mc: McArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// `simulate` for several w on the same samples (common random numbers): empirical
    /// A_y(w), R_y(w, ε) against w, as in CFA Figure 1(b), with the closed forms (Theorems 3-4).
    Sweep {
        #[command(flatten)]
        model: ModelArgs,
        /// Values of w, comma-separated (e.g. 0.25,0.5,1,2,3).
        #[arg(
            long,
            value_delimiter = ',',
            required = true,
            allow_negative_numbers = true
        )]
        w: Vec<f64>,
        /// Attack budget ε.
        #[arg(long, allow_negative_numbers = true)]
        eps: f64,
        #[command(flatten)]
        mc: McArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Toy adversarial training: the empirical ŵ_ε (exact maximiser of the empirical robust
    /// accuracy, and a logistic-loss gradient fit of (w₁, w₂)) for each ε, and the empirical
    /// w*_y, next to the closed forms (CFA Theorems 2 and 3).
    Fit {
        #[command(flatten)]
        model: ModelArgs,
        /// Training budgets, comma-separated (e.g. 0,0.1,0.2,0.3).
        #[arg(
            long,
            value_delimiter = ',',
            required = true,
            allow_negative_numbers = true
        )]
        eps: Vec<f64>,
        /// Threat model of the training perturbation.
        #[arg(long, value_enum, default_value_t = AdversaryArg::Paper)]
        adversary: AdversaryArg,
        #[command(flatten)]
        mc: McArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// CFA's class-wise budgets ε_y = (λ₁ + t_y)ε (CCM, eq. 6) iterated on the binary model, next
    /// to one budget for both classes: w, ε_y, t_y and the population accuracies per epoch.
    Ccm {
        #[command(flatten)]
        model: ModelArgs,
        /// Base training budget ε.
        #[arg(long, default_value_t = 0.2)]
        eps: f64,
        /// λ₁ of CFA eq. (6) (0.5 for AT).
        #[arg(long, default_value_t = 0.5)]
        lambda1: f64,
        /// Number of epochs.
        #[arg(long, default_value_t = 8)]
        epochs: usize,
        #[command(flatten)]
        mc: McArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The 100-points-per-class sample of CFA Figure 1(a) (or any model) as CSV: y,x1,...
    Scatter {
        #[command(flatten)]
        model: ModelArgs,
        /// Points per class.
        #[arg(long, default_value_t = 100)]
        samples: usize,
        /// Seed (ChaCha8, one stream per class and chunk).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output file (written atomically); stdout when absent.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Train a linear softmax model on K Gaussian classes of different difficulty with one
    /// method and report the class-wise history and final table.
    Multiclass(MulticlassArgs),
    /// Samples per second of the Monte Carlo simulator, with 1 thread and with all threads.
    Bench {
        /// Number of non-robust features.
        #[arg(long, default_value_t = 10)]
        d: u32,
        /// Samples per class per measurement.
        #[arg(long, default_value_t = 1_000_000)]
        samples: usize,
    },
}

#[derive(Args)]
pub struct MulticlassArgs {
    /// natural | at | trades | fat | cfa (= cfa-trades) | cfa-at | cfa-trades | cfa-fat | wat | frl | csl
    #[arg(long, default_value = "at")]
    method: String,
    /// Start from this run configuration (JSON, the `config` object of a report) instead of the
    /// method's preset; --method is then ignored.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Toy data preset (default | equal | small).
    #[arg(long)]
    data: Option<String>,
    /// Seed of the data, the initialisation and the shuffles.
    #[arg(long)]
    seed: Option<u64>,
    /// Number of epochs. The preset's epoch-relative settings (learning-rate drops, the FAWA and
    /// FRL start epochs, FRL's schedule) scale with it. Not with --config: edit the file.
    #[arg(long, conflicts_with = "config", value_parser = clap::value_parser!(u64).range(1..))]
    epochs: Option<u64>,
    /// Write the full JSON report to this file (atomically).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the full JSON report.
    #[arg(long)]
    json: bool,
}

/// The binary model's parameters; the defaults are CFA Figure 1.
#[derive(Args)]
pub struct ModelArgs {
    /// Number of non-robust features.
    #[arg(long, default_value_t = 1)]
    d: u32,
    /// Mean shift η of the non-robust features.
    #[arg(long, default_value_t = 0.4, allow_negative_numbers = true)]
    eta: f64,
    /// Standard deviation σ of the non-robust features [default: √0.6, Figure 1].
    #[arg(long, default_value_t = FIGURE1_SIGMA)]
    sigma: f64,
    /// p₊₁ = P(x₁ = +1 | y = +1).
    #[arg(long, default_value_t = 0.85)]
    p_pos: f64,
    /// p₋₁ = P(x₁ = -1 | y = -1).
    #[arg(long, default_value_t = 0.7)]
    p_neg: f64,
}

impl ModelArgs {
    fn model(&self) -> anyhow::Result<BinaryModel> {
        Ok(BinaryModel::new(
            self.d, self.eta, self.sigma, self.p_pos, self.p_neg,
        )?)
    }
}

#[derive(Args)]
pub struct McArgs {
    /// Samples per class.
    #[arg(long, default_value_t = 1_000_000)]
    samples: usize,
    /// Seed (ChaCha8, one stream per class and chunk; the same for any thread count).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum AdversaryArg {
    /// x₁ pinned (CFA App. B.1).
    Paper,
    /// Every coordinate moves (CFA definition (4)).
    Full,
}

impl From<AdversaryArg> for Adversary {
    fn from(a: AdversaryArg) -> Self {
        match a {
            AdversaryArg::Paper => Adversary::Paper,
            AdversaryArg::Full => Adversary::Full,
        }
    }
}

pub fn run(cmd: ToyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ToyCommand::Simulate {
            model,
            w,
            eps,
            mc,
            json,
        } => {
            let model = model.model()?;
            emit(&if json {
                serde_json::to_string_pretty(&simulate(model, w, eps, mc.samples, mc.seed)?)? + "\n"
            } else {
                point_table("", &sweep(model, &[w], eps, mc.samples, mc.seed)?)
            })?;
        }
        ToyCommand::Sweep {
            model,
            w,
            eps,
            mc,
            json,
        } => {
            let s = sweep(model.model()?, &w, eps, mc.samples, mc.seed)?;
            emit(&if json {
                serde_json::to_string_pretty(&s)? + "\n"
            } else {
                point_table("common random numbers: every w sees the same samples\n", &s)
            })?;
        }
        ToyCommand::Fit {
            model,
            eps,
            adversary,
            mc,
            json,
        } => {
            let r = fit_report(model.model()?, &eps, adversary.into(), mc.samples, mc.seed)?;
            emit(&if json {
                serde_json::to_string_pretty(&r)? + "\n"
            } else {
                fit_table(&r)
            })?;
        }
        ToyCommand::Scatter {
            model,
            samples,
            seed,
            out,
        } => {
            let csv = scatter_csv(model.model()?, samples, seed)?;
            match out {
                Some(path) => classwise_trainer::io::write_atomic(&path, csv.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?,
                None => emit(&csv)?,
            }
        }
        ToyCommand::Ccm {
            model,
            eps,
            lambda1,
            epochs,
            mc,
            json,
        } => {
            let r = ccm_run(model.model()?, eps, lambda1, epochs, mc.samples, mc.seed)?;
            emit(&if json {
                serde_json::to_string_pretty(&r)? + "\n"
            } else {
                ccm_table(&r)
            })?;
        }
        ToyCommand::Multiclass(args) => multiclass(&args)?,
        ToyCommand::Bench { d, samples } => bench(d, samples)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The table of one w: accuracy, class, estimate, s.e., closed form, z.
fn point_table(header: &str, s: &Sweep) -> String {
    let mut out = format!(
        "{header}{} samples per class, eps = {}, seed {}\n{:>8} {:<14} {:>5} {:>10} {:>9} {:>11} {:>7}\n",
        s.samples_per_class,
        s.eps,
        s.seed,
        "w",
        "accuracy",
        "class",
        "estimate",
        "s.e.",
        "closed form",
        "z"
    );
    for p in &s.points {
        let rows = [
            (
                "clean",
                &p.estimates.clean,
                &p.closed_form.clean,
                &p.z.clean,
            ),
            (
                "robust paper",
                &p.estimates.robust_paper,
                &p.closed_form.robust_paper,
                &p.z.robust_paper,
            ),
            (
                "robust full",
                &p.estimates.robust_full,
                &p.closed_form.robust_full,
                &p.z.robust_full,
            ),
        ];
        for (name, e, c, z) in rows {
            let per: [(&str, &Estimate, f64, f64); 2] =
                [("+1", &e.pos, c.pos, z.pos), ("-1", &e.neg, c.neg, z.neg)];
            for (class, e, c, z) in per {
                let _ = writeln!(
                    out,
                    "{:>8} {name:<14} {class:>5} {:>10.6} {:>9.2e} {c:>11.6} {z:>7.2}",
                    p.w, e.mean, e.se
                );
            }
        }
    }
    out
}

fn fit_table(r: &classwise_toy::binary::FitReport) -> String {
    let mut out = format!(
        "{} samples per class, {:?} adversary, seed {}\n{:>8} {:>14} {:>14} {:>14}\n",
        r.samples_per_class,
        r.adversary,
        r.seed,
        "eps",
        "w-hat (exact)",
        "w (logistic)",
        "closed form"
    );
    for p in &r.points {
        let cf = p.closed_form.map_or("n/a".to_string(), |c| c.0.label());
        let _ = writeln!(
            out,
            "{:>8} {:>14} {:>14} {:>14}",
            p.eps,
            short(p.empirical.argmax.0),
            short(p.surrogate.w.0),
            cf
        );
    }
    let _ = writeln!(
        out,
        "empirical w-hat non-decreasing in eps (Theorem 2): {}{}",
        r.empirical_monotone,
        match r.adversary {
            Adversary::Paper => "",
            Adversary::Full => " (Theorem 2 holds for the paper's adversary only: erratum C6)",
        }
    );
    for (c, e, cf) in [
        (
            Class::Pos,
            &r.w_star_empirical.pos,
            r.w_star_closed_form.pos,
        ),
        (
            Class::Neg,
            &r.w_star_empirical.neg,
            r.w_star_closed_form.neg,
        ),
    ] {
        let _ = writeln!(
            out,
            "w*_{:?}: empirical {} (clean accuracy {:.4}), closed form {}",
            c,
            short(e.argmax.0),
            e.accuracy,
            cf.0.label()
        );
    }
    out
}

fn ccm_table(r: &CcmReport) -> String {
    let mut out = format!(
        "CCM eps_y = ({} + t_y) * {}, {} samples per class, seed {}\n{:<8} {:>5} {:>7} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n",
        r.lambda1,
        r.eps,
        r.samples_per_class,
        r.seed,
        "run",
        "epoch",
        "eps+",
        "eps-",
        "w",
        "t+",
        "t-",
        "A+",
        "A-",
        "R+(2eta)",
        "R-(2eta)"
    );
    let last = r
        .uniform
        .last()
        .map(|e| ("uniform", e))
        .into_iter()
        .chain([("matched", &r.matched)]);
    for (name, e) in r.ccm.iter().map(|e| ("ccm", e)).chain(last) {
        let _ = writeln!(
            out,
            "{name:<8} {:>5} {:>7.4} {:>7.4} {:>8.4} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>7.4}",
            e.epoch,
            e.eps.pos,
            e.eps.neg,
            e.w,
            e.train_robust.pos,
            e.train_robust.neg,
            e.clean.pos,
            e.clean.neg,
            e.robust_at_2eta.pos,
            e.robust_at_2eta.neg
        );
    }
    out
}

fn short(a: classwise_theory::model::Argmax) -> String {
    match a.value() {
        Some(v) if v != 0.0 && v.abs() < 1e-3 => format!("{v:.3e}"),
        Some(v) => format!("{v:.5}"),
        None => a.label(),
    }
}

/// CSV with header `y,x1,...,x{d+1}`, positive class first.
fn scatter_csv(model: BinaryModel, n: usize, seed: u64) -> anyhow::Result<String> {
    anyhow::ensure!(n >= 1, "--samples must be >= 1, got {n}");
    let sampler = Sampler::new(model);
    let dim = model.d() as usize + 1;
    let mut out = String::from("y");
    for j in 1..=dim {
        let _ = write!(out, ",x{j}");
    }
    out.push('\n');
    for (y, label) in [(Class::Pos, "1"), (Class::Neg, "-1")] {
        for row in sampler.sample(y, n, seed).rows() {
            out.push_str(label);
            for v in row {
                let _ = write!(out, ",{v:?}");
            }
            out.push('\n');
        }
    }
    Ok(out)
}

fn bench(d: u32, samples: usize) -> anyhow::Result<()> {
    use classwise_toy::multiclass::{Method, RunConfig, run};
    let model = BinaryModel::new(d, 0.4, 1.0, 0.85, 0.7)?;
    let threads = rayon::current_num_threads();
    let mut out = format!(
        "toy simulate: d = {d}, {samples} samples per class (2 classes), clean + 2 attacks\n"
    );
    // Warm-up: thread pool, allocator and caches.
    simulate(model, 1.0, 0.1, samples.min(100_000), 1)?;
    let mut counts = vec![1];
    if threads > 1 {
        counts.push(threads);
    }
    for t in counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
        let start = Instant::now();
        pool.install(|| simulate(model, 1.0, 0.1, samples, 0))?;
        let secs = start.elapsed().as_secs_f64();
        let _ = writeln!(
            out,
            "threads {t}: {secs:.3} s, {:.3e} samples/s, {:.3e} coordinates/s",
            2.0 * samples as f64 / secs,
            2.0 * samples as f64 * f64::from(d + 1) / secs
        );
    }
    for method in [Method::At, Method::Trades] {
        let config = RunConfig::preset(method);
        let start = Instant::now();
        run(&config)?;
        let secs = start.elapsed().as_secs_f64();
        let _ = writeln!(
            out,
            "toy multiclass --method {method}: {} epochs in {secs:.3} s ({:.1} ms/epoch)",
            config.epochs,
            1e3 * secs / config.epochs as f64
        );
    }
    emit(&out)
}

fn multiclass(a: &MulticlassArgs) -> anyhow::Result<()> {
    use classwise_toy::multiclass::{RunConfig, ToyData, run};
    let mut config = match &a.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str::<RunConfig>(&text)
                .with_context(|| format!("{}: not a toy run configuration", path.display()))?
        }
        None => {
            let method: classwise_toy::multiclass::Method = a
                .method
                .parse()
                .map_err(|e| anyhow::anyhow!("--method: {e}"))?;
            match a.epochs {
                Some(n) => RunConfig::preset_with_epochs(method, usize::try_from(n)?),
                None => RunConfig::preset(method),
            }
        }
    };
    if let Some(name) = &a.data {
        config.data = ToyData::preset(name).with_context(|| {
            format!(
                "--data {name}: unknown preset (expected one of {:?})",
                classwise_toy::multiclass::DATA_PRESETS
            )
        })?;
    }
    if let Some(seed) = a.seed {
        config.seed = seed;
    }
    let report = run(&config)?;
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(path) = &a.out {
        classwise_trainer::io::write_atomic(path, json.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if a.json {
        return emit(&(json + "\n"));
    }
    let mut out = format!(
        "{} on the toy, seed {}\n{:>5} {:>9} {:>9} {:>10}  eps_k\n",
        report.label, config.seed, "epoch", "rob avg", "rob worst", "val worst"
    );
    for r in &report.history {
        let n = r.test_robust.len() as f64;
        let avg = r.test_robust.iter().sum::<f64>() / n;
        let worst = r.test_robust.iter().copied().fold(f64::INFINITY, f64::min);
        let eps: Vec<String> = r.plan.eps.iter().map(|e| format!("{e:.3}")).collect();
        let _ = writeln!(
            out,
            "{:>5} {avg:>9.4} {worst:>9.4} {:>10.4}  {}",
            r.epoch,
            r.val_worst_robust,
            eps.join(" ")
        );
    }
    let mut models = vec![("final", &report.final_model)];
    if let Some(m) = &report.fawa {
        models.push(("FAWA", m));
    }
    models.push(("WAT-selected", &report.selected.model));
    for (name, m) in models {
        let _ = writeln!(
            out,
            "{name:<13} clean avg {:.4} worst {:.4} | robust avg {:.4} worst {:.4} CV {:.5} MCD {:.4}",
            m.clean_avg(),
            m.clean_worst(),
            m.robust_avg(),
            m.robust_worst(),
            m.robust.cv_fraction2,
            m.robust.mcd
        );
        let per: Vec<String> = m
            .robust
            .per_class
            .iter()
            .map(|v| format!("{v:.3}"))
            .collect();
        let _ = writeln!(out, "{:<13} robust per class: {}", "", per.join(" "));
    }
    emit(&out)
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly instead of panicking.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
