//! A fixed trade-off β per class: Tian et al. (KDD 2021), eq. (5), train TRADES with the
//! per-sample loss CE_i + β_{y_i}·KL_i, where β is a K-vector (their experiment lowers β of class
//! 5, dog, from 6 to 0.5 and moves robustness from dog to cat, §5.2).

use serde::{Deserialize, Serialize};

use super::{Fixed, RuleContext};
use crate::error::{Result, invalid, same_len};
use crate::plan::ClassPlan;

/// The class-β settings (`[rule] kind = "class-beta"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassBetaSettings {
    /// β_k for every class k, in class order (replaces `train.beta`).
    pub beta: Vec<f64>,
}

/// The class-β rule: the same plan every epoch, with β_k from the settings (checked against the
/// context).
pub fn class_beta(s: &ClassBetaSettings, ctx: RuleContext) -> Result<Fixed> {
    ctx.require_beta("rule.kind", "class-beta")?;
    same_len("rule.beta", ctx.n_classes, s.beta.len())?;
    if let Some(b) = s.beta.iter().find(|b| !(b.is_finite() && **b >= 0.0)) {
        return Err(invalid("rule.beta", b, "finite values >= 0"));
    }
    Ok(Fixed::new(
        "class-beta",
        ClassPlan {
            beta: s.beta.clone(),
            ..ctx.uniform_plan()
        },
    ))
}
