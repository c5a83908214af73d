"""BAT, balance adversarial training (Sun et al., 2023), from the paper alone
(``/work/shared/papers/bat.txt``; no code was published): the boundary pair of Algorithm 1
(lines 451-510 of the text), the source-class loss of eq. (2), the target-class loss of
eq. (6), their sum eq. (7), averaged over the batch (Algorithm 1, line 15: θ ← θ − η·(1/m)·Σ∇).

What the paper leaves open, and the reading taken here: ξ (the start's scale) is the
method's start std; line 10's garbled step "Π(α(∇ℓ_KL + x̃))" is read as PGD's
Π_{B[x,ε]}(x̃ + α·sign(∇ℓ_KL)) with a clamp to [0, 1] (the TRADES attack, eq. (2) builds on
TRADES); the attack's model is in eval mode (TRADES'); the train-mode forwards (BatchNorm's
statistics) are f(x), then the source terms' inputs, then the target terms' new inputs, each
input once. The `reference` scaling (CFA's (CE + β·KL)/(1 + β)) and the class weights are
classwise's documented extensions (trainer/src/train/objective/bat.rs docs): the whole
per-sample loss over 1 + β_y; natural_weight on the CE, boundary_weight on the KL and uniform
terms.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .common import StepResult, ce_rows, kl_div_rows, kl_div_sum, predicted_by, rows
from .trades import trades_kl_attack

PAPER = "BAT (Sun et al. 2023)"


def boundary_pair(model, x, y, eps, step, k_max, xi, noise):
    """Algorithm 1, lines 3-14, for every sample of the batch at once (in eval mode each
    sample's gradient is its own): x_c, x_a ← x; x̃ ← x + ξ·N(0, I); while K > 0: stop if
    argmax f(x̃) ≠ y, else x_c ← x̃, x̃ ← Π(x̃ + α·sign ∇ℓ_KL(f(x̃), f(x))), x_a ← x̃, K ← K − 1.
    Returns x_c, x_a and the steps each sample took."""
    model.eval()
    with torch.no_grad():
        p_clean = F.softmax(model(x), dim=1)
    x_c, x_a, x_t = x.clone(), x.clone(), x + xi * noise
    active = torch.ones(len(y), dtype=torch.bool)
    steps = torch.zeros(len(y), dtype=torch.long)
    for _ in range(k_max):
        with torch.no_grad():
            active &= model(x_t).argmax(1) == y
        if not bool(active.any()):
            break
        x_c = torch.where(rows(active, x), x_t, x_c)
        x_t = x_t.detach().requires_grad_()
        loss = kl_div_sum(F.log_softmax(model(x_t), dim=1), p_clean)
        grad = torch.autograd.grad(loss, [x_t])[0]
        stepped = torch.min(torch.max(x_t.detach() + step * grad.sign(), x - eps), x + eps)
        x_t = torch.where(rows(active, x), stepped.clamp(0.0, 1.0), x_t.detach())
        x_a = torch.where(rows(active, x), x_t, x_a)
        steps += active.long()
    model.train()
    return x_c.detach(), x_a.detach(), steps


def uniform_kl(logits):
    """KL(U ‖ f(x)) per sample (eqs. (3), (6)): Σ_k (1/K)·(log(1/K) − log p_k)."""
    k = logits.shape[1]
    u = torch.full_like(logits, 1.0 / k)
    return nn.KLDivLoss(reduction="none")(F.log_softmax(logits, dim=1), u).sum(1)


def bat(inp):
    """Eq. (7) per sample, averaged: CE(f(x_c), y) + β·KL(f(x) ‖ f(x_a)) (eq. (2)) +
    α·[KL(U ‖ f(x_c)) + KL(U ‖ f(x_a))] (eq. (6)). The ablations of BAT Tables 2-3:
    ``source = trades`` takes CE(f(x)) + β·KL(f(x) ‖ f(x')) on the full TRADES x' (from
    ``draw.start_fixed``); ``uniform_on`` picks the points of the uniform term."""
    m, x, y = inp.method, inp.x, inp.y
    attack = m["attack"]
    x_c, x_a, steps = boundary_pair(inp.model, x, y, inp.eps_rows(), inp.attack_step(),
                                    attack["steps"], attack["start"].get("std", 0.0),
                                    inp.draw("start", PAPER))
    source, uniform_on = m.get("source", "boundary"), m.get("uniform_on", ["last-correct", "first-wrong"])
    points = {"last-correct": x_c, "first-wrong": x_a}
    if source == "trades" or "fixed" in uniform_on:
        points["fixed"] = trades_kl_attack(inp.model, x, inp.eps_rows(), inp.attack_step(),
                                           attack["steps"], inp.draw("start_fixed", PAPER))
    z = inp.model(x)
    logits = {}

    def forward(point):
        if point not in logits:
            logits[point] = inp.model(points[point])
        return logits[point]

    z_ce, z_kl = (z, forward("fixed")) if source == "trades" else \
        (forward("last-correct"), forward("first-wrong"))
    beta, nw, bw = inp.per_sample("beta"), inp.per_sample("natural_weight"), inp.per_sample("boundary_weight")
    kl = kl_div_rows(F.log_softmax(z_kl, dim=1), F.softmax(z, dim=1))
    per_sample = nw * ce_rows(z_ce, y) + bw * beta * kl
    alpha = float(m["alpha"])
    if alpha > 0:
        per_sample = per_sample + alpha * bw * sum(uniform_kl(forward(p)) for p in uniform_on)
    if m.get("scaling", "paper") == "reference":
        per_sample = per_sample / (1 + beta)
    inputs = {"x_c": x_c, "x_a": x_a}
    if "fixed" in points:
        inputs["x_adv"] = points["fixed"]
    expected = {"clean_forward_after_step": False, "method.attack.loss": {"kind": "trades-kl"}}
    return StepResult(per_sample.mean(), predicted_by(z_kl), inputs, steps=steps,
                      expected=expected, reference=f"{PAPER}: Algorithm 1, eqs. (2), (6), (7)")
