//! Making a libtorch 2.13.0 available to tch: the user's own (`LIBTORCH`, `LIBTORCH_USE_PYTORCH`)
//! checked for its version, or a CPU (or, with `--cuda`, CUDA) libtorch assembled from PyPI wheels
//! into the cache.
//! Either way `<repo>/.libtorch` (the `LIBTORCH` of `.cargo/config.toml`) is pointed at it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{IoContext, SetupError};
use crate::manifest::Manifest;
use crate::wheel::{self, Pip};

/// Where libtorch comes from, as decided from the environment.
#[derive(Debug, PartialEq, Eq)]
pub enum Source {
    /// `LIBTORCH` set by the user (not the `.cargo/config.toml` default).
    User(PathBuf),
    /// `LIBTORCH_USE_PYTORCH=1`: the torch package of the active Python.
    Pytorch,
    /// Assemble libtorch from wheels (the CPU manifest, or the CUDA one with `--cuda`).
    Wheels,
}

impl Source {
    /// `LIBTORCH` wins over `LIBTORCH_USE_PYTORCH`, as in torch-sys. A `LIBTORCH` equal to `link`
    /// is the value `.cargo/config.toml` injects, not a user choice.
    pub fn from_env(libtorch: Option<&str>, use_pytorch: Option<&str>, link: &Path) -> Self {
        match libtorch.filter(|v| !v.is_empty()) {
            Some(v) if Path::new(v.trim_end_matches('/')) != link => Source::User(PathBuf::from(v)),
            _ if use_pytorch.is_some_and(|v| !v.is_empty() && v != "0") => Source::Pytorch,
            _ => Source::Wheels,
        }
    }
}

/// The version in a `build-version` file, without its `+cpu`/`+cu130` suffix.
pub fn base_version(text: &str) -> &str {
    let t = text.trim();
    t.split_once('+').map_or(t, |(v, _)| v)
}

fn bypass_version_check() -> bool {
    std::env::var_os("LIBTORCH_BYPASS_VERSION_CHECK").is_some()
}

/// Checks a user-supplied libtorch directory.
pub fn check_user_dir(path: &Path, expected: &str) -> Result<(), SetupError> {
    let not = |reason: String| SetupError::NotALibtorch {
        path: path.to_path_buf(),
        reason,
    };
    if !path.is_dir() {
        return Err(not("the directory does not exist".into()));
    }
    let file = path.join("build-version");
    let text = std::fs::read_to_string(&file)
        .map_err(|e| not(format!("cannot read {}: {e}", file.display())))?;
    let found = base_version(&text);
    if found != expected {
        if bypass_version_check() {
            eprintln!(
                "  warning: libtorch {found} at {} (tch needs {expected}); \
                 LIBTORCH_BYPASS_VERSION_CHECK is set, continuing",
                path.display()
            );
        } else {
            return Err(SetupError::WrongLibtorchVersion {
                path: path.to_path_buf(),
                file,
                found: found.to_string(),
                expected: expected.to_string(),
            });
        }
    }
    let cpu = path.join("lib").join("libtorch_cpu.so");
    if !cpu.exists() {
        return Err(not(format!("{} is missing", cpu.display())));
    }
    if !path.join("include").is_dir() {
        return Err(not(format!(
            "{} is missing",
            path.join("include").display()
        )));
    }
    Ok(())
}

/// `LIBTORCH_USE_PYTORCH=1`: builds `<cache>/libtorch-pytorch` out of links into the torch package
/// (torch/lib, torch/include) plus a `build-version`, after checking the version.
pub fn from_pytorch(python: &str, cache: &Path, expected: &str) -> Result<PathBuf, SetupError> {
    const SCRIPT: &str = "import os, torch; print(torch.__version__); \
                          print(os.path.dirname(torch.__file__)); \
                          print(int(torch._C._GLIBCXX_USE_CXX11_ABI))";
    let out = Command::new(python)
        .args(["-c", SCRIPT])
        .output()
        .at("running", python)?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    if !out.status.success() || lines.len() < 3 {
        return Err(SetupError::PytorchMissing {
            python: python.to_string(),
            output: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            expected: expected.to_string(),
        });
    }
    let (version, torch_dir) = (lines[0].trim(), PathBuf::from(lines[1].trim()));
    if base_version(version) != expected && !bypass_version_check() {
        return Err(SetupError::WrongPytorchVersion {
            python: python.to_string(),
            path: torch_dir,
            found: version.to_string(),
            expected: expected.to_string(),
        });
    }
    if lines[2].trim() != "1" {
        eprintln!(
            "  warning: this torch uses the pre-C++11 ABI; export LIBTORCH_CXX11_ABI=0 before building"
        );
    }
    let dir = cache.join("libtorch-pytorch");
    std::fs::create_dir_all(&dir).at("creating", &dir)?;
    for sub in ["lib", "include"] {
        replace_symlink(&torch_dir.join(sub), &dir.join(sub))?;
    }
    let bv = dir.join("build-version");
    std::fs::write(&bv, format!("{version}\n")).at("writing", &bv)?;
    Ok(dir)
}

/// What [`assemble`] did.
pub struct Assembled {
    pub dir: PathBuf,
    /// False when an up-to-date copy was already there.
    pub built: bool,
    /// Wheels downloaded with pip (not found in --wheel-dir or an earlier download).
    pub downloaded: usize,
}

/// Assembles the libtorch described by `manifest` (the CPU or the CUDA one) in `cache`, unless an
/// up-to-date copy is there. Announces the sizes and checks the free space first, when the
/// manifest gives them.
pub fn assemble(
    manifest: &Manifest,
    cache: &Path,
    wheel_dir: Option<&Path>,
    pip: &Pip,
    keep_wheels: bool,
) -> Result<Assembled, SetupError> {
    let dir = cache.join(&manifest.dir_name);
    let marker = dir.join("classwise-setup.txt");
    let complete = std::fs::read_to_string(&marker).is_ok_and(|m| m.trim() == manifest.digest)
        && manifest
            .wheels
            .iter()
            .flat_map(|w| &w.keep)
            .filter(|k| !k.to.ends_with('/'))
            .all(|k| dir.join(&k.to).exists());
    if complete {
        return Ok(Assembled {
            dir,
            built: false,
            downloaded: 0,
        });
    }
    let downloads = cache.join("downloads");
    crate::space::announce_and_check(manifest, cache, wheel_dir, &downloads)?;
    // Fetch and verify every wheel before extracting anything.
    let mut got = Vec::new();
    let mut downloaded = 0;
    for w in &manifest.wheels {
        let (path, fresh) = wheel::obtain(w, manifest, wheel_dir, &downloads, pip)?;
        downloaded += usize::from(fresh);
        got.push(path);
    }
    let partial = cache.join(format!("{}.partial", manifest.dir_name));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).at("removing", &partial)?;
    }
    for (w, path) in manifest.wheels.iter().zip(&got) {
        eprintln!("  extracting {}", w.file);
        wheel::extract(path, &w.keep, &partial, manifest)?;
    }
    for stub in &manifest.stub {
        build_stub(&partial.join(stub))?;
    }
    let bv = partial.join("build-version");
    std::fs::write(&bv, format!("{}\n", manifest.build_version)).at("writing", &bv)?;
    let m = partial.join("classwise-setup.txt");
    std::fs::write(&m, format!("{}\n", manifest.digest)).at("writing", &m)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).at("removing the outdated", &dir)?;
    }
    std::fs::rename(&partial, &dir).at("moving into place", &dir)?;
    if !keep_wheels {
        for p in got.iter().filter(|p| p.starts_with(&downloads)) {
            std::fs::remove_file(p).at("removing", p)?;
        }
    }
    Ok(Assembled {
        dir,
        built: true,
        downloaded,
    })
}

/// An empty shared library named after `path`'s file name (its SONAME), made with `$CC` or `cc`.
fn build_stub(path: &Path) -> Result<(), SetupError> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let soname = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let src = path.with_extension("stub.c");
    std::fs::write(
        &src,
        "/* intentionally empty: see xtask/libtorch-wheels.toml */\n",
    )
    .at("writing", &src)?;
    let failed = |output: String| SetupError::CompilerFailed {
        cc: cc.clone(),
        path: path.to_path_buf(),
        output,
    };
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(path)
        .arg(format!("-Wl,-soname,{soname}"))
        .arg(&src)
        .output()
        .map_err(|e| failed(e.to_string()))?;
    let _ = std::fs::remove_file(&src);
    if out.status.success() {
        Ok(())
    } else {
        Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

/// What `ldd` says about one library.
#[derive(Debug, PartialEq, Eq)]
pub enum Ldd {
    /// Every dependency resolves.
    Resolved,
    /// These dependencies (their names) are not found by the loader.
    Missing(Vec<String>),
    /// `ldd` cannot load it at all (not a shared library, wrong architecture, ...): its output.
    Unloadable(String),
    /// There is no `ldd` on PATH.
    Unavailable,
}

/// Runs `ldd` on `path` without the caller's LD_LIBRARY_PATH, so that only what the library
/// itself (its rpath) and the system provide counts.
pub fn ldd(path: &Path) -> std::io::Result<Ldd> {
    let out = match Command::new("ldd")
        .arg(path)
        .env_remove("LD_LIBRARY_PATH")
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ldd::Unavailable),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let missing: Vec<String> = text
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    if !missing.is_empty() {
        return Ok(Ldd::Missing(missing));
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let both = format!("{} {}", text.trim(), err.trim());
        return Ok(Ldd::Unloadable(both.trim().to_string()));
    }
    Ok(Ldd::Resolved)
}

/// Checks with `ldd` that the dynamic loader resolves every dependency of libtorch's libraries
/// in `dir/lib` (libtorch_cpu.so, and libtorch.so and libtorch_cuda.so when present) and of
/// `extra` (paths relative to `dir`, from the manifest's `check`), so that a missing library is
/// reported here and not as a loader error when a binary starts. `hint` says what to do about it
/// for this source of libtorch.
pub fn check_loadable(dir: &Path, extra: &[String], hint: &'static str) -> Result<(), SetupError> {
    let lib = dir.join("lib");
    let optional = [lib.join("libtorch.so"), lib.join("libtorch_cuda.so")];
    let present = optional.into_iter().filter(|p| p.exists());
    let required =
        std::iter::once(lib.join("libtorch_cpu.so")).chain(extra.iter().map(|e| dir.join(e)));
    for path in present.chain(required) {
        let fail = |detail: String| SetupError::NotLoadable {
            dir: dir.to_path_buf(),
            detail,
            hint,
        };
        match ldd(&path).map_err(|e| fail(format!("cannot run `ldd` ({e})")))? {
            Ldd::Resolved => {}
            Ldd::Unavailable => {
                eprintln!("  warning: no `ldd` on PATH; libtorch's dependencies were not checked");
                return Ok(());
            }
            Ldd::Missing(missing) => {
                return Err(fail(format!(
                    "{} needs {}, which the loader does not find",
                    path.display(),
                    missing.join(", ")
                )));
            }
            Ldd::Unloadable(output) => {
                return Err(fail(format!(
                    "{} is not a loadable shared library ({output})",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// Points `link` at `target`, replacing whatever link was there (atomically, via rename).
pub fn replace_symlink(target: &Path, link: &Path) -> Result<(), SetupError> {
    if let Ok(meta) = std::fs::symlink_metadata(link)
        && !meta.file_type().is_symlink()
    {
        return Err(SetupError::Io {
            context: "refusing to replace a real file or directory with a link",
            path: link.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        });
    }
    let tmp = link.with_extension("tmp-link");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).at("creating a link", &tmp)?;
    std::fs::rename(&tmp, link).at("replacing the link", link)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_suffix_is_ignored() {
        assert_eq!(base_version("2.13.0+cpu\n"), "2.13.0");
        assert_eq!(base_version("2.13.0"), "2.13.0");
        assert_eq!(base_version(" 2.12.1+cu126 "), "2.12.1");
    }

    #[test]
    fn source_precedence() {
        let link = Path::new("/repo/.libtorch");
        assert_eq!(
            Source::from_env(Some("/repo/.libtorch"), None, link),
            Source::Wheels
        );
        assert_eq!(
            Source::from_env(Some("/repo/.libtorch"), Some("1"), link),
            Source::Pytorch
        );
        assert_eq!(
            Source::from_env(Some("/opt/libtorch"), Some("1"), link),
            Source::User(PathBuf::from("/opt/libtorch"))
        );
        assert_eq!(Source::from_env(Some(""), Some("0"), link), Source::Wheels);
    }
}
