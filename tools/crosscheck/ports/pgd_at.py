"""PGD-AT (Madry et al.) as ``PKU-ML/CFA`` trains it, with CCM's class-wise ε.

The model stays in train mode throughout (``PKU-ML/CFA:train.py:84`` sets it, ``pgd_loss``
never changes it): every attack forward updates BatchNorm's running statistics, and the clean
batch is forwarded once more in train mode after the update (``train.py:98``).
"""

import torch
import torch.nn.functional as F

from .common import StepResult, predicted_by


def cw_attack_pgd(model, x, y, eps, alpha, n_iters, u):
    """``PKU-ML/CFA:attack.py:33-59`` (``attack_pgd`` at lines 9-31 is the same with one ε):
    δ = U(−1, 1)·ε_i clamped to [−x, 1 − x], then ``n_iters`` steps of
    δ ← clamp(clamp(δ + α·sign(∇_δ CE_mean), −ε, ε), −x, 1 − x), forwarding x + δ. The
    reference takes the gradient with ``loss.backward()``, which also fills the parameters'
    ``.grad``; ``train.py:92`` zeroes them before the update, so ``autograd.grad`` is the same.
    ``u`` is the unscaled U(−1, 1) draw; ``eps`` is f32 [N, 1, 1, 1]."""
    eps = eps.expand_as(x)
    delta = torch.clamp(u * eps, -x, 1 - x)
    delta.requires_grad = True
    for _ in range(n_iters):
        loss = F.cross_entropy(model(x + delta), y)
        grad = torch.autograd.grad(loss, [delta])[0].detach()
        d = torch.clamp(delta + alpha * torch.sign(grad), min=-eps, max=eps)
        d = torch.clamp(d, -x, 1 - x)
        delta = d.detach().requires_grad_()
    return delta.detach()


def pgd_at_cfa(inp):
    """``PKU-ML/CFA:attack.py:67-72`` (``cw_pgd_loss``; ``pgd_loss`` at 61-65 with one ε):
    CE mean of ``model(x + δ)`` in train mode, the CCM budgets ε_{y_i}; the plan's
    natural_weight[y_i] multiplies each sample's CE (classwise's convention; 1 in CFA)."""
    x, y = inp.x, inp.y
    delta = cw_attack_pgd(inp.model, x, y, inp.eps_rows(), inp.attack_step(),
                          inp.method["attack"]["steps"], inp.draw("start", "CFA's PGD-AT"))
    robust_output = inp.model(x + delta)
    ce = F.cross_entropy(robust_output, y, reduction="none")
    loss = (inp.per_sample("natural_weight") * ce).mean()
    expected = {"method.attack_train_mode": True, "clean_forward_after_step": True,
                "method.attack.start": {"kind": "uniform"},
                "method.attack.loss": {"kind": "cross-entropy"}}
    return StepResult(loss, predicted_by(robust_output), {"x_adv": (x + delta).detach()},
                      clean_forward_after_step=True,
                      reference="PKU-ML/CFA:attack.py:33-72, train.py:83-98", expected=expected)
