"""FRL, fair robust learning (Xu et al., ICML 2021), as ``hannxu123/fair_robust`` runs it:
``utils_frl.py`` for Reweight (FRL-RW, ``frlrw.py``) and ``utils_frl2.py`` for Reweight +
Remargin (FRL-RWRM, ``frlrmrw.py``). The reference hard-codes 10 classes; the ports take K."""

import torch
import torch.nn.functional as F
from torch import nn

from .common import StepResult, dig, predicted_by
from .trades import trades_kl_attack


def frl_loss(natural_logits, adv_logits, target_logits, y, weight0, weight1, beta):
    """``utils_frl.py:237-244``: Σ w0·CE/Σ w0 + β·Σ w1·KL/Σ w1 (per-batch normalised)."""
    loss_natural = nn.CrossEntropyLoss(reduction="none")(natural_logits, y)
    loss_bndy_vec = nn.KLDivLoss(reduction="none")(F.log_softmax(adv_logits, dim=1),
                                                   F.softmax(target_logits, dim=1))
    loss_bndy = torch.sum(loss_bndy_vec, 1)
    return torch.sum(loss_natural * weight0) / torch.sum(weight0) \
        + beta * torch.sum(loss_bndy * weight1) / torch.sum(weight1)


def frl(inp):
    """One batch of ``train_model`` (``utils_frl.py:218-246``; ``utils_frl2.py:183-210``):
    ``trades_adv`` at ε·diff2[y_i] (the plan's ε_{y_i}) in eval mode from x + 0.001·N(0, I),
    with the step ``--step_size`` (RW, ``utils_frl.py:187-213``) or max_i(ε_i)/4 over the batch
    (RWRM, ``utils_frl2.py:162``); then in train mode ``model(data)``, ``model(x_adv)``,
    ``model(data)`` and ``frl_loss``. The class weights diff0, diff1 enter only through their
    ratios, so the plan's natural_weight and boundary_weight (K·diff in classwise) are used as
    they are."""
    x, y = inp.x, inp.y
    eps = inp.eps_rows()
    step = torch.max(eps) / 4 if inp.rule.get("remargin") else inp.attack_step()
    x_adv = trades_kl_attack(inp.model, x, eps, step, inp.method["attack"]["steps"],
                             inp.draw("start", "FRL"))
    natural_logits = inp.model(x)
    adv_logits = inp.model(x_adv)
    target_logits = inp.model(x)
    loss = frl_loss(natural_logits, adv_logits, target_logits, y, inp.per_sample("natural_weight"),
                    inp.per_sample("boundary_weight"), inp.uniform_beta())
    ref = "utils_frl2.py:151-210" if inp.rule.get("remargin") else "utils_frl.py:187-246"
    expected = {"clean_forward_after_step": False, "method.scaling": "paper",
                "method.second_clean_forward": True,
                "method.attack.start": {"kind": "normal", "std": 0.001},
                "method.attack.loss": {"kind": "trades-kl"}}
    return StepResult(loss, predicted_by(adv_logits), {"x_adv": x_adv}, expected=expected,
                      reference=f"hannxu123/fair_robust:{ref}")


def normalize_lambda(lmb, lim=0.8):
    """``utils_frl.py:304-311``."""
    lmb = torch.clamp(lmb, min=0)
    if torch.sum(lmb) > lim:
        lmb = lim * lmb / torch.sum(lmb)
    return lmb


def cost_sensitive(lam0, lam1, lam2, remargin):
    """``utils_frl.py:109-132`` (RW: diff2 clamped to [0.98, 2.5]) and ``utils_frl2.py:73-96``
    (RWRM: [0.98, 3]), with K classes in place of 10: diff_i = 1/K + (K−1)/K·λ_i − Σ_{j≠i} λ_j/K."""
    k = len(lam0)
    diffs = []
    for ll in (torch.clone(lam0), torch.clone(lam1)):
        diff = torch.ones(k) * 1 / k
        for i in range(k):
            for j in range(k):
                diff[i] = diff[i] + ((k - 1) / k * ll[i] if j == i else -1 / k * ll[j])
        diffs.append(diff)
    diff2 = torch.clamp(torch.exp(2 * lam2), min=0.98, max=3 if remargin else 2.5)
    return diffs[0], diffs[1], diff2


def frl_update(lmbda, gamma0, gamma1, rate1, rate2, lim, remargin):
    """``frl_train``, ``utils_frl.py:274-284`` (RW: λ2 kept) and ``utils_frl2.py:238-248``
    (RWRM: λ2 += rate2·γ1, neither clamped nor normalised)."""
    k = len(gamma0)
    lmbda0 = lmbda[0:k] + rate1 * torch.clamp(gamma0, min=-1000)
    lmbda1 = lmbda[k:2 * k] + rate1 * 2 * torch.clamp(gamma1, min=-1000)
    lmbda2 = lmbda[2 * k:3 * k] + (rate2 * gamma1 if remargin else 0)
    lmbda0 = normalize_lambda(lmbda0, lim)
    lmbda1 = normalize_lambda(lmbda1, lim)
    return torch.cat([lmbda0, lmbda1, lmbda2]), cost_sensitive(lmbda0, lmbda1, lmbda2, remargin)


def frl_rule(rule):
    """The rule-file port: the multipliers and class weights for 0-based epoch ``epoch`` from
    the previous multipliers ``inputs.lambda`` (3K; zeros at the start, ``frlrw.py:55``) and the
    validation errors measured before it (``utils_frl.py:257-262``:
    γ0 = clean_err_k − total_clean_err − τ1, γ1 = bndy_err_k − total_bndy_err − τ2; the totals
    default to the class means, their values on a class-balanced validation set). rate1 =
    α1/2^⌊n/halve_every⌋ with n = FRL's 1-based epoch, taken as ``epoch − begin + 1``
    (``frlrw.py:85-86`` halves it before that epoch's update). Plan: natural_weight = K·diff0,
    boundary_weight = K·diff1 (classwise's normalisation, core/src/rule/frl.rs docs), ε_k =
    ε·diff2_k and, with remargin, step = max_k ε_k/4 (``utils_frl2.py:162``, the batch max when
    the batch holds every class)."""
    s, ctx, inputs = rule["settings"], rule["context"], rule["inputs"]
    k = ctx["n_classes"]
    clean = torch.tensor(inputs["val_clean_error"], dtype=torch.float32)
    bndy = torch.tensor(inputs["val_boundary_error"], dtype=torch.float32)
    total_clean = inputs.get("total_clean_error", float(clean.double().mean()))
    total_bndy = inputs.get("total_boundary_error", float(bndy.double().mean()))
    # The reference has no `begin`: its epoch 1 is the first FRL epoch, read as classwise's
    # `begin`. classwise counts so too since 5879ca2 (before it, from the run's epoch 0: found
    # by this cross-check's `begin` 2 files).
    n = rule["epoch"] - s.get("begin", 0) + 1
    rate1 = s["alpha1"] / 2 ** (n // s["halve_every"])
    lmbda = torch.tensor(inputs.get("lambda", [0.0] * 3 * k), dtype=torch.float32)
    lmbda, (diff0, diff1, diff2) = frl_update(
        lmbda, clean - total_clean - s["tau1"], bndy - total_bndy - s["tau2"], rate1,
        s["alpha2"], s["lim"], s["remargin"])
    eps = ctx["eps"] * diff2
    port = {"lambda": lmbda.tolist(), "plan.natural_weight": (k * diff0).tolist(),
            "plan.boundary_weight": (k * diff1).tolist(), "plan.eps": eps.tolist()}
    if s["remargin"]:
        # utils_frl2.py:162 replaces --step_size by max ε_i/4 (over the batch's samples there,
        # over the classes here: equal when the batch holds every class).
        port["plan.step_size"] = [float(eps.max() / 4)]
    got = {key: dig(rule["outputs"], key) for key in port}
    if s["remargin"] and got["plan.step_size"] is not None:
        got["plan.step_size"] = [got["plan.step_size"]]
    rows = [(key, value, got[key]) for key, value in port.items()]
    if not s["remargin"] and dig(rule["outputs"], "plan.step_size") is not None:
        rows.append(("plan.step_size (none in RW)", [], [dig(rule["outputs"], "plan.step_size")]))
    ref = "utils_frl2.py:73-96, 217-270" if s["remargin"] else "utils_frl.py:109-132, 253-311"
    expected = {"settings.eps_multiplier_max": 3.0} if s["remargin"] else {}
    return rows, expected, f"hannxu123/fair_robust:{ref}, frlrw.py:53-89"
