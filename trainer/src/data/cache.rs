//! A cache of decoded images (Tiny-ImageNet's JPEGs are decoded once into a `u8` tensor rather
//! than every epoch).
//!
//! Format (little-endian): the 8 bytes `CWU8CACH`, a `u32` version, the `u64` fingerprint of the
//! source files, N, C, H, W as `u64`, then the N×C×H×W pixel bytes. The file is written to a
//! temporary name, synced and renamed (`classwise_core::io::AtomicFile`), so a reader never
//! sees a partial cache. The tensor is
//! filled block by block, so memory holds the images once, not twice.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use classwise_core::io::AtomicFile;
use tch::{Kind, Tensor};

use crate::error::{IoContext, Result};

const MAGIC: &[u8; 8] = b"CWU8CACH";
const VERSION: u32 = 1;
const HEADER_BYTES: u64 = 8 + 4 + 8 + 4 * 8;
/// Images per block when filling a tensor.
pub(crate) const BLOCK: usize = 2048;

/// FNV-1a, 64 bits: a stable hash (unlike `std`'s `DefaultHasher`, whose output may change
/// between Rust versions) for fingerprints of file lists.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    /// A length-prefixed field, so that ("ab", "c") and ("a", "bc") differ.
    pub fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes(&(bytes.len() as u64).to_le_bytes()).bytes(bytes)
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// An empty `u8` tensor N×C×H×W filled block by block: `fill(start, count, buf)` writes the
/// bytes of images `start..start+count` into `buf`.
pub(crate) fn fill_blocks(
    shape: [usize; 4],
    mut fill: impl FnMut(usize, usize, &mut [u8]) -> Result<()>,
) -> Result<Tensor> {
    let [n, c, h, w] = shape;
    let per_image = c * h * w;
    let dims = [n as i64, c as i64, h as i64, w as i64];
    let images = Tensor::f_zeros(dims, (Kind::Uint8, tch::Device::Cpu))?;
    let mut buf = vec![0u8; BLOCK.min(n) * per_image];
    let mut start = 0;
    while start < n {
        let count = BLOCK.min(n - start);
        let block = &mut buf[..count * per_image];
        fill(start, count, block)?;
        let src = Tensor::f_from_data_size(
            block,
            &[count as i64, dims[1], dims[2], dims[3]],
            Kind::Uint8,
        )?;
        images
            .f_narrow(0, start as i64, count as i64)?
            .f_copy_(&src)?;
        start += count;
    }
    Ok(images)
}

/// Reads the cache at `path` if it exists, holds `n` images of `c` channels and was made from
/// files with this `fingerprint`. `Ok(None)`: no cache; `Err(why)`: a cache that does not match
/// or is damaged (the caller rebuilds it).
pub(crate) fn read(
    path: &Path,
    fingerprint: u64,
    n: usize,
    c: usize,
) -> std::result::Result<Option<Tensor>, String> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut r = BufReader::new(file);
    let mut head = [0u8; HEADER_BYTES as usize];
    r.read_exact(&mut head)
        .map_err(|e| format!("cannot read its header: {e}"))?;
    let u64_at = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[at..at + 8]);
        u64::from_le_bytes(b)
    };
    if &head[..8] != MAGIC || head[8..12] != VERSION.to_le_bytes() {
        return Err("not a classwise image cache of this version".into());
    }
    if u64_at(12) != fingerprint {
        return Err("the data files changed since it was written".into());
    }
    let dims: Vec<usize> = (0..4).map(|k| u64_at(20 + 8 * k) as usize).collect();
    if dims[0] != n || dims[1] != c {
        return Err(format!("it holds shape {dims:?}, expected {n}×{c}×H×W"));
    }
    let want = dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
        .and_then(|p| p.checked_add(HEADER_BYTES));
    if want != Some(len) {
        return Err(format!(
            "it has {len} bytes, expected {want:?} (truncated?)"
        ));
    }
    fill_blocks([dims[0], dims[1], dims[2], dims[3]], |_, _, buf| {
        r.read_exact(buf).at("reading", path)
    })
    .map(Some)
    .map_err(|e| e.to_string())
}

/// Writes a cache progressively ([`classwise_core::io::AtomicFile`]); [`Writer::finish`]
/// renames it into place, and a writer dropped unfinished leaves nothing.
pub(crate) struct Writer(AtomicFile);

impl Writer {
    pub fn create(path: &Path, fingerprint: u64, shape: [usize; 4]) -> Result<Writer> {
        let mut head = Vec::with_capacity(HEADER_BYTES as usize);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&fingerprint.to_le_bytes());
        for d in shape {
            head.extend_from_slice(&(d as u64).to_le_bytes());
        }
        let mut file = AtomicFile::create(path)?;
        file.write(&head)?;
        Ok(Writer(file))
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        Ok(self.0.write(bytes)?)
    }

    pub fn finish(self) -> Result<()> {
        Ok(self.0.commit()?)
    }
}
