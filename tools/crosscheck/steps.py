#!/usr/bin/env python3
"""Step-for-step cross-check of classwise's training steps and class-wise rules against
PyTorch ports of the reference codes (issue 38, item 1). Optional: not part of the project's
two commands. The file formats are in STEP_FORMAT.md.

    python steps.py FILE... [--json OUT] [--markdown OUT] [--tol 1e-5] [--threads 1]

A step file (safetensors with ``classwise.step`` metadata) is re-run: the twin model gets the
file's weights, the port of the reference (``ports.step_port``) runs on the file's batch with
the file's random draws, then ``loss.backward()``, one ``torch.optim.SGD`` step, and the
reference's clean forward after it where it has one. The loss, the training inputs, the
predictions, per-class counts and steps, the gradients, and every parameter, BatchNorm buffer
and momentum buffer after the step are compared with the file's. A rule file (JSON, or
safetensors with ``classwise.rule`` metadata for the weight averages) is re-run through the
rule's port and compared with classwise's outputs.

Pass/fail: the norm-wise relative difference ‖a − b‖₂/‖b‖₂ of each tensor (computed in
float64 from the float32 values) must be ≤ --tol; integer outputs must match exactly. The
element-wise max |a − b|/max(|b|, 1e-30) is reported too, but does not decide: in float32 an
element that is itself the result of a cancellation (a parameter near 0 after an update, a KL
near 0, a pixel at 0) carries rounding errors far larger than 1e-5 of its own size between two
correct implementations. Exit status: 0 when every row passes, 1 otherwise.
"""

import argparse
import datetime
import glob
import json
import os
import shlex
import sys

import torch
from safetensors import safe_open

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classwise_models as cm  # noqa: E402
from ports import RULES, step_port  # noqa: E402
from ports.cfa import average_rule  # noqa: E402
from ports.common import StepInputs, dig  # noqa: E402

STEP_KEY, RULE_KEY = "classwise.step", "classwise.rule"
TINY = 1e-30
# classwise's serde defaults of the switches the ports compare (absent = this value).
DEFAULTS = {"method.attack_train_mode": False, "method.second_clean_forward": False,
            "clean_forward_after_step": False, "method.attack.step_noise": 0.0,
            "method.tau_schedule": [], "method.scaling": "reference",
            "rule.normalization": "code", "rule.loss_scale": "class-mean-one",
            "settings.normalization": "code", "settings.loss_scale": "class-mean-one",
            "settings.eps_multiplier_max": 3.0}


# ---------------------------------------------------------------- reading


def read_file(path):
    """(tensors by name, metadata with classwise's nesting undone)."""
    with safe_open(path, framework="pt") as f:
        tensors = {name: f.get_tensor(name) for name in f.keys()}
    return tensors, cm.read_metadata(path)


def prefixed(tensors, prefix):
    n = len(prefix)
    return {name[n:]: t for name, t in tensors.items() if name.startswith(prefix)}


def build_twin(spec, state):
    """The twin of ``spec`` with ``state`` loaded (num_batches_tracked, which classwise does not
    keep, set to 0: BatchNorm's momentum is 0.1, so it is never read)."""
    model = cm.build_model(spec)
    state = dict(state)
    for name, t in model.net.state_dict().items():
        if name.endswith("num_batches_tracked") and name not in state:
            state[name] = torch.zeros_like(t)
    model.net.load_state_dict(state, strict=True)
    return model


def step_inputs(meta, tensors):
    step = json.loads(meta[STEP_KEY])
    spec = json.loads(meta[cm.SPEC_KEY])
    if spec["architecture"]["kind"] == "small_cnn":
        raise ValueError("small_cnn has dropout, so its train-mode forwards are random: write "
                         "step files with an architecture without dropout (STEP_FORMAT.md)")
    model = build_twin(spec, prefixed(tensors, "before."))
    plan = {key: torch.tensor(step["plan"][key], dtype=torch.float32)
            for key in ("eps", "beta", "natural_weight", "boundary_weight")}
    plan["step_size"] = step["plan"].get("step_size")
    inp = StepInputs(model, tensors["x"].float(), tensors["y"].long(), plan, step["method"],
                     step.get("rule", {"kind": "uniform"}), int(step["epoch"]),
                     prefixed(tensors, "draw."), step.get("reference_inputs", {}))
    return inp, step


# ---------------------------------------------------------------- running a step


def sgd(model, optimizer, momentum):
    """torch.optim.SGD over the twin's parameters, with the file's momentum buffers."""
    params = dict(model.net.named_parameters())
    opt = torch.optim.SGD(params.values(), lr=optimizer["lr"], momentum=optimizer["momentum"],
                          weight_decay=optimizer["weight_decay"],
                          nesterov=optimizer.get("nesterov", False))
    for name, buf in momentum.items():
        opt.state[params[name]]["momentum_buffer"] = buf.clone().float()
    return opt, params


def run_step(meta, tensors):
    """Runs the port on a step file's inputs; returns (outputs by file name, the port's result)."""
    inp, step = step_inputs(meta, tensors)
    port = step_port(inp.method, inp.rule)
    opt, params = sgd(inp.model, step["optimizer"], prefixed(tensors, "momentum."))
    inp.model.train()
    opt.zero_grad(set_to_none=True)
    result = port(inp)
    result.loss.backward()
    out = {"out.loss": result.loss.detach().reshape([])}
    out.update({f"grad.{n}": p.grad.detach().clone() for n, p in params.items() if p.grad is not None})
    opt.step()
    if result.clean_forward_after_step:
        with torch.no_grad():
            inp.model.train()
            inp.model(inp.x)
    out.update({f"out.{n}": t.detach() for n, t in result.inputs.items()})
    out["out.predicted"] = result.predicted.long()
    hit = (result.predicted == inp.y).long()
    out["out.correct"] = torch.zeros(inp.k, dtype=torch.long).index_add_(0, inp.y, hit)
    out["out.total"] = torch.zeros(inp.k, dtype=torch.long).index_add_(0, inp.y, torch.ones_like(hit))
    if result.steps is not None:
        out["out.steps"] = result.steps.long()
    out.update({f"after.{n}": t.detach().clone() for n, t in inp.model.net.state_dict().items()
                if not n.endswith("num_batches_tracked")})
    for n, p in params.items():
        buf = opt.state[p].get("momentum_buffer")
        if buf is not None:
            out[f"after_momentum.{n}"] = buf.detach().clone()
    return out, result


# ---------------------------------------------------------------- comparing


def rel_diffs(a, b):
    """(element-wise max |a − b|/max(|b|, TINY), norm-wise ‖a − b‖/‖b‖) in float64."""
    a, b = a.double().reshape(-1), b.double().reshape(-1)
    d = a - b
    if d.numel() == 0:
        return 0.0, 0.0
    elementwise = float((d.abs() / b.abs().clamp(min=TINY)).max())
    norm_b = float(b.norm())
    normwise = float(d.norm()) / norm_b if norm_b > 0 else float(d.norm())
    return elementwise, normwise


def row(quantity, elementwise, normwise, passed, detail=""):
    return {"quantity": quantity, "elementwise": elementwise, "normwise": normwise,
            "pass": bool(passed), "detail": detail}


def compare_float(quantity, port, theirs, tol):
    if theirs is None:
        return row(quantity, None, None, False, "missing from the file")
    if tuple(port.shape) != tuple(theirs.shape) and port.numel() != theirs.numel():
        return row(quantity, None, None, False, f"shape {list(theirs.shape)}, port {list(port.shape)}")
    e, n = rel_diffs(port, theirs.reshape(port.shape))
    return row(quantity, e, n, n <= tol)


def pixels(r, port, theirs):
    """Adds how many pixels differ by more than 1e-6 (about 8 float32 ulps at 1): a few
    differing by 2α is a sign flip of a near-zero input gradient, not a formula difference."""
    if r["normwise"] is not None:
        bad = int(((port.double() - theirs.double().reshape(port.shape)).abs() > 1e-6).sum())
        r["detail"] = f"{bad} of {port.numel()} pixels differ by > 1e-6"
    return r


def compare_int(quantity, port, theirs):
    if theirs is None:
        return row(quantity, None, None, False, "missing from the file")
    if port.numel() != theirs.numel():
        return row(quantity, None, None, False, f"{theirs.numel()} values, port {port.numel()}")
    bad = int((port.reshape(-1) != theirs.reshape(-1).long()).sum())
    return row(quantity, None, None, bad == 0, f"{bad} of {port.numel()} differ")


def compare_group(quantity, names, port, theirs, tol, required=True):
    """The worst norm-wise difference over a group of tensors (parameters, buffers, ...)."""
    if not names:
        return None
    worst, worst_e, worst_name, missing = 0.0, 0.0, "", []
    for name in names:
        if name not in port:
            return row(quantity, None, None, False, f"{name}: the port has none")
        if name not in theirs:
            missing.append(name)
            continue
        r = compare_float(name, port[name], theirs[name], tol)
        if r["normwise"] is None:
            return row(quantity, None, None, False, f"{name}: {r['detail']}")
        worst_e = max(worst_e, r["elementwise"])
        if r["normwise"] >= worst:
            worst, worst_name = r["normwise"], name
    if missing and (required or len(missing) < len(names)):
        return row(quantity, None, None, False, f"{len(missing)} missing, e.g. {missing[0]}")
    if missing:
        return None  # an optional group the file does not have
    detail = "all identical" if worst == worst_e == 0 else f"worst: {worst_name}"
    return row(f"{quantity} ({len(names)} tensors)", worst_e, worst, worst <= tol, detail)


def compare_update(params, before, port, theirs, tol):
    """The update after − before of each parameter: rounding of after alone gives a relative
    difference up to about 2⁻²⁴·‖after‖/‖update‖ (the floor); pass when within max(tol, 4·floor)."""
    worst, worst_ratio, detail = 0.0, 0.0, ""
    for n in params:
        key = f"after.{n}"
        if key not in theirs:
            continue
        d_port, d_file = port[key].double() - before[n].double(), theirs[key].double() - before[n].double()
        norm = float(d_file.norm())
        r = float((d_port - d_file).norm()) / norm if norm > 0 else float((d_port - d_file).norm())
        floor = 2.0 ** -24 * float(theirs[key].double().norm()) / max(norm, TINY)
        ratio = r / max(tol, 4 * floor)
        if ratio >= worst_ratio:
            worst_ratio, worst, detail = ratio, r, f"worst: {n} (floor {floor:.1e})"
    return row(f"update after − before ({len(params)} tensors)", None, worst, worst_ratio <= 1, detail)


def switch_notes(meta_json, expected):
    """Where classwise's settings differ from the behaviour of the reference the port follows."""
    notes = []
    for path, want in expected.items():
        have = dig(meta_json, path, DEFAULTS.get(path))
        if have != want:
            notes.append(f"classwise `{path}` = {json.dumps(have)}, the reference's behaviour = "
                         f"{json.dumps(want)}: a difference is expected")
    return notes


def check_step(path, tol):
    tensors, meta = read_file(path)
    step = json.loads(meta[STEP_KEY])
    out, result = run_step(meta, tensors)
    rows = [compare_float("loss", out["out.loss"], tensors.get("out.loss"), tol)]
    rows += [pixels(compare_float(f"training input `{n[4:]}`", t, tensors.get(n), tol), t, tensors.get(n))
             for n, t in out.items() if n.startswith("out.x")]
    rows.append(compare_int("predicted class per sample", out["out.predicted"], tensors.get("out.predicted")))
    rows.append(compare_int("correct per class", out["out.correct"], tensors.get("out.correct")))
    rows.append(compare_int("samples per class", out["out.total"], tensors.get("out.total")))
    if "out.steps" in out:
        rows.append(compare_int("attack steps per sample", out["out.steps"], tensors.get("out.steps")))
    before = prefixed(tensors, "before.")
    model = cm.build_model(json.loads(meta[cm.SPEC_KEY]))
    params = [n for n, _ in model.net.named_parameters()]
    buffers = [n for n in model.net.state_dict() if n not in params and not n.endswith("num_batches_tracked")]
    rows.append(compare_group("gradients", [f"grad.{n}" for n in params], out, tensors, tol, required=False))
    rows.append(compare_group("parameters after the step", [f"after.{n}" for n in params], out, tensors, tol))
    rows.append(compare_update(params, before, out, tensors, tol))
    if buffers:
        rows.append(compare_group("BatchNorm buffers after the step", [f"after.{n}" for n in buffers],
                                  out, tensors, tol))
    rows.append(compare_group("momentum buffers after the step",
                              [n for n in out if n.startswith("after_momentum.")], out, tensors, tol,
                              required=False))
    rows = [r for r in rows if r is not None]
    unknown = sorted(n for n in tensors if n.startswith(("out.", "grad.", "after"))
                     and n not in out)
    notes = switch_notes(step, result.expected) + list(result.notes)
    if unknown:
        notes.append(f"not compared (the port has no such output): {', '.join(unknown[:5])}"
                     + (" …" if len(unknown) > 5 else ""))
    return {"file": path, "kind": "step", "method": method_name(step), "reference": result.reference,
            "rows": rows, "notes": notes}


def method_name(step):
    m, rule = step["method"], step.get("rule", {}).get("kind", "uniform")
    extra = m.get("scaling") or m.get("attack", {}).get("variant") or ""
    name = m["method"] + (f" ({extra})" if extra else "")
    return name + (f" + {rule}" if rule != "uniform" else "")


def check_rule_json(path, tol):
    with open(path) as f:
        rule = json.load(f)
    port = RULES.get(rule["rule"])
    if port is None:
        raise ValueError(f"no port for rule {rule['rule']!r}")
    rows_in, expected, reference = port(rule)
    rows = []
    for quantity, mine, theirs in rows_in:
        if theirs is None and not quantity.startswith("plan."):
            continue  # an optional output classwise did not write
        theirs_t = None if theirs is None else torch.tensor(theirs, dtype=torch.float64)
        rows.append(compare_float(quantity, torch.tensor(mine, dtype=torch.float64), theirs_t, tol))
    return {"file": path, "kind": "rule", "method": f"rule {rule['rule']}", "reference": reference,
            "rows": rows, "notes": switch_notes(rule, expected)}


def action_name(action):
    """classwise's AverageAction serde ("Keep", "Copy", {"Average": {...}}) or a plain name."""
    if isinstance(action, dict):
        action = next(iter(action))
    return str(action).lower()


def check_average(path, meta, tensors, tol):
    rule = json.loads(meta[RULE_KEY])
    before, model_state = prefixed(tensors, "average_before."), prefixed(tensors, "model.")
    action, after, reference = average_rule(rule, before, model_state)
    theirs = action_name(dig(rule, "outputs.action", ""))
    rows = [row("action", None, None, theirs == action, f"classwise {theirs}, port {action}")]
    if after:
        names = sorted(after)
        mine = {f"average_after.{n}": t for n, t in after.items()}
        rows.append(compare_group("averaged state", [f"average_after.{n}" for n in names], mine, tensors, tol))
    return {"file": path, "kind": "rule", "method": f"average {rule['rule']}", "reference": reference,
            "rows": rows, "notes": []}


def check_file(path, tol):
    try:
        if path.endswith(".json"):
            return check_rule_json(path, tol)
        tensors, meta = read_file(path)
        if STEP_KEY in meta:
            return check_step(path, tol)
        if RULE_KEY in meta:
            return check_average(path, meta, tensors, tol)
        raise ValueError(f"neither `{STEP_KEY}` nor `{RULE_KEY}` in the metadata")
    except Exception as e:  # a file that cannot be checked fails, the others go on
        return {"file": path, "kind": "error", "method": "?", "reference": "",
                "rows": [row("error", None, None, False, f"{type(e).__name__}: {e}")], "notes": []}


# ---------------------------------------------------------------- reporting


def fmt(v):
    return "—" if v is None else ("0" if v == 0 else f"{v:.1e}")


def markdown(results, command, tol):
    lines = ["# Step cross-check: classwise against the reference codes", "",
             "Regenerate (the files: `cargo run --release -p classwise-trainer --example "
             "crosscheck_steps -- DIR`, which writes the step files, rule files and "
             "weight-average files of every method and rule it covers, controls with classwise's "
             "defaults among them; then this table):", "",
             f"`{command}`", "",
             f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
             f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}. "
             f"Pass: norm-wise relative difference ‖a − b‖/‖b‖ ≤ {tol:g} per tensor (the worst "
             "tensor of a group shown), integers equal; the element-wise max |a − b|/|b| is "
             "reported, not judged (see steps.py).", "",
             "| file | method | reference | quantity | max element-wise rel | norm-wise rel | pass | detail |",
             "|---|---|---|---|---|---|---|---|"]
    for res in results:
        for r in res["rows"]:
            lines.append(f"| {os.path.basename(res['file'])} | {res['method']} | {res['reference']} "
                         f"| {r['quantity']} | {fmt(r['elementwise'])} | {fmt(r['normwise'])} "
                         f"| {'pass' if r['pass'] else '**FAIL**'} | {r['detail']} |")
    notes = [(res["file"], n) for res in results for n in res["notes"]]
    if notes:
        lines += ["", "Notes:", ""] + [f"- {os.path.basename(f)}: {n}" for f, n in notes]
    passed = sum(all(r["pass"] for r in res["rows"]) for res in results)
    lines += ["", f"{passed} of {len(results)} files pass."]
    return "\n".join(lines) + "\n"


def short_files(files, outputs=()):
    """``DIR/*`` when it selects exactly ``files``, in their order (the shell's expansion of
    ``*``: every name in DIR not starting with a dot, sorted as in the C locale), and would
    still after this run (no output written into DIR); else None."""
    dirs = {os.path.dirname(f) for f in files}
    if len(dirs) != 1:
        return None
    d = dirs.pop()
    if any(os.path.dirname(os.path.abspath(o)) == os.path.abspath(d or ".") for o in outputs if o):
        return None
    if files != sorted(glob.glob(os.path.join(glob.escape(d), "*"))):
        return None
    return (shlex.quote(d) + "/*") if d else "*"


def command_args(argv, files, outputs=()):
    """The arguments as given, the run of ``files`` among them in its short form where there
    is one (``short_files``)."""
    quoted = [shlex.quote(a) for a in argv]
    short, n = short_files(files, outputs), len(files)
    if short is not None:
        for i in range(len(argv) - n + 1):
            if argv[i:i + n] == files:
                return quoted[:i] + [short] + quoted[i + n:]
    return quoted


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="step files (.safetensors) and rule files (.json)")
    parser.add_argument("--json", help="write every row as JSON here")
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--tol", type=float, default=1e-5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    command = "python tools/crosscheck/steps.py " + " ".join(
        command_args(argv if argv is not None else sys.argv[1:], args.files,
                     (args.markdown, args.json)))
    results = [check_file(f, args.tol) for f in args.files]
    text = markdown(results, command, args.tol)
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "tol": args.tol, "torch": torch.__version__,
                       "results": results}, f, indent=1)
    return 0 if all(r["pass"] for res in results for r in res["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
