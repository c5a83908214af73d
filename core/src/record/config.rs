//! A libtorch-free view of a run's resolved configuration (`config.toml`, written by `classwise
//! train`): the fields that `classwise compare` and the run figures read, and nothing else. The
//! trainer owns the configuration itself (`classwise_trainer::config`); this view ignores the
//! fields it does not name, so it reads the configuration of any version.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{CoreError, Result};

/// The file name of a run's resolved configuration in its directory.
pub const CONFIG_FILE: &str = "config.toml";

/// What the libtorch-free readers need of a run's configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunConfigView {
    /// The run's seed.
    pub seed: Option<u64>,
    pub data: DataView,
    pub eval: EvalView,
}

/// `[data]`: the classes trained without (Tian et al. §6) and the test images per class.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataView {
    pub drop_classes: Vec<usize>,
    pub test_per_class: Option<usize>,
}

/// `[eval]`: the test images per class of the per-epoch evaluations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvalView {
    pub test_per_class: Option<usize>,
}

impl RunConfigView {
    /// Reads and checks `text` (`what` names the file in errors, with the field, e.g.
    /// `config.toml: eval.test_per_class`).
    pub fn parse(text: &str, what: &str) -> Result<RunConfigView> {
        let table: toml::Table = toml::from_str(text).map_err(|e| CoreError::Config {
            what: what.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let at = |path: &'static [&'static str]| Field {
            table: &table,
            what,
            path,
        };
        Ok(RunConfigView {
            seed: at(&["seed"]).read()?,
            data: DataView {
                drop_classes: at(&["data", "drop_classes"]).read()?.unwrap_or_default(),
                test_per_class: at(&["data", "test_per_class"]).read()?,
            },
            eval: EvalView {
                test_per_class: at(&["eval", "test_per_class"]).read()?,
            },
        })
    }

    /// The configuration of the run directory `dir`; `None` when it has no `config.toml`.
    pub fn read(dir: &Path) -> Result<Option<RunConfigView>> {
        let path = dir.join(CONFIG_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| CoreError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string()).map(Some)
    }

    /// The test images per class of the per-epoch evaluations: the smaller of
    /// `data.test_per_class` and `eval.test_per_class` (the evaluation's subset of the loaded
    /// test split), whichever is set.
    pub fn epoch_test_per_class(&self) -> Option<usize> {
        match (self.data.test_per_class, self.eval.test_per_class) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A field of a configuration file, by its path of keys.
struct Field<'a> {
    table: &'a toml::Table,
    what: &'a str,
    path: &'static [&'static str],
}

impl Field<'_> {
    /// The field as a `T`; `None` when it is absent.
    fn read<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        let mut value = self.table.get(self.path[0]);
        for key in &self.path[1..] {
            value = value.and_then(|v| v.get(*key));
        }
        let typed = value.map(|v| v.clone().try_into::<T>());
        typed.transpose().map_err(|e| CoreError::Config {
            what: format!("{}: {}", self.what, self.path.join(".")),
            message: e.message().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_it_names_and_ignores_the_rest() {
        let text = "name = \"x\"\nseed = 2\n[data]\ndrop_classes = [4]\ntest_per_class = 500\n\
                    train_per_class = 800\n[eval]\ntest_per_class = 50\n[train]\nepochs = 6\n";
        let v = RunConfigView::parse(text, "config.toml").unwrap();
        assert_eq!(v.seed, Some(2));
        assert_eq!(v.data.drop_classes, [4]);
        assert_eq!(v.epoch_test_per_class(), Some(50));
        let none = RunConfigView::parse("name = \"y\"\n", "config.toml").unwrap();
        assert_eq!(none, RunConfigView::default());
        assert_eq!(none.epoch_test_per_class(), None);
        let data_only = RunConfigView::parse("[data]\ntest_per_class = 30\n", "c").unwrap();
        assert_eq!(data_only.epoch_test_per_class(), Some(30));
    }

    #[test]
    fn a_wrong_type_names_the_file_and_the_field() {
        let e = RunConfigView::parse("[data]\ndrop_classes = \"Coat\"\n", "runs/a/config.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("runs/a/config.toml"), "{e}");
        assert!(e.contains("drop_classes"), "{e}");
        let e = RunConfigView::parse("seed = -1\n", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("seed"), "{e}");
    }
}
