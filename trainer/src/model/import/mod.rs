//! Loading weights another library wrote: PyTorch checkpoints (`torch.save` files, `.pt` /
//! `.pth`, [`torch`]) and safetensors files, plain or nested, into any classwise
//! architecture ([`Model::import`]).
//!
//! A checkpoint is opened without reading its tensors ([`Checkpoint::open`]); its names go
//! through the key map ([`keys`]); the mapped names, shapes and kinds are compared with the
//! model, and any difference is one error listing them all ([`report`]); only then are the
//! tensors read, one at a time, into a newly built model, so nothing loads half and the
//! memory held beyond the model is one tensor at a time. Floating-point tensors of another
//! precision (f16, bf16, f64) are converted to the model's f32, as `load_state_dict` copies.

pub mod keys;
pub mod report;
mod torch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tch::{Device, Kind, Tensor};

use super::spec::Normalization;
use super::{Model, ModelSpec};
use crate::error::{IoContext, Result, bad_data};
pub use keys::KeyMap;
pub use report::Mismatches;

/// Where one tensor's bytes are.
enum Source {
    Torch(pytorch_reader::Tensor),
    /// A byte range of a safetensors file read into memory.
    Safetensors(Arc<Vec<u8>>, std::ops::Range<usize>),
}

/// One tensor of a checkpoint, not yet read.
pub struct Entry {
    /// `None`: a kind tch does not have (unsigned wider than a byte).
    pub kind: Option<Kind>,
    pub shape: Vec<i64>,
    source: Source,
}

impl Entry {
    fn new(kind: Option<Kind>, shape: Vec<i64>, source: Source) -> Self {
        Entry {
            kind,
            shape,
            source,
        }
    }
}

/// The file formats [`Checkpoint::open`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A `torch.save` file (zip, legacy, TAR or plain pickle).
    Torch,
    Safetensors,
}

/// A checkpoint file opened for loading: its tensors by their names in the file.
pub struct Checkpoint {
    pub path: PathBuf,
    pub format: Format,
    /// By name in the file.
    entries: std::collections::BTreeMap<String, Entry>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("tensors", &self.entries.len())
            .finish()
    }
}

impl Checkpoint {
    /// Opens `path`: safetensors if it starts like one (an 8-byte header length and `{`),
    /// else a `torch.save` file. Reads names, kinds and shapes only.
    pub fn open(path: &Path) -> Result<Checkpoint> {
        let mut head = [0u8; 9];
        let read = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .at("reading", path)?;
        let safetensors = read == 9 && head[8] == b'{';
        let (format, entries) = match safetensors {
            true => (Format::Safetensors, safetensors_entries(path)?),
            false => (Format::Torch, torch::entries(path)?),
        };
        let entries: std::collections::BTreeMap<_, _> = entries.into_iter().collect();
        if entries.is_empty() {
            return Err(bad_data(path, "holds no tensors".to_owned()));
        }
        Ok(Checkpoint {
            path: path.to_path_buf(),
            format,
            entries,
        })
    }

    /// The names of the file's tensors, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// The shape of the file's tensor `name`, if it has one of that name.
    pub fn shape(&self, name: &str) -> Option<&[i64]> {
        self.entry(name).map(|e| e.shape.as_slice())
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// Reads the tensor `name` of the file (on the CPU).
    pub fn read(&self, name: &str) -> Result<Tensor> {
        let entry = self
            .entry(name)
            .ok_or_else(|| bad_data(&self.path, format!("no tensor `{name}`")))?;
        let kind = entry
            .kind
            .ok_or_else(|| bad_data(&self.path, format!("tensor `{name}`: a kind tch lacks")))?;
        let bytes = match &entry.source {
            Source::Torch(t) => {
                std::borrow::Cow::Owned(t.read().map_err(|e| bad_data(&self.path, e.to_string()))?)
            }
            Source::Safetensors(all, range) => std::borrow::Cow::Borrowed(&all[range.clone()]),
        };
        Tensor::f_from_data_size(&bytes, &entry.shape, kind)
            .map_err(|e| bad_data(&self.path, format!("tensor `{name}`: {e}")))
    }
}

/// The tensors of a safetensors file (read into memory once, shared by the entries).
fn safetensors_entries(path: &Path) -> Result<Vec<(String, Entry)>> {
    let bytes = Arc::new(std::fs::read(path).at("reading", path)?);
    let st = safetensors::SafeTensors::deserialize(&bytes)
        .map_err(|e| bad_data(path, format!("not a valid safetensors file: {e}")))?;
    let base = bytes.as_ptr() as usize;
    let mut out = Vec::new();
    for (name, view) in st.tensors() {
        let start = view.data().as_ptr() as usize - base;
        let range = start..start + view.data().len();
        let kind = super::safetensors::kind_of(view.dtype());
        let shape = view.shape().iter().map(|&d| d as i64).collect();
        out.push((
            name,
            Entry::new(kind, shape, Source::Safetensors(Arc::clone(&bytes), range)),
        ));
    }
    Ok(out)
}

impl Model {
    /// Builds the model of `spec` on `device` from the checkpoint at `path` (a `torch.save`
    /// file or safetensors), through the key map ([`keys::map`]). Fails, naming the file,
    /// if the checkpoint does not fit the spec (listing every missing, unexpected and
    /// wrongly shaped tensor), if its normalisation buffers disagree with the spec's, or if
    /// it cannot be read; nothing is returned half loaded. Also returns the key map used.
    pub fn import(path: &Path, spec: &ModelSpec, device: Device) -> Result<(Model, KeyMap)> {
        Model::import_checkpoint(&Checkpoint::open(path)?, spec, device)
    }

    /// [`Model::import`] from a checkpoint already opened.
    pub fn import_checkpoint(
        checkpoint: &Checkpoint,
        spec: &ModelSpec,
        device: Device,
    ) -> Result<(Model, KeyMap)> {
        spec.validate()?;
        let path = &checkpoint.path;
        let mut map = keys::map(&checkpoint.names(), &spec.architecture);
        check_normalization(checkpoint, &mut map, spec)?;
        let mut model = Model::build(spec, device, false);
        let file: Vec<_> = map
            .kept
            .iter()
            .map(|(ours, theirs)| {
                let e = checkpoint
                    .entry(theirs)
                    .expect("mapped from the file's names");
                (ours.clone(), e.kind, e.shape.clone())
            })
            .collect();
        let mismatches = Mismatches::between(&file, &model.state_shapes());
        if !mismatches.is_empty() {
            let nest = map
                .nest
                .as_ref()
                .map(|k| format!(" (weights under `{k}`)"))
                .unwrap_or_default();
            return Err(bad_data(
                path,
                format!("does not fit a {}{nest}:{mismatches}", spec.describe()),
            ));
        }
        model.copy_from(checkpoint, &map)?;
        Ok((model, map))
    }

    /// Reads each mapped tensor and copies it into the variable of the same name.
    fn copy_from(&mut self, checkpoint: &Checkpoint, map: &KeyMap) -> Result<()> {
        let mut vars: std::collections::HashMap<String, Tensor> =
            self.var_store().variables().into_iter().collect();
        tch::no_grad(|| {
            for (ours, theirs) in &map.kept {
                let value = checkpoint.read(theirs)?;
                let var = vars
                    .get_mut(ours)
                    .expect("checked against the model's names");
                var.f_copy_(&value.f_to_device(var.device())?)?;
            }
            Ok(())
        })
    }
}

/// Takes root-level normalisation buffers (`mu`/`sigma`, `mean`/`std`) out of the map after
/// checking them against the spec: a checkpoint that normalises its inputs needs a spec that
/// does the same.
fn check_normalization(checkpoint: &Checkpoint, map: &mut KeyMap, spec: &ModelSpec) -> Result<()> {
    for (m, s) in keys::NORMALIZATION_BUFFERS {
        let find = |n: &str| {
            map.kept
                .iter()
                .find(|(ours, _)| ours == n)
                .map(|(_, t)| t.clone())
        };
        let (Some(mean_key), Some(std_key)) = (find(m), find(s)) else {
            continue;
        };
        let values = |key: &str| -> Result<Vec<f64>> {
            let t = checkpoint.read(key)?.to_kind(Kind::Double).flatten(0, -1);
            Ok(Vec::<f64>::try_from(&t)?)
        };
        let (mean, std) = (values(&mean_key)?, values(&std_key)?);
        let agrees = match &spec.normalization {
            Some(Normalization::Channels(c)) => close(&c.mean, &mean) && close(&c.std, &std),
            _ => false,
        };
        if !agrees {
            let spec_has = spec
                .normalization
                .as_ref()
                .map_or("none".to_owned(), |n| n.describe());
            return Err(bad_data(
                &checkpoint.path,
                format!(
                    "holds normalisation buffers `{mean_key}` = {mean:?} and `{std_key}` = {std:?}, but the \
                 model spec's normalisation is {spec_has}: the card needs `normalization = {{ mean = \
                 {mean:?}, std = {std:?} }}`"
                ),
            ));
        }
        map.kept.retain(|(ours, _)| ours != m && ours != s);
        map.ignored.extend([mean_key, std_key]);
    }
    Ok(())
}

/// Equal to f32 precision (the buffers are f32; the spec's values are decimal f64).
fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-6 * x.abs().max(1.0))
}
