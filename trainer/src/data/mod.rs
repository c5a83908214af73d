//! Data sets: where they are, whether they are intact, and loading them.
//!
//! - [`Dataset`]: `u8` images N×C×H×W and `i64` labels in memory; batches become `f32` in [0,1]
//!   on their device (as `ToTensor` in the reference codes; mean/std normalisation belongs to
//!   the model).
//! - Loaders of the real on-disk formats: [`cifar`] (CIFAR-10/100 binary), [`idx`]
//!   ((Fashion-)MNIST, gzipped or not), [`tiny_imagenet`] (JPEGs, decoded once and cached), and
//!   the seeded [`synthetic`] set. Each checks magic numbers, record sizes, counts and label
//!   ranges and names the file and byte offset (or line) of the first problem.
//! - [`split`]: per-class validation splits (CFA's and WAT's rules); [`augment`]: random crop
//!   and flip.
//! - [`DataSource`] names a data set in a config; [`load`] finds and reads it.

pub mod augment;
mod cache;
pub mod cifar;
pub mod dataset;
pub mod idx;
pub mod loader;
pub mod split;
pub mod synth;
pub mod synthetic;
mod text;
pub mod tiny_imagenet;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use augment::{Augment, PadMode};
pub use cifar::Cifar100Labels;
pub use dataset::{CacheStatus, Dataset, HostSource, Origin, first_per_class};
pub(crate) use loader::batches;
pub use loader::{LoadedBatch, Loader, LoaderPlan};
pub use split::{Split, SplitRule, SplitSpec, ValSize};
pub use synthetic::SyntheticSpec;
pub use tiny_imagenet::ImageCache;

use crate::error::{Result, invalid};

/// A data set classwise knows, with the directory name it has under a data root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetId {
    FashionMnist,
    Cifar10,
    Cifar100,
    TinyImagenet,
}

impl DatasetId {
    pub const ALL: [DatasetId; 4] = [
        DatasetId::FashionMnist,
        DatasetId::Cifar10,
        DatasetId::Cifar100,
        DatasetId::TinyImagenet,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DatasetId::FashionMnist => "Fashion-MNIST",
            DatasetId::Cifar10 => "CIFAR-10",
            DatasetId::Cifar100 => "CIFAR-100",
            DatasetId::TinyImagenet => "Tiny-ImageNet",
        }
    }

    /// Directory under a data root (the names of the official archives).
    pub fn dir_name(self) -> &'static str {
        match self {
            DatasetId::FashionMnist => "fashion-mnist",
            DatasetId::Cifar10 => "cifar-10-batches-bin",
            DatasetId::Cifar100 => "cifar-100-binary",
            DatasetId::TinyImagenet => "tiny-imagenet-200",
        }
    }

    /// Files (or directories) whose presence identifies the data set.
    pub fn marker_files(self) -> &'static [&'static str] {
        match self {
            DatasetId::FashionMnist => &idx::FASHION_MNIST_FILES,
            DatasetId::Cifar10 => &["data_batch_1.bin", "test_batch.bin"],
            DatasetId::Cifar100 => &["train.bin", "test.bin"],
            DatasetId::TinyImagenet => &["wnids.txt", "train", "val"],
        }
    }

    /// Whether the set-up provides it (Fashion-MNIST) or the user must (the others cannot be
    /// downloaded on machines without internet access).
    pub fn provided_by_setup(self) -> bool {
        self == DatasetId::FashionMnist
    }

    /// The number of images of each part in the official release (Tiny-ImageNet's test part
    /// is its labelled `val/` set).
    pub fn official_count(self, part: Part) -> usize {
        match (self, part) {
            (DatasetId::FashionMnist, Part::Train) => 60_000,
            (DatasetId::Cifar10 | DatasetId::Cifar100, Part::Train) => 50_000,
            (DatasetId::TinyImagenet, Part::Train) => 100_000,
            (_, Part::Test) => 10_000,
        }
    }

    /// Whether `dir` holds the marker files (idx files with or without `.gz`).
    fn has_markers(self, dir: &Path) -> bool {
        self.marker_files().iter().all(|f| match self {
            DatasetId::FashionMnist => idx::resolve(dir, idx::stem_of(f)).is_some(),
            _ => dir.join(f).exists(),
        })
    }
}

/// The training or the test part of a data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    Train,
    Test,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Part::Train => "train",
            Part::Test => "test",
        }
    }
}

/// How many images a loader expects in each part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counts {
    /// The official release's counts ([`DatasetId::official_count`]).
    #[default]
    Official,
    /// Exactly these (e.g. a reduced copy of a data set).
    Exactly { train: usize, test: usize },
    /// Whatever the files hold (record sizes, headers and labels are still checked).
    Any,
}

impl Counts {
    /// The expected number of images of `part` of `id`, if checked.
    pub fn expected(self, id: DatasetId, part: Part) -> Option<usize> {
        match (self, part) {
            (Counts::Official, _) => Some(id.official_count(part)),
            (Counts::Exactly { train, .. }, Part::Train) => Some(train),
            (Counts::Exactly { test, .. }, Part::Test) => Some(test),
            (Counts::Any, _) => None,
        }
    }
}

/// Options of the file loaders; the defaults suit the official releases.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct LoadOptions {
    pub counts: Counts,
    /// CIFAR-100 only.
    pub cifar100_labels: Cifar100Labels,
    /// Tiny-ImageNet only.
    pub image_cache: ImageCache,
}

/// A data set named in a config: files of a known data set, or the synthetic set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DataSource {
    Files {
        id: DatasetId,
        /// A data root (searched as `root/<dir_name>`, then `root` itself); `None` searches
        /// [`crate::paths::data_roots`].
        #[serde(default)]
        root: Option<PathBuf>,
        #[serde(default)]
        options: LoadOptions,
    },
    Synthetic(SyntheticSpec),
}

impl DataSource {
    /// The number of classes and the image shape (C, H, W) the data will have, known without
    /// reading any file, so that a configuration can be checked before a run starts.
    pub fn classes_and_shape(&self) -> (usize, [usize; 3]) {
        match self {
            DataSource::Synthetic(s) => (s.classes, [s.channels, s.side, s.side]),
            DataSource::Files { id, options, .. } => match id {
                DatasetId::FashionMnist => (10, [1, 28, 28]),
                DatasetId::Cifar10 => (10, [3, 32, 32]),
                DatasetId::Cifar100 => match options.cifar100_labels {
                    Cifar100Labels::Fine => (100, [3, 32, 32]),
                    Cifar100Labels::Coarse => (20, [3, 32, 32]),
                },
                DatasetId::TinyImagenet => (200, [3, 64, 64]),
            },
        }
    }

    /// The official files of `id` under the default data roots.
    pub fn files(id: DatasetId) -> Self {
        DataSource::Files {
            id,
            root: None,
            options: LoadOptions::default(),
        }
    }
}

/// Loads `part` of `source`. Files are found as [`locate`] finds them (without its header check:
/// the loader checks everything): under the source's own `root` when it names one, else under
/// `data_dir` when given (`--data-dir`), else under [`crate::paths::data_roots`].
pub fn load(source: &DataSource, part: Part, data_dir: Option<&Path>) -> Result<Dataset> {
    let (id, root, options) = match source {
        DataSource::Synthetic(spec) => return spec.generate(part),
        DataSource::Files { id, root, options } => (*id, root, options),
    };
    let roots = crate::paths::data_roots(root.clone().or_else(|| data_dir.map(Path::to_path_buf)));
    let dir = find_dir(id, &roots).map_err(|searched| {
        let list: Vec<String> = searched.iter().map(|p| p.display().to_string()).collect();
        invalid(
            "data",
            id.name(),
            format!(
                "a directory with {} in one of: {}",
                id.marker_files().join(", "),
                list.join(", ")
            ),
        )
    })?;
    load_dir(id, &dir, part, options)
}

/// Loads `part` of data set `id` from its directory `dir`.
pub fn load_dir(id: DatasetId, dir: &Path, part: Part, options: &LoadOptions) -> Result<Dataset> {
    let counts = options.counts;
    let data = match id {
        DatasetId::FashionMnist => idx::load_fashion_mnist(dir, part, counts),
        DatasetId::Cifar10 => cifar::load_cifar10(dir, part, counts),
        DatasetId::Cifar100 => cifar::load_cifar100(dir, part, options.cifar100_labels, counts),
        DatasetId::TinyImagenet => {
            tiny_imagenet::load_tiny_imagenet(dir, part, counts, &options.image_cache)
        }
    }?;
    Ok(match synth::read_marker(dir) {
        Some(spec) => {
            let description = format!("{} — {}", data.origin().description, synth::describe(&spec));
            data.described(description)
        }
        None => data,
    })
}

/// Result of looking for a data set.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Located {
    /// All marker files present (and, for Fashion-MNIST, the idx headers checked).
    Found {
        path: PathBuf,
        #[serde(skip_serializing_if = "Option::is_none")]
        train: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        test: Option<usize>,
    },
    /// Written by `classwise data synth` ([`synth::MARKER`]): a stand-in, not the real set.
    Synthetic {
        path: PathBuf,
        /// Images per class, train and test.
        #[serde(skip_serializing_if = "Option::is_none")]
        counts: Option<[usize; 2]>,
        description: String,
    },
    /// Present but damaged.
    Invalid { path: PathBuf, reason: String },
    /// Not in any of the searched directories.
    Missing { searched: Vec<PathBuf> },
}

/// Candidate directories for `id` under `root`: `root/<dir_name>`, and `root` itself (so that
/// `--data-dir` may point straight at the files).
fn candidates(root: &Path, id: DatasetId) -> [PathBuf; 2] {
    [root.join(id.dir_name()), root.to_path_buf()]
}

/// The first directory under `roots` (in order) with all marker files of `id`, else the
/// directories searched.
pub fn find_dir(id: DatasetId, roots: &[PathBuf]) -> std::result::Result<PathBuf, Vec<PathBuf>> {
    let mut searched = Vec::new();
    for root in roots {
        for dir in candidates(root, id) {
            if id.has_markers(&dir) {
                return Ok(dir);
            }
            if !searched.contains(&dir) {
                searched.push(dir);
            }
        }
    }
    Err(searched)
}

/// Looks for `id` under each root in order; the first directory with all marker files wins.
pub fn locate(id: DatasetId, roots: &[PathBuf]) -> Located {
    match find_dir(id, roots) {
        Ok(dir) => validate(id, dir),
        Err(searched) => Located::Missing { searched },
    }
}

/// Checks a found data set as far as it can be without decoding it: Fashion-MNIST's idx headers
/// and whole streams, CIFAR's file sizes; Tiny-ImageNet is only located (its JPEGs are checked
/// when decoded).
fn validate(id: DatasetId, dir: PathBuf) -> Located {
    if let Some(spec) = synth::read_marker(&dir) {
        return Located::Synthetic {
            counts: spec
                .as_ref()
                .ok()
                .map(|s| [s.train_per_class, s.test_per_class]),
            description: synth::describe(&spec),
            path: dir,
        };
    }
    let checked = match id {
        DatasetId::FashionMnist => idx::check_fashion_mnist(&dir),
        DatasetId::Cifar10 | DatasetId::Cifar100 => cifar::check_release(id, &dir),
        DatasetId::TinyImagenet => {
            return Located::Found {
                path: dir,
                train: None,
                test: None,
            };
        }
    };
    match checked {
        Ok((train, test)) => Located::Found {
            path: dir,
            train: Some(train),
            test: Some(test),
        },
        Err(e) => Located::Invalid {
            path: dir,
            reason: e.to_string(),
        },
    }
}
