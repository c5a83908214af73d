"""TRADES (Zhang et al. 2019) in its two scalings, as the reference codes train it.

* ``paper``: ``yaodongyu/TRADES:trades.py`` ``trades_loss`` (CE + β·KL), with β per sample for
  Tian et al.'s class-wise β (their eq. (5): β_{y_i}) and the plan's class weights (CSL, WAT
  §3.2's one-class weight) on the two terms, as classwise documents them
  (trainer/src/train/objective/mod.rs: first term × natural_weight[y], second × boundary_weight[y]).
* ``reference``: ``PKU-ML/CFA:attack.py`` ``trades_loss`` / ``cw_trades_loss``
  ((1 − b)·CE + b·KL with b = β/(1 + β), ``PKU-ML/CFA:train.py:147,206``), class-wise ε (CCM) and
  β (CCR), and the clean forward after the update of ``PKU-ML/CFA:train.py:98``.
"""

import torch
import torch.nn.functional as F

from .common import StepResult, ce_rows, kl_div_rows, kl_div_sum, predicted_by, signed_ascent

TRADES_START_STD = 0.001  # hard-coded in every TRADES-family reference (trades.py:31)


def trades_kl_attack(model, x, eps, step, steps, noise):
    """The TRADES inner maximisation, ``yaodongyu/TRADES:trades.py:27-41`` and ``:75``
    (identical in ``PKU-ML/CFA:attack.py:119-136`` with per-sample ε, in
    ``hannxu123/fair_robust:utils_frl.py:197-213`` and ``boqili/WAT:attack_generator.py:45-69``):
    from x + 0.001·N(0, I), not clamped, ``steps`` signed steps on Σ KL(p(x) ‖ p(x')) in eval
    mode, each projected on the ε-ball and clamped to [0, 1]; the result is clamped once more.
    ``noise`` is the unscaled N(0, I) draw; ``eps`` is f32 [N, 1, 1, 1]."""
    model.eval()
    start = x.detach() + TRADES_START_STD * noise
    return signed_ascent(
        model, x, start, eps, step, steps,
        lambda x_adv: kl_div_sum(F.log_softmax(model(x_adv), dim=1), F.softmax(model(x), dim=1)))


def trades_switches():
    """The classwise settings under which classwise claims the TRADES references' behaviour."""
    return {"method.attack.start": {"kind": "normal", "std": TRADES_START_STD},
            "method.attack.loss": {"kind": "trades-kl"},
            "method.second_clean_forward": True}


def trades_paper(inp):
    """``yaodongyu/TRADES:trades.py:17-84`` (train mode from line 73: ``model(x)`` for the CE,
    ``model(x_adv)``, ``model(x)`` again for the KL target; loss CE + β·KL_sum/N, line 83),
    with β_{y_i} per sample (Tian et al. eq. (5)) and the plan's class weights."""
    x, y, n = inp.x, inp.y, len(inp.y)
    steps = inp.method["attack"]["steps"]
    x_adv = trades_kl_attack(inp.model, x, inp.eps_rows(), inp.attack_step(), steps,
                             inp.draw("start", "TRADES"))
    logits = inp.model(x)
    z_adv = inp.model(x_adv)
    target = F.softmax(inp.model(x), dim=1)
    kl = kl_div_rows(F.log_softmax(z_adv, dim=1), target)
    beta = inp.per_sample("beta")
    loss = (inp.per_sample("natural_weight") * ce_rows(logits, y)).mean() \
        + (inp.per_sample("boundary_weight") * beta * kl).sum() / n
    expected = dict(trades_switches(), **{"method.scaling": "paper", "clean_forward_after_step": False})
    return StepResult(loss, predicted_by(z_adv), {"x_adv": x_adv}, reference=(
        "yaodongyu/TRADES:trades.py:17-84 (+ Tian et al. eq. (5): beta_y)"), expected=expected)


def trades_cfa(inp):
    """``PKU-ML/CFA:attack.py:110-150`` (``cw_trades_loss``; ``trades_loss`` at lines 74-108 is
    the same with one ε): the attack as above at ε_{y_i}, then in train mode ``model(x)`` for
    the CE, ``model(x_adv)``, ``model(x)`` for the KL target, and
    ``loss = Σ_i (1 − b_i)·CE_i/N + b_i·KL_i/N`` with b_i = β_{y_i}/(1 + β_{y_i}); the clean
    forward after the update (``PKU-ML/CFA:train.py:98``) is flagged for the driver."""
    x, y, n = inp.x, inp.y, len(inp.y)
    beta = inp.per_sample("beta")
    b = beta / (1 + beta)  # class_beta of PKU-ML/CFA:train.py:147 and :206
    x_adv = trades_kl_attack(inp.model, x, inp.eps_rows(), inp.attack_step(),
                             inp.method["attack"]["steps"], inp.draw("start", "CFA's TRADES"))
    logits = inp.model(x)
    loss_natural = ce_rows(logits, y) / n
    robust_out = inp.model(x_adv)
    loss_robust = (1.0 / n) * kl_div_rows(F.log_softmax(robust_out, dim=1),
                                          F.softmax(inp.model(x), dim=1))
    loss = ((1 - b) * inp.per_sample("natural_weight") * loss_natural
            + b * inp.per_sample("boundary_weight") * loss_robust).sum()
    expected = dict(trades_switches(), **{"method.scaling": "reference",
                                          "clean_forward_after_step": True})
    return StepResult(loss, predicted_by(robust_out), {"x_adv": x_adv},
                      clean_forward_after_step=True,
                      reference="PKU-ML/CFA:attack.py:110-150, train.py:91-98", expected=expected)
