//! The committed lists of wheels (`xtask/libtorch-wheels.toml` for the CPU libtorch,
//! `xtask/libtorch-wheels-cuda.toml` for the CUDA one) and what to keep from each.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{IoContext, SetupError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The libtorch version tch needs.
    pub torch_version: String,
    /// Directory name of the assembled libtorch inside the cache.
    pub dir_name: String,
    /// Content of `build-version`.
    pub build_version: String,
    /// Empty shared libraries to create (paths relative to the libtorch directory).
    #[serde(default)]
    pub stub: Vec<String>,
    /// `<os>-<arch>` (as Rust's `std::env::consts`) the wheels are built for; any when absent.
    #[serde(default)]
    pub platform: Option<String>,
    /// Bytes the assembled directory takes, when known: with the wheels' sizes, what set-up
    /// announces and checks against the free disk space before downloading.
    #[serde(default)]
    pub unpacked_size: Option<u64>,
    /// Libraries (relative to the libtorch directory) that libtorch opens with dlopen, whose
    /// dependencies set-up checks with `ldd` as it does those of libtorch.so.
    #[serde(default)]
    pub check: Vec<String>,
    #[serde(rename = "wheel")]
    pub wheels: Vec<Wheel>,
    /// Where the manifest was read from (for messages).
    #[serde(skip)]
    pub path: PathBuf,
    /// sha256 of the manifest's text: an assembled directory records it, so a changed manifest
    /// triggers a rebuild.
    #[serde(skip)]
    pub digest: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wheel {
    /// A pip requirement, `name==version`.
    pub requirement: String,
    /// The exact file name pip must produce.
    pub file: String,
    /// Lower-case hex sha256 of that file.
    pub sha256: String,
    /// Size of that file in bytes, when known (for the announced download size).
    #[serde(default)]
    pub size: Option<u64>,
    /// pip's platform-selection flags, so the same file is chosen whatever the local Python.
    #[serde(default)]
    pub pip_tags: Vec<String>,
    pub keep: Vec<Keep>,
}

/// Extract `from` (a file, or a directory prefix ending in `/`) to `to` in the libtorch directory.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keep {
    pub from: String,
    pub to: String,
}

impl Manifest {
    /// Reads and checks a manifest: every sha256 is 64 hex digits, every wheel keeps something.
    pub fn load(path: &Path) -> Result<Self, SetupError> {
        let text = std::fs::read_to_string(path).at("reading the wheel manifest", path)?;
        let bad = |reason: String| SetupError::BadManifest {
            path: path.to_path_buf(),
            reason,
        };
        let mut m: Manifest = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
        for w in &m.wheels {
            let ok_hash = w.sha256.len() == 64 && w.sha256.bytes().all(|b| b.is_ascii_hexdigit());
            if !ok_hash {
                return Err(bad(format!(
                    "wheel `{}`: sha256 `{}` is not 64 hex digits",
                    w.file, w.sha256
                )));
            }
            if w.keep.is_empty() {
                return Err(bad(format!("wheel `{}`: `keep` is empty", w.file)));
            }
        }
        m.path = path.to_path_buf();
        m.digest = crate::digest::sha256_hex(text.as_bytes());
        Ok(m)
    }
}
