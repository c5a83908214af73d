//! `cargo xtask setup --cuda`: the refusals that keep `--cuda` from being silently overridden or
//! tried where its wheels cannot run, and the notes set-up prints about the NVIDIA driver and
//! about `.libtorch` switching between the CPU and the CUDA libtorch.

use std::path::Path;

use crate::error::SetupError;
use crate::libtorch::{self, Ldd, Source};
use crate::manifest::Manifest;

/// `--cuda` assembles from wheels; a `LIBTORCH` or `LIBTORCH_USE_PYTORCH` that selects another
/// libtorch (and would win, see [`Source::from_env`]) is refused, naming the variable.
/// `use_pytorch` is the value of `LIBTORCH_USE_PYTORCH`, for the message.
pub fn check_source(source: &Source, use_pytorch: Option<&str>) -> Result<(), SetupError> {
    match source {
        Source::Wheels => Ok(()),
        Source::User(dir) => Err(SetupError::CudaConflict {
            variable: "LIBTORCH",
            value: dir.display().to_string(),
            selects: "your own libtorch directory",
        }),
        Source::Pytorch => Err(SetupError::CudaConflict {
            variable: "LIBTORCH_USE_PYTORCH",
            value: use_pytorch.unwrap_or_default().to_string(),
            selects: "the torch package of the active Python",
        }),
    }
}

/// This machine as `<os>-<arch>`, in the spelling of Rust's `std::env::consts` (`linux-x86_64`).
pub fn this_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// Refuses a manifest whose wheels are built for another platform than `found`.
pub fn check_platform(manifest: &Manifest, found: &str) -> Result<(), SetupError> {
    match &manifest.platform {
        Some(platform) if platform != found => Err(SetupError::WrongPlatform {
            manifest: manifest.path.clone(),
            platform: platform.clone(),
            found: found.to_string(),
        }),
        _ => Ok(()),
    }
}

/// The library of a CUDA libtorch that links the driver's `libcuda.so.1` directly (torch's
/// NVRTC wrapper, opened lazily): whether `ldd` resolves it tells whether a driver is installed.
const DRIVER_PROBE: &str = "lib/libcaffe2_nvrtc.so";

/// True when `dir` is a CUDA libtorch and the loader finds no NVIDIA driver (`libcuda.so.1`).
/// Set-up does not need one (a CUDA libtorch can be prepared on a machine without a GPU); it
/// says so, and `classwise doctor` on the machine that runs it reports whether CUDA works.
pub fn driver_missing(dir: &Path) -> bool {
    let probe = dir.join(DRIVER_PROBE);
    probe.exists()
        && matches!(libtorch::ldd(&probe), Ok(Ldd::Missing(m)) if m.iter().any(|n| n == "libcuda.so.1"))
}

/// A note for when set-up re-points `link` from a CUDA libtorch to one without CUDA, which a
/// plain `cargo xtask setup`, `test` or `demo` after `setup --cuda` does unless told `--cuda`.
pub fn switch_note(link: &Path, new: &Path) -> Option<String> {
    let old = std::fs::read_link(link).ok()?;
    let version = |dir: &Path| {
        std::fs::read_to_string(dir.join("build-version"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let (was, now) = (version(&old), version(new));
    let is_cuda = |v: &str| v.split_once('+').is_some_and(|(_, s)| s.starts_with("cu"));
    (old != new && is_cuda(&was) && !is_cuda(&now)).then(|| {
        format!(
            "note: {} pointed at the CUDA libtorch {} ({was}); it now points at {} ({}). Pass \
             --cuda (or export CLASSWISE_CUDA=1) to keep the CUDA one",
            link.display(),
            old.display(),
            new.display(),
            if now.is_empty() {
                "no build-version"
            } else {
                &now
            }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn only_wheels_go_with_cuda() {
        assert!(check_source(&Source::Wheels, None).is_ok());
        let user = check_source(&Source::User(PathBuf::from("/opt/libtorch")), None)
            .unwrap_err()
            .to_string();
        assert!(user.contains("LIBTORCH=/opt/libtorch"), "{user}");
        assert!(user.contains("Unset LIBTORCH"), "{user}");
        let py = check_source(&Source::Pytorch, Some("1"))
            .unwrap_err()
            .to_string();
        assert!(py.contains("LIBTORCH_USE_PYTORCH=1"), "{py}");
    }

    #[test]
    fn platform_spelling() {
        let p = this_platform();
        assert_eq!(p.split('-').count(), 2, "{p}");
    }
}
