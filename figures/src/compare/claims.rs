//! A claims ledger decided by paired seeds: each claim "A has a higher (lower) Q than B" is
//! read from a [`Comparison`], run by run, paired by seed, and decided by
//! [`Paired`](classwise_core::aggregate::Paired) (the mean difference and its t interval).
//!
//! The claims come from a TOML file:
//!
//! ```toml
//! attack = "pgd-10 ce step 0.025 uniform start"   # the evaluation the claims are read from
//! eps = "0.1"
//!
//! [[claim]]
//! id = "C1"
//! a = { group = "fmnist-at-cfa/cfa-table1", model = "fawa" }
//! b = { group = "fmnist-at/cfa-table1", model = "last" }
//! metric = "robust_worst"       # a scalar of compare (SCALARS), or robust:CLASS,
//! sign = "+"                    # clean:CLASS, robust_gap:CLASS (CLASS minus the lowest other)
//! ```
//!
//! Without `b`, a claim is on A alone: d_s = Q(A, s), e.g. "Shirt is the least robust class"
//! as `robust_gap:Shirt` with sign `-`.
//!
//! A claim naming a group absent from the comparison is listed as not decided (a ledger is
//! decided table by table as its runs finish); a file none of whose claims can be decided is
//! refused, naming the groups compared.

use classwise_core::aggregate::{MeanStd, Paired, Sign};
use classwise_core::record::REPORT_FILES;
use serde::{Deserialize, Serialize};

use super::load::AttackKey;
use super::stats::{Comparison, RunMetrics, SCALARS};
use crate::error::{Result, invalid};

/// The 95 % intervals of the ledger.
pub const LEVEL: f64 = 0.95;

/// A claims file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    /// The attack of the evaluation the claims are read from, as the reports name it.
    pub attack: String,
    /// Its ε, as the reports write it.
    pub eps: String,
    pub claim: Vec<Claim>,
}

/// One directional claim.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub id: String,
    pub a: Side,
    /// Absent for a claim on A alone (its sign is that of Q itself, e.g. a class gap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<Side>,
    pub metric: String,
    pub sign: Sign,
}

/// A group and the model of its runs a claim reads.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    pub group: String,
    pub model: String,
}

/// A claim's numbers and verdict.
#[derive(Clone, Debug, Serialize)]
pub struct Decided {
    pub claim: Claim,
    pub seeds: Vec<u64>,
    pub a: MeanStd,
    pub b: Option<MeanStd>,
    pub paired: Paired,
}

/// A claim the comparison cannot decide.
#[derive(Clone, Debug, Serialize)]
pub struct Undecided {
    pub claim: Claim,
    /// Why: the groups it names that the comparison lacks, or too few paired seeds.
    pub reason: String,
}

/// What a claims file decided on one comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Decisions {
    pub decided: Vec<Decided>,
    pub undecided: Vec<Undecided>,
}

impl ClaimsFile {
    /// Reads and checks `text` (`what` names the file).
    pub fn parse(text: &str, what: &str) -> Result<ClaimsFile> {
        let file: ClaimsFile =
            toml::from_str(text).map_err(|e| invalid(what, e.message(), "a claims file"))?;
        if file.claim.is_empty() {
            return Err(invalid(
                format!("{what}: claim"),
                "[]",
                "at least one claim",
            ));
        }
        Ok(file)
    }

    /// Decides every claim whose groups `c` has on its evaluation of this file's attack at its
    /// ε; the others are listed undecided. Refused when no claim can be decided.
    pub fn decide(&self, c: &Comparison) -> Result<Decisions> {
        let key = c
            .keys
            .iter()
            .find(|k| k.attack == self.attack && k.eps == self.eps)
            .ok_or_else(|| {
                let keys: Vec<String> = c.keys.iter().map(AttackKey::describe).collect();
                invalid(
                    "attack",
                    format!("{} at ε = {}", self.attack, self.eps),
                    format!("one of the evaluations compared: {}", keys.join("; ")),
                )
            })?;
        let mut out = Decisions {
            decided: Vec::new(),
            undecided: Vec::new(),
        };
        for claim in &self.claim {
            let absent: Vec<String> = (std::iter::once(&claim.a).chain(&claim.b))
                .filter(|side| !c.groups.iter().any(|g| g.name == side.group))
                .map(|side| side.group.clone())
                .collect();
            let decided = match absent.is_empty() {
                true => decide(c, key, claim)?,
                false => Err(format!("not compared: {}", absent.join(", "))),
            };
            match decided {
                Ok(d) => out.decided.push(d),
                Err(reason) => out.undecided.push(Undecided {
                    claim: claim.clone(),
                    reason,
                }),
            }
        }
        if out.decided.is_empty() {
            let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
            return Err(invalid(
                "claims",
                &out.undecided[0].reason,
                format!("claims on the groups compared: one of {}", names.join(", ")),
            ));
        }
        Ok(out)
    }
}

/// One claim on `key`, paired on the seeds both sides have (a group still training has
/// fewer): `Ok(Err(reason))` when fewer than two are paired.
fn decide(
    c: &Comparison,
    key: &AttackKey,
    claim: &Claim,
) -> Result<std::result::Result<Decided, String>> {
    let mut a = match per_seed(c, key, &claim.a, &claim.metric, &claim.id)? {
        Ok(a) => a,
        Err(reason) => return Ok(Err(reason)),
    };
    let mut b = match &claim.b {
        Some(side) => match per_seed(c, key, side, &claim.metric, &claim.id)? {
            Ok(b) => b,
            Err(reason) => return Ok(Err(reason)),
        },
        None => a.iter().map(|(s, _)| (*s, 0.0)).collect(),
    };
    a.retain(|(s, _)| b.iter().any(|(t, _)| t == s));
    b.retain(|(s, _)| a.iter().any(|(t, _)| t == s));
    let seeds: Vec<u64> = a.iter().map(|(s, _)| *s).collect();
    let values = |v: &[(u64, f64)]| v.iter().map(|(_, x)| *x).collect::<Vec<f64>>();
    let (va, vb) = (values(&a), values(&b));
    let differences = va.iter().zip(&vb).map(|(x, y)| x - y).collect();
    let paired = match Paired::of(differences, claim.sign, LEVEL) {
        Ok(p) => p,
        Err(e) => return Ok(Err(format!("seeds {seeds:?}: {e}"))),
    };
    Ok(Ok(Decided {
        claim: claim.clone(),
        seeds,
        a: MeanStd::of(&va).expect("two seeds or more"),
        b: (claim.b.as_ref()).map(|_| MeanStd::of(&vb).expect("two seeds or more")),
        paired,
    }))
}

/// The metric of each run of `side`, by seed, sorted by seed; `Ok(Err(reason))` when the
/// model is not in every run of the group (a FAWA that accepted no epoch holds no model), so
/// compare has no statistics of it.
fn per_seed(
    c: &Comparison,
    key: &AttackKey,
    side: &Side,
    metric: &str,
    id: &str,
) -> Result<std::result::Result<Vec<(u64, f64)>, String>> {
    let what = || format!("claim {id}: {} ({})", side.group, side.model);
    let group = c
        .groups
        .iter()
        .find(|g| g.name == side.group)
        .ok_or_else(|| {
            let names: Vec<&str> = c.groups.iter().map(|g| g.name.as_str()).collect();
            invalid(
                what(),
                "no such group",
                format!("one of {}", names.join(", ")),
            )
        })?;
    let Some(stats) = group.get(&side.model, key) else {
        if REPORT_FILES.iter().any(|(m, _)| *m == side.model) {
            return Ok(Err(format!(
                "`{}` is not in every run of {} (compare.md's notes say in how many)",
                side.model, side.group
            )));
        }
        let models: Vec<&str> = REPORT_FILES.iter().map(|(m, _)| *m).collect();
        return Err(invalid(
            what(),
            "no such model",
            format!("one of {}", models.join(", ")),
        ));
    };
    let mut out = Vec::new();
    for (seed, run) in group.seeds.iter().zip(&stats.per_run) {
        let seed = seed.ok_or_else(|| invalid(what(), "a run without a seed", "seeded runs"))?;
        out.push((seed, value(run, metric, &group.class_names, id)?));
    }
    out.sort_by_key(|(s, _)| *s);
    Ok(Ok(out))
}

/// `metric` of one run's report.
fn value(run: &RunMetrics, metric: &str, classes: &[String], id: &str) -> Result<f64> {
    if let Some((_, f)) = SCALARS.iter().find(|(n, _)| *n == metric) {
        return Ok(f(run));
    }
    let (kind, class) = metric
        .split_once(':')
        .ok_or_else(|| bad_metric(id, metric))?;
    let c = classes.iter().position(|n| n == class).ok_or_else(|| {
        invalid(
            format!("claim {id}: metric"),
            metric,
            format!("a class of {classes:?}"),
        )
    })?;
    match kind {
        "robust" => Ok(run.robust_per_class[c]),
        "clean" => Ok(run.clean_per_class[c]),
        "robust_gap" => {
            let others = (run.robust_per_class.iter().enumerate())
                .filter(|(k, _)| *k != c)
                .map(|(_, v)| *v)
                .fold(f64::INFINITY, f64::min);
            Ok(run.robust_per_class[c] - others)
        }
        _ => Err(bad_metric(id, metric)),
    }
}

fn bad_metric(id: &str, metric: &str) -> crate::error::FigureError {
    let scalars: Vec<&str> = SCALARS.iter().map(|(n, _)| *n).collect();
    invalid(
        format!("claim {id}: metric"),
        metric,
        format!(
            "one of {}, or robust:CLASS, clean:CLASS, robust_gap:CLASS",
            scalars.join(", ")
        ),
    )
}

/// The decided claims as a markdown table: means ± std of A and B in percent (points), the
/// differences per seed (Q of A itself for a claim without B), their mean and 95 % interval,
/// and the verdict; then the claims not decided.
pub fn markdown(decisions: &Decisions, counting: &str) -> String {
    let decided = &decisions.decided;
    let pts = |v: f64| format!("{:+.1}", 100.0 * v);
    let mut out = format!(
        "Robust counting: {counting}. Values in percent (points); d = A − B per seed; \
         interval: {:.0} % t interval of the mean difference.\n\n\
         | id | A | B | Q | A | B | d per seed | mean d [interval] | verdict |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        100.0 * LEVEL
    );
    for d in decided {
        let per_seed: Vec<String> = (d.seeds.iter().zip(&d.paired.differences))
            .map(|(s, x)| format!("s{s}: {}", pts(*x)))
            .collect();
        out.push_str(&format!(
            "| {} | {} ({}) | {} | {} | {} | {} | {} | {} [{}, {}] | {} |\n",
            d.claim.id,
            d.claim.a.group,
            d.claim.a.model,
            d.claim
                .b
                .as_ref()
                .map_or("–".to_owned(), |b| format!("{} ({})", b.group, b.model)),
            d.claim.metric,
            d.a.percent(1),
            d.b.map_or("–".to_owned(), |b| b.percent(1)),
            per_seed.join(", "),
            pts(d.paired.mean),
            pts(d.paired.interval[0]),
            pts(d.paired.interval[1]),
            d.paired.verdict.name()
        ));
    }
    if !decisions.undecided.is_empty() {
        let list: Vec<String> = (decisions.undecided.iter())
            .map(|u| format!("{} ({})", u.claim.id, u.reason))
            .collect();
        out.push_str(&format!("\nNot decided: {}.\n", list.join("; ")));
    }
    out
}
