//! Named tensors with string metadata in the safetensors format
//! (<https://github.com/huggingface/safetensors>, through the `safetensors` crate), written
//! atomically.
//!
//! tch's `Tensor::write_safetensors` writes no `__metadata__` and writes in place, so a crash can
//! leave half a file; here the bytes are serialised in memory by the `safetensors` crate and
//! written with [`crate::io::write_atomic`] (temporary file in the same directory, fsync,
//! rename). Files are readable by tch's `Tensor::read_safetensors` and by Python's
//! `safetensors.torch.load_file`. Tensors are serialised in name order and the metadata map is
//! stored as one JSON string under the key `classwise`, so equal inputs give equal bytes in every
//! process (a resumed run's checkpoints are byte-identical to an uninterrupted run's).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use tch::{Device, Kind, Tensor};

use crate::error::{IoContext, Result, TrainerError, invalid};

/// The tensors and metadata of a safetensors file.
#[derive(Debug)]
pub struct SafetensorsFile {
    /// Named tensors, in name order.
    pub tensors: Vec<(String, Tensor)>,
    /// The `__metadata__` map (empty if the file has none).
    pub metadata: BTreeMap<String, String>,
}

/// The single `__metadata__` key under which the string metadata is stored, as a JSON map.
const METADATA_KEY: &str = "classwise";

fn dtype_of(kind: Kind) -> Option<Dtype> {
    Some(match kind {
        Kind::Bool => Dtype::BOOL,
        Kind::Uint8 => Dtype::U8,
        Kind::Int8 => Dtype::I8,
        Kind::Int16 => Dtype::I16,
        Kind::Int => Dtype::I32,
        Kind::Int64 => Dtype::I64,
        Kind::Half => Dtype::F16,
        Kind::BFloat16 => Dtype::BF16,
        Kind::Float => Dtype::F32,
        Kind::Double => Dtype::F64,
        _ => return None,
    })
}

pub(crate) fn kind_of(dtype: Dtype) -> Option<Kind> {
    Some(match dtype {
        Dtype::BOOL => Kind::Bool,
        Dtype::U8 => Kind::Uint8,
        Dtype::I8 => Kind::Int8,
        Dtype::I16 => Kind::Int16,
        Dtype::I32 => Kind::Int,
        Dtype::I64 => Kind::Int64,
        Dtype::F16 => Kind::Half,
        Dtype::BF16 => Kind::BFloat16,
        Dtype::F32 => Kind::Float,
        Dtype::F64 => Kind::Double,
        _ => return None,
    })
}

/// Serialises `tensors` (any device; copied to the CPU) and `metadata` into safetensors bytes.
/// Names must be unique; kinds must be one of the safetensors dtypes.
pub fn to_bytes(
    tensors: &[(String, Tensor)],
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>> {
    let mut raw: BTreeMap<&str, (Dtype, Vec<usize>, Vec<u8>)> = BTreeMap::new();
    for (name, tensor) in tensors {
        let kind = tensor.kind();
        let dtype = dtype_of(kind).ok_or_else(|| {
            invalid(
                format!("tensor `{name}`"),
                format!("kind {kind:?}"),
                "a kind safetensors stores (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)",
            )
        })?;
        let cpu = tensor.detach().to_device(Device::Cpu).contiguous();
        let mut bytes = vec![0u8; cpu.numel() * kind.elt_size_in_bytes()];
        cpu.f_copy_data_u8(&mut bytes, cpu.numel())?;
        let shape = cpu.size().iter().map(|&d| d as usize).collect();
        if raw.insert(name, (dtype, shape, bytes)).is_some() {
            return Err(invalid("tensor name", name, "unique names"));
        }
    }
    let views = raw
        .iter()
        .map(|(name, (dtype, shape, bytes))| {
            TensorView::new(*dtype, shape.clone(), bytes)
                .map(|v| (*name, v))
                .map_err(|e| invalid(format!("tensor `{name}`"), e, "a valid safetensors view"))
        })
        .collect::<Result<Vec<_>>>()?;
    // The crate takes a HashMap, whose order varies between processes; one key holding the
    // sorted map as JSON keeps the bytes of equal inputs equal.
    let info: Option<HashMap<String, String>> = if metadata.is_empty() {
        None
    } else {
        let json = serde_json::to_string(metadata)
            .map_err(|e| invalid("metadata", e, "serialisable strings"))?;
        Some(HashMap::from([(METADATA_KEY.to_string(), json)]))
    };
    safetensors::serialize(views, info)
        .map_err(|e| invalid("safetensors", e, "serialisable tensors and metadata"))
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

/// Named tensors written atomically, without metadata (optimiser and average states, attack
/// progress).
pub fn save_tensors(path: &Path, tensors: &[(String, Tensor)]) -> Result<()> {
    write(path, tensors, &BTreeMap::new())
}

/// The named tensors of a safetensors file, on the CPU; problems name the file.
pub fn load_tensors(path: &Path) -> Result<Vec<(String, Tensor)>> {
    Ok(read(path, Device::Cpu)?.tensors)
}

/// Reads a safetensors file, placing its tensors on `device`. Problems name the file.
pub fn read(path: &Path, device: Device) -> Result<SafetensorsFile> {
    let bytes = std::fs::read(path).at("reading", path)?;
    let bad = |reason: String| TrainerError::BadData {
        path: path.to_path_buf(),
        offset: None,
        reason,
    };
    let (_, header) = SafeTensors::read_metadata(&bytes)
        .map_err(|e| bad(format!("not a valid safetensors file: {e}")))?;
    let st = SafeTensors::deserialize(&bytes)
        .map_err(|e| bad(format!("not a valid safetensors file: {e}")))?;
    let mut metadata = BTreeMap::new();
    for (key, value) in header.metadata().clone().unwrap_or_default() {
        if key == METADATA_KEY {
            let inner: BTreeMap<String, String> = serde_json::from_str(&value)
                .map_err(|e| bad(format!("metadata `{METADATA_KEY}` is not a JSON map: {e}")))?;
            metadata.extend(inner);
        } else {
            metadata.insert(key, value);
        }
    }
    let mut tensors = Vec::new();
    for (name, view) in st.tensors() {
        let kind = kind_of(view.dtype()).ok_or_else(|| {
            bad(format!(
                "tensor `{name}`: unsupported dtype {:?}",
                view.dtype()
            ))
        })?;
        let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
        let t = Tensor::f_from_data_size(view.data(), &shape, kind)
            .and_then(|t| t.f_to_device(device))
            .map_err(|e| bad(format!("tensor `{name}`: {e}")))?;
        tensors.push((name, t));
    }
    tensors.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(SafetensorsFile { tensors, metadata })
}
