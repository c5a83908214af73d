//! `cargo xtask setup` in bad and good states, run as the real binary with a private cache,
//! link and environment. Each failure must be a clear message naming what is wrong.

mod common;

use std::path::{Path, PathBuf};

use common::{Setup, expect_failure, script, sha256, shared_object, zip_bytes};

/// A directory that passes the libtorch checks, with the given build-version.
fn fake_libtorch(root: &Path, version: &str) -> PathBuf {
    let dir = root.join("libtorch");
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    std::fs::create_dir_all(dir.join("include")).unwrap();
    shared_object(&dir.join("lib/libtorch_cpu.so"), &[]);
    std::fs::write(dir.join("build-version"), format!("{version}\n")).unwrap();
    dir
}

const MANIFEST: &str = include_str!("../libtorch-wheels.toml");

fn manifest_files() -> Vec<String> {
    MANIFEST
        .lines()
        .filter_map(|l| l.strip_prefix("file = \""))
        .map(|l| l.trim_end_matches('"').to_string())
        .collect()
}

#[test]
fn wheel_with_wrong_hash_is_rejected_before_anything_is_extracted() {
    let mut s = Setup::new();
    let wheels = s.path("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    let files = manifest_files();
    assert_eq!(files.len(), 3, "the manifest lists torch, cudart and cupti");
    for f in &files {
        std::fs::write(wheels.join(f), b"this is not the wheel you are looking for").unwrap();
    }
    s.cmd.arg("--wheel-dir").arg(&wheels);
    let dir = expect_failure(
        s,
        &[
            "sha256 mismatch",
            &files[0],
            "60fcdcb2f3876e21146cb4524ef06397d727ca9ad5f020818547e25075fe3cb7",
            &sha256(b"this is not the wheel you are looking for"),
            "libtorch-wheels.toml",
        ],
    );
    let cache = dir.path().join("cache");
    assert!(!cache.join("libtorch-2.13.0-cpu").exists());
    assert!(!cache.join("libtorch-2.13.0-cpu.partial").exists());
    assert!(!dir.path().join("libtorch-link").exists());
}

#[test]
fn user_libtorch_of_the_wrong_version_is_refused() {
    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.12.0+cu126");
    s.cmd.env("LIBTORCH", &lt).arg("--no-data");
    let dir = expect_failure(
        s,
        &[
            "is libtorch 2.12.0",
            "needs libtorch 2.13.0",
            lt.to_str().unwrap(),
            "build-version",
        ],
    );
    assert!(!dir.path().join("libtorch-link").exists());
}

#[test]
fn user_libtorch_that_is_not_a_libtorch_is_refused() {
    let mut s = Setup::new();
    let missing = s.path("nowhere");
    s.cmd.env("LIBTORCH", &missing).arg("--no-data");
    expect_failure(s, &["does not look like a libtorch", "does not exist"]);

    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.13.0");
    std::fs::remove_file(lt.join("lib/libtorch_cpu.so")).unwrap();
    s.cmd.env("LIBTORCH", &lt).arg("--no-data");
    expect_failure(s, &["libtorch_cpu.so is missing"]);
}

#[test]
fn user_libtorch_with_a_missing_dependency_is_refused() {
    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.13.0+cu130");
    // libtorch_cpu.so linked against a library that is then removed.
    let dep_dir = s.path("deps");
    std::fs::create_dir_all(&dep_dir).unwrap();
    shared_object(&dep_dir.join("libclasswise_gone.so"), &[]);
    let d = format!("-L{}", dep_dir.display());
    shared_object(
        &lt.join("lib/libtorch_cpu.so"),
        &["-Wl,--no-as-needed", &d, "-lclasswise_gone"],
    );
    std::fs::remove_file(dep_dir.join("libclasswise_gone.so")).unwrap();
    s.cmd.env("LIBTORCH", &lt).arg("--no-data");
    expect_failure(
        s,
        &[
            "cannot be loaded",
            "libtorch_cpu.so needs libclasswise_gone.so",
            "LD_LIBRARY_PATH",
        ],
    );
}

#[test]
fn user_libtorch_of_the_right_version_is_linked() {
    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.13.0+cu130");
    s.cmd.env("LIBTORCH", &lt).arg("--no-data");
    let (out, text, dir) = s.run();
    assert!(out.status.success(), "{text}");
    let link = dir.path().join("libtorch-link");
    assert_eq!(std::fs::read_link(&link).unwrap(), lt);
}

/// `cargo xtask demo` sets up without the book tools (issue 37, item 7: the main job needs no
/// book tools): with a user libtorch and no data step, the only Cargo call it makes is the
/// demo's `cargo run`, never the `cargo install` of mdBook or mdbook-katex.
#[test]
fn demo_sets_up_without_the_book_tools() {
    let dir = tempfile::tempdir().unwrap();
    let lt = fake_libtorch(dir.path(), "2.13.0");
    let calls = dir.path().join("cargo-calls");
    // A Cargo that only notes its arguments, one call a line.
    let cargo = dir.path().join("bin/cargo");
    script(&cargo, &format!("echo \"$*\" >> '{}'", calls.display()));
    let out_dir = dir.path().join("demo-out");
    let out = Setup::subcommand(dir.path(), "demo")
        .env("LIBTORCH", &lt)
        .env("CARGO", &cargo)
        .arg("--no-data")
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        format!(
            "run --release -p classwise -- demo --out {}\n",
            out_dir.display()
        ),
        "{text}"
    );
    assert!(!dir.path().join("cache/book-tools").exists(), "{text}");
    assert!(!text.contains("mdbook"), "{text}");
}

#[test]
fn bypass_variable_lets_a_wrong_version_through_with_a_warning() {
    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.12.0");
    s.cmd
        .env("LIBTORCH", &lt)
        .env("LIBTORCH_BYPASS_VERSION_CHECK", "1")
        .arg("--no-data");
    let (out, text, _dir) = s.run();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("warning") && text.contains("2.12.0"),
        "{text}"
    );
}

#[test]
fn missing_python_is_explained() {
    let mut s = Setup::new();
    let python = s.path("no-such-python3");
    s.cmd.env("CLASSWISE_PYTHON", &python).arg("--no-data");
    expect_failure(
        s,
        &[
            "cannot run the Python interpreter",
            python.to_str().unwrap(),
            "pip",
            "--wheel-dir",
        ],
    );
}

#[test]
fn missing_pip_is_explained() {
    let mut s = Setup::new();
    let python = s.path("bin/python3");
    script(&python, "echo \"$0: No module named pip\" >&2\nexit 1");
    s.cmd.env("CLASSWISE_PYTHON", &python).arg("--no-data");
    expect_failure(
        s,
        &[
            "-m pip` does not work",
            "No module named pip",
            "python3-pip",
        ],
    );
}

#[test]
fn unreachable_package_index_is_explained() {
    let mut s = Setup::new();
    let links = s.path("empty-links");
    std::fs::create_dir_all(&links).unwrap();
    // Port 9 on loopback refuses connections at once: the index is unreachable.
    s.cmd
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("PIP_FIND_LINKS", &links)
        .env("PIP_RETRIES", "0")
        .env("PIP_TIMEOUT", "5")
        .env("PIP_NO_CACHE_DIR", "1")
        .arg("--no-data");
    expect_failure(
        s,
        &[
            "pip could not download `torch==2.13.0`",
            "reachable",
            "--wheel-dir",
        ],
    );
}

#[test]
fn pytorch_of_the_wrong_version_is_refused() {
    let mut s = Setup::new();
    let python = s.path("bin/python3");
    script(&python, "echo 2.12.0+cu126\necho /opt/fake/torch\necho 1");
    s.cmd
        .env("LIBTORCH_USE_PYTORCH", "1")
        .env("CLASSWISE_PYTHON", &python)
        .arg("--no-data");
    expect_failure(
        s,
        &["has torch 2.12.0+cu126", "/opt/fake/torch", "torch==2.13.0"],
    );
}

#[test]
fn pytorch_that_cannot_be_imported_is_explained() {
    let mut s = Setup::new();
    let python = s.path("bin/python3");
    script(
        &python,
        "echo \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1",
    );
    s.cmd
        .env("LIBTORCH_USE_PYTORCH", "1")
        .env("CLASSWISE_PYTHON", &python)
        .arg("--no-data");
    expect_failure(s, &["cannot import torch", "No module named 'torch'"]);
}

#[test]
fn fashion_mnist_that_cannot_be_fetched_is_explained() {
    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.13.0");
    let bin = s.path("bin");
    // Only a failing apt-get (and the real ldd, which set-up uses to check libraries) on PATH.
    std::fs::create_dir_all(&bin).unwrap();
    if let Some(ldd) = ["/usr/bin/ldd", "/bin/ldd"]
        .iter()
        .find(|p| Path::new(p).exists())
    {
        std::os::unix::fs::symlink(ldd, bin.join("ldd")).unwrap();
    }
    script(
        &bin.join("apt-get"),
        "echo 'E: Unable to locate package dataset-fashion-mnist' >&2\nexit 100",
    );
    s.cmd.env("LIBTORCH", &lt).env("PATH", &bin);
    expect_failure(
        s,
        &[
            "Fashion-MNIST is not available",
            "apt-get download dataset-fashion-mnist",
            "Unable to locate package",
            "apt-get update",
            "train-images-idx3-ubyte.gz",
        ],
    );
}

#[test]
fn system_fashion_mnist_is_used_when_present() {
    let mut s = Setup::new();
    let lt = fake_libtorch(s.dir.path(), "2.13.0");
    let system = s.path("no-system-data");
    std::fs::create_dir_all(&system).unwrap();
    for f in [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ] {
        std::fs::write(system.join(f), b"x").unwrap();
    }
    s.cmd.env("LIBTORCH", &lt);
    let (out, text, _dir) = s.run();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("Fashion-MNIST: {}", system.display())),
        "{text}"
    );
}

#[test]
fn assembly_from_small_wheels_extracts_kept_files_stubs_and_is_idempotent() {
    let s = Setup::new();
    let root = s.dir.path().to_path_buf();
    let wheels = root.join("wheels");
    std::fs::create_dir_all(&wheels).unwrap();
    let a = zip_bytes(&[
        ("pkg/include/a.h", b"int a;"),
        ("pkg/include/sub/b.h", b"int b;"),
        ("pkg/lib/libkeep.so", b"keep"),
        ("pkg/lib/libdrop.so", b"drop"),
    ]);
    let b = zip_bytes(&[("other/lib/libextra.so.1", b"extra")]);
    std::fs::write(wheels.join("a-1.0-py3-none-any.whl"), &a).unwrap();
    std::fs::write(wheels.join("b-1.0-py3-none-any.whl"), &b).unwrap();
    let manifest = root.join("manifest.toml");
    std::fs::write(
        &manifest,
        format!(
            r#"torch_version = "2.13.0"
dir_name = "mini"
build_version = "2.13.0+cpu"
stub = ["lib/libtorch_cpu.so"]

[[wheel]]
requirement = "a==1.0"
file = "a-1.0-py3-none-any.whl"
sha256 = "{}"
keep = [{{ from = "pkg/include/", to = "include/" }}, {{ from = "pkg/lib/libkeep.so", to = "lib/libkeep.so" }}]

[[wheel]]
requirement = "b==1.0"
file = "b-1.0-py3-none-any.whl"
sha256 = "{}"
keep = [{{ from = "other/lib/libextra.so.1", to = "lib/libextra.so.1" }}]
"#,
            sha256(&a),
            sha256(&b)
        ),
    )
    .unwrap();
    let run = || {
        let out = Setup::command(&root)
            .arg("--manifest")
            .arg(&manifest)
            .arg("--wheel-dir")
            .arg(&wheels)
            .arg("--no-data")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{text}");
        text
    };
    let first = run();
    assert!(first.contains("assembled"), "{first}");
    let dir = root.join("cache/mini");
    assert_eq!(
        std::fs::read(dir.join("include/sub/b.h")).unwrap(),
        b"int b;"
    );
    assert_eq!(std::fs::read(dir.join("lib/libkeep.so")).unwrap(), b"keep");
    assert_eq!(
        std::fs::read(dir.join("lib/libextra.so.1")).unwrap(),
        b"extra"
    );
    assert!(!dir.join("lib/libdrop.so").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("build-version")).unwrap(),
        "2.13.0+cpu\n"
    );
    // The stub is a real (empty) shared object: ELF magic.
    let stub = std::fs::read(dir.join("lib/libtorch_cpu.so")).unwrap();
    assert_eq!(&stub[..4], b"\x7fELF");
    assert_eq!(std::fs::read_link(root.join("libtorch-link")).unwrap(), dir);
    // Wheels given with --wheel-dir are the user's: never deleted.
    assert!(wheels.join("a-1.0-py3-none-any.whl").exists());

    let second = run();
    assert!(second.contains("up to date"), "{second}");

    // A kept entry missing from a wheel is named.
    std::fs::remove_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("libextra.so.1\", to", "libnothere.so\", to"),
    )
    .unwrap();
    let mut s = Setup::new();
    s.cmd
        .arg("--manifest")
        .arg(&manifest)
        .arg("--wheel-dir")
        .arg(&wheels)
        .arg("--no-data");
    expect_failure(s, &["has no entry `other/lib/libnothere.so`"]);
}
