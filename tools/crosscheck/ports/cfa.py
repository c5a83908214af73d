"""CFA's class-wise rules (Wei et al., CVPR 2023) as ``PKU-ML/CFA:train.py`` runs them: CCM's
budgets and CCR's β from the previous epoch's train robust accuracy, and the FAWA and EMA
weight averages (``PKU-ML/CFA:utils.py`` ``weight_average``). The loss-side of CCM/CCR is in
``pgd_at.py``, ``trades.py`` and ``fat.py``."""

import math

import torch

from .common import dig

REF = "PKU-ML/CFA:train.py"


def train_robust(rule):
    """``CW_log.result`` (``train.py:77-80``): m·cw_robust/N, the class's correct count times K
    over all training samples; from ``inputs.train_correct`` and ``train_total`` when given,
    else classwise's per-class fractions ``inputs.train_robust`` (the same on balanced data)."""
    inputs, k = rule["inputs"], rule["context"]["n_classes"]
    if "train_correct" in inputs:
        correct = torch.tensor(inputs["train_correct"], dtype=torch.float32)
        return k * correct / float(sum(inputs["train_total"]))
    return torch.tensor(inputs["train_robust"], dtype=torch.float32)


def cfa_rule(rule):
    """``train.py:195-208``: from 0-based epoch ``begin`` on, ε_k = (λ1 + t_k)·ε (CCM, applied
    with ``--ccm``, lines 231-234) and class_beta_k = (λ2 + t_k)·β/(1 + (λ2 + t_k)·β) (CCR);
    before, ε and β/(1 + β). The code's class_beta is b = β_k/(1 + β_k) of the loss
    (1 − b)·CE + b·KL, so classwise's plan.beta (β_k) is compared as β_k/(1 + β_k)."""
    s, ctx, e = rule["settings"], rule["context"], rule["epoch"]
    k, eps, beta = ctx["n_classes"], ctx["eps"], ctx.get("beta")
    t = train_robust(rule)
    calibrated = e >= s["begin"]
    class_eps = (torch.ones(k) * s["lambda1"] + t) * eps if calibrated and s.get("ccm", True) \
        else torch.ones(k) * eps
    rows = [("plan.eps", class_eps.tolist(), dig(rule["outputs"], "plan.eps"))]
    if beta is not None:
        if s.get("ccr") and calibrated:
            lam = s.get("lambda2", 0.5) + t
            class_beta = lam * beta / (1 + lam * beta)
        else:
            class_beta = torch.ones(k) * (beta / (1 + beta))
        got = dig(rule["outputs"], "plan.beta")
        rows.append(("plan.beta as beta/(1+beta)", class_beta.tolist(),
                     None if got is None else [b / (1 + b) for b in got]))
    return rows, {}, f"{REF}:77-80, 195-234"


def weight_average(state, new_state, decay_rate, init=False):
    """``PKU-ML/CFA:utils.py:115-124``: every entry of the state dict (BN statistics included)
    ← state·decay + new·(1 − decay); ``init`` sets decay to 0 (a copy)."""
    if init:
        decay_rate = 0
    return {key: (state[key] * decay_rate + new_state[key] * (1 - decay_rate)).clone().detach()
            for key in new_state}


def fawa_action(rule):
    """``train.py:248-257`` (FAWA): R_min = min_k of the validation robust accuracy; R_min ≥ δ
    copies θ the first time and averages it in with decay α afterwards; otherwise θ̄ stays
    (``weight_average(..., 1.)``). Beyond the code: ``start_epoch`` (CFA §5.1, "begin at the
    50-th epoch"; the code starts at 0), ``comparison = above`` (§4.3's "higher than δ") and the
    worst-``fraction`` gate (App. C.1, Tiny-ImageNet: the mean of the worst ⌈fraction·K⌉ classes)."""
    s, inputs = rule["settings"], rule["inputs"]
    r = sorted(inputs["val_robust"])
    gate = s.get("gate", {"kind": "worst-class"})
    if gate["kind"] == "worst-fraction":
        m = max(1, math.ceil(gate["fraction"] * len(r)))
        value = sum(r[:m]) / m
    else:
        value = r[0]
    ok = value > s["delta"] if s.get("comparison") == "above" else value >= s["delta"]
    if rule["epoch"] < s.get("start_epoch", 0) or not ok:
        return "keep", 1.0
    return ("average", s["alpha"]) if inputs["initialized"] else ("copy", 0.0)


def ema_action(rule):
    """``train.py:245``: ``weight_average(EMA_model, model, decay, epoch == 0)``: a copy at the
    first epoch, an average with decay α after; from ``start_epoch`` (CFA §5.1: 50; the code: 0)."""
    e, start = rule["epoch"], rule["settings"].get("start_epoch", 0)
    if e < start:
        return "keep", 1.0
    return ("copy", 0.0) if e == start else ("average", rule["settings"]["alpha"])


def average_rule(rule, before, model):
    """The rule-file port of the averages: the action and θ̄ after it (``weight_average``)."""
    action, decay = fawa_action(rule) if rule["rule"] == "fawa" else ema_action(rule)
    ref = f"{REF}:245-258, utils.py:115-124"
    if action == "keep" and not before:
        return action, {}, ref  # θ̄ holds nothing yet (the code's is the random initial model)
    after = weight_average(before or model, model, decay, init=action == "copy")
    return action, after, ref
