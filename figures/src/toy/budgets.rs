//! The multi-class toy: what each class-wise rule hands each class, per epoch. CFA's calibrated
//! budgets ε_k = (λ₁ + t_k)·ε (CCM, CFA eq. (6)) and regularisations β_k = (λ₂ + t_k)·β (CCR,
//! eq. (7)); WAT's Hedge class weights (WAT Algorithm 1, eq. (12)); FRL-RWRM's Lagrangian class
//! weights of the natural and boundary terms (Xu et al. 2021). One line per class.

use classwise_toy::multiclass::{CfaBase, Method, RunReport};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;

use super::{MulticlassRuns, Options};
use crate::error::{Result, invalid};
use crate::legend::{self, Entry};
use crate::render::Figure;
use crate::style::{self, Dash, DrawResult};
use crate::table::Table;

const X_DESC: &str = "epoch";
const AXES: [&str; 5] = [
    X_DESC,
    "training budget ε_k",
    "TRADES regularisation β_k",
    "class weight s_k (mean 1)",
    "class weight K·w_k",
];

/// Per-class series over epochs: `[class][epoch]`.
pub type PerClassSeries = Vec<Vec<f64>>;

/// The trajectories of the multi-class figure.
pub struct MulticlassBudgets {
    pub epochs: Vec<f64>,
    /// The plain ε and β of the presets (references).
    pub epsilon: f64,
    pub beta: f64,
    /// ε_k of TRADES + CFA (λ₁ = 0.3) and of AT + CFA (λ₁ = 0.5).
    pub cfa_trades_eps: PerClassSeries,
    pub cfa_at_eps: PerClassSeries,
    /// β_k of TRADES + CFA.
    pub cfa_beta: PerClassSeries,
    /// WAT's per-class sample weight s_k = w_k + w_K, rescaled to mean 1 (the toy's choice):
    /// the plan's natural-term weight.
    pub wat_weight: PerClassSeries,
    /// FRL's K·w₀,k (natural term) and K·w₁,k (boundary term): the plan's weights.
    pub frl_natural: PerClassSeries,
    pub frl_boundary: PerClassSeries,
}

/// Transposes per-epoch rows into per-class series.
fn by_class(rows: &[Vec<f64>]) -> PerClassSeries {
    let k = rows.first().map_or(0, Vec::len);
    (0..k)
        .map(|c| rows.iter().map(|r| r[c]).collect())
        .collect()
}

/// The plan's class weight of the natural (`natural`) or boundary term per class: relative to
/// the plain TRADES weight of the same term (the loss applies TRADES's 1/(1 + β_k) and
/// β_k/(1 + β_k) on top).
fn relative_weights(report: &RunReport, natural: bool) -> Result<PerClassSeries> {
    let rows: Vec<Vec<f64>> = report
        .history
        .iter()
        .map(|r| {
            if natural {
                r.plan.natural_weight.clone()
            } else {
                r.plan.boundary_weight.clone()
            }
        })
        .collect();
    Ok(by_class(&rows))
}

/// Which classes have identical series in every one of `series` (so that their lines hide each
/// other), e.g. "classes 0 = 1 = 2 coincide"; empty when none do.
fn coinciding<'a>(series: impl Iterator<Item = &'a PerClassSeries> + Clone) -> String {
    let k = series.clone().map(Vec::len).max().unwrap_or(0);
    let mut seen = vec![false; k];
    let mut groups = Vec::new();
    for a in 0..k {
        if seen[a] {
            continue;
        }
        let group: Vec<usize> = (a..k)
            .filter(|&b| series.clone().all(|s| s.get(a) == s.get(b)))
            .collect();
        for &b in &group {
            seen[b] = true;
        }
        if group.len() > 1 {
            groups.push(
                group
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" = "),
            );
        }
    }
    if groups.is_empty() {
        String::new()
    } else {
        format!("classes {} coincide", groups.join(", "))
    }
}

impl MulticlassBudgets {
    /// Runs every method (see [`MulticlassRuns::new`]).
    pub fn new(options: &Options) -> Result<Self> {
        Self::from_runs(&MulticlassRuns::new(options)?)
    }

    /// The trajectories of finished runs; needs the CFA (AT and TRADES), WAT and FRL runs.
    pub fn from_runs(runs: &MulticlassRuns) -> Result<Self> {
        let cfa = runs.get(Method::Cfa(CfaBase::Trades))?;
        let cfa_at = runs.get(Method::Cfa(CfaBase::At))?;
        let wat = runs.get(Method::Wat)?;
        let frl = runs.get(Method::Frl)?;
        let beta = cfa
            .beta_trajectory()
            .ok_or_else(|| invalid("TRADES + CFA β_k", "none", "a TRADES run"))?;
        let plain_beta = cfa.config.base.trades_beta().unwrap_or(f64::NAN);
        Ok(MulticlassBudgets {
            epochs: cfa.history.iter().map(|r| r.epoch as f64).collect(),
            epsilon: cfa.config.epsilon,
            beta: plain_beta,
            cfa_trades_eps: by_class(&cfa.epsilon_trajectory()),
            cfa_at_eps: by_class(&cfa_at.epsilon_trajectory()),
            cfa_beta: by_class(&beta),
            wat_weight: relative_weights(wat, true)?,
            frl_natural: relative_weights(frl, true)?,
            frl_boundary: relative_weights(frl, false)?,
        })
    }

    fn k(&self) -> usize {
        self.cfa_trades_eps.len()
    }

    fn pts(&self, v: &[f64]) -> Vec<(f64, f64)> {
        self.epochs.iter().copied().zip(v.iter().copied()).collect()
    }
}

impl Figure for MulticlassBudgets {
    fn id(&self) -> &'static str {
        "toy-multiclass-budgets"
    }

    fn title(&self) -> String {
        "Multi-class toy: what CFA, WAT and FRL give each class, epoch by epoch".to_owned()
    }

    fn reproduces(&self) -> &'static str {
        "CFA eqs. (6)-(7) (CCM and CCR, cf. CFA Fig. 4), WAT's Hedge class weights and FRL-RWRM's \
         class weights, on the multi-class toy"
    }

    fn look_at(&self) -> &'static str {
        "From its third epoch on CFA gives the hard classes smaller budgets ε_k and smaller β_k, \
         in the order of class difficulty; WAT instead moves loss weight smoothly from the easy \
         to the hard classes, and FRL raises mostly the natural-loss weight of the hardest class."
    }

    fn tables(&self) -> Vec<Table> {
        let mut cols: Vec<(String, &[f64])> = vec![("epoch".into(), &self.epochs)];
        let series: [(&str, &PerClassSeries); 6] = [
            ("cfa_trades_eps", &self.cfa_trades_eps),
            ("cfa_at_eps", &self.cfa_at_eps),
            ("cfa_trades_beta", &self.cfa_beta),
            ("wat_weight", &self.wat_weight),
            ("frl_natural_weight", &self.frl_natural),
            ("frl_boundary_weight", &self.frl_boundary),
        ];
        for (name, s) in series {
            for (k, v) in s.iter().enumerate() {
                cols.push((format!("{name}_{k}"), v));
            }
        }
        let refs: Vec<(&str, &[f64])> = cols.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        vec![Table::columns("", &refs).expect("equal lengths by construction")]
    }

    fn axis_labels(&self) -> Vec<String> {
        AXES.map(String::from).to_vec()
    }

    fn size(&self) -> (u32, u32) {
        (1600, 1100)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let (panels, strip) = legend::split(area, 1);
        let panels = panels.split_evenly((2, 2));
        let last = self.epochs.last().copied().unwrap_or(1.0);
        let x = -0.5..last + 0.5;
        let [x_desc, eps_desc, beta_desc, wat_desc, frl_desc] = AXES;
        let panel = |i: usize,
                     caption: &str,
                     y_desc: &str,
                     reference: f64,
                     series: &[(&PerClassSeries, Dash)]|
         -> DrawResult<(), DB> {
            let values = series
                .iter()
                .flat_map(|(s, _)| s.iter().flatten().copied())
                .chain([reference]);
            // Classes whose lines hide each other are named in a note at the top of the panel,
            // in head-room added for it.
            let note = coinciding(series.iter().map(|(s, _)| *s));
            let mut y = style::padded(values, 0.1);
            if !note.is_empty() {
                y.end += 0.12 * (y.end - y.start);
            }
            let top = y.end;
            let mut chart = style::chart(&panels[i], caption, x.clone(), y)?;
            style::mesh_with(
                &mut chart,
                x_desc,
                y_desc,
                &style::tick_whole,
                &style::tick_plain,
            )?;
            if !note.is_empty() {
                legend::text_at(
                    &panels[i],
                    &chart,
                    (x.start, top),
                    (14, 6),
                    &note,
                    style::legend_font().color(&style::REFERENCE),
                    HPos::Left,
                )?;
            }
            style::line(
                &mut chart,
                &[(x.start, reference), (x.end, reference)],
                style::REFERENCE,
                Dash::Dotted,
                "",
            )?;
            for (s, dash) in series {
                for (k, v) in s.iter().enumerate() {
                    style::line(&mut chart, &self.pts(v), style::color(k), *dash, "")?;
                }
            }
            Ok(())
        };
        panel(
            0,
            "(a) CCM budgets ε_k: TRADES + CFA (solid), AT + CFA (dashed)",
            eps_desc,
            self.epsilon,
            &[
                (&self.cfa_at_eps, Dash::Dashed),
                (&self.cfa_trades_eps, Dash::Solid),
            ],
        )?;
        panel(
            1,
            "(b) CCR regularisation β_k of TRADES + CFA",
            beta_desc,
            self.beta,
            &[(&self.cfa_beta, Dash::Solid)],
        )?;
        panel(
            2,
            "(c) WAT (TRADES): Hedge class weight of the loss",
            wat_desc,
            1.0,
            &[(&self.wat_weight, Dash::Solid)],
        )?;
        panel(
            3,
            "(d) FRL (TRADES): natural (solid), boundary (dashed) term",
            frl_desc,
            1.0,
            &[
                (&self.frl_boundary, Dash::Dashed),
                (&self.frl_natural, Dash::Solid),
            ],
        )?;
        let k = self.k();
        let mut row: Vec<Entry> = (0..k)
            .map(|c| {
                let name = if c == 0 {
                    format!("class {c} (easiest)")
                } else if c + 1 == k {
                    format!("class {c} (hardest)")
                } else {
                    format!("class {c}")
                };
                Entry::line(style::color(c), Dash::Solid, name)
            })
            .collect();
        row.push(Entry::line(
            style::REFERENCE,
            Dash::Dotted,
            format!(
                "uniform (ε = {}, β = {}, weight 1)",
                self.epsilon, self.beta
            ),
        ));
        legend::draw_rows(&strip, &[row])
    }
}
