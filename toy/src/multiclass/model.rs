//! A linear softmax classifier, logits z = W·x + b, with analytic gradients (f64, pure Rust).
//!
//! Parameters are stored flat: the K×D weight matrix row-major (row k = w_k), then the K
//! biases. The same layout serves as the gradient buffer, the SGD momentum buffer and the
//! vector averaged by FAWA / EMA (CFA Algorithm 1), so [`Linear::to_flat`] is a copy.

use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use crate::error::{Bound, Result, ToyError, check, require_count};
use crate::rng::{stream, stream_id};

/// Stream tag of the parameter initialisation.
const TAG_INIT: u8 = 17;

/// Linear softmax model with K classes on D inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Linear {
    n_classes: usize,
    dim: usize,
    params: Vec<f64>,
}

impl Linear {
    /// All-zero parameters.
    pub fn zeros(n_classes: usize, dim: usize) -> Result<Self> {
        require_count("n_classes", n_classes, 2)?;
        require_count("dim", dim, 1)?;
        Ok(Self {
            n_classes,
            dim,
            params: vec![0.0; n_classes * (dim + 1)],
        })
    }

    /// Weights i.i.d. `scale`·N(0, 1) from the seed's init stream, biases 0.
    pub fn init(n_classes: usize, dim: usize, scale: f64, seed: u64) -> Result<Self> {
        check("init_scale", scale, Bound::NonNegative)?;
        let mut model = Self::zeros(n_classes, dim)?;
        let mut rng = stream(seed, stream_id(TAG_INIT, 0, 0));
        let n_weights = n_classes * dim;
        for p in &mut model.params[..n_weights] {
            let z: f64 = StandardNormal.sample(&mut rng);
            *p = scale * z;
        }
        Ok(model)
    }

    /// Rebuilds a model from [`Linear::to_flat`] output.
    pub fn from_flat(n_classes: usize, dim: usize, flat: Vec<f64>) -> Result<Self> {
        let mut model = Self::zeros(n_classes, dim)?;
        if flat.len() != model.params.len() {
            return Err(ToyError::LengthMismatch {
                what: "flat parameters",
                expected: model.params.len(),
                got: flat.len(),
            });
        }
        model.params = flat;
        Ok(model)
    }

    /// The flat parameter vector (weights row-major, then biases).
    pub fn to_flat(&self) -> Vec<f64> {
        self.params.clone()
    }

    /// Borrowed flat parameters.
    pub fn params(&self) -> &[f64] {
        &self.params
    }

    /// Mutable flat parameters (for the optimiser).
    pub fn params_mut(&mut self) -> &mut [f64] {
        &mut self.params
    }

    pub fn n_classes(&self) -> usize {
        self.n_classes
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn n_params(&self) -> usize {
        self.params.len()
    }

    /// Row w_k of W.
    pub fn weight(&self, k: usize) -> &[f64] {
        &self.params[k * self.dim..(k + 1) * self.dim]
    }

    /// Bias b_k.
    pub fn bias(&self, k: usize) -> f64 {
        self.params[self.n_classes * self.dim + k]
    }

    /// z = W·x + b. `x` must have length D (checked by the public callers).
    pub fn logits(&self, x: &[f64]) -> Vec<f64> {
        (0..self.n_classes)
            .map(|k| dot(self.weight(k), x) + self.bias(k))
            .collect()
    }

    /// The predicted class argmax_k z_k (ties: lowest index).
    pub fn predict(&self, x: &[f64]) -> usize {
        argmax(&self.logits(x))
    }

    /// ∂L/∂x = Wᵀ·g for a gradient `g` with respect to the logits.
    pub fn input_grad(&self, g_logits: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.dim];
        for (k, &g) in g_logits.iter().enumerate() {
            for (o, w) in out.iter_mut().zip(self.weight(k)) {
                *o += g * w;
            }
        }
        out
    }

    /// Adds ∂L/∂θ = (g·xᵀ, g) for a logit gradient `g` at input `x` into a flat buffer of
    /// [`Linear::n_params`] entries.
    pub fn accumulate_param_grad(&self, g_logits: &[f64], x: &[f64], grad: &mut [f64]) {
        let (gw, gb) = grad.split_at_mut(self.n_classes * self.dim);
        for (k, &g) in g_logits.iter().enumerate() {
            for (o, xi) in gw[k * self.dim..(k + 1) * self.dim].iter_mut().zip(x) {
                *o += g * xi;
            }
            gb[k] += g;
        }
    }

    /// Checks that `x` has length D.
    pub fn check_input(&self, x: &[f64]) -> Result<()> {
        if x.len() == self.dim {
            Ok(())
        } else {
            Err(ToyError::LengthMismatch {
                what: "x",
                expected: self.dim,
                got: x.len(),
            })
        }
    }
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Index of the largest entry (ties: lowest index).
pub fn argmax(z: &[f64]) -> usize {
    let mut best = 0;
    for (k, &v) in z.iter().enumerate().skip(1) {
        if v > z[best] {
            best = k;
        }
    }
    best
}

/// log softmax(z)_k = z_k − max z − log Σ_j exp(z_j − max z) (max-subtracted, never overflows).
pub fn log_softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = z.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
    z.iter().map(|v| v - max - lse).collect()
}

/// softmax(z) = exp(log_softmax(z)).
pub fn softmax(z: &[f64]) -> Vec<f64> {
    log_softmax(z).into_iter().map(f64::exp).collect()
}

/// A loss value with its gradients with respect to the clean logits z and the adversarial
/// logits z' (either may be all zeros when the loss does not depend on it).
#[derive(Debug, Clone, PartialEq)]
pub struct LossGrad {
    pub value: f64,
    pub grad: Vec<f64>,
}

/// Cross-entropy CE(z, y) = −log softmax(z)_y and ∂CE/∂z = softmax(z) − e_y.
pub fn cross_entropy(z: &[f64], y: usize) -> LossGrad {
    let logp = log_softmax(z);
    let grad = logp
        .iter()
        .enumerate()
        .map(|(k, lp)| lp.exp() - f64::from(u8::from(k == y)))
        .collect();
    LossGrad {
        value: -logp[y],
        grad,
    }
}

/// KL(p‖q) = Σ_c p_c (log p_c − log q_c) with p = softmax(z), q = softmax(z') (CFA eq. (3)),
/// and its gradients with respect to **both** logit vectors (TRADES does not detach the clean
/// distribution; see `trades_loss` in `yaodongyu/TRADES:trades.py`):
///
/// * ∂KL/∂z_c = p_c·[(log p_c − log q_c) − KL];
/// * ∂KL/∂z'_c = q_c − p_c.
#[derive(Debug, Clone, PartialEq)]
pub struct KlGrad {
    pub value: f64,
    pub grad_clean: Vec<f64>,
    pub grad_adv: Vec<f64>,
}

/// See [`KlGrad`].
pub fn kl_divergence(z_clean: &[f64], z_adv: &[f64]) -> KlGrad {
    let logp = log_softmax(z_clean);
    let logq = log_softmax(z_adv);
    let diff: Vec<f64> = logp.iter().zip(&logq).map(|(a, b)| a - b).collect();
    let value: f64 = logp.iter().zip(&diff).map(|(lp, d)| lp.exp() * d).sum();
    let grad_clean = logp
        .iter()
        .zip(&diff)
        .map(|(lp, d)| lp.exp() * (d - value))
        .collect();
    let grad_adv = logp
        .iter()
        .zip(&logq)
        .map(|(lp, lq)| lq.exp() - lp.exp())
        .collect();
    KlGrad {
        value,
        grad_clean,
        grad_adv,
    }
}
