//! The idx format of (Fashion-)MNIST (LeCun et al.): a big-endian header, magic `0x0000080n`
//! where `n` is the number of dimensions, one `u32` size per dimension, then `u8` data.

use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;

use crate::error::{IoContext, Result, TrainerError};

pub use crate::paths::FASHION_MNIST_FILES;

/// The dimensions in an idx header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxHeader {
    pub dims: Vec<usize>,
}

/// Reads the header of a gzipped idx file (only the first bytes are decompressed).
pub fn read_header(path: &Path) -> Result<IdxHeader> {
    let bad = |reason: String| TrainerError::BadIdx {
        path: path.to_path_buf(),
        reason,
    };
    let file = std::fs::File::open(path).at("opening", path)?;
    let mut gz = GzDecoder::new(file);
    let mut magic = [0u8; 4];
    gz.read_exact(&mut magic)
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
        gz.read_exact(&mut b)
            .map_err(|e| bad(format!("cannot read dimension {k}: {e}")))?;
        dims.push(u32::from_be_bytes(b) as usize);
    }
    Ok(IdxHeader { dims })
}

/// Checks the four Fashion-MNIST headers in `dir` (shapes 60000×28×28, 60000, 10000×28×28,
/// 10000) and returns the train and test sizes.
pub fn check_fashion_mnist(dir: &Path) -> Result<(usize, usize)> {
    let expect = [
        vec![60_000, 28, 28],
        vec![60_000],
        vec![10_000, 28, 28],
        vec![10_000],
    ];
    for (file, want) in FASHION_MNIST_FILES.iter().zip(expect) {
        let path = dir.join(file);
        let got = read_header(&path)?.dims;
        if got != want {
            return Err(TrainerError::BadIdx {
                path,
                reason: format!("shape {got:?}, expected {want:?}"),
            });
        }
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
