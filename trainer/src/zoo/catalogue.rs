//! The catalogue of published models classwise can build: RobustBench's CIFAR-10 and
//! CIFAR-100 L∞ model-zoo entries, `trainer/catalogue/robustbench.toml` (generated from
//! RobustBench's own `model_zoo/cifar10.py`, `cifar100.py` and `model_info/` by
//! `tools/zoo/catalogue.py`; compiled into the binary). Each supported entry gives the
//! architecture, the normalisation and the reported clean and AutoAttack accuracies with
//! their source; each unsupported one says why. The weights are not here: RobustBench
//! downloads them from a host this project cannot reach, so a user passes the file.

use serde::Deserialize;

use super::card::{CardNormalization, ModelCard, NoNormalization, ThreatModel};
use crate::data::DatasetId;
use crate::error::{Result, invalid};
use crate::model::{Architecture, Normalization};

/// The catalogue's text.
const TEXT: &str = include_str!("../../catalogue/robustbench.toml");

/// A supported entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    pub dataset: DatasetId,
    pub threat_model: ThreatModel,
    pub eps: String,
    pub architecture: Architecture,
    #[serde(default)]
    pub normalization: Option<Normalization>,
    /// Buffers of the model's `state_dict` that hold its normalisation (checked, dropped).
    #[serde(default)]
    pub buffers: Vec<String>,
    /// Clean accuracy (%) RobustBench reports.
    pub clean_acc: f64,
    /// AutoAttack accuracy (%) RobustBench reports.
    pub autoattack_acc: f64,
    /// The robust accuracy (%) the paper reports, when it is a number.
    #[serde(default)]
    pub reported: Option<f64>,
    pub additional_data: bool,
    pub paper: String,
    pub authors: String,
    pub venue: String,
    pub link: String,
    pub source: String,
}

/// An entry classwise cannot build, and why.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unsupported {
    pub name: String,
    pub dataset: DatasetId,
    pub architecture_text: String,
    pub constructor: String,
    pub reason: String,
    pub clean_acc: f64,
    pub autoattack_acc: f64,
    pub link: String,
}

/// The whole catalogue.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    pub model: Vec<Entry>,
    pub unsupported: Vec<Unsupported>,
}

impl Catalogue {
    /// The compiled-in catalogue.
    pub fn builtin() -> Result<Catalogue> {
        toml::from_str(TEXT)
            .map_err(|e| invalid("trainer/catalogue/robustbench.toml", e, "a catalogue"))
    }

    /// The entry `name` (optionally `dataset/name`, e.g. `cifar100/Rice2020Overfitting`).
    /// Fails naming why: unknown, ambiguous between data sets, or unsupported (with the
    /// catalogue's reason).
    pub fn find(&self, name: &str, dataset: Option<DatasetId>) -> Result<&Entry> {
        let (dataset, name) = split_dataset(name, dataset)?;
        let fits = |n: &str, d: DatasetId| n == name && dataset.is_none_or(|want| want == d);
        let found: Vec<&Entry> = self
            .model
            .iter()
            .filter(|e| fits(&e.name, e.dataset))
            .collect();
        match found.as_slice() {
            [one] => Ok(one),
            [] => Err(self.missing(name, dataset)),
            many => Err(invalid(
                "zoo",
                name,
                format!(
                    "one data set: the name is in {}; write e.g. `{}/{name}`",
                    many.iter()
                        .map(|e| slug(e.dataset))
                        .collect::<Vec<_>>()
                        .join(" and "),
                    slug(many[0].dataset)
                ),
            )),
        }
    }

    fn missing(&self, name: &str, dataset: Option<DatasetId>) -> crate::TrainerError {
        let fits = |u: &&Unsupported| u.name == name && dataset.is_none_or(|d| d == u.dataset);
        match self.unsupported.iter().find(fits) {
            Some(u) => invalid(
                "zoo",
                name,
                format!(
                    "an entry classwise can build: {} ({}, `{}`) is not: {}",
                    u.name, u.architecture_text, u.constructor, u.reason
                ),
            ),
            None => invalid(
                "zoo",
                name,
                "a name of RobustBench's CIFAR-10 or CIFAR-100 Linf zoo (`classwise zoo list`)",
            ),
        }
    }
}

/// The catalogue's name of a data set (`cifar10`, `cifar100`).
pub fn slug(dataset: DatasetId) -> String {
    serde_json::to_value(dataset)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `cifar100/Name` → (cifar100, Name); a data set in both places must agree.
fn split_dataset(name: &str, dataset: Option<DatasetId>) -> Result<(Option<DatasetId>, &str)> {
    let Some((prefix, rest)) = name.split_once('/') else {
        return Ok((dataset, name));
    };
    let parsed: DatasetId = serde_json::from_value(serde_json::Value::String(prefix.to_owned()))
        .map_err(|_| {
            invalid(
                "zoo",
                name,
                "NAME or DATASET/NAME with DATASET cifar10 or cifar100",
            )
        })?;
    match dataset {
        Some(d) if d != parsed => Err(invalid("zoo", name, format!("the data set {}", slug(d)))),
        _ => Ok((Some(parsed), rest)),
    }
}

impl Entry {
    /// The card of this entry with the weights at `file`.
    pub fn card(&self, file: &std::path::Path) -> ModelCard {
        ModelCard {
            name: self.name.clone(),
            file: file.to_path_buf(),
            sha256: None,
            dataset: self.dataset,
            threat_model: self.threat_model,
            eps: self.eps.clone(),
            architecture: self.architecture.clone(),
            normalization: match &self.normalization {
                Some(n) => CardNormalization::Some(n.clone()),
                None => CardNormalization::None(NoNormalization::None),
            },
            source: format!("{} ({})", self.source, self.link),
            citation: format!("{}: {}. {}", self.authors, self.paper, self.venue),
            catalogue: Some(self.name.clone()),
        }
    }
}
