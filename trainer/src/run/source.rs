//! A run directory as a source of models to evaluate ([`ModelSource`]): its checkpoints (or a
//! weight file of the run's architecture) with the settings of its configuration's `[eval]`
//! section, its data set and test subset; reports are written next to the run's files.

use classwise_core::name::slug;
use classwise_core::record::REPORT_FILES;
use tch::Device;

use super::config::RunConfig;
use super::dir::RunDir;
use super::seeds::report_seed;
use crate::error::{IoContext, Result, TrainerError};
use crate::eval::{EvalSettings, ModelSource, Subject};

impl RunDir {
    /// The configuration the run was trained with (`<run>/config.toml`).
    pub fn read_config(&self) -> Result<RunConfig> {
        let text = std::fs::read_to_string(self.config()).at("reading", self.config())?;
        RunConfig::from_toml(&text).map_err(|e| TrainerError::BadData {
            path: self.config(),
            offset: None,
            reason: e.to_string(),
        })
    }
}

impl RunConfig {
    /// How the run's models are evaluated on `device`: its `[eval]` attack, ε, counting and
    /// protocol, the final report's seed.
    pub fn eval_settings(&self, device: Device) -> EvalSettings {
        EvalSettings {
            attack: self.eval.attack,
            eps: self.eval.eps.clone(),
            robust_counting: self.eval.robust_counting,
            batch_size: self.eval_batch_size(device),
            seed: report_seed(self),
            protocol: self.eval.protocol.clone(),
            protocol_batch_size: self.batch_size,
        }
    }
}

impl ModelSource for RunDir {
    /// `name`: a checkpoint the run names (`last`, `best`, `ema`, `fawa`, `best-ema`,
    /// `best-fawa`; [`RunDir::load_model`]) or a path to weights of the run's architecture.
    fn open(&self, name: &str) -> Result<Subject> {
        let config = self.read_config()?;
        let device = config.device.device()?;
        let model = self.load_model(name, device)?;
        // The models a run names are those of its final reports; anything else is a weight file.
        let name = match REPORT_FILES.iter().any(|(model, _)| *model == name) {
            true => name.to_string(),
            false => format!("file-{}", slug(name)),
        };
        Ok(Subject {
            model,
            name,
            settings: config.eval_settings(device),
            data: config.data.source.clone(),
            test_per_class: config.data.test_per_class,
            device,
            memory_format: config.memory_format,
            out_dir: self.0.clone(),
            origin: self.config(),
        })
    }
}
