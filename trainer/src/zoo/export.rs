//! `classwise export`: a classwise model as a PyTorch `state_dict` in safetensors, loadable
//! with `model.load_state_dict(safetensors.torch.load_file(FILE))` (strict) into the
//! reference definition of its architecture, and a model card beside it.
//!
//! Every classwise architecture names its parameters as its reference `state_dict` does, so
//! the names are kept; what PyTorch has and tch does not is added: each BatchNorm's
//! `num_batches_tracked` counter (a 0-dimensional int64, written as 0: it matters only to a
//! BatchNorm with `momentum=None`). A `.pt` (`torch.save`) file is not written: the crate
//! that reads them (`pytorch-reader`) has no writer, and safetensors is what PyTorch tools
//! exchange weights in.

use std::path::{Path, PathBuf};

use tch::{Kind, Tensor};

use super::card::{CardNormalization, ModelCard, NoNormalization, ThreatModel, sha256_file};
use crate::data::DatasetId;
use crate::error::Result;
use crate::model::Model;
use crate::model::safetensors::save_tensors;

/// The model's state with PyTorch's names and BatchNorm counters, sorted by name.
pub fn pytorch_state(model: &Model) -> Vec<(String, Tensor)> {
    let mut state = model.state();
    let counters: Vec<(String, Tensor)> = state
        .iter()
        .filter_map(|(name, _)| name.strip_suffix(".running_mean"))
        .map(|bn| {
            (
                format!("{bn}.num_batches_tracked"),
                Tensor::from(0i64).to_kind(Kind::Int64),
            )
        })
        .collect();
    state.extend(counters);
    state.sort_by(|a, b| a.0.cmp(&b.0));
    state
}

/// What [`export`] wrote.
#[derive(Debug)]
pub struct Exported {
    pub weights: PathBuf,
    /// The card, when the model's data set is one a card can name.
    pub card: Option<PathBuf>,
}

/// What the card of an export says about its model.
#[derive(Clone, Debug)]
pub struct CardFacts {
    pub name: String,
    /// The card needs a data set; `None` writes no card.
    pub dataset: Option<DatasetId>,
    pub eps: String,
    /// Where the model came from (a run and checkpoint, a card).
    pub source: String,
}

/// Writes `model` to `out` (safetensors) and, when the facts name a data set, a card for it
/// at `<out>.card.toml`, atomically.
pub fn export(model: &Model, out: &Path, facts: &CardFacts) -> Result<Exported> {
    save_tensors(out, &pytorch_state(model))?;
    let Some(dataset) = facts.dataset else {
        return Ok(Exported {
            weights: out.to_path_buf(),
            card: None,
        });
    };
    let spec = model.spec();
    let card = ModelCard {
        name: facts.name.clone(),
        file: PathBuf::from(out.file_name().unwrap_or_default()),
        sha256: Some(sha256_file(out)?),
        dataset,
        threat_model: ThreatModel::Linf,
        eps: facts.eps.clone(),
        architecture: spec.architecture.clone(),
        normalization: match &spec.normalization {
            Some(n) => CardNormalization::Some(n.clone()),
            None => CardNormalization::None(NoNormalization::None),
        },
        source: facts.source.clone(),
        citation: String::new(),
        catalogue: None,
    };
    let text =
        toml::to_string(&card).map_err(|e| crate::error::invalid("card", e, "serialisable"))?;
    let path = PathBuf::from(format!("{}.card.toml", out.display()));
    crate::io::write_atomic(&path, text.as_bytes())?;
    Ok(Exported {
        weights: out.to_path_buf(),
        card: Some(path),
    })
}
