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

/// Per-user cache, by the trainer's own rule ([`shared::cache_dir`]: `$CLASSWISE_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/classwise`, else `$HOME/.cache/classwise`); only where none of these is
/// set, `<repo>/target/classwise-cache` (which the trainer then finds only through
/// `CLASSWISE_CACHE_DIR` or `--data-dir`).
pub fn default_cache_dir() -> PathBuf {
    shared::cache_dir().unwrap_or_else(|| repo_root().join("target").join("classwise-cache"))
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
