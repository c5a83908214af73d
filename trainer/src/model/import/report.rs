//! Every difference between a checkpoint and the model it is loaded into, listed at once
//! (missing, unexpected and wrongly shaped tensors with both shapes, kinds that cannot be
//! converted), so one attempt shows what a key map or spec needs.

use std::fmt;

use tch::Kind;

/// The kinds copied into the model's f32 variables (converted as `load_state_dict` does).
const FLOATING: [Kind; 4] = [Kind::Float, Kind::Double, Kind::Half, Kind::BFloat16];

/// How many names of each list are printed.
const SHOWN: usize = 12;

/// The differences between a mapped checkpoint and a model.
#[derive(Debug, Default, PartialEq)]
pub struct Mismatches {
    /// Tensors the model has and the checkpoint lacks.
    pub missing: Vec<String>,
    /// Tensors of the checkpoint the model does not have (classwise names).
    pub unexpected: Vec<String>,
    /// (name, shape in the file, shape in the model).
    pub shapes: Vec<(String, Vec<i64>, Vec<i64>)>,
    /// (name, kind in the file): not floating-point, or not a kind tch has.
    pub kinds: Vec<(String, String)>,
}

impl Mismatches {
    /// Whether the checkpoint fits.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty()
            && self.unexpected.is_empty()
            && self.shapes.is_empty()
            && self.kinds.is_empty()
    }

    /// Compares `file` (classwise name, kind, shape) with the model's `ours` (name, shape),
    /// both in any order.
    pub fn between(file: &[(String, Option<Kind>, Vec<i64>)], ours: &[(String, Vec<i64>)]) -> Self {
        let theirs: std::collections::BTreeMap<&str, (&Option<Kind>, &Vec<i64>)> =
            file.iter().map(|(n, k, s)| (n.as_str(), (k, s))).collect();
        let known: std::collections::BTreeSet<&str> =
            ours.iter().map(|(n, _)| n.as_str()).collect();
        let mut m = Mismatches::default();
        for (name, shape) in ours {
            match theirs.get(name.as_str()) {
                None => m.missing.push(name.clone()),
                Some((_, s)) if *s != shape => {
                    m.shapes.push((name.clone(), (*s).clone(), shape.clone()))
                }
                Some((Some(k), _)) if FLOATING.contains(k) => {}
                Some((k, _)) => m.kinds.push((name.clone(), format!("{k:?}"))),
            }
        }
        m.unexpected = theirs
            .keys()
            .filter(|n| !known.contains(*n))
            .map(|n| (*n).to_owned())
            .collect();
        m.missing.sort();
        m.shapes.sort();
        m
    }
}

fn list(f: &mut fmt::Formatter<'_>, title: &str, items: Vec<String>) -> fmt::Result {
    if items.is_empty() {
        return Ok(());
    }
    write!(
        f,
        "\n  {title} ({}): {}",
        items.len(),
        items
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    match items.len().saturating_sub(SHOWN) {
        0 => Ok(()),
        more => write!(f, ", and {more} more"),
    }
}

impl fmt::Display for Mismatches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = |n: &String| format!("`{n}`");
        list(
            f,
            "missing from the file",
            self.missing.iter().map(q).collect(),
        )?;
        list(
            f,
            "in the file, not in the model",
            self.unexpected.iter().map(q).collect(),
        )?;
        let shapes = self
            .shapes
            .iter()
            .map(|(n, file, model)| format!("`{n}` file {file:?} model {model:?}"));
        list(f, "wrongly shaped", shapes.collect())?;
        let kinds = self
            .kinds
            .iter()
            .map(|(n, k)| format!("`{n}` {k} (expected floating point)"));
        list(f, "wrong kind", kinds.collect())
    }
}
