"""MART (Wang et al., ICLR 2020) as ``YisenWang/MART:mart.py`` trains it, with β per sample
(Tian et al.'s class-wise β, eq. (5), which classwise also allows on MART) and the plan's
class weights (natural_weight on the boosted CE, boundary_weight on the KL term)."""

import torch
import torch.nn.functional as F
from torch import nn

from .common import StepResult, predicted_by, signed_ascent
from .trades import TRADES_START_STD


def mart_attack(model, x, y, eps, step, steps, noise):
    """``YisenWang/MART:mart.py:17-34``: from x + 0.001·N(0, I), not clamped, ``steps`` signed
    steps on the CE mean in eval mode, each projected and clamped; clamped once more."""
    model.eval()
    start = x.detach() + TRADES_START_STD * noise
    return signed_ascent(model, x, start, eps, step, steps,
                         lambda x_adv: F.cross_entropy(model(x_adv), y))


def mart_terms(logits, logits_adv, y):
    """``YisenWang/MART:mart.py:38-55`` per sample: the boosted CE
    CE(f(x'), y) − log(1.0001 − p'_ŷ + 1e-12) (ŷ from the top two of ``argsort``) and the
    weighted KL Σ KLDivLoss(log(p' + 1e-12), p)·(1.0000001 − p_y)."""
    adv_probs = F.softmax(logits_adv, dim=1)
    tmp1 = torch.argsort(adv_probs, dim=1)[:, -2:]
    new_y = torch.where(tmp1[:, -1] == y, tmp1[:, -2], tmp1[:, -1])
    bce = F.cross_entropy(logits_adv, y, reduction="none") \
        + F.nll_loss(torch.log(1.0001 - adv_probs + 1e-12), new_y, reduction="none")
    nat_probs = F.softmax(logits, dim=1)
    true_probs = torch.gather(nat_probs, 1, (y.unsqueeze(1)).long()).squeeze(1)
    kl = nn.KLDivLoss(reduction="none")(torch.log(adv_probs + 1e-12), nat_probs)
    return bce, torch.sum(kl, dim=1) * (1.0000001 - true_probs)


def mart(inp):
    """``YisenWang/MART:mart.py:7-58``: loss = mean(bce) + β·(1/N)·Σ KL·(1.0000001 − p_y), in
    train mode after the attack (``model(x)`` then ``model(x_adv)``), β → β_{y_i}."""
    x, y, n = inp.x, inp.y, len(inp.y)
    x_adv = mart_attack(inp.model, x, y, inp.eps_rows(), inp.attack_step(),
                        inp.method["attack"]["steps"], inp.draw("start", "MART"))
    logits = inp.model(x)
    logits_adv = inp.model(x_adv)
    bce, robust = mart_terms(logits, logits_adv, y)
    loss = (inp.per_sample("natural_weight") * bce).mean() \
        + (1.0 / n) * torch.sum(inp.per_sample("boundary_weight") * inp.per_sample("beta") * robust)
    expected = {"clean_forward_after_step": False,
                "method.attack.start": {"kind": "normal", "std": TRADES_START_STD},
                "method.attack.loss": {"kind": "cross-entropy"}}
    return StepResult(loss, predicted_by(logits_adv), {"x_adv": x_adv}, expected=expected,
                      reference="YisenWang/MART:mart.py:7-58")
