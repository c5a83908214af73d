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
//! # attack = "…", eps = "…"     # optional: this claim's evaluation, when not the file's
//! # pair_available = true        # optional: pair the seeds whose runs have the model
//! ```
//!
//! Without `b`, a claim is on A alone: d_s = Q(A, s), e.g. "Shirt is the least robust class"
//! as `robust_gap:Shirt` with sign `-`. `homing:I->J` is, for runs trained without some class,
//! the share of the class-I test images that the full run of the same configuration and seed
//! sends to J under attack which are robust for the run ([`homing_share`], Tian et al. §6.1).
//!
//! A claim naming a group absent from the comparison is listed as not decided (a ledger is
//! decided table by table as its runs finish); a file none of whose claims can be decided is
//! refused, naming the groups compared. A claim on a model that some runs of its group lack (a
//! FAWA that accepted no epoch) is not decided either, unless it sets `pair_available`: then it
//! is paired on the seeds whose runs have the model.
//!
//! Each inconclusive claim also gets the seeds it would need to be decided if the mean and the
//! standard deviation of its differences stayed as observed
//! ([`SeedsNeeded`](classwise_core::aggregate::SeedsNeeded), searched up to [`SEEDS_CAP`]).

use classwise_core::aggregate::{MeanStd, Paired, SeedsNeeded, Sign};
use classwise_core::record::REPORT_FILES;
use serde::{Deserialize, Serialize};

use super::alike::counting_of;
use super::homing::homing_share;
use super::load::{AttackKey, RunResults};
use super::stats::{Comparison, RunMetrics, SCALARS};
use crate::error::{Result, invalid};

/// The 95 % intervals of the ledger.
pub const LEVEL: f64 = 0.95;

/// The most seeds [`SeedsNeeded`] searches: an inconclusive claim that more would not decide is
/// "not decidable" (its |d̄| is below about a fifth of s_d: t(0.975, 99)/√100 = 0.198).
pub const SEEDS_CAP: usize = 100;

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
    /// The evaluation to read, when not the file's (`attack`, `eps` as the reports name them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eps: Option<String>,
    /// Pair the seeds whose runs have the model when some runs of a group lack it, instead of
    /// leaving the claim not decided.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pair_available: bool,
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
    /// The seeds it would need with the observed d̄ and s_d, up to [`SEEDS_CAP`].
    pub seeds_needed: SeedsNeeded,
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

    /// The evaluation `claim` is read from: its own `attack`/`eps`, else the file's.
    fn key<'c>(&self, c: &'c Comparison, claim: &Claim) -> Result<&'c AttackKey> {
        let attack = claim.attack.as_deref().unwrap_or(&self.attack);
        let eps = claim.eps.as_deref().unwrap_or(&self.eps);
        c.keys
            .iter()
            .find(|k| k.attack == attack && k.eps == eps)
            .ok_or_else(|| {
                let keys: Vec<String> = c.keys.iter().map(AttackKey::describe).collect();
                invalid(
                    format!("claim {}: attack", claim.id),
                    format!("{attack} at ε = {eps}"),
                    format!("one of the evaluations compared: {}", keys.join("; ")),
                )
            })
    }

    /// Decides every claim whose groups `c` has, on its evaluation (`runs`, those `c` was made
    /// of, for the homing metric); the others are listed undecided. Refused when no claim can
    /// be decided.
    pub fn decide(&self, c: &Comparison, runs: &[RunResults]) -> Result<Decisions> {
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
                true => decide(c, runs, self.key(c, claim)?, claim)?,
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
    runs: &[RunResults],
    key: &AttackKey,
    claim: &Claim,
) -> Result<std::result::Result<Decided, String>> {
    let read = |side: &Side| match claim.metric.strip_prefix("homing:") {
        Some(pair) => homing_per_seed(c, runs, side, pair, &claim.id),
        None => per_seed(c, runs, key, side, claim),
    };
    let mut a = match read(&claim.a)? {
        Ok(a) => a,
        Err(reason) => return Ok(Err(reason)),
    };
    let mut b = match &claim.b {
        Some(side) => match read(side)? {
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
    let seeds_needed = paired
        .seeds_needed(claim.sign, SEEDS_CAP)
        .map_err(|e| invalid(format!("claim {}", claim.id), e, "seeds to decide"))?;
    Ok(Ok(Decided {
        claim: claim.clone(),
        seeds,
        a: MeanStd::of(&va).expect("two seeds or more"),
        b: (claim.b.as_ref()).map(|_| MeanStd::of(&vb).expect("two seeds or more")),
        paired,
        seeds_needed,
    }))
}

/// The metric of each run of `side`, by seed, sorted by seed; `Ok(Err(reason))` when the
/// model is not in every run of the group (a FAWA that accepted no epoch holds no model), so
/// compare has no statistics of it, unless the claim pairs the available seeds.
fn per_seed(
    c: &Comparison,
    runs: &[RunResults],
    key: &AttackKey,
    side: &Side,
    claim: &Claim,
) -> Result<std::result::Result<Vec<(u64, f64)>, String>> {
    let (metric, id) = (claim.metric.as_str(), claim.id.as_str());
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
        if claim.pair_available && REPORT_FILES.iter().any(|(m, _)| *m == side.model) {
            return available(c, runs, key, side, claim).map(Ok);
        }
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
    by_seed(out, side).map(Ok)
}

/// The metric of each run of `side` that has its model under `key`, by seed, sorted by seed
/// (robust accuracy under the comparison's counting, as [`Comparison::new`] reads it).
fn available(
    c: &Comparison,
    runs: &[RunResults],
    key: &AttackKey,
    side: &Side,
    claim: &Claim,
) -> Result<Vec<(u64, f64)>> {
    let classes = c.class_names();
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.input.group == side.group) {
        let Some(e) = r.get(&side.model, key) else {
            continue;
        };
        let what = r.input.dir.join(&e.file).display().to_string();
        let seed = r
            .input
            .seed
            .ok_or_else(|| invalid(what.clone(), "a run without a seed", "seeded runs"))?;
        let metrics = RunMetrics::of(&e.report, &what, counting_of(&e.report, c.prefer))?;
        out.push((seed, value(&metrics, &claim.metric, &classes, &claim.id)?));
    }
    by_seed(out, side)
}

/// `homing:I->J` of each run of `side`, by seed (see the module docs); `Ok(Err(reason))` for
/// a run whose full run is missing or sends no class-I image to J.
fn homing_per_seed(
    c: &Comparison,
    runs: &[RunResults],
    side: &Side,
    pair: &str,
    id: &str,
) -> Result<std::result::Result<Vec<(u64, f64)>, String>> {
    let classes = c.class_names();
    let index = |name: &str| classes.iter().position(|n| n == name);
    let Some((i, j)) = pair
        .split_once("->")
        .and_then(|(i, j)| Some((index(i)?, index(j)?)))
    else {
        return Err(invalid(
            format!("claim {id}: metric"),
            format!("homing:{pair}"),
            format!("homing:I->J with I and J classes of {classes:?}"),
        ));
    };
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.input.group == side.group) {
        let Some(seed) = r.input.seed else {
            return Err(invalid(
                side.group.clone(),
                "a run without a seed",
                "seeded runs",
            ));
        };
        match homing_share(runs, r, &side.model, (i, j))? {
            Some(share) => out.push((seed, share)),
            None => {
                return Ok(Err(format!(
                    "seed {seed} of {}: no full run with predictions of `{}` that sends a {}                      image to {}",
                    side.group, side.model, classes[i], classes[j]
                )));
            }
        }
    }
    by_seed(out, side).map(Ok)
}

/// `values` sorted by seed; refused when two runs of the side have the same seed (two sweeps
/// with a group of the same name: pairing by seed would be ambiguous).
fn by_seed(mut values: Vec<(u64, f64)>, side: &Side) -> Result<Vec<(u64, f64)>> {
    values.sort_by_key(|(s, _)| *s);
    if let Some(w) = values.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(invalid(
            side.group.clone(),
            format!("two runs of seed {}", w[0].0),
            "one run per seed in a group (name two sweeps' groups apart with --label SWEEP=NAME)",
        ));
    }
    Ok(values)
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

/// How a claim's quantity is written: accuracies, errors and shares in percent (points); the
/// class-wise variances `clean_cv` and `robust_cv` as fractions² (WAT Tables 4-5), with four
/// decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Points,
    Fraction2,
}

impl Unit {
    fn of(metric: &str) -> Unit {
        match metric {
            "clean_cv" | "robust_cv" => Unit::Fraction2,
            _ => Unit::Points,
        }
    }

    fn signed(self, v: f64) -> String {
        match self {
            Unit::Points => format!("{:+.1}", 100.0 * v),
            Unit::Fraction2 => format!("{v:+.4}"),
        }
    }

    fn mean_std(self, m: &MeanStd) -> String {
        match (self, m.std) {
            (Unit::Points, _) => m.percent(1),
            (Unit::Fraction2, Some(s)) => format!("{:.4} ± {s:.4}", m.mean),
            (Unit::Fraction2, None) => format!("{:.4}", m.mean),
        }
    }
}

/// The decided claims as a markdown table: means ± std of A and B in percent (points; the
/// class-wise variances as fractions²), the differences per seed (Q of A itself for a claim
/// without B), their mean and 95 % interval, and the verdict; then the claims not decided.
pub fn markdown(decisions: &Decisions, counting: &str) -> String {
    let decided = &decisions.decided;
    let mut out = format!(
        "Robust counting: {counting}. Values in percent (points), the class-wise variances \
         (`clean_cv`, `robust_cv`) as fractions²; d = A − B per seed; interval: {:.0} % t \
         interval of the mean difference.\n\n\
         Seeds to decide: with the observed mean and standard deviation of d, the fewest \
         seeds whose interval would exclude 0 (up to {SEEDS_CAP}).\n\n\
         | id | A | B | Q | A | B | d per seed | mean d [interval] | verdict | seeds to decide |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        100.0 * LEVEL
    );
    for d in decided {
        let unit = Unit::of(&d.claim.metric);
        let per_seed: Vec<String> = (d.seeds.iter().zip(&d.paired.differences))
            .map(|(s, x)| format!("s{s}: {}", unit.signed(*x)))
            .collect();
        out.push_str(&format!(
            "| {} | {} ({}) | {} | {} | {} | {} | {} | {} [{}, {}] | {} | {} |\n",
            d.claim.id,
            d.claim.a.group,
            d.claim.a.model,
            d.claim
                .b
                .as_ref()
                .map_or("–".to_owned(), |b| format!("{} ({})", b.group, b.model)),
            d.claim.metric,
            unit.mean_std(&d.a),
            d.b.map_or("–".to_owned(), |b| unit.mean_std(&b)),
            per_seed.join(", "),
            unit.signed(d.paired.mean),
            unit.signed(d.paired.interval[0]),
            unit.signed(d.paired.interval[1]),
            d.paired.verdict.name(),
            d.seeds_needed.describe(SEEDS_CAP)
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
