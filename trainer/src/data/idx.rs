//! The idx format of (Fashion-)MNIST (LeCun et al.): a big-endian header, magic `0x0000080n`
//! where `n` is the number of dimensions, one `u32` size per dimension, then `u8` data. Files
//! may be gzipped (detected by the gzip magic, not the extension).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::dataset::{Dataset, Origin, images_from_bytes};
use super::{Counts, DatasetId, Part};
use crate::error::{IoContext, Result, TrainerError};

pub use crate::paths::FASHION_MNIST_FILES;

/// Magic number of an idx file of unsigned bytes with three dimensions (images).
pub const MAGIC_IMAGES: u32 = 0x0000_0803;
/// Magic number of an idx file of unsigned bytes with one dimension (labels).
pub const MAGIC_LABELS: u32 = 0x0000_0801;

/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Fashion-MNIST class names (Xiao et al. 2017), in label order.
pub const FASHION_MNIST_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
];
/// MNIST class names.
pub const MNIST_CLASSES: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// The dimensions in an idx header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxHeader {
    pub dims: Vec<usize>,
}

/// An idx file: its dimensions and its `u8` data (row-major).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxArray {
    pub dims: Vec<usize>,
    pub data: Vec<u8>,
}

/// Opens `path` for reading, decompressing it when it starts with the gzip magic (whatever its
/// extension). Returns the reader and whether it decompresses.
fn open(path: &Path) -> Result<(Box<dyn Read>, bool)> {
    let file = std::fs::File::open(path).at("opening", path)?;
    let mut buf = BufReader::new(file);
    let gz = buf.fill_buf().at("reading", path)?.starts_with(&GZIP_MAGIC);
    Ok(if gz {
        (Box::new(MultiGzDecoder::new(buf)), true)
    } else {
        (Box::new(buf), false)
    })
}

/// Reads the header of an idx file, gzipped or not (only the first bytes are decompressed).
pub fn read_header(path: &Path) -> Result<IdxHeader> {
    let bad = |reason: String| TrainerError::BadIdx {
        path: path.to_path_buf(),
        reason,
    };
    let (mut r, _) = open(path)?;
    let mut magic = [0u8; 4];
    r.read_exact(&mut magic)
        .map_err(|e| bad(format!("cannot read the magic number: {e}")))?;
    if magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 {
        return Err(bad(format!(
            "magic number {magic:02x?}, expected 00 00 08 <ndim> (unsigned bytes)"
        )));
    }
    let ndim = usize::from(magic[3]);
    if ndim == 0 || ndim > 4 {
        return Err(bad(format!("{ndim} dimensions, expected 1 to 4")));
    }
    let mut dims = Vec::with_capacity(ndim);
    for k in 0..ndim {
        let mut b = [0u8; 4];
        r.read_exact(&mut b)
            .map_err(|e| bad(format!("cannot read dimension {k}: {e}")))?;
        dims.push(u32::from_be_bytes(b) as usize);
    }
    Ok(IdxHeader { dims })
}

/// Reads a whole idx file of unsigned bytes whose magic must be `magic` (e.g.
/// [`MAGIC_IMAGES`]), checking that the data is exactly as long as the dimensions say. Errors
/// name the file and the byte offset (in the decompressed stream for gzipped files).
pub fn read_idx(path: &Path, magic: u32) -> Result<IdxArray> {
    let (mut r, gz) = open(path)?;
    let mut bytes = Vec::new();
    let read = r.read_to_end(&mut bytes);
    let stream = if gz {
        " of the decompressed stream"
    } else {
        ""
    };
    let bad = |offset: usize, reason: String| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: Some(offset as u64),
        reason: format!("{reason} (offset{stream})"),
    };
    if let Err(e) = read {
        return Err(bad(
            bytes.len(),
            format!("cannot read further: {e}; the file is truncated or corrupt"),
        ));
    }
    let word = |at: usize| -> Result<u32> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| {
                bad(
                    bytes.len(),
                    format!("truncated header: {} bytes, needed {}", bytes.len(), at + 4),
                )
            })
    };
    let found = word(0)?;
    if found != magic {
        return Err(bad(
            0,
            format!("magic number 0x{found:08x}, expected 0x{magic:08x}"),
        ));
    }
    let ndim = (magic & 0xff) as usize;
    let dims = (0..ndim)
        .map(|k| word(4 + 4 * k).map(|d| d as usize))
        .collect::<Result<Vec<_>>>()?;
    let header = 4 + 4 * ndim;
    let want = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| bad(4, format!("dimensions {dims:?} overflow")))?;
    let have = bytes.len() - header;
    if have < want {
        return Err(bad(
            bytes.len(),
            format!("truncated: {have} of the {want} data bytes that the dimensions {dims:?} need"),
        ));
    }
    if have > want {
        return Err(bad(
            header + want,
            format!(
                "{} bytes after the data of dimensions {dims:?}",
                have - want
            ),
        ));
    }
    bytes.drain(..header);
    Ok(IdxArray { dims, data: bytes })
}

/// `dir/name`, else `dir/name.gz`, whichever exists (`name` without `.gz`).
pub fn resolve(dir: &Path, name: &str) -> Option<PathBuf> {
    [dir.join(name), dir.join(format!("{name}.gz"))]
        .into_iter()
        .find(|p| p.is_file())
}

/// Loads an images/labels pair of idx files: images N×H×W (magic 0x803) become N×1×H×W, labels
/// (magic 0x801) must number N and lie in `0..class_names.len()`; `expected` (when given) is N.
pub fn load_idx_pair(
    images: &Path,
    labels: &Path,
    class_names: Vec<String>,
    expected: Option<usize>,
    origin: Origin,
) -> Result<Dataset> {
    let img = read_idx(images, MAGIC_IMAGES)?;
    let lab = read_idx(labels, MAGIC_LABELS)?;
    let at = |path: &Path, offset: u64, reason: String| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: Some(offset),
        reason,
    };
    let (n, h, w) = (img.dims[0], img.dims[1], img.dims[2]);
    if let Some(want) = expected.filter(|&e| e != n) {
        return Err(at(images, 4, format!("{n} images, expected {want}")));
    }
    if n == 0 || h == 0 || w == 0 {
        return Err(at(images, 4, format!("empty images {:?}", img.dims)));
    }
    if lab.dims[0] != n {
        return Err(at(
            labels,
            4,
            format!(
                "{} labels, but {} holds {n} images",
                lab.dims[0],
                images.display()
            ),
        ));
    }
    let k = class_names.len();
    if let Some(i) = lab.data.iter().position(|&y| usize::from(y) >= k) {
        return Err(at(
            labels,
            8 + i as u64,
            format!("label {} of image {i} is out of range 0..{k}", lab.data[i]),
        ));
    }
    let tensor = images_from_bytes(&img.data, [n, 1, h, w])?;
    let ys = lab.data.iter().map(|&y| i64::from(y)).collect();
    Dataset::new(tensor, ys, class_names, origin)
}

/// `name` without a trailing `.gz`.
pub(crate) fn stem_of(name: &str) -> &str {
    name.strip_suffix(".gz").unwrap_or(name)
}

/// The idx file stems of a part: (images, labels).
fn stems(part: Part) -> (&'static str, &'static str) {
    match part {
        Part::Train => ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
        Part::Test => ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
    }
}

/// Loads an MNIST-style directory (the four idx files, each with or without `.gz`).
pub fn load_idx_dir(
    dir: &Path,
    part: Part,
    name: &str,
    class_names: &[&str],
    expected: Option<usize>,
) -> Result<Dataset> {
    let (images, labels) = stems(part);
    let find = |stem: &str| {
        resolve(dir, stem).ok_or_else(|| TrainerError::Io {
            context: "looking for",
            path: dir.join(format!("{stem}[.gz]")),
            source: std::io::ErrorKind::NotFound.into(),
        })
    };
    let origin = Origin::new(format!("{name} {}", part.name()), Some(dir.to_path_buf()));
    let names = class_names.iter().map(|s| s.to_string()).collect();
    load_idx_pair(&find(images)?, &find(labels)?, names, expected, origin)
}

/// Loads Fashion-MNIST from `dir` (official counts: 60,000 train, 10,000 test).
pub fn load_fashion_mnist(dir: &Path, part: Part, counts: Counts) -> Result<Dataset> {
    let expected = counts.expected(DatasetId::FashionMnist, part);
    load_idx_dir(dir, part, "Fashion-MNIST", &FASHION_MNIST_CLASSES, expected)
}

/// Loads MNIST from `dir` (same file names and counts as Fashion-MNIST).
pub fn load_mnist(dir: &Path, part: Part, counts: Counts) -> Result<Dataset> {
    let expected = counts.expected(DatasetId::FashionMnist, part);
    load_idx_dir(dir, part, "MNIST", &MNIST_CLASSES, expected)
}

/// Checks the four Fashion-MNIST files in `dir`: their headers (shapes 60000×28×28, 60000,
/// 10000×28×28, 10000), then each whole file as the loader reads it ([`read_idx`]: the data as
/// long as the header says, a gzip stream that ends cleanly with a matching checksum), and
/// returns the train and test sizes. Each file may also be stored uncompressed (without `.gz`).
pub fn check_fashion_mnist(dir: &Path) -> Result<(usize, usize)> {
    let expect = [
        vec![60_000, 28, 28],
        vec![60_000],
        vec![10_000, 28, 28],
        vec![10_000],
    ];
    for (file, want) in FASHION_MNIST_FILES.iter().zip(expect) {
        let path = resolve(dir, stem_of(file)).unwrap_or_else(|| dir.join(file));
        let header = read_header(&path)?;
        if header.dims != want {
            return Err(TrainerError::BadIdx {
                path,
                reason: format!("shape {:?}, expected {want:?}", header.dims),
            });
        }
        let magic = if header.dims.len() == 3 {
            MAGIC_IMAGES
        } else {
            MAGIC_LABELS
        };
        read_idx(&path, magic)?;
    }
    Ok((60_000, 10_000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    fn write_gz(path: &Path, bytes: &[u8]) {
        let mut enc = GzEncoder::new(std::fs::File::create(path).unwrap(), Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap();
    }

    #[test]
    fn reads_a_header_written_by_hand() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.gz");
        // magic 0x00000803, dims 2 x 3 x 4, then 24 bytes of data.
        let mut bytes = vec![0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4];
        bytes.extend([7u8; 24]);
        write_gz(&p, &bytes);
        assert_eq!(read_header(&p).unwrap().dims, vec![2, 3, 4]);
    }

    #[test]
    fn rejects_wrong_magic_and_truncation_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.gz");
        write_gz(&p, &[1, 2, 3, 4, 0, 0]);
        let msg = read_header(&p).unwrap_err().to_string();
        assert!(msg.contains("bad.gz") && msg.contains("magic"), "{msg}");
        write_gz(&p, &[0, 0, 8, 1, 0, 0]);
        let msg = read_header(&p).unwrap_err().to_string();
        assert!(msg.contains("dimension 0"), "{msg}");
        std::fs::write(&p, b"not gzip at all").unwrap();
        assert!(read_header(&p).is_err());
    }
}
