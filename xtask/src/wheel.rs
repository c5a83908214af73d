//! Getting a wheel (local directory, earlier download, or pip), checking its sha256, and
//! extracting the kept files.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::digest::sha256_file;
use crate::error::{IoContext, SetupError};
use crate::manifest::{Keep, Manifest, Wheel};

/// Fails unless `path` has the sha256 the manifest commits to.
pub fn verify(path: &Path, wheel: &Wheel, manifest: &Manifest) -> Result<(), SetupError> {
    let actual = sha256_file(path)?;
    if actual.eq_ignore_ascii_case(&wheel.sha256) {
        Ok(())
    } else {
        Err(SetupError::HashMismatch {
            path: path.to_path_buf(),
            expected: wheel.sha256.clone(),
            actual,
            manifest: manifest.path.clone(),
        })
    }
}

/// How set-up talks to pip.
pub struct Pip {
    pub python: String,
}

impl Pip {
    /// Checks that the interpreter runs and has pip.
    pub fn check(&self, manifest: &Manifest) -> Result<(), SetupError> {
        let out = Command::new(&self.python)
            .args(["-m", "pip", "--version"])
            .output()
            .map_err(|source| SetupError::PythonMissing {
                python: self.python.clone(),
                manifest: manifest.path.clone(),
                source,
            })?;
        if out.status.success() {
            Ok(())
        } else {
            Err(SetupError::PipMissing {
                python: self.python.clone(),
                output: tail(&out.stderr, &out.stdout, 6),
                manifest: manifest.path.clone(),
            })
        }
    }

    /// `pip download` of exactly one wheel into `dest`.
    pub fn download(&self, wheel: &Wheel, dest: &Path) -> Result<(), SetupError> {
        eprintln!("  downloading {} with pip ...", wheel.requirement);
        let out = Command::new(&self.python)
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
            .args(["--disable-pip-version-check", "--progress-bar", "off"])
            .args(&wheel.pip_tags)
            .arg("--dest")
            .arg(dest)
            .arg(&wheel.requirement)
            .output()
            .at("running pip", &self.python)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(SetupError::DownloadFailed {
                requirement: wheel.requirement.clone(),
                file: wheel.file.clone(),
                output: tail(&out.stderr, &out.stdout, 8),
            })
        }
    }
}

/// The last `n` non-empty lines of a command's output, indented.
fn tail(stderr: &[u8], stdout: &[u8], n: usize) -> String {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(stdout),
        String::from_utf8_lossy(stderr)
    );
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Finds a verified copy of `wheel`: in `wheel_dir` if given, else in `downloads` (an earlier
/// run), else downloads it there with pip. Returns its path and whether it was downloaded now.
pub fn obtain(
    wheel: &Wheel,
    manifest: &Manifest,
    wheel_dir: Option<&Path>,
    downloads: &Path,
    pip: &Pip,
) -> Result<(PathBuf, bool), SetupError> {
    if let Some(dir) = wheel_dir {
        let p = dir.join(&wheel.file);
        if p.exists() {
            verify(&p, wheel, manifest)?;
            return Ok((p, false));
        }
        eprintln!(
            "  {} is not in --wheel-dir {}; trying pip",
            wheel.file,
            dir.display()
        );
    }
    let p = downloads.join(&wheel.file);
    if p.exists() {
        if verify(&p, wheel, manifest).is_ok() {
            return Ok((p, false));
        }
        eprintln!(
            "  discarding {} from an earlier run: wrong sha256",
            p.display()
        );
        std::fs::remove_file(&p).at("removing", &p)?;
    }
    std::fs::create_dir_all(downloads).at("creating", downloads)?;
    pip.check(manifest)?;
    pip.download(wheel, downloads)?;
    if !p.exists() {
        let found = std::fs::read_dir(downloads)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        return Err(SetupError::UnexpectedWheel {
            requirement: wheel.requirement.clone(),
            expected: wheel.file.clone(),
            dir: downloads.to_path_buf(),
            found,
            manifest: manifest.path.clone(),
        });
    }
    verify(&p, wheel, manifest)?;
    Ok((p, true))
}

/// Extracts the entries `keep` names from the wheel at `path` into `dest`.
pub fn extract(
    path: &Path,
    keep: &[Keep],
    dest: &Path,
    manifest: &Manifest,
) -> Result<(), SetupError> {
    let bad = |reason: String| SetupError::BadWheel {
        path: path.to_path_buf(),
        reason,
    };
    let file = File::open(path).at("opening", path)?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut used = vec![false; keep.len()];
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().map_err(|e| bad(e.to_string()))?.to_string();
        let Some((k, rel)) = keep
            .iter()
            .enumerate()
            .find_map(|(k, keep)| target_of(&name, keep).map(|rel| (k, rel)))
        else {
            continue;
        };
        used[k] = true;
        let out_path = dest.join(&rel);
        if let Some(parent) = out_path.parent() {
            std::fs::create_dir_all(parent).at("creating", parent)?;
        }
        let mut out = File::create(&out_path).at("creating", &out_path)?;
        io::copy(&mut entry, &mut out).at("extracting into", &out_path)?;
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(SetupError::MissingWheelEntry {
            wheel: path.to_path_buf(),
            entry: keep[k].from.clone(),
            manifest: manifest.path.clone(),
        });
    }
    Ok(())
}

/// Where an archive entry goes, if a `keep` rule selects it. Rejects paths that would escape.
fn target_of(name: &str, keep: &Keep) -> Option<String> {
    let rel = if keep.from.ends_with('/') {
        let rest = name.strip_prefix(&keep.from)?;
        format!("{}{}", keep.to, rest)
    } else if name == keep.from {
        keep.to.clone()
    } else {
        return None;
    };
    let safe = Path::new(&rel)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    safe.then_some(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_rules_select_prefixes_and_single_files() {
        let dir = Keep {
            from: "torch/include/".into(),
            to: "include/".into(),
        };
        let file = Keep {
            from: "torch/lib/libc10.so".into(),
            to: "lib/libc10.so".into(),
        };
        assert_eq!(
            target_of("torch/include/ATen/ATen.h", &dir).as_deref(),
            Some("include/ATen/ATen.h")
        );
        assert_eq!(target_of("torch/lib/libc10.so", &dir), None);
        assert_eq!(
            target_of("torch/lib/libc10.so", &file).as_deref(),
            Some("lib/libc10.so")
        );
        assert_eq!(target_of("torch/lib/libc10.so.bak", &file), None);
        assert_eq!(target_of("torch/include/../../etc/passwd", &dir), None);
    }
}
