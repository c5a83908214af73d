//! Where data sets are looked for; `cargo xtask setup` fills the same cache (xtask compiles
//! this file too, so it must use only std).

use std::path::PathBuf;

/// Per-user cache written by `cargo xtask setup`: `$CLASSWISE_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/classwise`, else `$HOME/.cache/classwise`.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("CLASSWISE_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|p| p.join("classwise")))
        .or_else(|| var("HOME").map(|p| p.join(".cache/classwise")))
}

/// Data roots in the order they are searched. An explicit `--data-dir`, else a non-empty
/// `CLASSWISE_DATA_DIR`, is the only root when given; otherwise the cache's `data/` and
/// Debian's `/usr/share/datasets`.
pub fn data_roots(explicit: Option<PathBuf>) -> Vec<PathBuf> {
    let from_env = || {
        std::env::var_os("CLASSWISE_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    match explicit.or_else(from_env) {
        Some(dir) => vec![dir],
        None => cache_dir()
            .map(|c| c.join("data"))
            .into_iter()
            .chain([PathBuf::from("/usr/share/datasets")])
            .collect(),
    }
}

/// The four files of Fashion-MNIST as shipped (gzipped idx), in its directory `fashion-mnist/`.
pub const FASHION_MNIST_FILES: [&str; 4] = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
];
