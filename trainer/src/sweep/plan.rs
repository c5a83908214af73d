//! `classwise sweep plan SWEEP.toml --out DIR`: a sweep file (presets or named variants × a grid
//! of `--set` overrides × seeds) expanded into a manifest of resolved run configurations, each
//! with a stable id derived from its resolved configuration.
//!
//! A sweep file:
//!
//! ```toml
//! name = "smoke"
//! presets = ["../configs/fmnist-smoke.toml"]   # relative to this file; one axis
//! seeds = [0, 1]                                # another
//! set = ["epochs=1"]                            # applied to every run
//!
//! [[variant]]                                   # optional axis: named override lists
//! name = "pgd-at"
//! [[variant]]
//! name = "pgd-at-cfa"
//! set = ['rule={ kind = "cfa", lambda1 = 0.5, begin = 1 }']
//!
//! [grid]                                        # optional: the cartesian product
//! "train.eps" = [0.1, 0.2]
//! ```
//!
//! A preset may carry overrides of its own, `{ file = "...", set = [...] }`, and an override may
//! name another run of the sweep with the same seed (and variant and grid point), `{run:GROUP}`,
//! which becomes that run's directory: FRL fine-tunes each seed's TRADES run with
//! `train.init_from.path="{run:fmnist-trades}"`. The run then waits for the one it names
//! ([`Entry::after`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use classwise_core::name::{is_plain, slug};
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::error::{IoContext, Result, TrainerError, invalid};
use crate::run::RunConfig;

/// A sweep file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The sweep's name (letters, digits, `-`, `_`, `.`).
    pub name: String,
    /// What the sweep reproduces, for the manifest and the collected tables.
    #[serde(default)]
    pub description: Option<String>,
    /// Run configurations, relative to the sweep file; one axis.
    pub presets: Vec<Preset>,
    /// Seeds; one axis (the axis `collect` averages over).
    pub seeds: Vec<u64>,
    /// Overrides applied to every run, before the variant's and the grid's.
    #[serde(default)]
    pub set: Vec<String>,
    /// Named override lists ("methods"); one axis. None: every preset as it is.
    #[serde(default)]
    pub variant: Vec<Variant>,
    /// Dotted keys, each with the values it takes; the runs cover their cartesian product.
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<toml::Value>>,
    /// Overrides from the command line (`classwise sweep plan --set`), applied to every run
    /// after the file's own (the sweep still sets each run's `name` and `seed`).
    #[serde(skip)]
    pub command_line: Vec<String>,
}

/// A preset of a sweep: a file, or a file with overrides of its own (applied after the sweep's
/// `set`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Preset {
    File(PathBuf),
    WithSet(PresetWithSet),
}

/// `{ file = "...", set = [...] }`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetWithSet {
    pub file: PathBuf,
    #[serde(default)]
    pub set: Vec<String>,
}

impl Preset {
    pub fn file(&self) -> &Path {
        match self {
            Preset::File(f) | Preset::WithSet(PresetWithSet { file: f, .. }) => f,
        }
    }
    fn set(&self) -> &[String] {
        match self {
            Preset::File(_) => &[],
            Preset::WithSet(p) => &p.set,
        }
    }
}

/// A named list of overrides.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default)]
    pub set: Vec<String>,
}

/// One run of a sweep, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Stable: the label's slug and the first 10 hex digits of the SHA-256 of the resolved
    /// configuration.
    pub id: String,
    /// The group (everything but the seed), e.g. `fmnist-at/pgd-at-cfa/train.eps=0.1`.
    pub group: String,
    pub seed: u64,
    /// The preset file, as the sweep file names it.
    pub preset: PathBuf,
    pub variant: Option<String>,
    /// Every override applied, in order (the seed's last), `{run:GROUP}` resolved.
    pub overrides: Vec<String>,
    /// The runs this one starts from (`{run:GROUP}` in its overrides): its task waits until they
    /// are complete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// The resolved configuration (TOML), as `classwise train` writes it to `config.toml`.
    pub config: String,
}

impl Entry {
    /// The entry's configuration.
    pub fn run_config(&self) -> Result<RunConfig> {
        RunConfig::from_toml(&self.config).map_err(|e| e.in_section(&format!("run {}", self.id)))
    }
}

/// `manifest.json` of a sweep directory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    pub name: String,
    pub description: Option<String>,
    /// The sweep file it was planned from.
    pub spec: PathBuf,
    /// Index `i` is array task `i` (`classwise sweep task DIR --index i`).
    pub runs: Vec<Entry>,
}

/// The version of `manifest.json` written now. Schema 1 named run ids with another slug (`=`
/// and every other character outside letters, digits, `-`, `_`, `.` became `_`, runs not
/// collapsed); schema 2 names them with [`classwise_core::name::slug`]. Both read the same, and
/// a schema-1 sweep runs and resumes as planned; planning it again refuses when an id would
/// change ([`check_ids_kept`]).
pub const MANIFEST_SCHEMA: u32 = 2;

/// The manifest schemas [`Manifest::load`] reads.
const READABLE_MANIFESTS: [u32; 2] = [1, 2];

impl Manifest {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("manifest.json")
    }

    /// Reads `DIR/manifest.json`.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = Manifest::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| TrainerError::Io {
            context: "reading the sweep manifest (run `classwise sweep plan` first)",
            path: path.clone(),
            source: e,
        })?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| TrainerError::BadData {
            path: path.clone(),
            offset: None,
            reason: format!("not a sweep manifest: {e}"),
        })?;
        if !READABLE_MANIFESTS.contains(&m.schema) {
            return Err(TrainerError::BadData {
                path,
                offset: None,
                reason: format!(
                    "manifest schema {} (this classwise reads schemas {READABLE_MANIFESTS:?})",
                    m.schema
                ),
            });
        }
        Ok(m)
    }

    /// The entry of array task `index`.
    pub fn entry(&self, index: usize) -> Result<&Entry> {
        self.runs.get(index).ok_or_else(|| {
            invalid(
                "--index",
                index,
                format!(
                    "an index of the manifest, 0..={} ({} runs)",
                    self.runs.len().saturating_sub(1),
                    self.runs.len()
                ),
            )
        })
    }
}

impl SweepSpec {
    pub fn from_file(path: &Path) -> Result<SweepSpec> {
        let text = std::fs::read_to_string(path).at("reading", path)?;
        let spec: SweepSpec = toml::from_str(&text).map_err(|e| {
            invalid(
                path.display().to_string(),
                e.message(),
                format!("a valid sweep file ({e})"),
            )
        })?;
        spec.validate(path)?;
        Ok(spec)
    }

    fn validate(&self, path: &Path) -> Result<()> {
        let field = |f: &str| format!("{}: {f}", path.display());
        if !is_plain(&self.name) {
            return Err(invalid(
                field("name"),
                format!("{:?}", self.name),
                "a non-empty name of letters, digits, `-`, `_` and `.`",
            ));
        }
        if self.presets.is_empty() {
            return Err(invalid(field("presets"), "[]", "at least one preset"));
        }
        if self.seeds.is_empty() {
            return Err(invalid(field("seeds"), "[]", "at least one seed"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for s in &self.seeds {
            if !seen.insert(s) {
                return Err(invalid(field("seeds"), s, "distinct seeds"));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for v in &self.variant {
            if !is_plain(&v.name) || !names.insert(&v.name) {
                return Err(invalid(
                    field("variant.name"),
                    format!("{:?}", v.name),
                    "distinct non-empty names of letters, digits, `-`, `_` and `.`",
                ));
            }
        }
        for (key, values) in &self.grid {
            if values.is_empty() {
                return Err(invalid(
                    field(&format!("grid.{key}")),
                    "[]",
                    "at least one value",
                ));
            }
        }
        Ok(())
    }

    /// Every run: presets × variants × grid points × seeds, in that nesting order, each
    /// configuration resolved and validated (an error names the preset and the override);
    /// `{run:GROUP}` becomes the directory of that group's run under `sweep_dir`.
    pub fn expand(&self, spec_path: &Path, sweep_dir: &Path) -> Result<Vec<Entry>> {
        let pending = self.pending();
        distinct_groups(&pending, spec_path)?;
        let deps = dependencies(&pending, spec_path)?;
        let base = spec_path.parent().unwrap_or(Path::new("."));
        let sweep = super::SweepDir(sweep_dir.to_path_buf());
        let runs = resolve(&pending, &deps, base, &sweep, spec_path)?;
        let mut ids = std::collections::BTreeSet::new();
        for r in &runs {
            if !ids.insert(&r.id) {
                return Err(invalid(
                    format!("{}", spec_path.display()),
                    &r.group,
                    "axes whose runs differ (two runs resolve to the same configuration)",
                ));
            }
        }
        Ok(runs)
    }

    /// The grid's points: every combination of its values, each as (key, value) overrides.
    fn grid_points(&self) -> Vec<Vec<(String, String)>> {
        let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for (key, values) in &self.grid {
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut p = p.clone();
                        p.push((key.clone(), toml_text(v)));
                        p
                    })
                })
                .collect();
        }
        points
    }

    /// The runs with their overrides, in the nesting order, references not yet resolved.
    fn pending(&self) -> Vec<Pending<'_>> {
        let variants: Vec<Option<&Variant>> = if self.variant.is_empty() {
            vec![None]
        } else {
            self.variant.iter().map(Some).collect()
        };
        let points = self.grid_points();
        let mut pending = Vec::new();
        for preset in &self.presets {
            let stem = (preset.file().file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            for variant in &variants {
                for point in &points {
                    let mut rest: Vec<String> =
                        variant.map(|v| v.name.clone()).into_iter().collect();
                    rest.extend(point.iter().map(|(k, v)| format!("{k}={v}")));
                    let group = std::iter::once(stem.clone())
                        .chain(rest.iter().cloned())
                        .collect::<Vec<_>>()
                        .join("/");
                    for &seed in &self.seeds {
                        let overrides = self.overrides(preset, *variant, point, &group, seed);
                        pending.push(Pending {
                            preset,
                            variant: *variant,
                            rest: rest.clone(),
                            group: group.clone(),
                            seed,
                            overrides,
                        });
                    }
                }
            }
        }
        pending
    }

    /// A run's overrides, later ones winning: the sweep's `set`, the preset's, the variant's,
    /// the grid point's, the command line's, then its name and seed.
    fn overrides(
        &self,
        preset: &Preset,
        variant: Option<&Variant>,
        point: &[(String, String)],
        group: &str,
        seed: u64,
    ) -> Vec<String> {
        let mut overrides = self.set.clone();
        overrides.extend(preset.set().iter().cloned());
        overrides.extend(variant.iter().flat_map(|v| v.set.iter().cloned()));
        overrides.extend(point.iter().map(|(k, v)| format!("{k}={v}")));
        overrides.extend(self.command_line.iter().cloned());
        let name = toml_text(&toml::Value::String(group_name(group, seed)));
        overrides.push(format!("name={name}"));
        overrides.push(format!("seed={seed}"));
        overrides
    }
}

/// A run of the sweep before its `{run:GROUP}` references are resolved.
struct Pending<'a> {
    preset: &'a Preset,
    variant: Option<&'a Variant>,
    /// The group without the preset: the variant and the grid point.
    rest: Vec<String>,
    group: String,
    seed: u64,
    overrides: Vec<String>,
}

/// Runs of one group and seed would be averaged as one method's seeds: two presets of the same
/// file name must be told apart by variants.
fn distinct_groups(pending: &[Pending<'_>], spec_path: &Path) -> Result<()> {
    for (i, p) in pending.iter().enumerate() {
        if let Some(q) = (pending[..i].iter()).find(|q| q.group == p.group && q.seed == p.seed) {
            return Err(invalid(
                spec_path.display().to_string(),
                format!(
                    "presets {} and {} both in group `{}`",
                    q.preset.file().display(),
                    p.preset.file().display(),
                    p.group
                ),
                "presets with different file names (a group is the preset's file name, the \
                 variant and the grid point; put settings that tell two runs of one file \
                 apart in [[variant]]s)",
            ));
        }
    }
    Ok(())
}

/// For each run, the runs its `{run:GROUP}` references name (with the GROUP): the same seed,
/// variant and grid point in the named preset's group.
fn dependencies(pending: &[Pending<'_>], spec_path: &Path) -> Result<Vec<Vec<(String, usize)>>> {
    let mut deps = Vec::with_capacity(pending.len());
    for p in pending {
        let mut named = Vec::new();
        for target in p.overrides.iter().flat_map(|o| references(o)) {
            let wanted = std::iter::once(target.clone())
                .chain(p.rest.iter().cloned())
                .collect::<Vec<_>>()
                .join("/");
            let j = (pending.iter())
                .position(|q| q.group == wanted && q.seed == p.seed)
                .ok_or_else(|| {
                    invalid(
                        format!("{}: {}", spec_path.display(), p.group),
                        format!("{{run:{target}}}"),
                        format!(
                            "a reference to a preset of the sweep with seed {} (no run \
                             `{wanted}`)",
                            p.seed
                        ),
                    )
                })?;
            named.push((target, j));
        }
        deps.push(named);
    }
    Ok(deps)
}

/// The runs resolved in rounds: a run whose references all name resolved runs resolves next
/// (its references replaced by their directories, its configuration validated); an error when
/// the references form a cycle.
fn resolve(
    pending: &[Pending<'_>],
    deps: &[Vec<(String, usize)>],
    base: &Path,
    sweep: &super::SweepDir,
    spec_path: &Path,
) -> Result<Vec<Entry>> {
    let mut runs: Vec<Option<Entry>> = vec![None; pending.len()];
    while !runs.iter().all(Option::is_some) {
        let ready: Vec<usize> = (0..pending.len())
            .filter(|&i| runs[i].is_none() && deps[i].iter().all(|&(_, j)| runs[j].is_some()))
            .collect();
        if ready.is_empty() {
            let stuck: Vec<&str> = (pending.iter().zip(&runs))
                .filter(|(_, r)| r.is_none())
                .map(|(p, _)| p.group.as_str())
                .collect();
            return Err(invalid(
                spec_path.display().to_string(),
                format!("{{run:...}} references among {}", stuck.join(", ")),
                "references without a cycle",
            ));
        }
        for i in ready {
            runs[i] = Some(entry(&pending[i], &deps[i], &runs, base, sweep)?);
        }
    }
    Ok(runs.into_iter().flatten().collect())
}

/// One run with its references to the resolved runs `runs` replaced by their directories.
fn entry(
    p: &Pending<'_>,
    deps: &[(String, usize)],
    runs: &[Option<Entry>],
    base: &Path,
    sweep: &super::SweepDir,
) -> Result<Entry> {
    let dep_id = |j: usize| runs[j].as_ref().map_or("", |e| e.id.as_str());
    let mut overrides = p.overrides.clone();
    for (target, j) in deps {
        let path = sweep.run(dep_id(*j)).display().to_string();
        for o in &mut overrides {
            *o = o.replace(&format!("{{run:{target}}}"), &path);
        }
    }
    let mut after: Vec<String> = deps.iter().map(|&(_, j)| dep_id(j).to_owned()).collect();
    after.sort();
    after.dedup();
    let file = base.join(p.preset.file());
    let config = RunConfig::from_file(&file, &overrides)
        .map_err(|e| e.in_section(&format!("{} (with {})", file.display(), p.group)))?
        .to_toml()?;
    Ok(Entry {
        id: run_id(&p.group, p.seed, &config),
        group: p.group.clone(),
        seed: p.seed,
        preset: p.preset.file().to_path_buf(),
        variant: p.variant.map(|v| v.name.clone()),
        overrides,
        after,
        config,
    })
}

/// The GROUPs of the `{run:GROUP}` references in `text`, in order.
fn references(text: &str) -> Vec<String> {
    text.split("{run:")
        .skip(1)
        .filter_map(|rest| rest.find('}').map(|end| rest[..end].to_owned()))
        .collect()
}

/// A run's name: its group and seed.
fn group_name(group: &str, seed: u64) -> String {
    format!("{group}/s{seed}")
}

/// A TOML value as an override's right-hand side.
fn toml_text(v: &toml::Value) -> String {
    v.to_string()
}

/// `<group slug>-s<seed>-<10 hex digits of SHA-256(config)>`.
fn run_id(group: &str, seed: u64, config: &str) -> String {
    let digest = sha2::Sha256::digest(config.as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    format!("{}-s{seed}-{hex}", slug(&group.replace('/', "-")))
}

/// Refuses to plan again a sweep of manifest schema 1 whose runs would get other ids for the
/// same configuration (their groups hold `=` or runs of other characters, which the schema-2
/// slug names differently): its runs would be planned anew under the new ids and trained again.
fn check_ids_kept(previous: &Manifest, fresh: &[Entry], dir: &Path) -> Result<()> {
    if previous.schema >= 2 {
        return Ok(());
    }
    // The configuration's digest ends the id: the same digest under another name is a rename.
    let digest = |id: &str| id.rsplit_once('-').map(|(_, d)| d.to_owned());
    let renamed = previous.runs.iter().find_map(|old| {
        let new = fresh
            .iter()
            .find(|e| e.group == old.group && e.id != old.id && digest(&e.id) == digest(&old.id))?;
        Some((old.id.as_str(), new.id.as_str()))
    });
    match renamed {
        None => Ok(()),
        Some((old, new)) => Err(invalid(
            "--out",
            dir.display(),
            format!(
                "a sweep directory whose run ids this classwise keeps; it was planned by an \
                 older one that named run `{new}` as `{old}`: run and resume it as planned \
                 (`classwise sweep run`), or plan into a new directory"
            ),
        )),
    }
}

/// What [`plan`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanSummary {
    pub runs: usize,
    /// Entries of the previous manifest kept at their index (their run directories untouched).
    pub kept: usize,
    pub added: usize,
    /// Ids of the previous manifest no longer planned (their directories stay).
    pub dropped: Vec<String>,
}

/// Plans `spec_path` into `dir`: writes `manifest.json` atomically. An existing manifest's
/// entries that are planned again keep their order (and so their array index) and their run
/// directories; new ones follow. `set` holds overrides applied to every run after the file's
/// own (`classwise sweep plan --set`); they are part of each run's configuration, so planning
/// again without them plans other runs.
pub fn plan(spec_path: &Path, dir: &Path, set: &[String]) -> Result<(Manifest, PlanSummary)> {
    let mut spec = SweepSpec::from_file(spec_path)?;
    spec.command_line = set.to_vec();
    let sweep_dir = std::path::absolute(dir).at("resolving", dir)?;
    let mut fresh = spec.expand(spec_path, &sweep_dir)?;
    let previous = if Manifest::path(dir).exists() {
        Some(Manifest::load(dir)?)
    } else {
        None
    };
    if let Some(p) = &previous
        && p.name != spec.name
    {
        return Err(invalid(
            "--out",
            dir.display(),
            format!(
                "the directory of sweep `{}` or a new one (it holds sweep `{}`)",
                spec.name, p.name
            ),
        ));
    }
    if let Some(p) = &previous {
        check_ids_kept(p, &fresh, dir)?;
    }
    let mut runs = Vec::new();
    let mut dropped = Vec::new();
    for old in previous.iter().flat_map(|p| &p.runs) {
        match fresh.iter().position(|e| e.id == old.id) {
            Some(i) => runs.push(fresh.remove(i)),
            None => dropped.push(old.id.clone()),
        }
    }
    let kept = runs.len();
    let added = fresh.len();
    runs.extend(fresh);
    let manifest = Manifest {
        schema: MANIFEST_SCHEMA,
        name: spec.name,
        description: spec.description,
        spec: spec_path.to_path_buf(),
        runs,
    };
    crate::io::write_json(&Manifest::path(dir), "sweep manifest", &manifest)?;
    let summary = PlanSummary {
        runs: manifest.runs.len(),
        kept,
        added,
        dropped,
    };
    Ok((manifest, summary))
}
