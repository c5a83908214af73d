//! The data of a run: the validation split, the per-class subsets, batches in index order.

use std::path::Path;

use serde::Serialize;
use tch::Device;

use super::config::RunConfig;
use super::dir::RunDir;
use crate::data::{self, Dataset, Part, Split, batches};
use crate::error::Result;
use crate::eval::{Report, evaluate};
use crate::io::write_json;
use crate::model::Model;

/// The data of a run after splitting and subsetting.
pub(crate) struct RunData {
    pub train: Dataset,
    pub val: Option<Dataset>,
    pub test: Dataset,
}

#[derive(Serialize)]
struct SplitFile<'a> {
    split: &'a Split,
    train: &'a [i64],
    val: &'a [i64],
    test: &'a [i64],
}

/// The first `n` indices of each class among `indices` (all of them when `n` is `None`).
fn first_per_class(labels: &[i64], indices: &[i64], n: Option<usize>, k: usize) -> Vec<i64> {
    let Some(n) = n else {
        return indices.to_vec();
    };
    let mut taken = vec![0usize; k];
    indices
        .iter()
        .copied()
        .filter(|&i| {
            let c = labels[i as usize] as usize;
            taken[c] += 1;
            taken[c] <= n
        })
        .collect()
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
    write_json(
        &dir.split(),
        "split",
        &SplitFile {
            split: &split,
            train: &train,
            val: &split.val,
            test: &test,
        },
    )?;
    Ok(RunData {
        train: full.subset(&train)?,
        val: (!split.val.is_empty())
            .then(|| full.subset(&split.val))
            .transpose()?,
        test: test_full.subset(&test)?,
    })
}

/// The first `n` per class of a whole data set (all of it when `n` is `None`).
pub fn head_per_class(d: &Dataset, n: Option<usize>) -> Result<Dataset> {
    d.subset(&head_per_class_indices(d, n))
}

/// The indices (in file order) of [`head_per_class`]'s images.
pub fn head_per_class_indices(d: &Dataset, n: Option<usize>) -> Vec<i64> {
    let all: Vec<i64> = (0..d.len() as i64).collect();
    first_per_class(d.label_slice(), &all, n, d.num_classes())
}

/// Evaluates `model` on `data` with the run's evaluation attack.
pub fn evaluate_on(
    model: &Model,
    data: &Dataset,
    config: &RunConfig,
    device: Device,
) -> Result<Report> {
    evaluate_with(model, data, config, &config.eval.attack, device)
}

/// Evaluates `model` on `data` with `attack` at the run's evaluation ε and robust counting.
pub fn evaluate_with(
    model: &Model,
    data: &Dataset,
    config: &RunConfig,
    attack: &dyn crate::attack::Attack,
    device: Device,
) -> Result<Report> {
    evaluate(
        model,
        batches(data, config.eval_batch_size(device), device)?,
        data.class_names(),
        attack,
        config.eval.eps.value,
        config.eval.robust_counting,
        device,
    )
}
