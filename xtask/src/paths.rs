//! Where set-up puts things. The cache location is the trainer's own module, compiled in here
//! too (it uses only std), so that set-up writes exactly where the trainer reads.

use std::path::PathBuf;

#[allow(dead_code)] // data_roots is the trainer's business
#[path = "../../trainer/src/paths.rs"]
mod shared;

pub use shared::FASHION_MNIST_FILES;

/// The workspace root (the parent of `xtask/`).
pub fn repo_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// Per-user cache: `$CLASSWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/classwise`, else
/// `$HOME/.cache/classwise`.
pub fn default_cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("CLASSWISE_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|p| p.join("classwise")))
        .or_else(|| var("HOME").map(|p| p.join(".cache").join("classwise")))
        .unwrap_or_else(|| repo_root().join("target").join("classwise-cache"))
}

/// The link that `.cargo/config.toml` names as `LIBTORCH` (`<repo>/.libtorch`).
pub fn default_libtorch_link() -> PathBuf {
    repo_root().join(".libtorch")
}

/// The manifest of wheels that make up the CPU libtorch.
pub fn default_manifest() -> PathBuf {
    repo_root().join("xtask").join("libtorch-wheels.toml")
}

/// The manifest of wheels that make up the CUDA libtorch (`cargo xtask setup --cuda`).
pub fn default_cuda_manifest() -> PathBuf {
    repo_root().join("xtask").join("libtorch-wheels-cuda.toml")
}
