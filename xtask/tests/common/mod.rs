//! Helpers shared by the set-up tests (`setup.rs`, `cuda.rs`): the set-up binary in a private
//! cache, link and environment; small shared objects, scripts and wheels.

// Each test crate uses a part of these.
#![allow(dead_code)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

/// The set-up binary with an environment free of the caller's libtorch and data settings.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub cmd: Command,
}

impl Setup {
    /// Cache, link and system data directory under a new temporary directory.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cmd = Self::command(dir.path());
        Setup { dir, cmd }
    }

    /// The set-up command with cache, link and system data directory under `root`.
    pub fn command(root: &Path) -> Command {
        let mut cmd = Self::subcommand(root, "setup");
        // The book tools (mdBook, mdbook-katex: minutes of `cargo install` each) are not what
        // these tests are about; without this, every successful set-up here would build them
        // into its fresh cache.
        cmd.arg("--no-book");
        cmd
    }

    /// `cargo xtask <name>` (a command that sets up first: `setup`, `demo`, …) with cache, link
    /// and system data directory under `root`.
    pub fn subcommand(root: &Path, name: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.arg(name)
            .arg("--cache-dir")
            .arg(root.join("cache"))
            .arg("--link")
            .arg(root.join("libtorch-link"))
            .arg("--system-data-dir")
            .arg(root.join("no-system-data"));
        for var in [
            "LIBTORCH",
            "LIBTORCH_USE_PYTORCH",
            "LIBTORCH_BYPASS_VERSION_CHECK",
            "CLASSWISE_WHEEL_DIR",
            "CLASSWISE_PYTHON",
            "CLASSWISE_CACHE_DIR",
            "CLASSWISE_CUDA",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn run(mut self) -> (Output, String, tempfile::TempDir) {
        let out = self.cmd.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out, text, self.dir)
    }
}

pub fn expect_failure(s: Setup, needles: &[&str]) -> tempfile::TempDir {
    let (out, text, dir) = s.run();
    assert_eq!(out.status.code(), Some(1), "expected exit 1, got:\n{text}");
    for n in needles {
        assert!(text.contains(n), "message lacks `{n}`:\n{text}");
    }
    dir
}

/// Builds an empty shared object at `path` with the C compiler; `link` are extra linker args.
pub fn shared_object(path: &Path, link: &[&str]) {
    let src = path.with_extension("c");
    std::fs::write(&src, "int classwise_test_symbol;\n").unwrap();
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(path)
        .arg(&src)
        .args(link)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(src).unwrap();
}

pub fn script(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A zip archive with the given (name, content) entries.
pub fn zip_bytes(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, content) in entries {
        w.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        w.write_all(content).unwrap();
    }
    w.finish().unwrap().into_inner()
}
