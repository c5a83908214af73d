//! Saving and loading a [`Model`] as one safetensors file whose metadata holds the
//! [`super::ModelSpec`] (as JSON under [`SPEC_METADATA_KEY`]), so a weight file alone rebuilds
//! its model. Files are written atomically ([`super::safetensors::write`]). Loading checks
//! names, shapes and kinds against the model and reports the first mismatch by parameter name.

use std::collections::BTreeMap;
use std::path::Path;

use tch::Device;

use super::safetensors::{self, SafetensorsFile};
use super::{Model, ModelSpec};
use crate::error::{Result, TrainerError, bad_data, invalid};

/// The metadata key holding the model spec as JSON.
pub const SPEC_METADATA_KEY: &str = "classwise.model_spec";
/// Metadata marking the tensors as PyTorch-layout (what Hugging Face tools look for).
const FORMAT_KEY: &str = "format";

impl Model {
    /// Saves the whole state (parameters and BN running statistics) and the spec to `path`
    /// (conventionally `*.safetensors`), atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.save_with_metadata(path, &BTreeMap::new())
    }

    /// [`Model::save`] with extra string metadata (e.g. epoch, config hash). The keys
    /// [`SPEC_METADATA_KEY`] and `format` are reserved.
    pub fn save_with_metadata(&self, path: &Path, extra: &BTreeMap<String, String>) -> Result<()> {
        if let Some(key) = extra
            .keys()
            .find(|k| *k == SPEC_METADATA_KEY || *k == FORMAT_KEY)
        {
            return Err(invalid(
                "metadata",
                key,
                format!("keys other than `{SPEC_METADATA_KEY}` and `{FORMAT_KEY}`"),
            ));
        }
        let mut metadata = extra.clone();
        metadata.insert(SPEC_METADATA_KEY.to_owned(), self.spec().to_json()?);
        metadata.insert(FORMAT_KEY.to_owned(), "pt".to_owned());
        safetensors::write(path, &self.state(), &metadata)
    }

    /// Builds the model stored at `path` (spec from the metadata) on `device` and loads its
    /// state. Fails on a file without a classwise spec, an invalid spec, or tensors that do not
    /// match the spec (naming the first mismatching parameter).
    pub fn load(path: &Path, device: Device) -> Result<Model> {
        let file = safetensors::read(path, device)?;
        let spec = stored_spec(path, &file)?.ok_or_else(|| {
            bad_data(
                path,
                format!(
                    "no `{SPEC_METADATA_KEY}` in the safetensors metadata (not written by \
                     classwise: build the model from its spec and use `load_weights`)"
                ),
            )
        })?;
        let mut model = Model::build(&spec, device, false);
        model.load_file_state(path, &file)?;
        Ok(model)
    }

    /// Loads the state stored at `path` into this model. Names, shapes and kinds must match
    /// this model (`num_batches_tracked` entries of converted PyTorch checkpoints are ignored),
    /// and a spec stored in the file must equal this model's; otherwise the model is unchanged
    /// and the error names the first mismatching parameter (or the differing spec).
    pub fn load_weights(&mut self, path: &Path) -> Result<()> {
        let file = safetensors::read(path, self.device())?;
        let spec = stored_spec(path, &file)?;
        if let Some(m) = self.state_mismatch(&file.tensors) {
            return Err(bad_data(
                path,
                format!("{m} (this model: {})", self.spec().describe()),
            ));
        }
        if let Some(spec) = spec.filter(|s| s != self.spec()) {
            return Err(bad_data(
                path,
                format!(
                    "stored for a different model: {} (spec {}), this model is {} (spec {})",
                    spec.describe(),
                    spec.to_json()?,
                    self.spec().describe(),
                    self.spec().to_json()?
                ),
            ));
        }
        self.load_file_state(path, &file)
    }

    fn load_file_state(&mut self, path: &Path, file: &SafetensorsFile) -> Result<()> {
        self.load_state(&file.tensors).map_err(|e| match e {
            TrainerError::Invalid { value, .. } => bad_data(path, value),
            other => other,
        })
    }
}

/// The spec in `file`'s metadata, if any.
fn stored_spec(path: &Path, file: &SafetensorsFile) -> Result<Option<ModelSpec>> {
    file.metadata
        .get(SPEC_METADATA_KEY)
        .map(|text| {
            ModelSpec::from_json(text)
                .map_err(|e| bad_data(path, format!("metadata `{SPEC_METADATA_KEY}`: {e}")))
        })
        .transpose()
}
