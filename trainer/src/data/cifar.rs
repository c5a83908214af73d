//! CIFAR-10 and CIFAR-100 in their binary versions (Krizhevsky 2009; the archives
//! `cifar-10-binary.tar.gz` and `cifar-100-binary.tar.gz`).
//!
//! A record is its label byte(s) followed by 3072 pixel bytes: the red plane, the green plane,
//! then the blue plane, each 32×32 row-major. That is already the C×H×W layout, so the pixels
//! are copied as they are. CIFAR-10 has one label byte per record, 10,000 records per file
//! (`data_batch_1.bin`..`data_batch_5.bin`, `test_batch.bin`); CIFAR-100 has a coarse (20
//! superclasses) and a fine (100 classes) label byte, 50,000 records in `train.bin` and 10,000 in
//! `test.bin`. As in every reference code, the test set is the full 10k set; the splits of the
//! training set are made by [`super::split`].

use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::Tensor;

use super::dataset::{Dataset, Origin, images_from_bytes, numbered_classes};
use super::text::read_class_names;
use super::{Counts, DatasetId, Part};
use crate::error::{IoContext, Result, TrainerError, invalid};

/// Side of a CIFAR image.
pub const SIDE: usize = 32;
/// Pixel bytes per record (3 planes of 32×32).
pub const PIXEL_BYTES: usize = 3 * SIDE * SIDE;

/// The five CIFAR-10 training files, in the order their records are concatenated.
pub const CIFAR10_TRAIN_FILES: [&str; 5] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
];
pub const CIFAR10_TEST_FILE: &str = "test_batch.bin";
/// CIFAR-10 class names, used when `batches.meta.txt` is absent.
pub const CIFAR10_CLASSES: [&str; 10] = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];

/// Which CIFAR-100 label byte becomes the class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cifar100Labels {
    /// The 100 classes (second label byte); what the papers use.
    #[default]
    Fine,
    /// The 20 superclasses (first label byte).
    Coarse,
}

/// The label bytes at the start of each record: their names and class counts.
struct Layout {
    labels: &'static [(&'static str, usize)],
    /// Which label byte is the class.
    use_label: usize,
}

impl Layout {
    fn record_bytes(&self) -> usize {
        self.labels.len() + PIXEL_BYTES
    }
}

const CIFAR10_LAYOUT: Layout = Layout {
    labels: &[("label", 10)],
    use_label: 0,
};
const CIFAR100_LABELS: &[(&str, usize)] = &[("coarse label", 20), ("fine label", 100)];

/// Appends the records of one file to `pixels` and `labels`, after checking that the file is a
/// whole number of records, holds `expected` records (when given) and that every label byte is
/// in range. Errors name the file and the byte offset of the first problem.
fn read_records(
    path: &Path,
    layout: &Layout,
    expected: Option<usize>,
    pixels: &mut Vec<u8>,
    labels: &mut Vec<i64>,
) -> Result<()> {
    let bytes = std::fs::read(path).at("reading", path)?;
    let bad = |offset: usize, reason: String| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: Some(offset as u64),
        reason,
    };
    let rec = layout.record_bytes();
    let (n, rest) = (bytes.len() / rec, bytes.len() % rec);
    if rest != 0 {
        return Err(bad(
            n * rec,
            format!(
                "truncated record: {rest} of {rec} bytes (the file has {} bytes, not a multiple \
                 of the record size)",
                bytes.len()
            ),
        ));
    }
    if n == 0 {
        return Err(bad(0, "no records".into()));
    }
    if let Some(want) = expected.filter(|&w| w != n) {
        return Err(bad(
            want.min(n) * rec,
            format!("{n} records of {rec} bytes, expected {want}"),
        ));
    }
    pixels.reserve(n * PIXEL_BYTES);
    labels.reserve(n);
    for (i, record) in bytes.chunks_exact(rec).enumerate() {
        for (j, (&(name, k), &v)) in layout.labels.iter().zip(record).enumerate() {
            if usize::from(v) >= k {
                return Err(bad(
                    i * rec + j,
                    format!("record {i}: {name} {v} is out of range 0..{k}"),
                ));
            }
        }
        labels.push(i64::from(record[layout.use_label]));
        pixels.extend_from_slice(&record[layout.labels.len()..]);
    }
    Ok(())
}

/// Checks, from file sizes alone, that `dir` holds the whole official release of CIFAR-10
/// (`cifar-10-batches-bin`: five train files and one test file of 10,000 records of 3,073
/// bytes) or CIFAR-100 (`cifar-100-binary`: 50,000 and 10,000 records of 3,074 bytes), and
/// returns the train and test counts. Labels are checked when the loader reads the files.
pub fn check_release(id: DatasetId, dir: &Path) -> Result<(usize, usize)> {
    let (files, record): (Vec<(&str, usize)>, usize) = match id {
        DatasetId::Cifar10 => (
            CIFAR10_TRAIN_FILES
                .iter()
                .map(|f| (*f, 10_000))
                .chain([(CIFAR10_TEST_FILE, 10_000)])
                .collect(),
            CIFAR10_LAYOUT.record_bytes(),
        ),
        DatasetId::Cifar100 => (
            vec![("train.bin", 50_000), ("test.bin", 10_000)],
            CIFAR100_LABELS.len() + PIXEL_BYTES,
        ),
        other => return Err(invalid("dataset", other.name(), "CIFAR-10 or CIFAR-100")),
    };
    for (file, records) in files {
        let path = dir.join(file);
        let len = std::fs::metadata(&path).at("reading", &path)?.len();
        let want = (records * record) as u64;
        if len != want {
            return Err(TrainerError::BadData {
                path,
                offset: Some(len.min(want)),
                reason: format!(
                    "{len} bytes, but the official file holds {records} records of {record} \
                     bytes ({want} bytes): the file is {}",
                    if len < want { "truncated" } else { "too long" }
                ),
            });
        }
    }
    Ok((
        id.official_count(Part::Train),
        id.official_count(Part::Test),
    ))
}

/// Reads `files` (in order) from `dir`, each expected to hold `per_file` records.
fn read_files(
    dir: &Path,
    files: &[&str],
    layout: &Layout,
    per_file: Option<usize>,
) -> Result<(Tensor, Vec<i64>)> {
    let mut pixels = Vec::new();
    let mut labels = Vec::new();
    for file in files {
        read_records(&dir.join(file), layout, per_file, &mut pixels, &mut labels)?;
    }
    let images = images_from_bytes(&pixels, [labels.len(), 3, SIDE, SIDE])?;
    Ok((images, labels))
}

/// Loads CIFAR-10 from `dir` (the `cifar-10-batches-bin` directory). `counts` gives the number
/// of records expected over the part (official: 50,000 train in five equal files, 10,000 test).
/// Class names come from `batches.meta.txt` when present, else [`CIFAR10_CLASSES`].
pub fn load_cifar10(dir: &Path, part: Part, counts: Counts) -> Result<Dataset> {
    let files: &[&str] = match part {
        Part::Train => &CIFAR10_TRAIN_FILES,
        Part::Test => &[CIFAR10_TEST_FILE],
    };
    let per_file = match counts.expected(DatasetId::Cifar10, part) {
        Some(total) if total % files.len() != 0 => {
            return Err(invalid(
                "counts",
                total,
                format!("a multiple of the {} files of the part", files.len()),
            ));
        }
        total => total.map(|t| t / files.len()),
    };
    let (images, labels) = read_files(dir, files, &CIFAR10_LAYOUT, per_file)?;
    let names = read_class_names(&dir.join("batches.meta.txt"), 10)?
        .unwrap_or_else(|| CIFAR10_CLASSES.iter().map(|s| s.to_string()).collect());
    let origin = Origin::new(format!("CIFAR-10 {}", part.name()), Some(dir.to_path_buf()));
    Dataset::new(images, labels, names, origin)
}

/// Loads CIFAR-100 from `dir` (the `cifar-100-binary` directory) with the fine or the coarse
/// labels; every record's two label bytes are checked either way. Class names come from
/// `fine_label_names.txt` / `coarse_label_names.txt` when present, else `"0"`, `"1"`, ….
pub fn load_cifar100(
    dir: &Path,
    part: Part,
    which: Cifar100Labels,
    counts: Counts,
) -> Result<Dataset> {
    let file = match part {
        Part::Train => "train.bin",
        Part::Test => "test.bin",
    };
    let (use_label, names_file) = match which {
        Cifar100Labels::Coarse => (0, "coarse_label_names.txt"),
        Cifar100Labels::Fine => (1, "fine_label_names.txt"),
    };
    let layout = Layout {
        labels: CIFAR100_LABELS,
        use_label,
    };
    let expected = counts.expected(DatasetId::Cifar100, part);
    let (images, labels) = read_files(dir, &[file], &layout, expected)?;
    let k = CIFAR100_LABELS[use_label].1;
    let names = read_class_names(&dir.join(names_file), k)?.unwrap_or_else(|| numbered_classes(k));
    let origin = Origin::new(
        format!("CIFAR-100 {} ({which:?} labels)", part.name()),
        Some(dir.to_path_buf()),
    );
    Dataset::new(images, labels, names, origin)
}
