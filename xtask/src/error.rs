//! Everything that can go wrong while setting the project up, each with the fix a user can apply.

use std::path::PathBuf;

/// A failed set-up step. Every message names the file, variable or command involved and says what
/// to do about it.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(
        "cannot run the Python interpreter `{python}`: {source}.\n\
         Set-up downloads the libtorch wheels with pip. Install Python 3 with pip \
         (Debian: `apt-get install python3 python3-pip`), point CLASSWISE_PYTHON at an interpreter \
         that has pip, or download the wheels listed in {manifest} elsewhere and pass --wheel-dir DIR"
    )]
    PythonMissing {
        python: String,
        manifest: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "`{python} -m pip` does not work, so the libtorch wheels cannot be downloaded:\n{output}\n\
         Install pip (Debian: `apt-get install python3-pip`; otherwise `{python} -m ensurepip`), \
         set CLASSWISE_PYTHON to an interpreter that has pip, or pass --wheel-dir DIR with the \
         wheels listed in {manifest}"
    )]
    PipMissing {
        python: String,
        output: String,
        manifest: PathBuf,
    },

    #[error(
        "pip could not download `{requirement}` ({file}). Last lines of pip's output:\n{output}\n\
         Check that the Python package index is reachable from this machine (pip's index and \
         proxy settings: PIP_INDEX_URL, HTTPS_PROXY, pip.conf), or download the wheel elsewhere \
         and pass --wheel-dir DIR"
    )]
    DownloadFailed {
        requirement: String,
        file: String,
        output: String,
    },

    #[error(
        "pip reported success for `{requirement}` but `{expected}` is not in {dir} (found: {found}).\n\
         The index served a different build; the manifest {manifest} names the exact file and \
         its sha256. Pass --wheel-dir with that file, or update the manifest"
    )]
    UnexpectedWheel {
        requirement: String,
        expected: String,
        dir: PathBuf,
        found: String,
        manifest: PathBuf,
    },

    #[error(
        "sha256 mismatch for {path}:\n  expected {expected} (from {manifest})\n  got      {actual}\n\
         The file is corrupt, truncated, or a different build. Nothing was extracted from it. \
         Delete it and run `cargo xtask setup` again"
    )]
    HashMismatch {
        path: PathBuf,
        expected: String,
        actual: String,
        manifest: PathBuf,
    },

    #[error("{path} is not a readable wheel (zip archive): {reason}")]
    BadWheel { path: PathBuf, reason: String },

    #[error("wheel {wheel} has no entry `{entry}` that the manifest {manifest} asks to keep")]
    MissingWheelEntry {
        wheel: PathBuf,
        entry: String,
        manifest: PathBuf,
    },

    #[error("cannot read the wheel manifest {path}: {reason}")]
    BadManifest { path: PathBuf, reason: String },

    #[error(
        "LIBTORCH={path} is libtorch {found}, but tch 0.26 needs libtorch {expected} exactly \
         (read from {file}).\n\
         Install libtorch {expected} (the PyPI torch {expected} wheel also works: \
         LIBTORCH_USE_PYTORCH=1), or unset LIBTORCH to let `cargo xtask setup` assemble a CPU \
         libtorch. LIBTORCH_BYPASS_VERSION_CHECK=1 skips this check at your own risk: tch's C \
         shim is generated for one libtorch version"
    )]
    WrongLibtorchVersion {
        path: PathBuf,
        file: PathBuf,
        found: String,
        expected: String,
    },

    #[error(
        "LIBTORCH={path} does not look like a libtorch directory: {reason}.\n\
         Expected {path}/build-version, {path}/lib/libtorch_cpu.so and {path}/include; unset \
         LIBTORCH to let `cargo xtask setup` assemble a CPU libtorch"
    )]
    NotALibtorch { path: PathBuf, reason: String },

    #[error("libtorch in {dir} cannot be loaded: {detail}.\n{hint}")]
    NotLoadable {
        dir: PathBuf,
        detail: String,
        hint: &'static str,
    },

    #[error(
        "LIBTORCH_USE_PYTORCH=1 but `{python}` cannot import torch:\n{output}\n\
         Activate the environment that has torch {expected}, or unset LIBTORCH_USE_PYTORCH"
    )]
    PytorchMissing {
        python: String,
        output: String,
        expected: String,
    },

    #[error(
        "LIBTORCH_USE_PYTORCH=1 and `{python}` has torch {found} at {path}, but tch 0.26 needs \
         torch {expected} exactly. Install torch=={expected} in that environment, or unset \
         LIBTORCH_USE_PYTORCH to let `cargo xtask setup` assemble a CPU libtorch"
    )]
    WrongPytorchVersion {
        python: String,
        path: PathBuf,
        found: String,
        expected: String,
    },

    #[error(
        "cannot build the stub library {path} with the C compiler `{cc}`: {output}\n\
         A C/C++ compiler is needed anyway (tch compiles a C++ shim): install one \
         (Debian: `apt-get install build-essential`) or set CC"
    )]
    CompilerFailed {
        cc: String,
        path: PathBuf,
        output: String,
    },

    #[error(
        "Fashion-MNIST is not available and `{command}` failed:\n{output}\n{hint}\n\
         Alternatively put the four files {files} in {target} yourself \
         (or in a directory passed to the trainer with --data-dir / CLASSWISE_DATA_DIR)"
    )]
    DataUnavailable {
        command: String,
        output: String,
        hint: String,
        files: String,
        target: PathBuf,
    },

    #[error(
        "--cuda (or CLASSWISE_CUDA=1) assembles a CUDA libtorch from PyPI wheels, but \
         {variable}={value} is set, and it selects {selects} instead.\n\
         Unset {variable} to use --cuda, or drop --cuda to keep {variable}"
    )]
    CudaConflict {
        variable: &'static str,
        value: String,
        selects: &'static str,
    },

    #[error(
        "the wheels in {manifest} are built for {platform}, but this machine is {found}: set-up \
         cannot assemble that libtorch here. Point LIBTORCH at a libtorch 2.13.0 built for this \
         machine (with CUDA if you want it) and run `cargo xtask setup` without --cuda"
    )]
    WrongPlatform {
        manifest: PathBuf,
        platform: String,
        found: String,
    },

    #[error(
        "not enough disk space in {dir}: the libtorch assembly needs about {needed} (the wheels \
         still to download plus the assembled directory), but only {available} is free.\n\
         Free some space, or point --cache-dir (CLASSWISE_CACHE_DIR) at a larger disk"
    )]
    NotEnoughSpace {
        dir: PathBuf,
        needed: String,
        available: String,
    },

    #[error("{context}: {path}: {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Attaches the path and the action to an `io::Error`.
pub trait IoContext<T> {
    fn at(self, context: &'static str, path: impl Into<PathBuf>) -> Result<T, SetupError>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, context: &'static str, path: impl Into<PathBuf>) -> Result<T, SetupError> {
        self.map_err(|source| SetupError::Io {
            context,
            path: path.into(),
            source,
        })
    }
}
