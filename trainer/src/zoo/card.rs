//! A model card: what `classwise eval --card` needs to evaluate weights another library
//! wrote. TOML:
//!
//! ```toml
//! name = "Carmon2019Unlabeled"
//! file = "Carmon2019Unlabeled.pt"      # relative to the card's directory
//! sha256 = "…"                         # optional; checked before loading when given
//! dataset = "cifar10"                  # cifar10 | cifar100 | fashion-mnist | tiny-imagenet
//! threat_model = "Linf"
//! eps = "8/255"
//! architecture = { kind = "wide_resnet", depth = 28, widen = 10, sub_block1 = true }
//! normalization = "none"               # or { mean = [..], std = [..] } or { per_image = "standardize" }
//! source = "where the weights come from"
//! citation = "who to cite"
//! catalogue = "Carmon2019Unlabeled"    # optional: a catalogue entry the card must agree with
//! ```
//!
//! `normalization` is required, `"none"` included: a forgotten normalisation gives wrong
//! numbers without any error, so a card says what its model expects.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::DatasetId;
use crate::error::{IoContext, Result, bad_data};
use crate::model::{Architecture, ModelSpec, Normalization};

/// The threat models of RobustBench's leaderboards; classwise's attacks are L∞.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThreatModel {
    Linf,
    L2,
    #[serde(rename = "corruptions")]
    Corruptions,
}

/// A card's normalisation: the literal `"none"`, or a [`Normalization`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CardNormalization {
    None(NoNormalization),
    Some(Normalization),
}

/// The literal `"none"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoNormalization {
    None,
}

impl CardNormalization {
    /// The model spec's normalisation.
    pub fn get(&self) -> Option<&Normalization> {
        match self {
            CardNormalization::None(_) => None,
            CardNormalization::Some(n) => Some(n),
        }
    }

    /// `"none"` or the normalisation's description.
    pub fn describe(&self) -> String {
        self.get()
            .map_or("none".to_owned(), Normalization::describe)
    }
}

/// A model card (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCard {
    pub name: String,
    /// The weights: a `torch.save` file or safetensors, relative to the card's directory.
    pub file: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    pub dataset: DatasetId,
    pub threat_model: ThreatModel,
    pub eps: String,
    pub architecture: Architecture,
    pub normalization: CardNormalization,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub citation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<String>,
}

impl ModelCard {
    /// Reads the card at `path`; its `file` is resolved against the card's directory.
    pub fn read(path: &Path) -> Result<ModelCard> {
        let text = std::fs::read_to_string(path).at("reading", path)?;
        let mut card: ModelCard =
            toml::from_str(&text).map_err(|e| bad_data(path, format!("not a model card: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        card.file = dir.join(&card.file);
        card.check().map_err(|e| bad_data(path, e.to_string()))?;
        Ok(card)
    }

    /// Checks what can be checked without the weights: an L∞ threat model, ε, the spec.
    pub fn check(&self) -> Result<()> {
        if self.threat_model != ThreatModel::Linf {
            return Err(crate::error::invalid(
                "threat_model",
                format!("{:?}", self.threat_model),
                "Linf (classwise's attacks are L-infinity attacks)",
            ));
        }
        crate::attack::Eps::parse(&self.eps)?;
        self.spec().validate()
    }

    /// The model spec: the card's architecture and normalisation, the data set's classes and
    /// image shape.
    pub fn spec(&self) -> ModelSpec {
        let (classes, shape) = crate::data::DataSource::files(self.dataset).classes_and_shape();
        ModelSpec {
            architecture: self.architecture.clone(),
            num_classes: classes,
            input_shape: shape,
            normalization: self.normalization.get().cloned(),
        }
    }

    /// Checks the weights file's SHA-256 against the card's, when the card has one; returns
    /// the file's digest (hex).
    pub fn verify_file(&self) -> Result<String> {
        let digest = sha256_file(&self.file)?;
        match &self.sha256 {
            Some(want) if !want.eq_ignore_ascii_case(&digest) => Err(bad_data(
                &self.file,
                format!("SHA-256 {digest}, but the card `{}` says {want}", self.name),
            )),
            _ => Ok(digest),
        }
    }
}

/// SHA-256 (hex) of a file, read in blocks.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut file = std::fs::File::open(path).at("opening", path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).at("reading", path)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
