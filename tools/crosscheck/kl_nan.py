"""Issue 36 in PyTorch: is the TRADES NaN an implementation defect or a genuine divergence?

classwise's ResNet-18 TRADES-family presets reached a NaN loss within a few batches at lr 0.1
while TRADES' KL was computed as ``xlogy(p, p) - p * log q`` with ``p = softmax(model(x))`` not
detached, the formula PyTorch's ``kl_div`` (so ``nn.KLDivLoss``) uses since 1.13
(pytorch/pytorch#89558). Where a clean-softmax probability underflows to exactly 0 in float32,
xlogy's backward with respect to its second argument is p / p = 0/0 = NaN. classwise now
takes the KL in log space, sum(exp(log p) * (log p - log q)) from log-softmax.

This script shows it on the PyTorch side, independently of the Rust code:

(a) unit: logits whose softmax underflows to 0 in float32. The gradient with respect to the
    clean logits of ``nn.KLDivLoss(reduction="sum")(log_softmax(z_adv), softmax(z_nat))`` is
    NaN; the log-space KL's (and ``F.kl_div(..., log_target=True)``'s) is finite and equals the
    analytic p_j (log p_j - log q_j - KL), computed in float64 as the oracle.
(b) replay: the reference TRADES step (yaodongyu/TRADES ``trades.py``: PGD on the KL from a
    0.001 * randn start with the model in eval mode, then CE(x) + beta * KL / batch in train
    mode) with the values of configs/cifar10-wat-trades.toml, on the ResNet-18 twin of
    classwise_models.py starting from classwise's own initial weights (or PyTorch's init), on
    synthetic CIFAR-10 written by ``classwise data synth``. Each setting runs twice on the same
    batches: with the KLDivLoss (xlogy) form and with the log-space form. Reported: the first
    batch whose loss or any parameter gradient is not finite, and the loss trajectory.
(c) the verdict: "defect" where the log-space form trains without a NaN where the xlogy form
    NaNs; "divergence" where both NaN.

Run (see README.md, "The TRADES NaN in PyTorch"):
    PY=$(bash tools/crosscheck/setup.sh | tail -n 1)
    nice "$PY" tools/crosscheck/kl_nan.py --classwise target/debug/classwise --json /tmp/kl-nan/bs4.json
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classwise_models import SPEC_KEY, build_model, read_metadata  # noqa: E402

# configs/cifar10-wat-trades.toml (epoch 1 of its schedule).
PRESET = "configs/cifar10-wat-trades.toml"
LR = 0.1
MOMENTUM = 0.9
WEIGHT_DECAY = 2e-4
EPS = 0.031
STEP = 0.007
STEPS = 10
START_STD = 0.001
BETA = 6.0
CROP_PADDING = 4
SPEC = {"architecture": {"kind": "resnet18"}, "num_classes": 10, "input_shape": [3, 32, 32]}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The two forms of KL(p || q), summed over the batch (KLDivLoss(reduction="sum")).

def kl_xlogy(z_adv, z_nat):
    """The reference's nn.KLDivLoss(size_average=False)(log_softmax(z_adv), softmax(z_nat)):
    since PyTorch 1.13, sum(xlogy(p, p) - p * log q)."""
    return nn.KLDivLoss(reduction="sum")(F.log_softmax(z_adv, dim=1), F.softmax(z_nat, dim=1))


def kl_log(z_adv, z_nat):
    """The log-space form (classwise's kl_log): sum(exp(log p) * (log p - log q))."""
    log_p = F.log_softmax(z_nat, dim=1)
    log_q = F.log_softmax(z_adv, dim=1)
    return (log_p.exp() * (log_p - log_q)).sum()


FORMS = {"xlogy": kl_xlogy, "log": kl_log}


# ---------------------------------------------------------------------------------------------
# (a) The unit demonstration.

def unit_demo():
    z_nat64 = torch.tensor([[200.0, 0.0, -3.0, 5.0], [1.0, 2.0, 3.0, 4.0]], dtype=torch.float64)
    z_adv64 = torch.tensor([[150.0, 10.0, 0.0, 1.0], [0.5, 2.5, 3.0, 3.0]], dtype=torch.float64)
    out = {"z_nat": z_nat64.tolist(), "z_adv": z_adv64.tolist()}
    print("(a) unit: gradient of KL(softmax(z_nat) || softmax(z_adv)) w.r.t. z_nat, float32")
    print(f"    z_nat = {z_nat64.tolist()}")
    print(f"    z_adv = {z_adv64.tolist()}")
    p32 = F.softmax(z_nat64.float(), dim=1)
    zeros = int((p32 == 0).sum())
    print(f"    softmax(z_nat) in float32: {p32.tolist()} ({zeros} exact zeros)")
    out["p_float32"] = p32.tolist()
    out["p_exact_zeros"] = zeros

    # The oracle: float64, where exp(-200) = 1.4e-87 is representable.
    log_p = F.log_softmax(z_nat64, dim=1)
    log_q = F.log_softmax(z_adv64, dim=1)
    p = log_p.exp()
    kl_rows = (p * (log_p - log_q)).sum(dim=1, keepdim=True)
    oracle = p * (log_p - log_q - kl_rows)  # d/dz_nat of sum over rows
    print(f"    oracle (float64, analytic p_j (log p_j - log q_j - KL)): {oracle.tolist()}")
    out["oracle_float64"] = oracle.tolist()
    out["kl_float64"] = float(kl_rows.sum())

    forms = {
        "KLDivLoss(reduction='sum') (xlogy)": kl_xlogy,
        "log space: sum(exp(log p)(log p - log q))": kl_log,
        "F.kl_div(log q, log p, reduction='sum', log_target=True)": lambda za, zn: F.kl_div(
            F.log_softmax(za, dim=1), F.log_softmax(zn, dim=1), reduction="sum",
            log_target=True),
    }
    out["forms"] = {}
    for name, fn in forms.items():
        z_nat = z_nat64.float().requires_grad_()
        z_adv = z_adv64.float().requires_grad_()
        value = fn(z_adv, z_nat)
        g_nat, g_adv = torch.autograd.grad(value, [z_nat, z_adv])
        finite = bool(torch.isfinite(g_nat).all())
        err = float((g_nat.double() - oracle).abs().max()) if finite else float("nan")
        scale = float(oracle.abs().max())
        nan_count = int(torch.isnan(g_nat).sum())
        print(f"    {name}:")
        print(f"      KL = {float(value.detach()):.6f} (float64: {float(kl_rows.sum()):.6f}); "
              f"grad z_nat = {g_nat.tolist()}")
        print(f"      grad z_nat finite: {finite} ({nan_count} NaN of {g_nat.numel()}); "
              f"max |grad - oracle| = {err:.3g} (oracle max |.| {scale:.3g}); "
              f"grad z_adv finite: {bool(torch.isfinite(g_adv).all())}")
        out["forms"][name] = {"kl": float(value.detach()), "grad_z_nat": g_nat.tolist(),
                              "finite": finite, "nan_count": nan_count,
                              "max_abs_err_vs_oracle": err,
                              "grad_z_adv_finite": bool(torch.isfinite(g_adv).all())}
    names = list(forms)
    out["xlogy_nan"] = not out["forms"][names[0]]["finite"]
    out["log_exact"] = all(out["forms"][n]["finite"] and
                           out["forms"][n]["max_abs_err_vs_oracle"] <= 1e-5 for n in names[1:])
    return out


# ---------------------------------------------------------------------------------------------
# Data and weights.

def run_checked(cmd):
    log("$ " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        log(r.stdout)
        raise SystemExit(f"kl_nan.py: {cmd[0]} failed with status {r.returncode}")
    return r.stdout


def ensure_synth(classwise, data_root, per_class):
    folder = data_root / "cifar-10-batches-bin"
    if not (folder / "data_batch_1.bin").exists():
        if classwise is None:
            raise SystemExit(f"kl_nan.py: no {folder}; give --classwise to write it")
        run_checked([classwise, "data", "synth", "--out", str(data_root), "--dataset", "cifar10",
                     "--train-per-class", str(per_class), "--test-per-class", "10"])
    return folder


def read_cifar10(folder):
    """data_batch_1..5.bin: records of 1 label byte + 3072 pixel bytes (R, G, B planes)."""
    xs, ys = [], []
    for i in range(1, 6):
        raw = (folder / f"data_batch_{i}.bin").read_bytes()
        if len(raw) % 3073:
            raise SystemExit(f"kl_nan.py: {folder}/data_batch_{i}.bin: not whole records")
        t = torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(-1, 3073)
        ys.append(t[:, 0].long())
        xs.append(t[:, 1:].reshape(-1, 3, 32, 32))
    return torch.cat(xs).float() / 255.0, torch.cat(ys)


def rust_init_weights(classwise, data_root, work, seed):
    """classwise's initial ResNet-18 of cifar10-wat-trades at `seed`.

    classwise writes no checkpoint before training, so this trains the preset for one epoch at
    lr 0 (one batch of 10 images): SGD then leaves every parameter as initialised (weight decay
    and momentum are multiplied by lr). Only BatchNorm's running statistics move; they are set
    back to their initial 0 and 1 by the caller.
    """
    out = work / f"init-seed{seed}"
    path = out / "checkpoints" / "e0000" / "model.safetensors"
    if not path.exists():
        if classwise is None:
            raise SystemExit(f"kl_nan.py: no {path}; give --classwise, or use --init torch")
        sets = ["epochs=1", "batch_size=10", f"seed={seed}", 'device="cpu"',
                'data.source={ kind = "files", id = "cifar10", options = { counts = "any" } }',
                "data.train_per_class=1", "data.test_per_class=1",
                "data.split.size={ per-class = 0 }", "eval.test_per_class=1",
                "schedule.base=0", "schedule.pieces=[]"]
        cmd = [classwise, "train", "--config", PRESET, "--out", str(out),
               "--data-dir", str(data_root)]
        for s in sets:
            cmd += ["--set", s]
        run_checked(cmd)
    return path


def build_resnet(init, seed, weights_path):
    torch.manual_seed(seed)
    model = build_model(SPEC)
    note = "PyTorch's default initialisation (torch.manual_seed(seed))"
    if init == "rust":
        from safetensors.torch import load_file
        meta = read_metadata(weights_path)
        spec = json.loads(meta[SPEC_KEY])
        if spec != SPEC:
            raise SystemExit(f"kl_nan.py: {weights_path}: model spec {spec}, expected {SPEC}")
        state = load_file(str(weights_path))
        for name in model.net.state_dict():
            if name.endswith("num_batches_tracked"):
                state[name] = torch.tensor(0, dtype=torch.long)
            elif name.endswith("running_mean"):
                state[name] = torch.zeros_like(state[name])
            elif name.endswith("running_var"):
                state[name] = torch.ones_like(state[name])
        model.net.load_state_dict(state, strict=True)
        note = f"classwise's initial weights at seed {seed} ({weights_path}), BN running stats 0/1"
    return model, note


def augment(x, gen):
    """Zero-padded random crop (padding 4) and horizontal flip, per image, from `gen`."""
    n = x.shape[0]
    padded = F.pad(x, (CROP_PADDING,) * 4)
    offsets = torch.randint(0, 2 * CROP_PADDING + 1, (n, 2), generator=gen)
    flips = torch.rand(n, generator=gen) < 0.5
    out = torch.empty_like(x)
    for i in range(n):
        dy, dx = int(offsets[i, 0]), int(offsets[i, 1])
        img = padded[i, :, dy:dy + 32, dx:dx + 32]
        out[i] = img.flip(-1) if flips[i] else img
    return out


# ---------------------------------------------------------------------------------------------
# (b) The reference TRADES step.

def trades_step(model, opt, x, y, kl, gen):
    """yaodongyu/TRADES trades.py trades_loss + the optimiser step, with `kl` as the criterion.

    The only change for speed: the attack's clean target softmax(model(x)) is computed once
    (eval mode, no graph) instead of once per PGD step; in eval mode it is the same value every
    step and has no path to x_adv, so the attack's gradient is unchanged.
    """
    bs = x.shape[0]
    model.eval()
    with torch.no_grad():
        z_nat_eval = model(x)
    x_adv = x.detach() + START_STD * torch.randn(x.shape, generator=gen)
    for _ in range(STEPS):
        x_adv.requires_grad_()
        with torch.enable_grad():
            loss_kl = kl(model(x_adv), z_nat_eval)
        grad = torch.autograd.grad(loss_kl, [x_adv])[0]
        x_adv = x_adv.detach() + STEP * torch.sign(grad.detach())
        x_adv = torch.min(torch.max(x_adv, x - EPS), x + EPS)
        x_adv = torch.clamp(x_adv, 0.0, 1.0)
    model.train()
    x_adv = torch.clamp(x_adv, 0.0, 1.0).detach()
    opt.zero_grad()
    logits = model(x)
    loss_natural = F.cross_entropy(logits, y)
    z_adv = model(x_adv)
    z_nat = model(x)  # the reference calls model(x_natural) again inside the criterion
    loss_robust = (1.0 / bs) * kl(z_adv, z_nat)
    loss = loss_natural + BETA * loss_robust
    loss.backward()
    with torch.no_grad():
        p = F.softmax(z_nat, dim=1)
        gap = (z_nat.max(dim=1).values - z_nat.min(dim=1).values).max()
        stats = {
            "loss": float(loss), "ce": float(loss_natural), "kl": float(loss_robust),
            "p_zeros": int((p == 0).sum()), "max_logit_gap": float(gap),
            "x_adv_finite": bool(torch.isfinite(x_adv).all()),
        }
    bad = [n for n, prm in model.named_parameters()
           if prm.grad is not None and not bool(torch.isfinite(prm.grad).all())]
    stats["bad_grads"] = len(bad)
    stats["first_bad_grad"] = bad[0] if bad else None
    opt.step()
    return stats


def replay(form, model_state, x_all, y_all, bs, seed, batches, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = build_model(SPEC)
    model.load_state_dict(model_state)
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM,
                          weight_decay=WEIGHT_DECAY)
    # The same batches, augmentations and attack starts for both forms.
    data_gen = torch.Generator().manual_seed(1000 + seed)
    noise_gen = torch.Generator().manual_seed(2000 + seed)
    order = torch.randperm(len(y_all), generator=data_gen)
    rows = []
    first_bad_grad = first_bad_loss = None
    t0 = time.time()
    for b in range(batches):
        start = (b * bs) % len(order)
        if start + bs > len(order):
            order = torch.randperm(len(y_all), generator=data_gen)
            start = 0
        idx = order[start:start + bs]
        x = augment(x_all[idx], data_gen)
        s = trades_step(model, opt, x, y_all[idx], FORMS[form], noise_gen)
        s["batch"] = b
        rows.append(s)
        finite_loss = math.isfinite(s["loss"])
        log(f"  [{form} bs {bs} seed {seed}] batch {b}: loss {s['loss']:.4f} (ce {s['ce']:.4f}, "
            f"kl {s['kl']:.4f}), max logit gap {s['max_logit_gap']:.1f}, p zeros "
            f"{s['p_zeros']}, non-finite grads {s['bad_grads']} ({time.time() - t0:.0f} s)")
        if first_bad_grad is None and s["bad_grads"]:
            first_bad_grad = b
        if not finite_loss:
            first_bad_loss = b
            break
    seconds = time.time() - t0
    return {"form": form, "batch_size": bs, "seed": seed, "batches_run": len(rows),
            "first_nonfinite_grad_batch": first_bad_grad,
            "first_nonfinite_loss_batch": first_bad_loss,
            "first_nonfinite_batch": min([v for v in (first_bad_grad, first_bad_loss)
                                          if v is not None], default=None),
            "param_tensors": len(list(model.parameters())), "seconds": seconds, "rows": rows}


def summary(run):
    losses = [r["loss"] for r in run["rows"] if math.isfinite(r["loss"])]
    first = run["first_nonfinite_batch"]
    if first is None:
        where = f"none in {run['batches_run']} batches"
    else:
        r = run["rows"][first]
        what = []
        if run["first_nonfinite_grad_batch"] is not None:
            what.append(f"gradient at batch {run['first_nonfinite_grad_batch']} "
                        f"({r['bad_grads']} of {run['param_tensors']} parameter tensors, "
                        f"first in model order {r['first_bad_grad']}; loss there "
                        f"{r['loss']:.4f}, {r['p_zeros']} exact zeros in softmax(z_nat), "
                        f"logit gap {r['max_logit_gap']:.1f})")
        if run["first_nonfinite_loss_batch"] is not None:
            what.append(f"loss at batch {run['first_nonfinite_loss_batch']}")
        where = "; ".join(what)
    traj = ""
    if losses:
        tail = losses[-10:]
        traj = (f"loss first {losses[0]:.4f}, min {min(losses):.4f}, max {max(losses):.4f}, "
                f"last finite {losses[-1]:.4f}, mean of last {len(tail)} finite "
                f"{sum(tail) / len(tail):.4f}")
    zeros = sum(1 for r in run["rows"] if r["p_zeros"] > 0)
    first_zero = next((r["batch"] for r in run["rows"] if r["p_zeros"] > 0), None)
    return where, traj, zeros, first_zero


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--classwise", help="the classwise binary (writes the data and the initial "
                    "weights when missing), e.g. target/debug/classwise")
    ap.add_argument("--work", default="/tmp/kl-nan", type=Path,
                    help="folder for the synthetic data and the initial weights")
    ap.add_argument("--per-class", type=int, default=100, help="synthetic training images per class")
    ap.add_argument("--init", choices=["rust", "torch"], default="rust")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[4])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-unit", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    os.chdir(Path(__file__).resolve().parents[2])  # the repository root: PRESET is relative
    torch.set_num_threads(args.threads)
    result = {"torch": torch.__version__, "threads": args.threads,
              "preset": PRESET, "hyper": {"lr": LR, "momentum": MOMENTUM,
                                          "weight_decay": WEIGHT_DECAY, "eps": EPS,
                                          "step": STEP, "steps": STEPS,
                                          "start_std": START_STD, "beta": BETA}}
    print(f"torch {torch.__version__}, {args.threads} threads, {os.cpu_count()} CPUs")
    if not args.skip_unit:
        result["unit"] = unit_demo()

    folder = ensure_synth(args.classwise, args.work / "data", args.per_class)
    x_all, y_all = read_cifar10(folder)
    print(f"\n(b) replay: TRADES (reference step), ResNet-18, {len(y_all)} synthetic CIFAR-10 "
          f"images from {folder}")
    print(f"    lr {LR} momentum {MOMENTUM} wd {WEIGHT_DECAY}, eps {EPS}, PGD-{STEPS} step {STEP} "
          f"on the KL from {START_STD}*randn, beta {BETA}, crop {CROP_PADDING} + flip")
    result["runs"] = []
    for seed in args.seeds:
        weights = None
        if args.init == "rust":
            weights = rust_init_weights(args.classwise, args.work / "data", args.work, seed)
        model, note = build_resnet(args.init, seed, weights)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        print(f"    seed {seed}: weights: {note}")
        for bs in args.batch_sizes:
            for form in ("xlogy", "log"):
                run = replay(form, state, x_all, y_all, bs, seed, args.batches, args.threads)
                run["init"] = note
                where, traj, zeros, first_zero = summary(run)
                print(f"    [{form:5s}] bs {bs:3d} seed {seed}: first non-finite: {where}")
                print(f"            {traj}; batches with an exact 0 in softmax(z_nat): {zeros} "
                      f"(first {first_zero}); {run['seconds']:.0f} s")
                result["runs"].append(run)
            a, b = result["runs"][-2], result["runs"][-1]
            upto = min(len(a["rows"]), len(b["rows"]))
            diffs = [abs(a["rows"][i]["loss"] - b["rows"][i]["loss"]) for i in range(upto)
                     if math.isfinite(a["rows"][i]["loss"]) and math.isfinite(b["rows"][i]["loss"])]
            if diffs:
                print(f"            |loss xlogy - loss log| over the {len(diffs)} batches both "
                      f"finite: max {max(diffs):.2e}")

    # (c) The verdict.
    verdicts = []
    for i in range(0, len(result["runs"]), 2):
        x, l = result["runs"][i], result["runs"][i + 1]
        xn, ln = x["first_nonfinite_batch"] is not None, l["first_nonfinite_batch"] is not None
        v = ("defect" if xn and not ln else "divergence" if xn and ln
             else "no NaN in either form" if not xn and not ln else "log-space only NaNs")
        verdicts.append({"batch_size": x["batch_size"], "seed": x["seed"], "verdict": v,
                         "batches": args.batches})
    result["verdicts"] = verdicts
    kinds = {v["verdict"] for v in verdicts}
    if kinds == {"defect"}:
        conclusion = "defect"
    elif "divergence" in kinds:
        conclusion = "divergence"
    else:
        conclusion = "inconclusive: " + ", ".join(
            f"bs {v['batch_size']} seed {v['seed']}: {v['verdict']}" for v in verdicts)
    result["conclusion"] = conclusion
    print("\n(c) per setting: " + "; ".join(
        f"bs {v['batch_size']} seed {v['seed']}: {v['verdict']}" for v in verdicts))
    print(f"conclusion: {conclusion}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
