//! The environment report behind `classwise doctor`: tch and libtorch versions, which libtorch
//! was actually loaded, CUDA/cuDNN, threads, and the data sets found.

use std::path::{Path, PathBuf};

use serde::Serialize;

mod text;

use crate::LIBTORCH_VERSION;
use crate::data::{self, DatasetId, Located};

#[derive(Debug, Serialize)]
pub struct Report {
    /// tch crate version (from Cargo.lock at build time).
    pub tch_version: &'static str,
    pub libtorch: LibtorchInfo,
    pub cuda: CudaInfo,
    pub threads: Threads,
    /// `Device::cuda_if_available()`.
    pub default_device: String,
    pub datasets: Vec<DatasetStatus>,
    /// Each problem with what to do about it; empty when everything needed works.
    pub problems: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct LibtorchInfo {
    /// The version tch 0.26 needs.
    pub expected: &'static str,
    /// `build-version` of the libtorch this binary was linked against.
    pub build_time_version: &'static str,
    /// lib directory this binary was linked against (its rpath).
    pub build_time_lib_dir: &'static str,
    /// Where the running process loaded libtorch_cpu.so from (from /proc/self/maps).
    pub loaded_lib_dir: Option<PathBuf>,
    /// `build-version` next to the loaded library, if readable.
    pub loaded_version: Option<String>,
    pub has_openmp: bool,
    pub has_mkl: bool,
    pub has_mkldnn: bool,
}

#[derive(Debug, Serialize)]
pub struct CudaInfo {
    /// libtorch's `at::hasCUDA()`: false without a usable device, even for a CUDA build
    /// (`cuda_library_loaded` tells the build).
    pub compiled_with_cuda: bool,
    /// libtorch_cuda.so is mapped into the process and is not the empty CPU stub.
    pub cuda_library_loaded: bool,
    pub available: bool,
    pub device_count: i64,
    pub cudnn_available: bool,
    pub cudnn_version: Option<i64>,
    pub cudart_version: Option<i64>,
}

#[derive(Debug, Serialize)]
pub struct Threads {
    pub intra_op: i32,
    pub inter_op: i32,
    pub available_cores: usize,
}

#[derive(Debug, Serialize)]
pub struct DatasetStatus {
    pub id: DatasetId,
    pub name: &'static str,
    pub required: bool,
    #[serde(flatten)]
    pub located: Located,
}

/// Mapped files of this process whose name is `file_name` (Linux; empty elsewhere).
fn mapped(file_name: &str) -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut out: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(PathBuf::from)
        .filter(|p| p.file_name().is_some_and(|n| n == file_name))
        .collect();
    out.dedup();
    out
}

/// An empty stub (as `cargo xtask setup` builds for CPU) is a few kB; the real library is
/// hundreds of MB.
fn is_real_library(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 1 << 20)
}

/// Builds the report. `data_roots` as in [`crate::paths::data_roots`].
pub fn report(data_roots: &[PathBuf]) -> Report {
    let mut problems = Vec::new();
    let loaded = mapped("libtorch_cpu.so").into_iter().next();
    let loaded_lib_dir = loaded
        .as_ref()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let loaded_version = loaded_lib_dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(d.join("../build-version")).ok())
        .map(|v| v.trim().to_string());
    let build_time_version = env!("CLASSWISE_LIBTORCH_BUILD_VERSION");
    let base = |v: &str| v.split('+').next().unwrap_or("").to_string();
    match &loaded_version {
        Some(v) if base(v) != LIBTORCH_VERSION => problems.push(format!(
            "the loaded libtorch ({}) is version {v}, but tch {} needs {LIBTORCH_VERSION}: \
             run `cargo xtask setup` and rebuild, or fix LD_LIBRARY_PATH",
            loaded_lib_dir
                .as_deref()
                .unwrap_or(Path::new("?"))
                .display(),
            env!("CLASSWISE_TCH_VERSION"),
        )),
        Some(_) => {}
        None => problems.push(format!(
            "cannot tell which libtorch is loaded (no build-version next to {}); \
             expected libtorch {LIBTORCH_VERSION}",
            loaded_lib_dir
                .as_deref()
                .map_or("an unknown location".into(), |d| d.display().to_string())
        )),
    }
    if base(build_time_version) != LIBTORCH_VERSION {
        problems.push(format!(
            "this binary was built against libtorch `{build_time_version}`, tch needs \
             {LIBTORCH_VERSION}: run `cargo xtask setup`, then rebuild"
        ));
    }

    let cuda_library_loaded = mapped("libtorch_cuda.so")
        .iter()
        .any(|p| is_real_library(p));
    let available = tch::Cuda::is_available();
    let cuda = CudaInfo {
        compiled_with_cuda: tch::utils::has_cuda(),
        cuda_library_loaded,
        available,
        device_count: tch::Cuda::device_count(),
        cudnn_available: available && tch::Cuda::cudnn_is_available(),
        cudnn_version: available.then(tch::utils::version_cudnn),
        cudart_version: available.then(tch::utils::version_cudart),
    };
    if let Some(problem) = cuda_problem(
        cuda_library_loaded,
        available,
        std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
        Path::new(NVIDIA_DRIVER_FILE).exists(),
    ) {
        problems.push(problem);
    }

    let datasets: Vec<DatasetStatus> = DatasetId::ALL
        .into_iter()
        .map(|id| DatasetStatus {
            id,
            name: id.name(),
            required: id.provided_by_setup(),
            located: data::locate(id, data_roots),
        })
        .collect();
    for d in &datasets {
        match &d.located {
            Located::Found { .. } | Located::Synthetic { .. } => {}
            Located::Invalid { path, reason } => problems.push(format!(
                "{} in {} is damaged: {reason}. {}",
                d.name,
                path.display(),
                if d.required {
                    "Delete it and run `cargo xtask setup`"
                } else {
                    "Replace the damaged files with those of the official release"
                }
            )),
            Located::Missing { .. } if !d.required => {}
            Located::Missing { searched } => problems.push(format!(
                "{} not found (searched {}): run `cargo xtask setup`, or pass --data-dir \
                 (or set CLASSWISE_DATA_DIR) to a directory holding `{}/` with {}",
                d.name,
                searched
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                d.id.dir_name(),
                d.id.marker_files().join(", ")
            )),
        }
    }

    Report {
        tch_version: env!("CLASSWISE_TCH_VERSION"),
        libtorch: LibtorchInfo {
            expected: LIBTORCH_VERSION,
            build_time_version,
            build_time_lib_dir: env!("CLASSWISE_LIBTORCH_LIB"),
            loaded_lib_dir,
            loaded_version,
            has_openmp: tch::utils::has_openmp(),
            has_mkl: tch::utils::has_mkl(),
            has_mkldnn: tch::utils::has_mkldnn(),
        },
        cuda,
        threads: Threads {
            intra_op: tch::get_num_threads(),
            inter_op: tch::get_num_interop_threads(),
            available_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        default_device: format!("{:?}", crate::default_device()),
        datasets,
        problems,
    }
}

/// The file the NVIDIA kernel driver creates when it is loaded.
const NVIDIA_DRIVER_FILE: &str = "/proc/driver/nvidia/version";

/// What keeps CUDA from working, from what the process sees: whether the CUDA libtorch is
/// loaded (not the CPU stub), whether libtorch finds a device, `CUDA_VISIBLE_DEVICES`, and
/// whether the NVIDIA driver is loaded. `None` when there is nothing to say (CUDA works, or a
/// CPU machine with the CPU libtorch).
pub fn cuda_problem(
    cuda_library_loaded: bool,
    available: bool,
    visible_devices: Option<&str>,
    driver_loaded: bool,
) -> Option<String> {
    let hidden = visible_devices
        .map(str::trim)
        .filter(|v| v.is_empty() || *v == "-1" || *v == "NoDevFiles");
    if available || (!cuda_library_loaded && !driver_loaded) {
        return None;
    }
    Some(match (cuda_library_loaded, driver_loaded, hidden) {
        (false, _, _) => "an NVIDIA driver is loaded but this libtorch is the CPU build: run \
                          `cargo xtask setup --cuda` (no rebuild needed) to use the GPU"
            .into(),
        (true, false, _) => format!(
            "a CUDA libtorch is loaded but no NVIDIA driver is ({NVIDIA_DRIVER_FILE} is \
             missing): install the driver (CUDA 13.0 needs R580 or newer) and check with \
             `nvidia-smi`; training falls back to the CPU"
        ),
        (true, true, Some(v)) => format!(
            "a CUDA libtorch and the NVIDIA driver are loaded but CUDA_VISIBLE_DEVICES = \"{v}\" \
             hides every GPU; training falls back to the CPU"
        ),
        (true, true, None) => "a CUDA libtorch and the NVIDIA driver are loaded but no CUDA \
                               device is usable: check `nvidia-smi` (a driver older than the \
                               CUDA 13.0 libtorch needs, R580, or a container without the GPU \
                               passed through); training falls back to the CPU"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::cuda_problem;

    #[test]
    fn cuda_problems_name_their_cause() {
        // CUDA works, or a CPU machine with the CPU build: nothing to say.
        assert_eq!(cuda_problem(true, true, None, true), None);
        assert_eq!(cuda_problem(false, false, None, false), None);
        let say = |lib, vis, drv| cuda_problem(lib, false, vis, drv).unwrap();
        assert!(say(false, None, true).contains("cargo xtask setup --cuda"));
        assert!(say(true, None, false).contains("no NVIDIA driver"));
        assert!(say(true, Some("-1"), true).contains("CUDA_VISIBLE_DEVICES = \"-1\""));
        assert!(say(true, Some(""), true).contains("hides every GPU"));
        assert!(say(true, Some("0"), true).contains("no CUDA device is usable"));
    }
}
