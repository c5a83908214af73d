//! A fixed loss weight for one class: WAT §3.2, Fig. 3, trains TRADES with the weighted loss
//! Σ_k w_k·ℓ_k, raising the weight w_j of the worst class j (class 4, deer, on CIFAR-10) from 0.05
//! to 0.25 and giving each other class (1 − w_j)/(K − 1), to show the trade-off between the
//! average and the worst-class robust accuracy that WAT's Hedge weights then learn.

use serde::{Deserialize, Serialize};

use super::{Fixed, RuleContext};
use crate::error::{Result, invalid};
use crate::plan::ClassPlan;

/// The class-weight settings (`[rule] kind = "class-weight"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassWeightSettings {
    /// j: the class whose weight is set.
    pub class: usize,
    /// w_j ∈ (0, 1): class j's share of the loss; the other K − 1 classes share the rest
    /// equally. 1/K is uniform training.
    pub weight: f64,
}

/// The per-sample loss weights K·w_k (class-mean one, the scale of the uniform plan, so that
/// w_j = 1/K trains exactly as the baseline), on the natural and the boundary term alike (WAT
/// weights the whole TRADES loss).
pub fn class_weights(s: ClassWeightSettings, n_classes: usize) -> Result<Vec<f64>> {
    if n_classes < 2 {
        return Err(invalid("rule.kind", "class-weight", "at least 2 classes"));
    }
    if s.class >= n_classes {
        return Err(invalid(
            "rule.class",
            s.class,
            format!("a class index below {n_classes}"),
        ));
    }
    if !(s.weight > 0.0 && s.weight < 1.0) {
        return Err(invalid("rule.weight", s.weight, "a share in (0, 1)"));
    }
    let k = n_classes as f64;
    let other = (1.0 - s.weight) / (k - 1.0);
    Ok((0..n_classes)
        .map(|c| k * if c == s.class { s.weight } else { other })
        .collect())
}

/// The class-weight rule: the same plan every epoch, with the weights of [`class_weights`].
pub fn class_weight(s: ClassWeightSettings, ctx: RuleContext) -> Result<Fixed> {
    let w = class_weights(s, ctx.n_classes)?;
    Ok(Fixed::new(
        "class-weight",
        ClassPlan {
            natural_weight: w.clone(),
            boundary_weight: w,
            ..ctx.uniform_plan()
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_wat_shares_times_k() {
        // K = 10, w_4 = 0.15: class 4 gets 1.5, the others 10·0.85/9.
        let w = class_weights(
            ClassWeightSettings {
                class: 4,
                weight: 0.15,
            },
            10,
        )
        .unwrap();
        assert!((w[4] - 1.5).abs() < 1e-12);
        assert!((w[0] - 8.5 / 9.0).abs() < 1e-12);
        assert!((w.iter().sum::<f64>() - 10.0).abs() < 1e-12);
        // 1/K is uniform.
        let u = class_weights(
            ClassWeightSettings {
                class: 0,
                weight: 0.25,
            },
            4,
        )
        .unwrap();
        assert!(u.iter().all(|x| (x - 1.0).abs() < 1e-12));
        for (class, weight) in [(10, 0.1), (0, 0.0), (0, 1.0), (0, f64::NAN)] {
            let e = class_weights(ClassWeightSettings { class, weight }, 10).unwrap_err();
            assert!(e.to_string().contains("rule."), "{e}");
        }
    }
}
