//! Reading a `torch.save` file (`.pt`, `.pth`: zip, legacy, TAR or plain pickle) without
//! torch and without running any of its code, through the `pytorch-reader` crate
//! (tracel-ai/burn `crates/pytorch-reader`): its pickle interpreter builds tensors and plain
//! values and never calls Python.
//!
//! tch cannot read these files: `VarStore::load` on a `.pt` goes to libtorch's
//! `torch::jit::_load_parameters`, which rejects an `OrderedDict` state dict (tch-rs#595).
//!
//! A pickle may still *describe* a call (`os.system`, `eval`, a class with a custom
//! `__reduce__`); `torch.load` would run it. Such a file is refused here, naming the object:
//! every object in the file must be a tensor or a type of the allow-list below (those
//! `torch.load(weights_only=True)` accepts for a state dict, plus `argparse.Namespace`,
//! which research checkpoints save their arguments in).

use std::path::Path;

use pytorch_reader::{DType, PickleValue, PytorchReader};
use tch::Kind;

use super::{Entry, Source};
use crate::error::{Result, bad_data};

/// Python types (`module.name`) a checkpoint may hold besides plain values.
const ALLOWED: &[&str] = &[
    "torch.Tensor",
    "torch.nn.parameter.Parameter",
    "torch.Size",
    "torch.device",
    "torch.dtype",
    "collections.OrderedDict",
    "collections.defaultdict",
    "builtins.set",
    "builtins.frozenset",
    "builtins.slice",
    "argparse.Namespace",
    "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar",
    "numpy.dtype",
];

/// Whether `name` (a Python type) is data rather than a call.
fn allowed(name: &str) -> bool {
    ALLOWED.contains(&name)
        || (name.starts_with("torch.") && name.ends_with("Storage"))
        || name
            .strip_prefix("torch.")
            .is_some_and(|t| t.starts_with("float") || t.starts_with("int") || t == "bool")
        || name.starts_with("numpy.dtypes.")
}

/// The first object of `value` (depth first) whose type is not [`allowed`], with its key path.
fn first_code(value: &PickleValue, path: &str) -> Option<(String, String)> {
    match value {
        PickleValue::Unsupported(name) if !allowed(name) => {
            Some((path.trim_start_matches('.').to_owned(), name.clone()))
        }
        PickleValue::Dict(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            keys.into_iter()
                .find_map(|k| first_code(&map[k], &format!("{path}.{k}")))
        }
        PickleValue::List(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| first_code(v, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// The tensors of the `torch.save` file at `path`, by their dotted key path, unread.
pub(super) fn entries(path: &Path) -> Result<Vec<(String, Entry)>> {
    let not_torch = |e: pytorch_reader::PytorchError| {
        bad_data(
            path,
            format!("not a readable PyTorch checkpoint (torch.save file): {e}"),
        )
    };
    let pickle = PytorchReader::read_pickle_data(path, None).map_err(not_torch)?;
    if let Some((key, name)) = first_code(&pickle, "") {
        return Err(bad_data(
            path,
            format!(
                "`{key}` holds a Python `{name}` object, not tensors or plain data: classwise \
                 never runs code from a checkpoint and refuses it (re-save the weights alone, \
                 `torch.save(model.state_dict(), FILE)`)"
            ),
        ));
    }
    let reader = PytorchReader::new(path).map_err(not_torch)?;
    reader
        .into_tensors()
        .into_iter()
        .map(|(name, t)| {
            let kind = kind_of(t.dtype());
            let shape = t.shape().iter().map(|&d| d as i64).collect();
            Ok((name, Entry::new(kind, shape, Source::Torch(t))))
        })
        .collect()
}

/// The tch kind of a checkpoint dtype (`None`: unsigned wider than a byte, which tch lacks).
fn kind_of(dtype: DType) -> Option<Kind> {
    Some(match dtype {
        DType::F64 => Kind::Double,
        DType::F32 => Kind::Float,
        DType::F16 => Kind::Half,
        DType::BF16 => Kind::BFloat16,
        DType::I64 => Kind::Int64,
        DType::I32 => Kind::Int,
        DType::I16 => Kind::Int16,
        DType::I8 => Kind::Int8,
        DType::U8 => Kind::Uint8,
        DType::Bool => Kind::Bool,
        DType::U64 | DType::U32 | DType::U16 => return None,
    })
}
