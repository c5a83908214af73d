//! Fashion-MNIST from Debian's `dataset-fashion-mnist` package, without root: `apt-get download`
//! and `dpkg -x` into the cache. The trainer looks in the same places (`classwise_trainer::data`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{IoContext, SetupError};

/// The four gzipped idx files of Fashion-MNIST.
pub use crate::paths::FASHION_MNIST_FILES as FILES;

/// Where the Debian package installs the files.
pub const SYSTEM_DIR: &str = "/usr/share/datasets/fashion-mnist";

const PACKAGE: &str = "dataset-fashion-mnist";

fn complete(dir: &Path) -> bool {
    FILES
        .iter()
        .all(|f| std::fs::metadata(dir.join(f)).is_ok_and(|m| m.len() > 0))
}

/// Makes Fashion-MNIST available; returns the directory holding the four files.
pub fn setup_fashion_mnist(cache: &Path, system: &Path) -> Result<PathBuf, SetupError> {
    if complete(system) {
        return Ok(system.to_path_buf());
    }
    let target = cache.join("data").join("fashion-mnist");
    if complete(&target) {
        return Ok(target);
    }
    let work = cache.join("downloads").join("fashion-mnist.partial");
    if work.exists() {
        std::fs::remove_dir_all(&work).at("removing", &work)?;
    }
    std::fs::create_dir_all(&work).at("creating", &work)?;
    let unavailable = |command: &str, output: String, hint: &str| SetupError::DataUnavailable {
        command: command.to_string(),
        output,
        hint: hint.to_string(),
        files: FILES.join(", "),
        target: target.clone(),
    };
    let download = || {
        Command::new("apt-get")
            .args(["download", PACKAGE])
            .current_dir(&work)
            .output()
    };
    let mut out = download().map_err(|e| {
        unavailable(
            "apt-get download dataset-fashion-mnist",
            e.to_string(),
            "apt-get was not found: this is not a Debian-based system.",
        )
    })?;
    if !out.status.success() && is_root() {
        // A fresh machine may have empty package lists; root can refresh them.
        eprintln!("  apt-get download failed; running `apt-get update` once and retrying");
        let _ = Command::new("apt-get").args(["update", "-qq"]).status();
        out = download().at("running apt-get", "apt-get")?;
    }
    if !out.status.success() {
        return Err(unavailable(
            "apt-get download dataset-fashion-mnist",
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
            "If the package is unknown, the package lists are stale: `sudo apt-get update` \
             (Debian 11 or later ships dataset-fashion-mnist in main).",
        ));
    }
    let deb = std::fs::read_dir(&work)
        .at("listing", &work)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| unavailable("apt-get download", "no .deb was written".into(), ""))?;
    let root = work.join("root");
    let out = Command::new("dpkg")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .output()
        .map_err(|e| unavailable("dpkg -x", e.to_string(), "dpkg was not found."))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(unavailable(
            "dpkg -x",
            msg,
            "The downloaded package may be corrupt.",
        ));
    }
    let extracted = root.join(SYSTEM_DIR.trim_start_matches('/'));
    if !complete(&extracted) {
        return Err(unavailable(
            "dpkg -x",
            format!("{} lacks some of the four files", extracted.display()),
            "The package layout changed.",
        ));
    }
    std::fs::create_dir_all(target.parent().unwrap_or(cache)).at("creating", &target)?;
    std::fs::rename(&extracted, &target).at("moving into place", &target)?;
    std::fs::remove_dir_all(&work).at("removing", &work)?;
    Ok(target)
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
