//! A model card as a source of models to evaluate ([`ModelSource`]): its weights, imported
//! into the card's architecture, evaluated on the test set of the card's data set at the
//! card's ε, with the reports written to a directory of the caller's choosing.

use std::path::PathBuf;

use tch::Device;

use super::card::ModelCard;
use super::catalogue::Catalogue;
use crate::attack::{Eps, Pgd};
use crate::data::DataSource;
use crate::error::{Result, TrainerError, bad_data};
use crate::eval::{EvalSettings, ModelSource, RobustCounting, Subject};
use crate::model::import::{Checkpoint, keys};
use crate::model::{MemoryFormat, Model};

/// A card and where its evaluations go.
#[derive(Clone, Debug)]
pub struct CardSource {
    pub card: ModelCard,
    pub device: Device,
    /// The directory the reports are written to (created if absent).
    pub out_dir: PathBuf,
    /// The file the card came from (`None`: built from the catalogue), named in errors.
    pub origin: Option<PathBuf>,
    /// The data set's files: the card's data set as found under the data roots with its
    /// official counts ([`CardSource::new`]), or another source of the same data set (a
    /// reduced copy in the tests).
    pub data: DataSource,
}

/// The settings of a card's evaluations: PGD-20 (step ε/4, uniform start) at the card's ε
/// for `eval`'s default attack; clean-and-adversarial counting (AutoAttack's); seed 0.
fn settings(card: &ModelCard, device: Device) -> Result<EvalSettings> {
    let eps = Eps::parse(&card.eps)?;
    let batch_size = if device.is_cuda() { 500 } else { 128 };
    Ok(EvalSettings {
        attack: Pgd::ce(20, eps.value / 4.0),
        eps,
        robust_counting: RobustCounting::CleanAndAdversarial,
        batch_size,
        seed: 0,
        protocol: Vec::new(),
        protocol_batch_size: batch_size,
    })
}

impl CardSource {
    /// The card's model on `device`, its reports in `out_dir`, its data set's official files.
    pub fn new(card: ModelCard, device: Device, out_dir: PathBuf, origin: Option<PathBuf>) -> Self {
        let data = DataSource::files(card.dataset);
        CardSource {
            card,
            device,
            out_dir,
            origin,
            data,
        }
    }

    /// Checks the card against the catalogue entry it names (or has the name of), the
    /// weights' SHA-256 when the card gives one, and the classifier's rows against the data
    /// set's classes; then imports the weights.
    pub fn load(&self) -> Result<Model> {
        super::agree_with_catalogue(&self.card, &Catalogue::builtin()?)?;
        self.card.verify_file()?;
        let checkpoint = Checkpoint::open(&self.card.file)?;
        let spec = self.card.spec();
        check_head(&checkpoint, &self.card)?;
        Ok(Model::import_checkpoint(&checkpoint, &spec, self.device)?.0)
    }
}

/// The data set's classes must be the classifier's outputs.
fn check_head(checkpoint: &Checkpoint, card: &ModelCard) -> Result<()> {
    let map = keys::map(&checkpoint.names(), &card.architecture);
    let head = card.architecture.head();
    let Some((_, theirs)) = map.kept.iter().find(|(ours, _)| ours == head) else {
        return Ok(()); // the import lists it as missing
    };
    let rows = checkpoint.shape(theirs).and_then(|s| s.first().copied());
    let classes = card.spec().num_classes as i64;
    match rows {
        Some(r) if r != classes => Err(bad_data(
            &checkpoint.path,
            format!(
                "its classifier `{theirs}` has {r} outputs, but the card's data set {} has \
                 {classes} classes (card `{}`)",
                card.dataset.name(),
                card.name
            ),
        )),
        _ => Ok(()),
    }
}

impl ModelSource for CardSource {
    /// The card's model (`name` is not used: a card holds one model).
    fn open(&self, _name: &str) -> Result<Subject> {
        std::fs::create_dir_all(&self.out_dir).map_err(|source| TrainerError::Io {
            context: "creating",
            path: self.out_dir.clone(),
            source,
        })?;
        Ok(Subject {
            model: self.load()?,
            name: classwise_core::name::slug(&self.card.name),
            settings: settings(&self.card, self.device)?,
            data: self.data.clone(),
            test_per_class: None,
            device: self.device,
            memory_format: MemoryFormat::RUN_DEFAULT,
            out_dir: self.out_dir.clone(),
            origin: self
                .origin
                .clone()
                .unwrap_or_else(|| self.card.file.clone()),
        })
    }
}
