//! `cargo xtask`: project chores that need no libtorch.
//!
//! - `setup`: libtorch 2.13.0 for tch (the user's, checked, or a CPU one assembled from PyPI
//!   wheels into the cache; with `--cuda` a CUDA one, from the torch wheel and its nvidia-*
//!   wheels) and Fashion-MNIST (from Debian's package, without root).
//! - `test`: the README's test command (format, libtorch-free crates without libtorch, set-up,
//!   the whole workspace's tests, clippy). `.ci/run` runs it, then `demo`.
//! - `demo`: the README's main command (set-up without the book tools, then `classwise demo`).
//! - `book`: the course book (`docs/book`) with its figures and tables regenerated, into
//!   `out/book`; with `--check`, opened in headless Chromium by `tests/book_browser.rs`.

mod book;
mod cuda;
mod data;
mod digest;
mod error;
mod libtorch;
mod manifest;
mod paths;
mod space;
mod wheel;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand};

use crate::libtorch::Source;
use crate::manifest::Manifest;
use crate::wheel::Pip;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "classwise project chores", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Make libtorch 2.13.0 and Fashion-MNIST available (idempotent; seconds when done before).
    Setup(SetupArgs),
    /// Run every check: fmt, libtorch-free tests, set-up, workspace tests, clippy. CI runs this,
    /// then the main job (`cargo xtask demo`).
    Test(SetupArgs),
    /// Start a real single-node Slurm cluster (`tools/slurm/setup.sh`: Debian's slurm-wlm and
    /// munge, as root) and run the Slurm integration test (`tests/slurm_cli.rs`: the smoke
    /// sweep as a job array, one task stopped by SIGTERM, requeued and finished) and the book's
    /// chapter 7, which submits a sweep. `test` runs it too.
    TestSlurm(SetupArgs),
    /// Set up (libtorch and Fashion-MNIST; not the book tools, which the demo never uses), then
    /// run `classwise demo` (release build); outputs land in `out/demo/`.
    Demo {
        #[command(flatten)]
        setup: SetupArgs,
        /// Output folder.
        #[arg(long, default_value = "out/demo")]
        out: PathBuf,
    },
    /// Build the course book (`docs/book`) into `out/book`: set-up (with the pinned mdBook,
    /// mdbook-katex and KaTeX's fonts), a release build of classwise, the book's figures and
    /// tables regenerated (a fresh fmnist-smoke run on the real Fashion-MNIST among them), then
    /// mdBook. Open `out/book/index.html`.
    Book {
        #[command(flatten)]
        setup: SetupArgs,
        /// Output folder.
        #[arg(long, default_value = "out/book")]
        out: PathBuf,
        /// Then open every page in headless Chromium (Debian's `chromium`, installed when
        /// missing and run as root) and check links, images and formulas
        /// (`tests/book_browser.rs`); screenshots land in `<out>-screenshots/`.
        #[arg(long)]
        check: bool,
        /// The book's sources.
        #[arg(long, hide = true, default_value = "docs/book")]
        source: PathBuf,
    },
}

#[derive(Args, Clone)]
struct SetupArgs {
    /// Cache for libtorch, downloads and data [default: $CLASSWISE_CACHE_DIR,
    /// $XDG_CACHE_HOME/classwise or ~/.cache/classwise].
    #[arg(long, env = "CLASSWISE_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// A directory of already-downloaded wheels (offline machines); each is checked against
    /// the sha256 in xtask/libtorch-wheels.toml (xtask/libtorch-wheels-cuda.toml with --cuda).
    #[arg(long, env = "CLASSWISE_WHEEL_DIR")]
    wheel_dir: Option<PathBuf>,
    /// Python interpreter whose pip downloads the wheels.
    #[arg(long, env = "CLASSWISE_PYTHON", default_value = "python3")]
    python: String,
    /// Keep the downloaded wheels in the cache after extraction (~540 MB; ~2.5 GB with --cuda).
    #[arg(long)]
    keep_wheels: bool,
    /// Assemble a CUDA libtorch (CUDA 13.0, linux x86_64) from the torch wheel and the nvidia-*
    /// wheels it depends on (xtask/libtorch-wheels-cuda.toml: about 2.5 GB to download, 3.5 GB
    /// assembled) instead of the CPU one. Needs no GPU to set up; `classwise doctor` on the GPU
    /// machine says whether CUDA works. Refused while LIBTORCH or LIBTORCH_USE_PYTORCH is set.
    #[arg(long, env = "CLASSWISE_CUDA", value_parser = BoolishValueParser::new())]
    cuda: bool,
    /// Skip the Fashion-MNIST step.
    #[arg(long)]
    no_data: bool,
    /// Skip the book tools (mdBook, mdbook-katex, KaTeX's stylesheet and fonts) in `setup`.
    /// Only `book` and `test` (which builds the book) need them and install them themselves;
    /// `demo` and `test-slurm` never do.
    #[arg(long)]
    no_book: bool,
    /// The link that `.cargo/config.toml` names as LIBTORCH.
    #[arg(long, hide = true)]
    link: Option<PathBuf>,
    /// The wheel manifest [default: xtask/libtorch-wheels.toml, or -cuda.toml with --cuda].
    #[arg(long, hide = true)]
    manifest: Option<PathBuf>,
    /// This machine as `<os>-<arch>` [default: the real one], for the platform check.
    #[arg(long, hide = true)]
    platform: Option<String>,
    /// Where a system-wide Fashion-MNIST is looked for first.
    #[arg(long, hide = true, default_value = data::SYSTEM_DIR)]
    system_data_dir: PathBuf,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Setup(args) => {
            let tools = if args.no_book {
                BookTools::Skip
            } else {
                BookTools::Install
            };
            setup(&args, tools)
        }
        Cmd::Test(args) => test(&args),
        Cmd::TestSlurm(args) => setup(&args, BookTools::Skip).and_then(|()| test_slurm()),
        Cmd::Demo { setup: args, out } => demo(&args, &out),
        Cmd::Book {
            setup: args,
            out,
            check,
            source,
        } => setup(&args, BookTools::Skip).and_then(|()| book(&args, &source, &out, check)),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// Whether [`setup`] installs the book tools (issue 37, item 7: the main job needs no book
/// tools). Only `cargo xtask setup` does, unless `--no-book`; [`book`] installs them where the
/// book is built (`book`, `test`), and `demo` never needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BookTools {
    Install,
    Skip,
}

/// The cache of `args`: `--cache-dir`, else the default one.
fn cache_dir(args: &SetupArgs) -> PathBuf {
    args.cache_dir
        .clone()
        .unwrap_or_else(paths::default_cache_dir)
}

/// `cargo xtask setup`: libtorch behind the `.libtorch` link, Fashion-MNIST, and the book tools
/// when `tools` says so.
fn setup(args: &SetupArgs, tools: BookTools) -> anyhow::Result<()> {
    let started = Instant::now();
    let cache = cache_dir(args);
    let link = args
        .link
        .clone()
        .unwrap_or_else(paths::default_libtorch_link);
    let manifest_path = args.manifest.clone().unwrap_or_else(|| {
        if args.cuda {
            paths::default_cuda_manifest()
        } else {
            paths::default_manifest()
        }
    });
    let manifest = Manifest::load(&manifest_path)?;
    eprintln!("classwise setup: cache {}", cache.display());
    let libtorch = provide_libtorch(args, &manifest, &cache, &link)?;
    if let Some(note) = cuda::switch_note(&link, &libtorch) {
        eprintln!("  {note}");
    }
    libtorch::replace_symlink(&libtorch, &link)?;
    eprintln!("  {} -> {}", link.display(), libtorch.display());
    if !args.no_data {
        let dir = data::setup_fashion_mnist(&cache, &args.system_data_dir)?;
        eprintln!("  Fashion-MNIST: {}", dir.display());
    }
    if tools == BookTools::Install {
        book::ensure_tools(&cache)?;
    }
    eprintln!(
        "classwise setup: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The libtorch directory to link: the user's (`LIBTORCH`, `LIBTORCH_USE_PYTORCH`), checked, or
/// the one `manifest` describes, assembled in `cache`.
fn provide_libtorch(
    args: &SetupArgs,
    manifest: &Manifest,
    cache: &Path,
    link: &Path,
) -> anyhow::Result<PathBuf> {
    let use_pytorch = std::env::var("LIBTORCH_USE_PYTORCH").ok();
    let source = Source::from_env(
        std::env::var("LIBTORCH").ok().as_deref(),
        use_pytorch.as_deref(),
        link,
    );
    if args.cuda {
        cuda::check_source(&source, use_pytorch.as_deref())?;
    }
    Ok(match source {
        Source::User(dir) => {
            libtorch::check_user_dir(&dir, &manifest.torch_version)?;
            libtorch::check_loadable(
                &dir,
                &[],
                "Install the missing libraries (for a CUDA build: the CUDA runtime, cuDNN, NCCL of \
                 the version it was built with) or add their directory to LD_LIBRARY_PATH",
            )?;
            eprintln!(
                "  libtorch: using LIBTORCH={} (version checked)",
                dir.display()
            );
            dir
        }
        Source::Pytorch => {
            let dir = libtorch::from_pytorch(&args.python, cache, &manifest.torch_version)?;
            libtorch::check_loadable(
                &dir,
                &[],
                "Reinstall torch in that environment (its nvidia-* dependencies provide the CUDA \
                 libraries), or unset LIBTORCH_USE_PYTORCH",
            )?;
            eprintln!("  libtorch: using the torch package of `{}`", args.python);
            dir
        }
        Source::Wheels => from_wheels(args, manifest, cache)?,
    })
}

/// Assembles (or finds up to date) the libtorch of `manifest` in `cache` and checks that it loads.
fn from_wheels(args: &SetupArgs, manifest: &Manifest, cache: &Path) -> anyhow::Result<PathBuf> {
    let platform = args.platform.clone().unwrap_or_else(cuda::this_platform);
    cuda::check_platform(manifest, &platform)?;
    let pip = Pip {
        python: args.python.clone(),
    };
    let a = libtorch::assemble(
        manifest,
        cache,
        args.wheel_dir.as_deref(),
        &pip,
        args.keep_wheels,
    )?;
    libtorch::check_loadable(
        &a.dir,
        &manifest.check,
        "The assembled copy is damaged or this system lacks a base library: delete that \
         directory and run `cargo xtask setup` again",
    )?;
    if a.built {
        eprintln!(
            "  libtorch: {} (assembled; {} wheels downloaded)",
            a.dir.display(),
            a.downloaded
        );
    } else {
        eprintln!("  libtorch: {} (up to date)", a.dir.display());
    }
    if cuda::driver_missing(&a.dir) {
        eprintln!(
            "  note: no NVIDIA driver on this machine (the loader finds no libcuda.so.1), so this \
             CUDA libtorch runs on the CPU here; on the GPU machine, `cargo run --release -- \
             doctor` says whether CUDA works"
        );
    }
    Ok(a.dir)
}

/// Runs a command in the workspace root, echoing it; fails on a non-zero exit.
fn run(step: &str, cmd: &mut Command) -> anyhow::Result<()> {
    let started = Instant::now();
    eprintln!("\n==> {step}: {cmd:?}");
    let status = cmd
        .current_dir(paths::repo_root())
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("step `{step}` failed ({status}): {cmd:?}");
    }
    eprintln!("==> {step}: ok in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// The file structure: no import circles in the workspace (`tools/structure/circles.py`) and
/// no import against the trainer's layers (`tools/structure/layers.py`, e.g. eval → run).
fn structure(python: &str) -> anyhow::Result<()> {
    let script = |name: &str| format!("tools/structure/{name}");
    let mut circles = Command::new(python);
    circles.args([script("circles.py").as_str(), "--check"]);
    run("no file import circles", &mut circles)?;
    let mut layers = Command::new(python);
    layers.args([script("layers.py").as_str(), "--self-test"]);
    run("the trainer's layers", &mut layers)
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Packages that must build and test with no libtorch anywhere.
const PURE: [&str; 5] = [
    "classwise-theory",
    "classwise-core",
    "classwise-toy",
    "classwise-figures",
    "xtask",
];

fn test(args: &SetupArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    run("rustfmt", cargo().args(["fmt", "--all", "--check"]))?;
    structure(&args.python)?;
    for p in PURE {
        check_no_torch(p)?;
    }
    let mut pure = cargo();
    pure.arg("test");
    for p in PURE {
        pure.args(["-p", p]);
    }
    // A LIBTORCH that does not exist proves these crates never look for libtorch.
    pure.env("LIBTORCH", "/nonexistent/classwise-no-libtorch");
    run(
        "tests of the libtorch-free crates, without libtorch",
        &mut pure,
    )?;
    eprintln!("\n==> set-up");
    // The book tools come with the book step below.
    setup(args, BookTools::Skip)?;
    // The rest of the workspace; the libtorch-free packages were tested in step 2.
    let mut rest = cargo();
    rest.args(["test", "--workspace"]);
    for p in PURE {
        rest.args(["--exclude", p]);
    }
    run("tests of the libtorch packages", &mut rest)?;
    test_slurm()?;
    book(args, Path::new("docs/book"), Path::new("out/book"), true)?;
    run(
        "clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    eprintln!(
        "\nall checks passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Starts the single-node Slurm cluster and runs the Slurm integration test, which plain
/// `cargo test` skips (it needs the cluster, and root to start it).
fn test_slurm() -> anyhow::Result<()> {
    run(
        "single-node Slurm cluster (tools/slurm/setup.sh)",
        Command::new("bash")
            .arg(paths::repo_root().join("tools/slurm/setup.sh"))
            .current_dir(paths::repo_root()),
    )?;
    run(
        "Slurm integration test",
        cargo().args([
            "test",
            "-p",
            "classwise",
            "--test",
            "slurm_cli",
            "--",
            "--ignored",
        ]),
    )?;
    run(
        "the book's chapter 7 (it submits a sweep to Slurm)",
        cargo().args([
            "test",
            "-p",
            "classwise",
            "--test",
            "book",
            "commands_of_chapter_7_run",
            "--",
            "--ignored",
        ]),
    )
}

/// Fails if `package` depends on tch or torch-sys, directly or through another package.
fn check_no_torch(package: &str) -> anyhow::Result<()> {
    let out = cargo()
        .args(["tree", "--quiet", "-p", package, "-e", "normal,build,dev"])
        .args(["--prefix", "none", "--format", "{p}"])
        .current_dir(paths::repo_root())
        .output()
        .context("cannot run `cargo tree`")?;
    if !out.status.success() {
        bail!(
            "`cargo tree -p {package}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = tree
        .lines()
        .find(|l| l.starts_with("tch ") || l.starts_with("torch-sys "))
    {
        bail!("{package} must not depend on libtorch, but its dependency tree has `{line}`");
    }
    Ok(())
}

/// Builds the book in `source` into `out` (both relative to the directory `cargo xtask` was
/// started in) with a
/// release build of classwise; with `check`, runs the browser test on it.
fn book(args: &SetupArgs, source: &Path, out: &Path, check: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    let tools = book::ensure_tools(&cache_dir(args))?;
    run(
        "release build of classwise (for the book's figures)",
        cargo().args(["build", "--release", "-p", "classwise"]),
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| paths::repo_root().join("target"));
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let out = here.join(out);
    eprintln!("\n==> book: {}", out.display());
    book::build(
        &tools,
        &target.join("release").join("classwise"),
        &book::BookPaths::new(here.join(source), out.clone()),
    )?;
    eprintln!(
        "==> book: built in {:.1} s; open {}",
        started.elapsed().as_secs_f64(),
        out.join("index.html").display()
    );
    if check {
        book::ensure_chromium()?;
        run(
            "the book in headless Chromium (tests/book_browser.rs)",
            cargo()
                .args(["test", "-p", "classwise", "--test", "book_browser", "--"])
                .args(["--ignored", "--nocapture"])
                .env("CLASSWISE_BOOK_DIR", &out),
        )?;
    }
    Ok(())
}

/// `cargo xtask demo`: set-up without the book tools, then [`run_demo`].
fn demo(args: &SetupArgs, out: &Path) -> anyhow::Result<()> {
    setup(args, BookTools::Skip)?;
    run_demo(out)
}

/// The README's main command after set-up: `classwise demo` from a release build. A relative
/// `out` is taken from the directory `cargo xtask` was started in.
fn run_demo(out: &Path) -> anyhow::Result<()> {
    let out = std::env::current_dir()
        .context("cannot read the current directory")?
        .join(out);
    run(
        "main job (`cargo xtask demo`)",
        cargo()
            .args(["run", "--release", "-p", "classwise", "--", "demo", "--out"])
            .arg(out),
    )
}
