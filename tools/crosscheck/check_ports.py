#!/usr/bin/env python3
"""Checks the ports themselves: each step port (through ``steps.run_step``, as the driver runs
it) against the reference code's **own** training loop, executed from its source on the same
weights, batch and draws. Optional, and it needs the six reference repositories checked out
under one directory (``--refs``), as ``owner+name`` or ``name`` sub-directories:

| repository | commit read |
|---|---|
| PKU-ML/CFA | 071f3334a59d144cedbe65b18019c9757bece6f2 |
| yaodongyu/TRADES | 6e8e11b7c281371c2f027ffadfbaea80361f09de |
| YisenWang/MART | 2d83e17b381dd2ee52223695e517bf6d5ff09c2c |
| zjfheart/Friendly-Adversarial-Training | 80a064074891775146bca8c4d8a6b99c1499285a |
| boqili/WAT | 62d1184f9b88909c9e782ab8234128324235ac84 |
| hannxu123/fair_robust | a80547def881cb4ca99b50e7544f997f9a0210a7 |

    nice "$PY" tools/crosscheck/check_ports.py --refs DIR

How: the reference functions are taken from their files with ``ast`` (their scripts parse
arguments and train at import), ``.cuda()`` removed and ``device='cuda'`` made the CPU; their
random calls (``torch.randn``, ``torch.rand_like``, ``np.random.uniform``) return the draws the
port is given; the model is the classwise twin of ``selftest_steps.py`` (normalisation inside,
so CFA's ``normalize_cifar`` is the identity). Each loop runs one batch with its own
``torch.optim.SGD``; every parameter and BatchNorm buffer after it is compared with the port's.
FAT's ω noise is the same for every sample of a step here, so the per-sample mapping of the
noise rows is not tested. BAT (no code), CSL (no code) and the CFA/WAT/CSL rules are not
covered; FRL's multiplier update is, against ``normalize_lambda`` and ``cost_sensitive``.
Exit status 0 when every difference is ≤ 1e-5.
"""
import argparse
import ast
import contextlib
import datetime
import io
import json
import os
import sys
import types
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import classwise_models as cm  # noqa: E402
import selftest_steps as st  # noqa: E402
import steps  # noqa: E402


REFS = None  # --refs
RESULTS = []
STEPS = 10
KL_ATTACK = st.attack(st.NORMAL, "trades-kl", STEPS)
CE_ATTACK = st.attack(st.UNIFORM, "cross-entropy", STEPS)
TRADES_PAPER = {"method": "trades", "attack": KL_ATTACK, "scaling": "paper",
                "second_clean_forward": True}
BASE = {"rule": {"kind": "uniform"}, "epoch": 0, "clean_forward_after_step": False}
OPT = {"lr": 0.1, "momentum": 0.9, "weight_decay": 2e-4}


# ---------------------------------------------------------------- running reference code


def source(path, names):
    """The definitions ``names`` of a reference file, CUDA calls made CPU ones."""
    repo, file = path.split("/", 1)
    root = os.path.join(REFS, repo)
    if not os.path.isdir(root):
        root = os.path.join(REFS, repo.split("+", 1)[1])
    with open(os.path.join(root, file)) as f:
        text = f.read().replace(".cuda()", "").replace("device='cuda'", "device='cpu'")
    tree = ast.parse(text)
    keep = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
    return "\n\n".join(ast.get_source_segment(text, n) for n in keep)


def load(*files, **extra):
    """A namespace with the reference definitions of ``files`` ((path, names) pairs)."""
    ns = {"torch": torch, "nn": nn, "F": F, "np": np, "optim": torch.optim, "datetime": datetime,
          "Variable": lambda t, requires_grad=False: t, "tqdm": lambda x: x,
          "normalize_cifar": lambda x: x}
    ns.update(extra)
    for path, names in files:
        exec(source(path, names), ns)
    return ns


class Loader(list):
    """One batch, with the ``dataset`` the references' progress prints ask for."""

    def __init__(self, x, y):
        super().__init__([(x, y)])
        self.dataset = list(range(len(y)))


class Feed:
    """Patches torch.randn / torch.rand_like / np.random.uniform to return queued arrays."""

    def __init__(self, randn=(), rand_like=(), uniform=()):
        self.randn, self.rand_like, self.uniform = list(randn), list(rand_like), list(uniform)
        self.saved = (torch.randn, torch.rand_like, np.random.uniform)

    def __enter__(self):
        feed = self

        def randn(*size, **kw):
            """The next queued draw, its first rows when fewer are asked (FAT's ω noise is drawn
            for the samples still iterating; the queued rows are equal for the whole batch)."""
            size = torch.Size(size[0] if len(size) == 1 else size)
            return feed.randn.pop(0)[: size[0]].clone()

        torch.randn = randn
        torch.rand_like = lambda t, **kw: feed.rand_like.pop(0).clone()
        np.random.uniform = lambda lo, hi, shape: feed.uniform.pop(0)
        return self

    def __exit__(self, *a):
        torch.randn, torch.rand_like, np.random.uniform = self.saved


def reference_step(c, train, feed, opt=OPT):
    """A fresh twin, one batch of a reference loop ``train(model, loader, optimizer)`` with the
    draws of ``feed``, its prints swallowed; returns the model after it."""
    model = steps.build_twin(st.SPEC, c.state)
    optimizer = torch.optim.SGD(model.parameters(), **opt)
    with feed, contextlib.redirect_stdout(io.StringIO()):
        train(model, Loader(c.x, c.y), optimizer)
    return model


def port_step(c, meta, draws):
    tensors = {"x": c.x, "y": c.y, **{f"before.{n}": t for n, t in c.state.items()}, **draws}
    md = {cm.SPEC_KEY: json.dumps(st.SPEC), steps.STEP_KEY: json.dumps(dict(BASE, **meta))}
    return steps.run_step(md, tensors)[0]


def compare(name, ref_model, port_out, extra=""):
    worst, worst_name = 0.0, ""
    for n, t in ref_model.net.state_dict().items():
        if n.endswith("num_batches_tracked"):
            continue
        b = port_out[f"after.{n}"].double()
        r = float((t.double() - b).norm() / b.norm().clamp(min=1e-30))
        if r >= worst:
            worst, worst_name = r, n
    RESULTS.append(worst)
    print(f"{name:24s} parameters and BN buffers after the step: max norm-wise rel diff "
          f"{worst:.1e} ({worst_name}) {extra}")


# ---------------------------------------------------------------- the checks


def check_cfa(c):
    """``train_epoch`` of PKU-ML/CFA:train.py with ``cw_pgd_loss``, ``cw_trades_loss``,
    ``cw_fat_loss``, class-wise ε (CCM) and β (CCR)."""
    ns = load(("PKU-ML+CFA/attack.py", {"cw_attack_pgd", "cw_pgd_loss", "cw_trades_loss", "cw_fat_loss"}),
              ("PKU-ML+CFA/train.py", {"CW_log", "train_epoch"}),
              args=types.SimpleNamespace(debug=False), device="cpu")
    opt = {"lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4}
    lam = 0.5 + c.t
    fat = st.attack(st.UNIFORM, "cross-entropy", STEPS, tau=3, variant="cfa-repo")
    for name, loss_fn, beta_arg, method, plan in [
        ("CFA AT + CCM", "cw_pgd_loss", 0,
         {"method": "pgd-at", "attack": CE_ATTACK, "attack_train_mode": True}, st.plan(c.class_eps)),
        ("CFA TRADES + CCM + CCR", "cw_trades_loss", lam * 6 / (1 + lam * 6),
         dict(TRADES_PAPER, scaling="reference"), st.plan(c.class_eps, (lam * 6).tolist())),
        ("CFA FAT + CCM", "cw_fat_loss", 3,
         {"method": "fat", "attack": fat, "attack_train_mode": True},
         st.plan(((0.5 + 4 * c.t) * c.eps).tolist())),
    ]:
        class_eps = torch.tensor(plan["eps"], dtype=torch.float32)
        model = reference_step(c, lambda m, ld, o: ns["train_epoch"](
            m, ld, o, "cpu", ns[loss_fn], class_eps, beta_arg, c.step, STEPS),
            Feed(randn=[c.z], rand_like=[c.r]), opt)
        meta = {"method": method, "plan": plan, "optimizer": opt, "clean_forward_after_step": True}
        compare(name, model, port_step(c, meta, {"draw.start": c.z if loss_fn == "cw_trades_loss" else c.u}))


def check_trades_mart(c):
    """``train`` of yaodongyu/TRADES:train_trades_cifar10.py and YisenWang/MART:train_wideresnet.py."""
    args = types.SimpleNamespace(step_size=c.step, epsilon=c.eps, num_steps=STEPS, beta=6.0,
                                 log_interval=100)
    for name, files, method in [
        ("TRADES (yaodongyu)", [("yaodongyu+TRADES/trades.py", {"trades_loss"}),
                                ("yaodongyu+TRADES/train_trades_cifar10.py", {"train"})], TRADES_PAPER),
        ("MART", [("YisenWang+MART/mart.py", {"mart_loss"}),
                  ("YisenWang+MART/train_wideresnet.py", {"train"})],
         {"method": "mart", "attack": st.attack(st.NORMAL, "cross-entropy", STEPS)}),
    ]:
        ns = load(*files)
        model = reference_step(c, lambda m, ld, o: ns["train"](args, m, "cpu", ld, o, 1), Feed(randn=[c.z]))
        meta = {"method": method, "plan": st.plan(beta=6.0), "optimizer": OPT}
        compare(name, model, port_step(c, meta, {"draw.start": c.z}))


def check_fat(c):
    """``train`` of zjfheart/Friendly-Adversarial-Training:FAT.py with ``earlystop``, τ = 1
    (epoch 60 of the dynamic schedule), ω = 0.001; the noise rows are equal across samples."""
    ns = load(("zjfheart+Friendly-Adversarial-Training/FAT.py", {"train"}),
              args=types.SimpleNamespace(step_size=c.step, epsilon=c.eps, num_steps=STEPS,
                                         rand_init=True, omega=0.001))
    exec(source("zjfheart+Friendly-Adversarial-Training/earlystop.py", {"earlystop"}).replace(
        "reshape(-1, 3, 32, 32)", "reshape(-1, 3, 16, 16)"), ns)
    noise = torch.randn((STEPS, 1, *c.x.shape[1:]), generator=c.g).expand(STEPS, *c.x.shape).contiguous()
    feed = Feed(randn=list(noise), uniform=[(c.eps * c.u.double()).numpy()])
    model = reference_step(c, lambda m, ld, o: ns["train"](m, ld, o, 1), feed)
    attack = st.attack(st.UNIFORM, "cross-entropy", STEPS, tau=0, variant="original", step_noise=0.001)
    meta = {"epoch": 60, "method": {"method": "fat", "attack": attack, "tau_schedule": [[50, 1], [90, 2]]},
            "plan": st.plan(), "optimizer": OPT}
    out = port_step(c, meta, {"draw.start": c.u, "draw.step_noise": noise})
    compare("FAT original (tau 1)", model, out, f"steps {out['out.steps'].tolist()}")


def check_wat(c):
    """``train`` of boqili/WAT:worst_class_adversarial_train.py (``--alg wat``) with random
    Hedge weights, its attack ``attack_generator.trades``."""
    attack = load(("boqili+WAT/attack_generator.py", {"trades"}))
    w = torch.rand(st.K + 1, generator=c.g) + 0.5
    args = types.SimpleNamespace(epsilon=c.eps, step_size=c.step, num_steps=STEPS, class_num=st.K,
                                 beta=6.0, alg="wat")
    ns = load(("boqili+WAT/worst_class_adversarial_train.py", {"TRADES_loss", "TRADES_classwise_loss", "train"}),
              attack=types.SimpleNamespace(trades=attack["trades"]), args=args,
              nat_class_weights=w, bndy_class_weights=w, iter_num=0)
    model = reference_step(c, lambda m, ld, o: ns["train"](m, ld, o, 0), Feed(randn=[c.z]))
    s = (w[:st.K] + w[st.K]).tolist()
    meta = {"method": dict(TRADES_PAPER, second_clean_forward=False),
            "rule": {"kind": "wat", "eta": 0.1, "loss_scale": "as-written"},
            "plan": st.plan(beta=6.0, nw=s, bw=s), "optimizer": OPT,
            "reference_inputs": {"wat_weights": w.tolist()}}
    compare("WAT", model, port_step(c, meta, {"draw.start": c.z}))


def check_frl(c):
    """``train_model`` of hannxu123/fair_robust:utils_frl.py (RW) and utils_frl2.py (RWRM)."""
    opt = {"lr": 0.001, "momentum": 0.9, "weight_decay": 5e-4}
    configs = {"epsilon": c.eps, "num_steps": STEPS, "step_size": c.step, "clip_max": 1, "clip_min": 0}
    for fname, remargin in (("utils_frl.py", False), ("utils_frl2.py", True)):
        ns = load(("hannxu123+fair_robust/" + fname, {"match_weight", "trades_adv", "train_model", "cost_sensitive"}))
        lam = torch.rand(30, generator=c.g) * 0.1
        d0, d1, d2 = ns["cost_sensitive"](lam[:10], lam[10:20], lam[20:30])
        model = reference_step(c, lambda m, ld, o: ns["train_model"](m, ld, o, d0, d1, d2, 1, 1.5, configs, "cpu"),
                               Feed(randn=[c.z]), opt)
        meta = {"method": TRADES_PAPER, "rule": {"kind": "frl", "remargin": remargin, "halve_every": 40},
                "plan": st.plan((c.eps * d2).tolist(), 1.5, (10 * d0).tolist(), (10 * d1).tolist()),
                "optimizer": opt}
        compare(f"FRL {'RWRM' if remargin else 'RW'}", model, port_step(c, meta, {"draw.start": c.z}))


def check_frl_rule(c):
    """The multiplier update of ``frl_train`` (utils_frl.py:274-284, utils_frl2.py:238-248,
    written out here) on the reference's own ``normalize_lambda`` and ``cost_sensitive``."""
    for fname, remargin in (("utils_frl.py", False), ("utils_frl2.py", True)):
        ns = load(("hannxu123+fair_robust/" + fname, {"cost_sensitive", "normalize_lambda"}))
        lmbda = torch.rand(30, generator=c.g) * 0.1
        ce, be = torch.rand(10, generator=c.g) * 0.4, torch.rand(10, generator=c.g) * 0.3
        g0, g1 = ce - float(ce.mean()) - 0.05 * torch.ones(10), be - float(be.mean()) - 0.05 * torch.ones(10)
        rate1 = 0.05 / 2  # halved once: FRL epoch 40 = 0-based epoch 39
        l0 = ns["normalize_lambda"](lmbda[0:10] + rate1 * torch.clamp(g0, min=-1000), 0.5)
        l1 = ns["normalize_lambda"](lmbda[10:20] + rate1 * 2 * torch.clamp(g1, min=-1000), 0.5)
        l2 = lmbda[20:30] + (0.2 * g1 if remargin else 0)
        d0, d1, d2 = ns["cost_sensitive"](l0, l1, l2)
        rule = {"rule": "frl", "context": {"n_classes": 10, "eps": c.eps, "beta": 1.5}, "epoch": 39,
                "settings": {"remargin": remargin, "tau1": 0.05, "tau2": 0.05, "alpha1": 0.05,
                             "alpha2": 0.2, "lim": 0.5, "halve_every": 40, "begin": 0},
                "inputs": {"lambda": lmbda.tolist(), "val_clean_error": ce.tolist(),
                           "val_boundary_error": be.tolist(), "total_clean_error": float(ce.mean()),
                           "total_boundary_error": float(be.mean())}, "outputs": {}}
        got = {q: torch.tensor(v) for q, v, _ in steps.RULES["frl"](rule)[0]}
        d = max(float((got[k] - v).abs().max()) for k, v in (
            ("plan.natural_weight", 10 * d0), ("plan.boundary_weight", 10 * d1), ("plan.eps", c.eps * d2)))
        RESULTS.append(d)
        print(f"FRL rule {'RWRM' if remargin else 'RW':4s}             plan weights and eps: max abs diff {d:.1e}")


def main():
    g = torch.Generator().manual_seed(38)
    x = torch.rand((st.N, *st.SPEC["input_shape"]), generator=g)
    y = torch.randperm(st.K, generator=g)
    r = torch.rand(x.shape, generator=g)
    c = types.SimpleNamespace(g=g, x=x, y=y, state=st.fitted_twin(x, y), eps=st.EPS, step=st.STEP,
                              r=r, u=(r - 0.5) * 2,  # CFA's (torch.rand_like(δ) − 0.5)·2
                              z=torch.randn(x.shape, generator=g),
                              t=torch.rand(st.K, generator=g) * 0.7 + 0.2)
    c.class_eps = ((0.5 + c.t) * c.eps).tolist()
    for check in (check_cfa, check_trades_mart, check_fat, check_wat, check_frl, check_frl_rule):
        check(c)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The ports against the reference codes.")
    parser.add_argument("--refs", required=True, help="directory with the six repositories")
    REFS = parser.parse_args().refs
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    main()
    ok = all(r <= 1e-5 for r in RESULTS)
    print(f"{len(RESULTS)} checks, max difference {max(RESULTS):.1e}: {'OK' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)
