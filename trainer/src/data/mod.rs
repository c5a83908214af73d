//! Data sets: where they are and whether they are intact. Loaders come with the trainer core.

pub mod idx;

use std::path::{Path, PathBuf};

use serde::Serialize;

/// A data set classwise knows, with the directory name it has under a data root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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

/// Looks for `id` under each root in order; the first directory with all marker files wins.
pub fn locate(id: DatasetId, roots: &[PathBuf]) -> Located {
    let mut searched = Vec::new();
    for root in roots {
        for dir in candidates(root, id) {
            if id.marker_files().iter().all(|f| dir.join(f).exists()) {
                return validate(id, dir);
            }
            if !searched.contains(&dir) {
                searched.push(dir);
            }
        }
    }
    Located::Missing { searched }
}

fn validate(id: DatasetId, dir: PathBuf) -> Located {
    if id != DatasetId::FashionMnist {
        return Located::Found {
            path: dir,
            train: None,
            test: None,
        };
    }
    match idx::check_fashion_mnist(&dir) {
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
