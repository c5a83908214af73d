//! The key map from a checkpoint's tensor names to a classwise model's, as RobustBench's
//! `load_model` (`robustbench/utils.py`) and the papers' codes arrange their files:
//!
//! 1. a nested checkpoint keeps its weights under one top-level key: `state_dict` (WAT's
//!    `{'epoch', 'state_dict', 'optimizer'}`, RobustBench), `model_state_dict`, `model`,
//!    `net` or `last`; the first of these present is taken, and every other tensor (an
//!    optimiser's momentum, an EMA copy) is ignored and reported;
//! 2. a leading `module.` (`nn.DataParallel`) or `model.` is stripped, repeatedly;
//! 3. BatchNorm's `num_batches_tracked` counters are dropped (tch keeps none);
//! 4. per family: `sub_block1.*` of a TRADES/RobustBench WideResNet built with
//!    `sub_block1=True` (never used in `forward`) is dropped.
//!
//! Names are otherwise the reference ones: every classwise architecture names its parameters
//! as its reference `state_dict` does.

use super::super::spec::Architecture;

/// Top-level keys a nested checkpoint keeps its weights under, in the order they are tried.
pub(super) const NEST_KEYS: &[&str] = &["state_dict", "model_state_dict", "model", "net", "last"];

/// Prefixes stripped from every name (RobustBench strips both).
const PREFIXES: &[&str] = &["module.", "model."];

/// How a checkpoint's names were mapped.
#[derive(Debug, Default, PartialEq)]
pub struct KeyMap {
    /// The top-level key the weights were taken from, if the checkpoint was nested.
    pub nest: Option<String>,
    /// (classwise name, name in the file) of every kept tensor.
    pub kept: Vec<(String, String)>,
    /// Names in the file that were left out on purpose (outside the nest key, counters,
    /// unused blocks).
    pub ignored: Vec<String>,
}

/// Maps the tensor `names` of a checkpoint for a model of `architecture`.
pub fn map(names: &[String], architecture: &Architecture) -> KeyMap {
    let nest = NEST_KEYS
        .iter()
        .find(|k| names.iter().any(|n| n.starts_with(&format!("{k}."))))
        .map(|k| (*k).to_owned());
    let unused = unused_prefixes(architecture);
    let mut out = KeyMap {
        nest: nest.clone(),
        ..KeyMap::default()
    };
    for name in names {
        let inner = match &nest {
            Some(k) => name.strip_prefix(&format!("{k}.")),
            None => Some(name.as_str()),
        };
        let Some(mut key) = inner else {
            out.ignored.push(name.clone());
            continue;
        };
        while let Some(rest) = PREFIXES.iter().find_map(|p| key.strip_prefix(p)) {
            key = rest;
        }
        let counter = key == "num_batches_tracked" || key.ends_with(".num_batches_tracked");
        if counter || unused.iter().any(|p| key.starts_with(p)) {
            out.ignored.push(name.clone());
        } else {
            out.kept.push((key.to_owned(), name.clone()));
        }
    }
    out
}

/// Name prefixes a checkpoint of `architecture` holds but its forward pass never uses.
fn unused_prefixes(architecture: &Architecture) -> &'static [&'static str] {
    match architecture {
        Architecture::WideResNet {
            sub_block1: true, ..
        } => &["sub_block1."],
        _ => &[],
    }
}

/// Root-level buffers in which models keep their input normalisation (RobustBench's `mu` and
/// `sigma` of Rice2020/Wong2020, DeepMind's `mean` and `std` when saved persistent).
pub(super) const NORMALIZATION_BUFFERS: [(&str, &str); 2] = [("mu", "sigma"), ("mean", "std")];
