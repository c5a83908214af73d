//! Everything `classwise theory eval` reports for one parameter set.

use serde::{Deserialize, Serialize, Serializer};

use crate::error::Result;
use crate::model::{Adversary, Argmax, BinaryModel, Class};

/// Raw inputs (as read from flags or a JSON line), validated by [`evaluate`].
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {
    pub d: u32,
    pub eta: f64,
    pub sigma: f64,
    pub p_pos: f64,
    pub p_neg: f64,
    pub w: f64,
    pub eps: f64,
}

impl Params {
    /// The parameters of one JSON object, e.g. a line of `theory eval --batch`; an error names
    /// the field that is missing, unknown or not of its type.
    pub fn from_json(text: &str) -> std::result::Result<Self, String> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| match e.path().to_string() {
            _ if e.inner().is_syntax() || e.inner().is_eof() => {
                format!("not a JSON object: {}", e.inner())
            }
            path if path == "." => e.inner().to_string(),
            path => format!("field `{path}`: {}", e.inner()),
        })
    }
}

/// A value per class.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PerClass<T> {
    pub pos: T,
    pub neg: T,
}

impl<T> PerClass<T> {
    fn try_from_fn(mut f: impl FnMut(Class) -> Result<T>) -> Result<Self> {
        Ok(PerClass {
            pos: f(Class::Pos)?,
            neg: f(Class::Neg)?,
        })
    }
}

/// An argmax as JSON: a number, or "+inf" / "0+" / "constant" when not attained.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArgmaxJson(pub Argmax);

impl Serialize for ArgmaxJson {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Argmax::At(w) => s.serialize_f64(w),
            other => s.serialize_str(&other.label()),
        }
    }
}

/// The output of `classwise theory eval`.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    pub params: Params,
    /// A_y(w), CFA eqs. (13)-(14).
    pub clean: PerClass<f64>,
    /// R_y(w, ε), paper adversary (x₁ pinned).
    pub robust_paper: PerClass<f64>,
    /// R_y(w, ε), full ℓ∞ adversary.
    pub robust_full: PerClass<f64>,
    /// R_y(w, 2η), the paper's evaluation budget.
    pub robust_paper_2eta: PerClass<f64>,
    pub robust_full_2eta: PerClass<f64>,
    /// w*_y, CFA Theorem 3.
    pub w_star: PerClass<ArgmaxJson>,
    /// ŵ_ε, CFA Theorem 2 (paper adversary).
    pub w_hat: ArgmaxJson,
    /// The full-adversary optimum of R̄(·, ε); null when ε ≥ 1.
    pub w_hat_full: Option<ArgmaxJson>,
}

/// Validates `p` and computes every quantity.
pub fn evaluate(p: Params) -> Result<Evaluation> {
    let m = BinaryModel::new(p.d, p.eta, p.sigma, p.p_pos, p.p_neg)?;
    let robust = |eps, adv| PerClass::try_from_fn(|y| m.robust_accuracy(y, p.w, eps, adv));
    let two_eta = 2.0 * p.eta.max(0.0);
    Ok(Evaluation {
        params: p,
        clean: PerClass::try_from_fn(|y| m.clean_accuracy(y, p.w))?,
        robust_paper: robust(p.eps, Adversary::Paper)?,
        robust_full: robust(p.eps, Adversary::Full)?,
        robust_paper_2eta: robust(two_eta, Adversary::Paper)?,
        robust_full_2eta: robust(two_eta, Adversary::Full)?,
        w_star: PerClass::try_from_fn(|y| Ok(ArgmaxJson(m.w_star(y))))?,
        w_hat: ArgmaxJson(m.w_hat(p.eps)?),
        w_hat_full: if p.eps < 1.0 {
            Some(ArgmaxJson(m.w_hat_full(p.eps)?.argmax))
        } else {
            None
        },
    })
}

#[cfg(test)]
mod tests {
    use super::Params;

    const GOOD: &str = r#"{"d":2,"eta":0.4,"sigma":1,"p_pos":0.8,"p_neg":0.7,"w":1.5,"eps":0.1}"#;

    #[test]
    fn a_json_line_reads_field_by_field() {
        let p = Params::from_json(GOOD).unwrap();
        assert_eq!((p.d, p.eta, p.sigma, p.p_pos), (2, 0.4, 1.0, 0.8));
        assert_eq!((p.p_neg, p.w, p.eps), (0.7, 1.5, 0.1));
    }

    #[test]
    fn a_bad_line_is_refused_naming_its_field() {
        let cases = [
            (GOOD.replace(r#""p_neg":0.7,"#, ""), "missing field `p_neg`"),
            (GOOD.replace("0.4", r#""x""#), "field `eta`: invalid type"),
            (
                GOOD.replace(r#""d":2"#, r#""d":-1"#),
                "field `d`: invalid value",
            ),
            (
                GOOD.replace('}', r#","zz":1}"#),
                "field `zz`: unknown field",
            ),
            ("nonsense".to_string(), "not a JSON object"),
        ];
        for (line, expected) in cases {
            let e = Params::from_json(&line).unwrap_err();
            assert!(e.starts_with(expected), "{line}: {e}");
        }
    }
}
