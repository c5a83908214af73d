//! Where the evaluated model comes from. Every `classwise eval` job starts from a [`Subject`]:
//! a loaded model with its evaluation settings, its data set and where its reports go. A source
//! of models implements [`ModelSource`]: a run directory is one ([`crate::run::RunDir`], its
//! checkpoints or a weight file with the run's architecture); another source (a checkpoint
//! another library wrote) is one more implementation, and every job then evaluates it.

use std::path::PathBuf;

use tch::Device;

use super::settings::EvalSettings;
use crate::data::DataSource;
use crate::error::Result;
use crate::model::{MemoryFormat, Model};

/// A model to evaluate and what its source says about evaluating it.
pub struct Subject {
    pub model: Model,
    /// The model's name in report file names: `last`, `best`, ..., or `file-<slug>`.
    pub name: String,
    pub settings: EvalSettings,
    /// The data set the model classifies (its test part is evaluated).
    pub data: DataSource,
    /// The test subset evaluated by default: the first N images of each class (`None`: all).
    pub test_per_class: Option<usize>,
    /// The device the model is on and the evaluation runs on.
    pub device: Device,
    /// The kernels' layout of the source's evaluations (a job may choose another).
    pub memory_format: MemoryFormat,
    /// The directory the reports are written to.
    pub out_dir: PathBuf,
    /// The file the settings came from, named in errors about them.
    pub origin: PathBuf,
}

/// A source of models to evaluate.
pub trait ModelSource {
    /// The model `name`d (a checkpoint of the source, or a path to weights), loaded on the
    /// source's device, with its evaluation settings.
    fn open(&self, name: &str) -> Result<Subject>;
}
