//! The per-sample losses that training and evaluation both take: cross-entropy and the KL
//! divergence K(·) of TRADES (CFA eq. (3)). The objectives
//! ([`crate::train::objective`]) build their losses from them and WAT's validation costs
//! ([`crate::eval::trades_costs`]) measure with them, so both sides compute the same numbers.

use tch::{Kind, Tensor};

use crate::diagnose::probe;

/// Per-sample CE.
pub fn ce(z: &Tensor, y: &Tensor) -> Tensor {
    let ce = -z
        .log_softmax(-1, Kind::Float)
        .gather(1, &y.unsqueeze(1), false)
        .squeeze_dim(1);
    probe("ce", &ce);
    ce
}

/// Per-sample KL(p ‖ softmax(z_adv)) with p = softmax(z) not detached (TRADES).
pub fn kl(z: &Tensor, z_adv: &Tensor) -> Tensor {
    kl_log(
        &z.log_softmax(-1, Kind::Float),
        &z_adv.log_softmax(-1, Kind::Float),
    )
}

/// Per-sample KL(p ‖ q) = Σ_k p_k (log p_k − log q_k) from the log-probabilities, with
/// p_k = exp(log p_k). Taken in log space on purpose: where p_k underflows to 0 in float32 (a
/// logit gap above about 104) the term is 0 and so is its gradient, which is the limit of the
/// exact one. The probability-space form `xlogy(p, p) − p·log q` — which PyTorch's `kl_div`
/// computes since 1.13, and so the reference codes' `nn.KLDivLoss` on current PyTorch — has
/// the gradient `p / p` = 0/0 = NaN with respect to its second argument there
/// (pytorch/pytorch#89558), which made the ResNet-18 TRADES/MART presets reach a NaN loss
/// within a few batches once the network grew confident.
pub fn kl_log(log_p: &Tensor, log_q: &Tensor) -> Tensor {
    probe("kl.log_p", log_p);
    probe("kl.log_q", log_q);
    let kl = (log_p.exp() * (log_p - log_q)).sum_dim_intlist(-1, false, Kind::Float);
    probe("kl", &kl);
    kl
}
