//! `cargo xtask book`: the course book in `docs/book`, built into `out/book` (HTML).
//!
//! The build never writes into `docs/book`: it stages a copy in `target/book/stage`, adds what
//! is computed at build time, and runs mdBook on the copy.
//! - `figures/theory`, `figures/toy`: `classwise figures theory|toy`;
//! - `figures/run`: `classwise figures run` on a fresh run of the fmnist-smoke preset (the real
//!   Fashion-MNIST);
//! - `generated/verify-checks.md`, `generated/verify-errata.md`: the tables of
//!   `classwise theory verify --json`;
//! - `study/<table>/`: `classwise compare` on each committed table of the Fashion-MNIST study
//!   (`results/fmnist/<table>`, with `--claims results/fmnist/claims.toml`), and
//!   `generated/study-<table>-claims.md`, its claims as the chapter includes them;
//! - `katex/`: KaTeX's stylesheet and fonts, so that the formulas, rendered to HTML at build
//!   time by mdbook-katex, display without any network.
//!
//! The tools come from pinned versions: mdBook and mdbook-katex from the Rust registry
//! (`cargo install --locked`), KaTeX's stylesheet and fonts from the npm registry (checked
//! against a sha256). [`ensure_tools`] installs them into the cache when missing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::paths;

/// A binary installed from the Rust registry at a pinned version.
struct Crate {
    name: &'static str,
    version: &'static str,
}

/// mdBook itself: the version mdbook-katex 0.10.0 is built against.
const MDBOOK: Crate = Crate {
    name: "mdbook",
    version: "0.5.3",
};

/// The preprocessor that renders `$…$` and `$$…$$` with KaTeX at build time (its `katex` crate
/// embeds KaTeX 0.16.4 and runs it in QuickJS).
const MDBOOK_KATEX: Crate = Crate {
    name: "mdbook-katex",
    version: "0.10.0",
};

/// The KaTeX release whose stylesheet and fonts match the KaTeX that mdbook-katex embeds.
const KATEX_VERSION: &str = "0.16.4";
/// sha256 of `katex-0.16.4.tgz` as the npm registry serves it.
const KATEX_SHA256: &str = "079333bb5ea5501b3636e40301f7af8b68663d7cd51d1b20eae02442b73c6973";

/// Where the book tools live.
pub struct Tools {
    /// Holds `mdbook` and `mdbook-katex`.
    pub bin: PathBuf,
    /// Holds `katex.min.css` and `fonts/`.
    pub katex: PathBuf,
}

/// Installs the pinned mdBook, mdbook-katex and KaTeX assets into `cache` when missing.
pub fn ensure_tools(cache: &Path) -> anyhow::Result<Tools> {
    let root = cache.join("book-tools");
    for c in [&MDBOOK, &MDBOOK_KATEX] {
        ensure_crate(&root, c)?;
    }
    let katex = ensure_katex(cache)?;
    Ok(Tools {
        bin: root.join("bin"),
        katex,
    })
}

/// The version line `binary --version` prints, if it runs.
fn version_of(binary: &Path) -> Option<String> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn ensure_crate(root: &Path, c: &Crate) -> anyhow::Result<()> {
    let binary = root.join("bin").join(c.name);
    // `mdbook v0.5.4`, `mdbook-katex 0.10.0`.
    let installed = version_of(&binary)
        .is_some_and(|v| v.trim_start_matches(|ch: char| !ch.is_ascii_digit()) == c.version);
    if installed {
        eprintln!(
            "  {} {}: {} (up to date)",
            c.name,
            c.version,
            binary.display()
        );
        return Ok(());
    }
    eprintln!(
        "  {} {}: installing from the Rust registry into {} (a few minutes, once)",
        c.name,
        c.version,
        root.display()
    );
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["install", "--locked", "--quiet", "--root"])
        .arg(root)
        .arg(format!("{}@{}", c.name, c.version))
        .status()
        .context("cannot start `cargo install`")?;
    if !status.success() {
        bail!(
            "`cargo install --locked {}@{}` failed ({status}). The Rust registry must be \
             reachable, and mdbook-katex needs a C compiler (it builds QuickJS)",
            c.name,
            c.version
        );
    }
    match version_of(&binary) {
        Some(v) if v.ends_with(c.version) => Ok(()),
        other => bail!(
            "{} was installed but `{} --version` says {other:?}, not {}",
            c.name,
            binary.display(),
            c.version
        ),
    }
}

/// KaTeX's `katex.min.css` and `fonts/` from the npm registry's `katex` package.
fn ensure_katex(cache: &Path) -> anyhow::Result<PathBuf> {
    let dir = cache.join(format!("katex-{KATEX_VERSION}"));
    if dir.join("katex.min.css").is_file() && dir.join("fonts").is_dir() {
        eprintln!(
            "  KaTeX {KATEX_VERSION} stylesheet and fonts: {} (up to date)",
            dir.display()
        );
        return Ok(dir);
    }
    let downloads = cache.join("downloads");
    std::fs::create_dir_all(&downloads)
        .with_context(|| format!("cannot create {}", downloads.display()))?;
    let tarball = downloads.join(format!("katex-{KATEX_VERSION}.tgz"));
    if !tarball.is_file() {
        eprintln!(
            "  KaTeX {KATEX_VERSION}: `npm pack katex@{KATEX_VERSION}` from the npm registry"
        );
        let out = Command::new("npm")
            .args([
                "pack",
                &format!("katex@{KATEX_VERSION}"),
                "--pack-destination",
            ])
            .arg(&downloads)
            .output()
            .context(
                "cannot run `npm` (KaTeX's stylesheet and fonts come from the npm registry): \
                 install Node.js and npm (Debian: `apt-get install npm`)",
            )?;
        if !out.status.success() || !tarball.is_file() {
            bail!(
                "`npm pack katex@{KATEX_VERSION}` did not produce {}:\n{}\nCheck that the npm \
                 registry is reachable (npm's `registry` and proxy settings)",
                tarball.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let bytes =
        std::fs::read(&tarball).with_context(|| format!("cannot read {}", tarball.display()))?;
    let actual = crate::digest::sha256_hex(&bytes);
    if actual != KATEX_SHA256 {
        bail!(
            "sha256 mismatch for {}: expected {KATEX_SHA256} (xtask/src/book.rs), got {actual}. \
             Delete the file and run the command again",
            tarball.display()
        );
    }
    let partial = cache.join(format!("katex-{KATEX_VERSION}.partial"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial)
            .with_context(|| format!("cannot remove {}", partial.display()))?;
    }
    std::fs::create_dir_all(partial.join("fonts"))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let mut fonts = 0;
    for entry in archive.entries().context("reading the KaTeX tarball")? {
        let mut entry = entry.context("reading the KaTeX tarball")?;
        let path = entry.path()?.to_string_lossy().into_owned();
        let target = match path.strip_prefix("package/dist/") {
            Some("katex.min.css") => partial.join("katex.min.css"),
            Some(f) if f.starts_with("fonts/") && !f.ends_with('/') => {
                fonts += 1;
                partial.join(f)
            }
            _ => continue,
        };
        let mut data = Vec::new();
        entry.read_to_end(&mut data)?;
        std::fs::write(&target, data)
            .with_context(|| format!("cannot write {}", target.display()))?;
    }
    if !partial.join("katex.min.css").is_file() || fonts == 0 {
        bail!(
            "{} has no package/dist/katex.min.css or no fonts",
            tarball.display()
        );
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::rename(&partial, &dir)?;
    eprintln!(
        "  KaTeX {KATEX_VERSION}: {} ({fonts} font files)",
        dir.display()
    );
    Ok(dir)
}

/// What `cargo xtask book` builds from and into.
pub struct BookPaths {
    /// `docs/book`.
    pub source: PathBuf,
    /// `target/book`: the staged copy and the build-time run.
    pub work: PathBuf,
    /// The HTML book.
    pub out: PathBuf,
}

impl BookPaths {
    pub fn new(source: PathBuf, out: PathBuf) -> Self {
        BookPaths {
            source,
            work: paths::repo_root().join("target").join("book"),
            out,
        }
    }
}

/// Builds the book: stages `docs/book`, regenerates its figures and tables with `classwise`
/// (the binary at `classwise`), and runs mdBook.
pub fn build(tools: &Tools, classwise: &Path, p: &BookPaths) -> anyhow::Result<()> {
    let stage = p.work.join("stage");
    if stage.exists() {
        std::fs::remove_dir_all(&stage)
            .with_context(|| format!("cannot remove {}", stage.display()))?;
    }
    copy_dir(&p.source, &stage)?;
    let src = stage.join("src");
    // book.toml's `additional-css` names `katex/katex.min.css` beside book.toml; mdBook writes
    // it to `katex/` in the output, where the fonts it loads (`fonts/…`) arrive from `src/`.
    std::fs::create_dir_all(stage.join("katex"))?;
    std::fs::copy(
        tools.katex.join("katex.min.css"),
        stage.join("katex").join("katex.min.css"),
    )?;
    copy_dir(&tools.katex.join("fonts"), &src.join("katex").join("fonts"))?;
    let figures = src.join("figures");
    for kind in ["theory", "toy"] {
        let out = figures.join(kind);
        run_classwise(classwise, &["figures", kind, "--out"], &[&out])?;
    }
    // A real Fashion-MNIST run, trained afresh at every build (about a minute).
    let run = p.work.join("runs").join("fmnist-smoke");
    if run.exists() {
        std::fs::remove_dir_all(&run)
            .with_context(|| format!("cannot remove {}", run.display()))?;
    }
    let preset = paths::repo_root().join("configs").join("fmnist-smoke.toml");
    run_classwise(
        classwise,
        &["train", "--config"],
        &[&preset, Path::new("--out"), &run],
    )?;
    run_classwise(
        classwise,
        &["figures", "run", "--run"],
        &[&run, Path::new("--out"), &figures.join("run")],
    )?;
    let generated = src.join("generated");
    std::fs::create_dir_all(&generated)?;
    study(classwise, &src)?;
    let verify = Command::new(classwise)
        .args(["theory", "verify", "--json"])
        .output()
        .context("cannot run `classwise theory verify`")?;
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout)
        .context("`classwise theory verify --json` did not print JSON")?;
    if !verify.status.success() {
        bail!(
            "`classwise theory verify` failed: a check that should hold does not:\n{}",
            String::from_utf8_lossy(&verify.stderr)
        );
    }
    let (checks, errata) = verify_tables(&report)?;
    std::fs::write(generated.join("verify-checks.md"), checks)?;
    std::fs::write(generated.join("verify-errata.md"), errata)?;

    let path = std::env::join_paths(std::iter::once(tools.bin.clone()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))?;
    let status = Command::new(tools.bin.join("mdbook"))
        .arg("build")
        .arg(&stage)
        .arg("--dest-dir")
        .arg(&p.out)
        .env("PATH", path)
        .status()
        .context("cannot start mdbook")?;
    if !status.success() {
        bail!("`mdbook build` failed ({status})");
    }
    Ok(())
}

/// The study's tables whose claims `results/fmnist/claims.toml` holds, in the chapter's order.
pub const STUDY_TABLES: [&str; 5] = ["cfa", "wat", "tian", "bat", "homing"];

/// The study's tables beside the ledger, with no claims of their own: compared for their figures.
pub const STUDY_SIDE_TABLES: [&str; 1] = ["tian-cfa-scaling"];

/// The study's tables that the comparisons across tables read, and the label that keeps the
/// Tian table's first runs (`tian-cfa-scaling`, groups of the same names) apart.
const STUDY_INPUTS: [&str; 5] = [
    "results/fmnist/cfa",
    "results/fmnist/wat",
    "results/fmnist/tian",
    "results/fmnist/tian-cfa-scaling",
    "results/fmnist/bat",
];
const STUDY_LABEL: [&str; 2] = ["--label", "results/fmnist/tian-cfa-scaling=cfa-scaling"];

/// The study's comparisons across its tables, as `results/fmnist/README.md` runs them: the
/// output folder under `src/study/`, the arguments of `classwise compare` (without `--out`, in
/// pieces), the output the chapter includes and the name of the include in `src/generated/`.
/// The registered versions of the revised claims, and the runs one by one (last models; the
/// chapter names the committed table of the selected ones).
pub const STUDY_ACROSS: [(&str, &[&[&str]], &str, &str); 2] = [
    (
        "registered",
        &[
            &[
                "results/fmnist/cfa",
                "results/fmnist/tian",
                "results/fmnist/tian-cfa-scaling",
            ],
            &STUDY_LABEL,
            &[
                "--no-figures",
                "--claims",
                "results/fmnist/claims-registered.toml",
            ],
        ],
        "claims.md",
        "study-registered-claims.md",
    ),
    (
        "scale-last",
        &[&STUDY_INPUTS, &STUDY_LABEL, &["--no-figures"]],
        "runs.md",
        "study-scale-last.md",
    ),
];

/// `classwise compare` (run in the repository's root) on each committed table of the Fashion-MNIST study into
/// `src/study/<table>/`, and its claims (the title dropped, the sections one level lower)
/// into `src/generated/study-<table>-claims.md` ([`STUDY_SIDE_TABLES`]: no claims); then the
/// comparisons across tables ([`STUDY_ACROSS`]). A table not yet committed is skipped: the
/// chapter names only committed ones, and mdBook fails on a missing include.
fn study(classwise: &Path, src: &Path) -> anyhow::Result<()> {
    // Relative to the repository's root, where `classwise` runs: the outputs name their
    // inputs as the committed ones do.
    let results = Path::new("results").join("fmnist");
    let claims = results.join("claims.toml");
    let tables = (STUDY_TABLES.iter().map(|t| (t, true)))
        .chain(STUDY_SIDE_TABLES.iter().map(|t| (t, false)));
    let committed = |table: &str| {
        paths::repo_root()
            .join(&results)
            .join(table)
            .join("manifest.json")
            .is_file()
    };
    for (table, with_claims) in tables {
        if !committed(table) {
            continue;
        }
        let records = results.join(table);
        let out = src.join("study").join(table);
        let mut files = vec![records.as_path(), Path::new("--out"), &out];
        if with_claims {
            files.extend([Path::new("--claims"), &claims]);
        }
        run_classwise(classwise, &["compare"], &files)?;
        if with_claims {
            let page = format!("study-{table}-claims.md");
            include(&out.join("claims.md"), &src.join("generated").join(page))?;
        }
    }
    if !STUDY_TABLES
        .iter()
        .chain(&STUDY_SIDE_TABLES)
        .all(|t| committed(t))
    {
        return Ok(());
    }
    for (name, args, output, page) in STUDY_ACROSS {
        let out = src.join("study").join(name);
        let files = [Path::new("--out"), &out];
        run_classwise(
            classwise,
            &[&["compare"][..], &args.concat()].concat(),
            &files,
        )?;
        include(&out.join(output), &src.join("generated").join(page))?;
    }
    Ok(())
}

/// Copies the markdown `from` into `to` for an include: its title dropped, its sections one
/// level lower.
fn include(from: &Path, to: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(from)?;
    let body: Vec<String> = (text.lines().skip(1))
        .map(|l| match l.strip_prefix("## ") {
            Some(rest) => format!("#### {rest}"),
            None => l.to_owned(),
        })
        .collect();
    std::fs::write(to, body.join("\n") + "\n")?;
    Ok(())
}

fn run_classwise(classwise: &Path, args: &[&str], files: &[&Path]) -> anyhow::Result<()> {
    let mut cmd = Command::new(classwise);
    cmd.args(args).args(files).current_dir(paths::repo_root());
    eprintln!("  {cmd:?}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {}", classwise.display()))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Markdown tables of `classwise theory verify --json`: the checks, then the errata.
pub fn verify_tables(report: &serde_json::Value) -> anyhow::Result<(String, String)> {
    let list = |key: &str| {
        report[key]
            .as_array()
            .with_context(|| format!("the verify report has no `{key}` list"))
    };
    let text = |v: &serde_json::Value, key: &str| -> anyhow::Result<String> {
        let s = v[key]
            .as_str()
            .with_context(|| format!("a verify entry has no text `{key}`: {v}"))?;
        Ok(cell(s))
    };
    let number = |v: &serde_json::Value, key: &str| -> anyhow::Result<String> {
        v[key]
            .as_f64()
            .map(|x| {
                if x == 0.0 {
                    "0".to_owned()
                } else {
                    format!("{x:.3e}")
                }
            })
            .with_context(|| format!("a verify entry has no number `{key}`: {v}"))
    };
    let count = |v: &serde_json::Value, key: &str| -> anyhow::Result<u64> {
        v[key]
            .as_u64()
            .with_context(|| format!("a verify entry has no count `{key}`: {v}"))
    };
    let mut checks = format!(
        "Computed when this book was built: `classwise theory verify` (seed {}, {} random \
         draws per check).\n\n| Check | Statement | Hypotheses | Cases | Passed | Worst margin |\n\
         |---|---|---|---:|---:|---:|\n",
        report["seed"], report["cases_per_check"]
    );
    for c in list("checks")? {
        checks.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            text(c, "id")?,
            text(c, "reference")?,
            text(c, "hypotheses")?,
            count(c, "cases")?,
            count(c, "passed")?,
            number(c, "worst_margin")?
        ));
    }
    let mut errata = String::from(
        "Computed when this book was built: `classwise theory verify`.\n\n\
         | Erratum | Where | The claim | Re-confirmed | Counterexample |\n|---|---|---|---|---|\n",
    );
    for e in list("errata")? {
        let confirmed = e["confirmed"]
            .as_bool()
            .with_context(|| format!("an erratum has no `confirmed`: {e}"))?;
        errata.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            text(e, "id")?,
            text(e, "reference")?,
            text(e, "claim")?,
            if confirmed { "yes" } else { "**no**" },
            text(e, "counterexample")?
        ));
    }
    Ok((checks, errata))
}

/// A table cell: on one line, with the characters that Markdown or the math preprocessor
/// would read (`|`, `$`, `*`, `_`, `<`) escaped.
fn cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('$', "\\$")
        .replace('*', "\\*")
        .replace('_', "\\_")
        .replace('<', "&lt;")
        .replace('\n', " ")
}

/// Copies the directory tree `from` to `to` (created).
fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))?
    {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| {
                format!(
                    "cannot copy {} to {}",
                    entry.path().display(),
                    target.display()
                )
            })?;
        }
    }
    Ok(())
}

/// The Chromium the browser test starts.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Makes Debian's `chromium` available for the browser test: installed with apt-get when
/// missing (root only).
pub fn ensure_chromium() -> anyhow::Result<()> {
    if Path::new(CHROMIUM).is_file() {
        return Ok(());
    }
    if !crate::data::is_root() {
        bail!(
            "{CHROMIUM} is missing: the browser test needs Debian's `chromium` package \
             (`sudo apt-get install chromium`)"
        );
    }
    eprintln!("  chromium: installing Debian's package (apt-get, about a minute)");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "--no-install-recommends", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
    };
    let mut status = install().context("cannot run apt-get")?;
    if !status.success() {
        // A fresh machine may have empty package lists.
        let _ = Command::new("apt-get").args(["update", "-qq"]).status();
        status = install().context("cannot run apt-get")?;
    }
    if !status.success() || !Path::new(CHROMIUM).is_file() {
        bail!("`apt-get install chromium` failed ({status}); {CHROMIUM} is still missing");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_what_markdown_and_the_math_preprocessor_would_read() {
        assert_eq!(
            cell("w*_y = |S_k| costs $5 <x>\nnext"),
            "w\\*\\_y = \\|S\\_k\\| costs \\$5 &lt;x> next"
        );
    }

    #[test]
    fn verify_tables_render_every_check_and_erratum_and_refuse_a_broken_report() {
        let report = serde_json::json!({
            "seed": 3,
            "cases_per_check": 10,
            "checks": [{"id": "T1", "reference": "CFA Theorem 1", "hypotheses": "p_y > 1/2",
                        "cases": 10, "passed": 10, "worst_margin": -0.0}],
            "errata": [{"id": "C1", "reference": "CFA Theorem 2", "claim": "ŵ exists",
                        "confirmed": false, "counterexample": "R̄(1) < R̄(3)"}]
        });
        let (checks, errata) = verify_tables(&report).unwrap();
        assert!(
            checks.contains("(seed 3, 10 random draws per check)"),
            "{checks}"
        );
        assert!(
            checks.contains("| T1 | CFA Theorem 1 | p\\_y > 1/2 | 10 | 10 | 0 |"),
            "{checks}"
        );
        assert!(
            errata.contains("| C1 | CFA Theorem 2 | ŵ exists | **no** | R̄(1) &lt; R̄(3) |"),
            "{errata}"
        );
        let mut broken = report.clone();
        broken["checks"][0]
            .as_object_mut()
            .unwrap()
            .remove("passed");
        let e = verify_tables(&broken).unwrap_err().to_string();
        assert!(e.contains("`passed`"), "{e}");
    }
}
