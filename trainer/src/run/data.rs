//! The data of a run: the validation split and the per-class subsets.

use std::path::Path;

use classwise_core::record::{SPLIT_SCHEMA, SplitIndices};

use super::config::RunConfig;
use super::dir::RunDir;
use crate::data::{self, Dataset, Part, Split, first_per_class};
use crate::error::{Result, TrainerError};
use crate::io::write_json;

/// The data of a run after splitting and subsetting.
pub(crate) struct RunData {
    pub train: Dataset,
    pub val: Option<Dataset>,
    pub test: Dataset,
}

pub(crate) fn load_data(
    config: &RunConfig,
    dir: &RunDir,
    data_dir: Option<&Path>,
) -> Result<RunData> {
    let full = data::load(&config.data.source, Part::Train, data_dir)?;
    let test_full = data::load(&config.data.source, Part::Test, data_dir)?;
    let k = full.num_classes();
    let split = Split::of_dataset(&full, &config.data.split)?;
    let labels = full.label_slice();
    let mut train = first_per_class(labels, &split.train, config.data.train_per_class, k);
    let drop = &config.data.drop_classes;
    train.retain(|&i| !drop.contains(&(labels[i as usize] as usize)));
    let all_test: Vec<i64> = (0..test_full.len() as i64).collect();
    let test = first_per_class(
        test_full.label_slice(),
        &all_test,
        config.data.test_per_class,
        k,
    );
    let record = SplitIndices {
        schema: SPLIT_SCHEMA,
        split: serde_json::to_value(&split).map_err(|source| TrainerError::Json {
            what: "split",
            source,
        })?,
        train: train.clone(),
        val: split.val.clone(),
        test: test.clone(),
    };
    write_json(&dir.split(), "split", &record)?;
    Ok(RunData {
        train: full.subset(&train)?,
        val: (!split.val.is_empty())
            .then(|| full.subset(&split.val))
            .transpose()?,
        test: test_full.subset(&test)?,
    })
}
