#!/usr/bin/env python3
"""**Self-test only** of the step cross-check: it checks the machinery of ``steps.py``, not
classwise. It writes step files and rule files in the format of STEP_FORMAT.md from the
**ports themselves** (a small WideResNet-10-1 twin on 3×16×16 inputs, 10 classes, one image
per class, briefly fitted to the batch so that the early-stopped attacks stop at various
steps), then runs ``steps.py`` on them, which must pass every row at rounding level, and on
copies with one output tampered each, which must fail exactly those rows.

    nice "$PY" tools/crosscheck/selftest_steps.py [--out DIR] [--keep]

Exit status 0 when both halves behave as expected.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import classwise_models as cm  # noqa: E402
import steps  # noqa: E402
from ports.cfa import average_rule  # noqa: E402
from ports.frl import cost_sensitive  # noqa: E402
from ports.wat import hedge_weights  # noqa: E402

K, N, EPS, STEP = 10, 10, 16 / 255, 4 / 255  # large: the attacks flip some samples
SPEC = {"architecture": {"kind": "wide_resnet", "depth": 10, "widen": 1}, "num_classes": K,
        "input_shape": [3, 16, 16],
        "normalization": {"mean": [0.4914, 0.4822, 0.4465], "std": [0.2471, 0.2435, 0.2616]}}


def attack(start, loss, steps=10, **extra):
    return dict({"steps": steps, "step": {"kind": "absolute", "value": STEP}, "start": start,
                 "loss": {"kind": loss}}, **extra)


UNIFORM, NORMAL = {"kind": "uniform"}, {"kind": "normal", "std": 0.001}
PGD, KL = attack(UNIFORM, "cross-entropy"), attack(NORMAL, "trades-kl")


def vec(g, lo, hi):
    return (lo + (hi - lo) * torch.rand(K, generator=g, dtype=torch.float64)).tolist()


def plan(eps=None, beta=0.0, nw=None, bw=None, step_size=None):
    p = {"eps": eps or [EPS] * K, "beta": beta if isinstance(beta, list) else [beta] * K,
         "natural_weight": nw or [1.0] * K, "boundary_weight": bw or [1.0] * K}
    if step_size is not None:
        p["step_size"] = step_size
    return p


def cases(g):
    """(name, step metadata, draws needed) for every method and rule of the cross-check."""
    t = torch.tensor(vec(g, 0.2, 0.9))
    ccm = ((0.5 + t) * EPS).tolist()
    ccr = ((0.5 + t) * 6.0).tolist()
    w = hedge_weights(torch.rand(3, K + 1, generator=g).tolist(), 0.1, K)
    s_wat = (w[:K] + w[K]).tolist()
    lam = torch.rand(3 * K, generator=g) * 0.1
    d0, d1, d2 = cost_sensitive(lam[:K], lam[K:2 * K], lam[2 * K:], True)
    frl_eps = (EPS * d2).tolist()
    csl = vec(g, 0.5, 1.5)
    tian = [6.0] * K
    tian[5] = 0.5
    trades = {"method": "trades", "attack": KL, "scaling": "paper", "second_clean_forward": True}
    cfa_opt = {"lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4, "nesterov": False}
    opt = {"lr": 0.1, "momentum": 0.9, "weight_decay": 2e-4, "nesterov": False}
    fat = attack(UNIFORM, "cross-entropy", tau=3, variant="cfa-repo", step_noise=0.0)
    fat_orig = attack(UNIFORM, "cross-entropy", tau=0, variant="original", step_noise=0.001)
    bat = {"method": "bat", "alpha": 1.0, "source": "boundary", "scaling": "paper",
           "uniform_on": ["last-correct", "first-wrong"], "attack": KL}
    return [
        ("pgd-at", {"method": {"method": "pgd-at", "attack": PGD, "attack_train_mode": True},
                    "plan": plan(), "optimizer": cfa_opt, "clean_forward_after_step": True}),
        ("pgd-at-ccm", {"method": {"method": "pgd-at", "attack": PGD, "attack_train_mode": True},
                        "rule": {"kind": "cfa", "lambda1": 0.5, "begin": 0}, "plan": plan(ccm),
                        "optimizer": cfa_opt, "clean_forward_after_step": True}),
        ("trades-paper", {"method": trades, "plan": plan(beta=6.0), "momentum": True,
                          "optimizer": dict(opt, nesterov=True)}),
        ("trades-cfa-ccm-ccr", {"method": dict(trades, scaling="reference"),
                                "rule": {"kind": "cfa", "lambda1": 0.3, "begin": 0, "ccr": True},
                                "plan": plan(ccm, ccr), "optimizer": cfa_opt,
                                "clean_forward_after_step": True}),
        ("fat-cfa-ccm", {"method": {"method": "fat", "attack": fat, "attack_train_mode": True},
                         "rule": {"kind": "cfa", "lambda1": 0.7, "begin": 0},
                         "plan": plan(vec(g, 16 / 255, 128 / 255)), "optimizer": cfa_opt,
                         "clean_forward_after_step": True}),
        ("fat-original", {"method": {"method": "fat", "attack": fat_orig,
                                     "tau_schedule": [[50, 1], [90, 2]]},
                          "plan": plan(), "optimizer": opt, "epoch": 60}),
        ("mart", {"method": {"method": "mart", "attack": attack(NORMAL, "cross-entropy")},
                  "plan": plan(beta=6.0), "optimizer": opt}),
        ("mart-class-beta", {"method": {"method": "mart", "attack": attack(NORMAL, "cross-entropy")},
                             "rule": {"kind": "class-beta", "beta": tian}, "plan": plan(beta=tian),
                             "optimizer": opt}),
        ("trades-wat", {"method": dict(trades, second_clean_forward=False),
                        "rule": {"kind": "wat", "eta": 0.1, "normalization": "code",
                                 "loss_scale": "as-written"},
                        "plan": plan(beta=6.0, nw=s_wat, bw=s_wat), "optimizer": opt,
                        "reference_inputs": {"wat_weights": w.tolist()}}),
        ("trades-frl-rwrm", {"method": trades, "rule": {"kind": "frl", "remargin": True,
                                                        "halve_every": 40},
                             "plan": plan(frl_eps, 1.5, (K * d0).tolist(), (K * d1).tolist(),
                                          max(frl_eps) / 4), "optimizer": opt}),
        ("trades-frl-rw", {"method": trades, "rule": {"kind": "frl", "remargin": False,
                                                      "halve_every": 40},
                           "plan": plan(None, 1.5, (K * d0).tolist(), (K * d1).tolist()),
                           "optimizer": opt}),
        ("trades-csl", {"method": trades, "rule": {"kind": "csl", "gamma": 0.05},
                        "plan": plan(beta=6.0, nw=csl, bw=csl), "optimizer": opt}),
        ("trades-class-beta", {"method": trades, "rule": {"kind": "class-beta", "beta": tian},
                               "plan": plan(beta=tian), "optimizer": opt}),
        ("bat", {"method": bat, "plan": plan(beta=6.0), "optimizer": opt}),
        ("bat-ablation", {"method": dict(bat, source="trades", uniform_on=["fixed"],
                                         scaling="reference"),
                          "plan": plan(beta=6.0), "optimizer": opt}),
    ]


def fitted_twin(x, y):
    """The twin with random BatchNorm statistics, fitted for a few steps to the batch."""
    torch.manual_seed(0)
    model = cm.build_model(SPEC)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for _ in range(12):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.add_(0.05 * torch.randn_like(m.running_mean))
                m.running_var.mul_(torch.empty_like(m.running_var).uniform_(0.8, 1.25))
    return {n: t.detach().clone() for n, t in model.net.state_dict().items()
            if not n.endswith("num_batches_tracked")}


def draws_for(meta, g):
    """The unscaled draws a method's reference needs (STEP_FORMAT.md, "Draws")."""
    m = meta["method"]
    start = m["attack"]["start"]["kind"]
    shape = (N, *SPEC["input_shape"])
    draw = (lambda: torch.rand(shape, generator=g) * 2 - 1) if start == "uniform" \
        else (lambda: torch.randn(shape, generator=g))
    out = {"draw.start": draw()}
    if m["attack"].get("step_noise", 0) > 0:
        out["draw.step_noise"] = torch.randn((m["attack"]["steps"], *shape), generator=g)
    if m["method"] == "bat" and (m.get("source") == "trades" or "fixed" in m.get("uniform_on", [])):
        out["draw.start_fixed"] = torch.randn(shape, generator=g)
    return out


def write_step(path, meta, tensors):
    """A step file as the Rust writer stores it: the metadata as one JSON map under `classwise`."""
    md = {cm.SPEC_KEY: json.dumps(SPEC), steps.STEP_KEY: json.dumps(meta)}
    save_file({k: v.contiguous() for k, v in tensors.items()}, path,
              metadata={"classwise": json.dumps(md)})


def make_steps(out_dir, x, y, state, g):
    files = []
    for name, case in cases(g):
        meta = {"format": "classwise-step/1", "rule": {"kind": "uniform"}, "epoch": 0,
                "clean_forward_after_step": False, **case}
        momentum = meta.pop("momentum", False)
        tensors = {"x": x, "y": y, **{f"before.{n}": t for n, t in state.items()},
                   **draws_for(meta, g)}
        if momentum:
            tensors.update({f"momentum.{n}": 0.01 * torch.randn(t.shape, generator=g)
                            for n, t in state.items() if "running" not in n})
        md = {cm.SPEC_KEY: json.dumps(SPEC), steps.STEP_KEY: json.dumps(meta)}
        outputs, result = steps.run_step(md, tensors)
        tensors.update(outputs)
        path = os.path.join(out_dir, f"{name}.safetensors")
        write_step(path, meta, tensors)
        taken = outputs.get("out.steps")
        print(f"wrote {os.path.basename(path)}: loss {float(outputs['out.loss']):.4f}, "
              f"train robust {int(outputs['out.correct'].sum())}/{N}"
              + (f", attack steps {taken.tolist()}" if taken is not None else ""))
        files.append(path)
    return files


def rule_cases(g):
    ctx = {"n_classes": K, "eps": EPS, "beta": 6.0, "step_size": STEP}
    t = vec(g, 0.2, 0.9)
    return [
        ("rule-cfa", {"rule": "cfa", "settings": {"lambda1": 0.3, "lambda2": 0.5, "begin": 2,
                                                  "ccm": True, "ccr": True},
                      "context": ctx, "epoch": 3,
                      "inputs": {"train_robust": t, "train_correct": [round(50 * v) for v in t],
                                 "train_total": [50] * K}}),
        ("rule-wat", {"rule": "wat", "settings": {"eta": 0.1, "normalization": "code",
                                                  "loss_scale": "as-written"},
                      "context": ctx, "epoch": 3,
                      "inputs": {"val_costs": [vec(g, 0.5, 3.0) + [1.5] for _ in range(3)]}}),
        ("rule-frl-rwrm", {"rule": "frl", "settings": {"remargin": True, "tau1": 0.05, "tau2": 0.05,
                                                       "alpha1": 0.05, "alpha2": 0.2, "lim": 0.5,
                                                       "eps_multiplier_max": 3.0, "halve_every": 40,
                                                       "begin": 0},
                           "context": dict(ctx, beta=1.5), "epoch": 39,
                           "inputs": {"lambda": vec(g, 0, 0.1) * 3, "val_clean_error": vec(g, 0.05, 0.5),
                                      "val_boundary_error": vec(g, 0.05, 0.4)}}),
        ("rule-frl-rw", {"rule": "frl", "settings": {"remargin": False, "tau1": 0.05, "tau2": 0.05,
                                                     "alpha1": 0.05, "alpha2": 0.2, "lim": 0.5,
                                                     "eps_multiplier_max": 3.0, "halve_every": 40},
                         "context": dict(ctx, beta=1.5), "epoch": 5,
                         "inputs": {"val_clean_error": vec(g, 0.05, 0.5),
                                    "val_boundary_error": vec(g, 0.05, 0.4)}}),
        ("rule-csl", {"rule": "csl", "settings": {"gamma": 0.05}, "context": ctx, "epoch": 4,
                      "inputs": {"weights": vec(g, 0.8, 1.2), "val_robust_error": vec(g, 0.3, 0.9)}}),
        ("rule-class-beta", {"rule": "class-beta", "settings": {"beta": [6.0] * 5 + [0.5] + [6.0] * 4},
                             "context": ctx, "epoch": 0, "inputs": {}}),
    ]


def set_path(d, path, value):
    *parents, last = path.split(".")
    for key in parents:
        d = d.setdefault(key, {})
    d[last] = value


def make_rules(out_dir, g):
    """Rule files whose `outputs` are the ports' own values, in classwise's output names."""
    files = []
    for name, rule in rule_cases(g):
        rule = {"format": "classwise-rule/1", **rule, "outputs": {}}
        rows, _, _ = steps.RULES[rule["rule"]](rule)
        for quantity, mine, _ in rows:
            if quantity == "plan.beta as beta/(1+beta)":
                set_path(rule["outputs"], "plan.beta", [b / (1 - b) for b in mine])
            elif quantity == "plan.step_size":
                set_path(rule["outputs"], quantity, mine[0])
            elif " " not in quantity:
                set_path(rule["outputs"], quantity, mine)
        path = os.path.join(out_dir, f"{name}.json")
        with open(path, "w") as f:
            json.dump(rule, f, indent=1)
        files.append(path)
    return files


def make_averages(out_dir, state, g):
    files = []
    model = {n: t + 0.01 * torch.randn(t.shape, generator=g) for n, t in state.items()}
    for name, rule, before in [
        ("average-fawa", {"rule": "fawa", "settings": {"alpha": 0.88, "delta": 0.2},
                          "epoch": 7, "inputs": {"val_robust": vec(g, 0.25, 0.6), "initialized": True}},
         state),
        ("average-fawa-keep", {"rule": "fawa", "settings": {"alpha": 0.88, "delta": 0.2},
                               "epoch": 8, "inputs": {"val_robust": [0.1] + vec(g, 0.3, 0.6)[1:], "initialized": True}},
         state),
        ("average-ema-copy", {"rule": "ema", "settings": {"alpha": 0.85, "start_epoch": 2},
                              "epoch": 2, "inputs": {}}, {}),
    ]:
        rule = {"format": "classwise-rule/1", **rule}
        action, after, _ = average_rule(rule, before, model)
        rule["outputs"] = {"action": {"keep": "Keep", "copy": "Copy"}.get(action, {"Average": {"alpha": 0.88}})}
        tensors = {**{f"average_before.{n}": t for n, t in before.items()},
                   **{f"model.{n}": t for n, t in model.items()},
                   **{f"average_after.{n}": t for n, t in after.items()}}
        path = os.path.join(out_dir, f"{name}.safetensors")
        save_file({k: v.contiguous() for k, v in tensors.items()}, path,
                  metadata={"classwise": json.dumps({steps.RULE_KEY: json.dumps(rule)})})
        print(f"wrote {os.path.basename(path)}: action {action}")
        files.append(path)
    return files


def copy_with(src, dst, key=None, change=None, step_edit=None):
    """A copy of step file ``src`` with tensor ``key`` changed and/or its step metadata edited."""
    from safetensors.torch import load_file

    tensors, meta = load_file(src), steps.read_file(src)[1]
    if key:
        tensors[key] = change(tensors[key].clone())
    if step_edit:
        step = json.loads(meta[steps.STEP_KEY])
        step_edit(step)
        meta[steps.STEP_KEY] = json.dumps(step)
    save_file(tensors, dst, metadata={"classwise": json.dumps(meta)})
    return dst


def tamper(src, dst_dir):
    """Copies with one output broken each; returns (file, the rows that must fail)."""
    def edit(name, key, change):
        return copy_with(os.path.join(src, f"{name}.safetensors"),
                         os.path.join(dst_dir, f"{name}-tampered.safetensors"), key, change)

    def bump(t):
        t.view(-1)[0] += 1e-3
        return t

    out = [
        (edit("trades-paper", "out.loss", lambda t: t * (1 + 1e-4)), "loss"),
        (edit("pgd-at", "after.block1.layer.0.conv1.weight", bump),
         ("parameters after the step", "update after − before")),
        (edit("bat", "out.predicted", lambda t: (t + 1) % K), "predicted class per sample"),
        (edit("fat-cfa-ccm", "out.steps", lambda t: t + 1), "attack steps per sample"),
        (edit("trades-cfa-ccm-ccr", "after.bn1.running_var", bump), "BatchNorm buffers after the step"),
    ]
    with open(os.path.join(src, "rule-frl-rwrm.json")) as f:
        rule = json.load(f)
    rule["outputs"]["plan"]["eps"][3] *= 1.001
    path = os.path.join(dst_dir, "rule-frl-rwrm-tampered.json")
    with open(path, "w") as f:
        json.dump(rule, f)
    return out + [(path, "plan.eps")]


def switch_note(src, dst_dir):
    """A copy of trades-paper whose metadata says second_clean_forward = false (the reference
    has it): the outputs are the reference's, so every row passes, and a note must name it."""
    def off(step):
        step["method"]["second_clean_forward"] = False
    path = copy_with(os.path.join(src, "trades-paper.safetensors"),
                     os.path.join(dst_dir, "trades-paper-switch.safetensors"), step_edit=off)
    res = steps.check_file(path, 1e-5)
    print(f"switch copy: rows {'all pass' if all(r['pass'] for r in res['rows']) else 'FAIL'}; "
          f"notes: {res['notes']}")
    return all(r["pass"] for r in res["rows"]) and any("second_clean_forward" in n for n in res["notes"])


def main():
    parser = argparse.ArgumentParser(description="Self-test of steps.py (no Rust involved).")
    parser.add_argument("--out", help="directory for the files (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = args.out or tempfile.mkdtemp(prefix="classwise-steps-selftest-")
    os.makedirs(os.path.join(out, "tampered"), exist_ok=True)
    g = torch.Generator().manual_seed(38)
    x = torch.rand((N, *SPEC["input_shape"]), generator=g)
    y = torch.randperm(K, generator=g)
    state = fitted_twin(x, y)
    files = make_steps(out, x, y, state, g) + make_rules(out, g) + make_averages(out, state, g)
    print(f"\n== steps.py on the {len(files)} self-written files (must pass)\n")
    clean = steps.main(files + ["--markdown", os.path.join(out, "selftest.md"),
                                "--json", os.path.join(out, "selftest.json")])
    broken = tamper(out, os.path.join(out, "tampered"))
    print(f"\n== steps.py on {len(broken)} tampered copies (each must fail its row)\n")
    json_out = os.path.join(out, "tampered.json")
    bad = steps.main([f for f, _ in broken] + ["--json", json_out])
    with open(json_out) as f:
        results = json.load(f)["results"]
    caught = all(any(not r["pass"] and r["quantity"].startswith(q) for r in res["rows"])
                 for res, (_, q) in zip(results, broken))  # str.startswith takes a tuple too
    only = all(r["pass"] or r["quantity"].startswith(q) for res, (_, q) in zip(results, broken)
               for r in res["rows"])
    noted = switch_note(out, os.path.join(out, "tampered"))
    ok = clean == 0 and bad == 1 and caught and only and noted
    print(f"\nself-test: clean files {'pass' if clean == 0 else 'FAIL'}; tampered files "
          f"{'each fail exactly their tampered row' if caught and only else 'NOT as expected'}; "
          f"switch note {'given' if noted else 'MISSING'} -> {'OK' if ok else 'FAILED'}")
    if not args.out and not args.keep and ok:
        shutil.rmtree(out)
        print(f"removed {out} (--keep keeps it)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
