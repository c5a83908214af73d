"""FAT, friendly adversarial training (Zhang et al. 2020), in its two reference codes.

* ``original`` variant: ``zjfheart/Friendly-Adversarial-Training:earlystop.py`` and ``FAT.py``
  (the attack in eval mode, uniform start, ω·N(0, I) noise at every step, the dynamic τ of
  ``adjust_tau(epoch + 1)``, the friendly examples reordered: frozen ones first).
* ``cfa-repo`` variant: ``PKU-ML/CFA:attack.py`` ``cw_fat_loss`` (the attack in train mode, a
  sample steps only while its budget is positive, CCM's class-wise ε).
"""

import torch
import torch.nn.functional as F

from .common import StepResult, predicted_by


def adjust_tau(epoch, tau, dynamictau):
    """``zjfheart/Friendly-Adversarial-Training:FAT.py:77-86``, called with the 1-based epoch
    (``FAT.py:35`` of the loop: ``adjust_tau(epoch + 1, args.dynamictau)``)."""
    if dynamictau:
        if epoch <= 50:
            return 0
        if epoch <= 90:
            return 1
        return 2
    return tau


def earlystop(model, x, y, step_size, eps, k_max, tau, u, noise, omega):
    """``zjfheart/Friendly-Adversarial-Training:earlystop.py:5-113`` with ``loss_fn='cent'``,
    ``uniform_randominit`` (lines 33-35: x + ε·U(−1, 1), clamped). ``eps`` is f32 [N, 1, 1, 1]
    (one ε in the reference; CCM's ε_{y_i} here). ``noise[k]`` is the N(0, I) draw of the
    k-th step for every sample of the batch; the reference draws it for the samples still
    iterating only, so row i of ``noise[k]`` is sample i's. Returns the friendly examples in
    the reference's order (frozen samples first), their original indices, and the steps
    each sample took (not returned by the reference: its ``count`` summed)."""
    model.eval()
    idx = torch.arange(len(y))  # original index of each iterating sample
    iter_adv = torch.clamp(x.detach() + eps * u, 0.0, 1.0)
    iter_clean, iter_target, iter_eps = x.detach(), y.detach(), eps
    control = torch.ones(len(y)) * tau
    steps = torch.zeros(len(y), dtype=torch.long)
    out_adv, out_idx = [], []
    for k in range(k_max):
        iter_adv.requires_grad_()
        output = model(iter_adv)
        pred = output.max(1, keepdim=True)[1].view(-1)
        wrong = pred != iter_target
        frozen = wrong & (control == 0)
        control = control - (wrong & (control != 0)).float()
        out_adv.append(iter_adv[frozen].detach())
        out_idx.append(idx[frozen])
        keep = ~frozen
        loss_adv = F.cross_entropy(output, iter_target, reduction="mean")
        grad = torch.autograd.grad(loss_adv, [iter_adv])[0]
        if not bool(keep.any()):
            return torch.cat(out_adv), torch.cat(out_idx), steps
        control, iter_adv, iter_clean = control[keep], iter_adv[keep], iter_clean[keep]
        iter_target, iter_eps, idx, grad = iter_target[keep], iter_eps[keep], idx[keep], grad[keep]
        eta = step_size * grad.sign()
        iter_adv = iter_adv.detach() + eta + omega * noise_rows(noise, k, idx, omega)
        iter_adv = torch.min(torch.max(iter_adv, iter_clean - iter_eps), iter_clean + iter_eps)
        iter_adv = torch.clamp(iter_adv, 0, 1)
        steps[idx] += 1
    out_adv.append(iter_adv.detach())
    out_idx.append(idx)
    return torch.cat(out_adv), torch.cat(out_idx), steps


def noise_rows(noise, k, idx, omega):
    if omega == 0:
        return 0.0
    return noise[k][idx]


def fat_original(inp):
    """``zjfheart/Friendly-Adversarial-Training:FAT.py:48-69``: the friendly examples of
    ``earlystop`` (``FAT.py:56-58``: uniform start, ω = ``--omega``, τ = ``adjust_tau``), then in
    train mode the CE mean of ``model(output_adv)`` against ``output_target`` (the reference's
    order: a permutation of the batch). τ: the reference's ``--dynamictau`` is taken as on when
    classwise's ``tau_schedule`` is set (its schedule must then be the reference's 50/90),
    else ``--tau`` = ``attack.tau``."""
    attack = inp.method["attack"]
    tau = adjust_tau(inp.epoch + 1, attack["tau"], bool(inp.method.get("tau_schedule")))
    omega = float(attack.get("step_noise", 0.0))
    noise = inp.draw("step_noise", "FAT's omega") if omega > 0 else None
    adv, order, steps = earlystop(inp.model, inp.x, inp.y, inp.attack_step(), inp.eps_rows(),
                                  attack["steps"], tau, inp.draw("start", "FAT"), noise, omega)
    inp.model.train()
    output = inp.model(adv)
    w = inp.per_sample("natural_weight")[order]
    loss = (w * F.cross_entropy(output, inp.y[order], reduction="none")).mean()
    x_adv, predicted = torch.empty_like(adv), torch.empty_like(inp.y)
    x_adv[order], predicted[order] = adv, predicted_by(output)
    expected = {"method.attack_train_mode": False, "clean_forward_after_step": False,
                "method.attack.start": {"kind": "uniform"},
                "method.attack.loss": {"kind": "cross-entropy"},
                "method.attack.variant": "original"}
    return StepResult(loss, predicted, {"x_adv": x_adv}, steps=steps, expected=expected,
                      reference="zjfheart/Friendly-Adversarial-Training:earlystop.py:5-113, "
                                "FAT.py:48-86")


def cw_fat_attack(model, x, y, eps, tau, alpha, n_iters, u):
    """``PKU-ML/CFA:attack.py:197-245`` (``fat_loss`` at 152-191 with one ε), in the mode the
    model is in (train in CFA's training, ``train.py:84``): δ = U(−1, 1)·ε_i clamped to
    [−x, 1 − x]; at each of at most ``n_iters`` rounds a sample steps iff its budget
    ``control`` (τ) is positive, and spends one when misclassified; the gradient is that of the
    CE mean over the whole batch; after each round with a step the batch is forwarded again (its
    prediction is the next round's). Returns δ, the steps each sample took, and the number of rounds (the forwards)."""
    eps = eps.expand_as(x)
    delta = torch.clamp(u * eps, -x, 1 - x)
    control = torch.ones(len(x)) * tau
    steps = torch.zeros(len(x), dtype=torch.long)
    delta.requires_grad = True
    output = model(x + delta)
    pred = output.max(1)[1]
    for _ in range(n_iters):
        stepping = control > 0
        control = control - ((pred != y) & stepping).float()
        if not bool(stepping.any()):
            break
        grad = torch.autograd.grad(F.cross_entropy(output, y), [delta])[0].detach()
        i = stepping.nonzero().view(-1)
        d = torch.clamp(delta[i] + alpha * torch.sign(grad[i]), min=-eps[i], max=eps[i])
        d = torch.clamp(d, 0 - x[i], 1 - x[i])
        delta = delta.detach()
        delta[i] = d.detach()
        delta.requires_grad_()
        output = model(x + delta)
        pred = output.max(1)[1]
        steps[i] += 1
    return delta.detach(), steps


def fat_cfa(inp):
    """``PKU-ML/CFA:attack.py:197-249`` (``cw_fat_loss``): the attack above with τ = ``--tau``
    (``attack.tau``; CFA's code has no schedule), then ``model(x + δ)`` in train mode and its
    CE mean; the clean forward after the update of ``train.py:98``. ``cw_fat_loss`` sets no
    mode: its caller's is used, train mode in CFA's training (``train.py:84``). With
    ``attack_train_mode = false`` the port calls it as CFA's ``cw_trades_loss`` runs its own
    attack: the model in eval mode for the attack (``attack.py:120``) and back in train mode
    for the loss (``attack.py:134``); an eval-mode forward leaves BatchNorm's buffers alone, so
    the forward count of the train-mode note below no longer matters."""
    attack, train_mode = inp.method["attack"], bool(inp.method.get("attack_train_mode"))
    inp.model.train(train_mode)
    delta, steps = cw_fat_attack(inp.model, inp.x, inp.y, inp.eps_rows(), attack["tau"],
                                 inp.attack_step(), attack["steps"], inp.draw("start", "CFA's FAT"))
    inp.model.train()
    robust_output = inp.model(inp.x + delta)
    ce = F.cross_entropy(robust_output, inp.y, reduction="none")
    loss = (inp.per_sample("natural_weight") * ce).mean()
    expected = {"clean_forward_after_step": True,
                "method.attack.start": {"kind": "uniform"},
                "method.attack.loss": {"kind": "cross-entropy"},
                "method.attack.variant": "cfa-repo", "method.attack.step_noise": 0.0,
                "method.tau_schedule": []}
    notes = []
    if train_mode:
        notes.append("known difference: classwise's EarlyStoppedPgd forwards each round twice in "
                     "train mode (a no-grad check, then the step's forward: 2·rounds + 1 "
                     "train-mode forwards), CFA's code once (rounds + 2): the BatchNorm buffers "
                     "are expected to differ (STEP_FORMAT.md)")
    return StepResult(loss, predicted_by(robust_output), {"x_adv": (inp.x + delta).detach()},
                      steps=steps, clean_forward_after_step=True, expected=expected, notes=notes,
                      reference="PKU-ML/CFA:attack.py:197-249, train.py:83-98"
                                + ("" if train_mode else " (attack in eval mode as attack.py:120-134)"))


def fat(inp):
    variant = inp.method["attack"].get("variant", "original")
    return fat_cfa(inp) if variant == "cfa-repo" else fat_original(inp)
