//! The safetensors format (<https://github.com/huggingface/safetensors>), written atomically
//! and with string metadata.
//!
//! tch's `Tensor::write_safetensors` (safetensors 0.3) writes no `__metadata__` and writes in
//! place, so a crash can leave half a file; this module builds the file in memory and writes it
//! with [`crate::io::write_atomic`] (temporary file in the same directory, fsync, rename). The
//! layout is the standard one, readable by tch's `Tensor::read_safetensors` and by Python's
//! `safetensors.torch.load_file`:
//!
//! 8 bytes little-endian header length n · n bytes of JSON header (padded with spaces to a
//! multiple of 8) · the tensors' little-endian bytes, back to back, in name order.
//!
//! Reading validates the header length, every entry's dtype, shape and offsets, and that the
//! offsets tile the data exactly; problems are reported as [`TrainerError::BadData`] with the
//! file and, where it helps, the byte offset.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use tch::{Device, Kind, Tensor};

use crate::error::{IoContext, Result, TrainerError, invalid};

/// The header key holding string metadata.
const METADATA_KEY: &str = "__metadata__";
/// Headers larger than this are refused (the reference implementation's limit).
const MAX_HEADER: u64 = 100_000_000;

/// The tensors and metadata of a safetensors file.
#[derive(Debug)]
pub struct SafetensorsFile {
    /// Named tensors in the order of their data in the file.
    pub tensors: Vec<(String, Tensor)>,
    /// The `__metadata__` map (empty if the file has none).
    pub metadata: BTreeMap<String, String>,
}

fn dtype_name(kind: Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Bool => "BOOL",
        Kind::Uint8 => "U8",
        Kind::Int8 => "I8",
        Kind::Int16 => "I16",
        Kind::Int => "I32",
        Kind::Int64 => "I64",
        Kind::Half => "F16",
        Kind::BFloat16 => "BF16",
        Kind::Float => "F32",
        Kind::Double => "F64",
        _ => return None,
    })
}

fn kind_of(dtype: &str) -> Option<Kind> {
    Some(match dtype {
        "BOOL" => Kind::Bool,
        "U8" => Kind::Uint8,
        "I8" => Kind::Int8,
        "I16" => Kind::Int16,
        "I32" => Kind::Int,
        "I64" => Kind::Int64,
        "F16" => Kind::Half,
        "BF16" => Kind::BFloat16,
        "F32" => Kind::Float,
        "F64" => Kind::Double,
        _ => return None,
    })
}

/// The format stores little-endian bytes; libtorch copies native ones.
fn require_little_endian() -> Result<()> {
    if cfg!(target_endian = "little") {
        Ok(())
    } else {
        Err(invalid(
            "target",
            "a big-endian machine",
            "a little-endian machine (safetensors bytes are copied natively)",
        ))
    }
}

/// Serialises `tensors` (any device; copied to the CPU) and `metadata` into safetensors bytes.
/// Tensors are written in name order, so equal inputs give equal bytes. Names must be unique
/// and must not be `__metadata__`; kinds must be one of the safetensors dtypes.
pub fn to_bytes(
    tensors: &[(String, Tensor)],
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    require_little_endian()?;
    let mut order: Vec<&(String, Tensor)> = tensors.iter().collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut header = Map::new();
    if !metadata.is_empty() {
        header.insert(METADATA_KEY.to_owned(), json!(metadata));
    }
    // First pass: names, kinds and offsets (the header); second: the data, copied once.
    let mut tensors_cpu = Vec::with_capacity(order.len());
    let mut offset = 0usize;
    for (name, tensor) in order {
        if name == METADATA_KEY || header.contains_key(name) {
            return Err(invalid(
                "tensor name",
                name,
                "unique names other than `__metadata__`",
            ));
        }
        let kind = tensor.kind();
        let dtype = dtype_name(kind).ok_or_else(|| {
            invalid(
                format!("tensor `{name}`"),
                format!("kind {kind:?}"),
                "a kind safetensors stores (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)",
            )
        })?;
        let cpu = tensor.detach().to_device(Device::Cpu).contiguous();
        let end = offset + cpu.numel() * kind.elt_size_in_bytes();
        header.insert(
            name.clone(),
            json!({"dtype": dtype, "shape": cpu.size(), "data_offsets": [offset, end]}),
        );
        tensors_cpu.push((cpu, offset, end));
        offset = end;
    }
    let mut header =
        serde_json::to_vec(&Value::Object(header)).map_err(|source| TrainerError::Json {
            what: "safetensors header",
            source,
        })?;
    header.resize(header.len().div_ceil(8) * 8, b' ');
    let data_start = 8 + header.len();
    let mut bytes = vec![0u8; data_start + offset];
    bytes[..8].copy_from_slice(&(header.len() as u64).to_le_bytes());
    bytes[8..data_start].copy_from_slice(&header);
    for (cpu, start, end) in tensors_cpu {
        cpu.f_copy_data_u8(
            &mut bytes[data_start + start..data_start + end],
            cpu.numel(),
        )?;
    }
    Ok(bytes)
}

/// Writes `tensors` and `metadata` to `path` atomically (see the module docs).
pub fn write(
    path: &Path,
    tensors: &[(String, Tensor)],
    metadata: &BTreeMap<String, String>,
) -> Result<()> {
    let bytes = to_bytes(tensors, metadata)?;
    crate::io::write_atomic(path, &bytes)
}

/// Reads a safetensors file, placing its tensors on `device`.
pub fn read(path: &Path, device: Device) -> Result<SafetensorsFile> {
    let bytes = std::fs::read(path).at("reading", path)?;
    from_bytes(&bytes, device).map_err(|(offset, reason)| TrainerError::BadData {
        path: path.to_path_buf(),
        offset,
        reason,
    })
}

type Parse<T> = std::result::Result<T, (Option<u64>, String)>;

/// Parses safetensors `bytes`; an error is (byte offset if known, reason).
fn from_bytes(bytes: &[u8], device: Device) -> Parse<SafetensorsFile> {
    let fail = |offset: Option<u64>, reason: String| Err((offset, reason));
    let Some(len_bytes) = bytes.get(..8) else {
        return fail(
            Some(0),
            format!(
                "{} bytes: too short for a safetensors file (no 8-byte header length)",
                bytes.len()
            ),
        );
    };
    let n = u64::from_le_bytes(len_bytes.try_into().unwrap_or([0; 8]));
    let file_len = bytes.len() as u64;
    if n > MAX_HEADER || 8 + n > file_len {
        return fail(
            Some(0),
            format!(
                "header length {n} does not fit a {file_len}-byte file (truncated or not safetensors)"
            ),
        );
    }
    let data_start = 8 + n as usize;
    let header: Map<String, Value> = match serde_json::from_slice(&bytes[8..data_start]) {
        Ok(h) => h,
        Err(e) => return fail(Some(8), format!("header is not a JSON object: {e}")),
    };
    let data = &bytes[data_start..];
    let mut metadata = BTreeMap::new();
    let mut entries = Vec::new();
    for (name, value) in &header {
        if name == METADATA_KEY {
            let Some(map) = value.as_object() else {
                return fail(Some(8), format!("`{METADATA_KEY}` is not an object"));
            };
            for (key, v) in map {
                let Some(v) = v.as_str() else {
                    return fail(Some(8), format!("metadata `{key}` is not a string"));
                };
                metadata.insert(key.clone(), v.to_owned());
            }
            continue;
        }
        entries.push(parse_entry(name, value).map_err(|reason| (Some(8), reason))?);
    }
    entries.sort_by_key(|e| e.offsets);
    let mut expected_start = 0usize;
    let mut tensors = Vec::with_capacity(entries.len());
    for entry in entries {
        let (start, end) = entry.offsets;
        let absolute = (data_start + start) as u64;
        if start != expected_start || end < start || end > data.len() {
            return fail(
                Some(absolute),
                format!(
                    "tensor `{}`: data offsets [{start}, {end}) do not continue the previous tensor at {expected_start} within {} data bytes (truncated or corrupt)",
                    entry.name,
                    data.len()
                ),
            );
        }
        let numel = entry
            .shape
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize));
        let nbytes = numel.and_then(|n| n.checked_mul(entry.kind.elt_size_in_bytes()));
        if nbytes != Some(end - start) {
            return fail(
                Some(absolute),
                format!(
                    "tensor `{}`: {} bytes for shape {:?} of {:?}",
                    entry.name,
                    end - start,
                    entry.shape,
                    entry.kind
                ),
            );
        }
        let tensor = Tensor::f_from_data_size(&data[start..end], &entry.shape, entry.kind)
            .and_then(|t| t.f_to_device(device))
            .map_err(|e| (Some(absolute), format!("tensor `{}`: {e}", entry.name)))?;
        tensors.push((entry.name, tensor));
        expected_start = end;
    }
    if expected_start != data.len() {
        return fail(
            Some((data_start + expected_start) as u64),
            format!(
                "{} bytes after the last tensor",
                data.len() - expected_start
            ),
        );
    }
    Ok(SafetensorsFile { tensors, metadata })
}

struct Entry {
    name: String,
    kind: Kind,
    shape: Vec<i64>,
    offsets: (usize, usize),
}

fn parse_entry(name: &str, value: &Value) -> std::result::Result<Entry, String> {
    let bad = |what: &str| format!("tensor `{name}`: {what}");
    let dtype = value
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no string `dtype`"))?;
    let kind = kind_of(dtype).ok_or_else(|| bad(&format!("unsupported dtype {dtype}")))?;
    let ints = |key: &str| -> std::result::Result<Vec<u64>, String> {
        value
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
            .ok_or_else(|| bad(&format!("`{key}` is not a list of non-negative integers")))
    };
    let shape = ints("shape")?
        .into_iter()
        .map(|d| i64::try_from(d).map_err(|_| bad("dimension too large")))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let offsets = ints("data_offsets")?;
    let [start, end] = offsets[..] else {
        return Err(bad("`data_offsets` is not [start, end]"));
    };
    let to_usize = |v: u64| usize::try_from(v).map_err(|_| bad("offset too large"));
    Ok(Entry {
        name: name.to_owned(),
        kind,
        shape,
        offsets: (to_usize(start)?, to_usize(end)?),
    })
}
