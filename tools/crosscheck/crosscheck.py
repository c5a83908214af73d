"""Cross-checks classwise's AutoAttack output against torchattacks' AutoAttack (optional tool).

Reads a classwise checkpoint (--weights) and the file of `classwise eval --attack autoattack
--save-adv` (--adv), rebuilds the model in PyTorch (classwise_models.py) and checks:
  (a) PyTorch's logits on `x` agree with the file's `logits`;
  (b) `x_adv` lies in [0, 1] and within eps of `x` in L-inf;
  (c) PyTorch's predictions on `x` and `x_adv` reproduce the file's `robust` flags;
then runs torchattacks' AutoAttack on the same images and compares robust accuracy, overall
and per class. Exit status: 0 if every check passed, 1 if one failed, 2 on unusable input.
See README.md.
"""

import argparse
import copy
import json
import os
import platform
import sys
import time
from fractions import Fraction

import torch

import classwise_models

TENSORS = {  # name: (dtype, rank)
    "x": (torch.float32, 4), "x_adv": (torch.float32, 4), "y": (torch.int64, 1),
    "index": (torch.int64, 1), "logits": (torch.float32, 2), "robust": (torch.uint8, 1),
}
META_KEYS = ("eps", "eps_value", "attacks", "version", "model_spec")


class BadInput(Exception):
    pass


def parse_eps(text):
    """A decimal ("0.1") or a ratio ("8/255") as a float."""
    try:
        return float(Fraction(text.strip()))
    except (ValueError, ZeroDivisionError) as e:
        raise BadInput(f"eps {text!r} is neither a decimal nor a ratio: {e}") from None


def load_adv(path, weights_spec):
    from safetensors.torch import load_file

    data = load_file(path)
    meta = classwise_models.read_metadata(path)
    for name, (dtype, rank) in TENSORS.items():
        t = data.get(name)
        if t is None:
            raise BadInput(f"{path}: no tensor `{name}`")
        if t.dtype != dtype or t.dim() != rank:
            raise BadInput(f"{path}: `{name}` is {t.dtype} {list(t.shape)}, "
                           f"expected {dtype} of rank {rank}")
    n = data["x"].shape[0]
    if data["x_adv"].shape != data["x"].shape:
        raise BadInput(f"{path}: x_adv {list(data['x_adv'].shape)} != x {list(data['x'].shape)}")
    for name in ("y", "index", "logits", "robust"):
        if data[name].shape[0] != n:
            raise BadInput(f"{path}: `{name}` has {data[name].shape[0]} rows, x has {n}")
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise BadInput(f"{path}: metadata lacks {missing}")
    eps = parse_eps(meta["eps"])
    eps_value = float(meta["eps_value"])
    if abs(eps - eps_value) > 1e-12:
        raise BadInput(f"{path}: eps {meta['eps']!r} = {eps!r} but eps_value = {eps_value!r}")
    canonical = classwise_models.canonical_spec
    if canonical(json.loads(meta["model_spec"])) != canonical(weights_spec):
        raise BadInput(f"{path}: its model_spec differs from the weights file's:\n"
                       f"  adv:     {meta['model_spec']}\n  weights: {json.dumps(weights_spec)}")
    k = weights_spec["num_classes"]
    if list(data["x"].shape[1:]) != weights_spec["input_shape"] or data["logits"].shape[1] != k:
        raise BadInput(f"{path}: shapes x {list(data['x'].shape)}, logits "
                       f"{list(data['logits'].shape)} do not fit the model spec")
    if n and (data["y"].min() < 0 or data["y"].max() >= k):
        raise BadInput(f"{path}: labels outside 0..{k - 1}")
    return data, meta, eps


def predict(model, x, batch):
    with torch.no_grad():
        if len(x) == 0:
            return torch.empty(0)
        return torch.cat([model(x[i:i + batch]) for i in range(0, len(x), batch)])


def margin_to_y(logits, y):
    """logit[y] − max over j ≠ y of logit[j] (> 0 ⇔ correct, barring ties)."""
    other = logits.clone()
    other[torch.arange(len(y)), y] = float("-inf")
    return logits[torch.arange(len(y)), y] - other.amax(1)


def rates(flags, y, k):
    """Overall and per-class mean of boolean `flags` (None for a class with no image)."""
    per_class = []
    for c in range(k):
        mask = y == c
        per_class.append(int(flags[mask].sum()) / int(mask.sum()) if mask.any() else None)
    overall = int(flags.sum()) / len(y) if len(y) else None
    return {"overall": overall, "per_class": per_class,
            "n_per_class": [int((y == c).sum()) for c in range(k)]}


# ---------------------------------------------------------------------------------------------
# The checks on the file.

def check_logits(ours, theirs):
    bound = 1e-4 * max(1.0, float(ours.abs().max()) if ours.numel() else 1.0)
    diff = float((ours - theirs).abs().max()) if ours.numel() else 0.0
    argmax_diff = int((ours.argmax(1) != theirs.argmax(1)).sum()) if ours.numel() else 0
    return {"name": "a: logits", "passed": diff <= bound and argmax_diff == 0,
            "max_abs_diff": diff, "bound": bound, "argmax_mismatches": argmax_diff,
            "text": f"max |ours - pytorch| = {diff:.3g} (bound {bound:.3g}), "
                    f"{argmax_diff} argmax mismatches"}


def check_x_adv(x, x_adv, eps):
    bound = eps + 1e-6
    if x.numel() == 0:
        dist = torch.zeros(0, dtype=torch.float64)
    else:
        dist = (x_adv.double() - x.double()).abs().flatten(1).amax(1)
    linf = float(dist.max()) if len(dist) else 0.0
    outside = int((dist > bound).sum())
    lo = float(x_adv.min()) if x_adv.numel() else 0.0
    hi = float(x_adv.max()) if x_adv.numel() else 0.0
    finite = bool(torch.isfinite(x_adv).all())
    passed = finite and outside == 0 and lo >= 0.0 and hi <= 1.0
    return {"name": "b: x_adv", "passed": passed, "max_linf": linf, "bound": bound,
            "images_outside_ball": outside, "min": lo, "max": hi, "finite": finite,
            "text": f"max ||x_adv - x||inf = {linf:.9g} (bound {bound:.9g}, "
                    f"{outside} images over), x_adv in [{lo:.6g}, {hi:.6g}]"
                    f"{'' if finite else ', NOT FINITE'}"}


def check_robust(flags_file, clean_logits, adv_logits, y, tol):
    clean_ok = clean_logits.argmax(1) == y
    adv_ok = adv_logits.argmax(1) == y
    recomputed = clean_ok & adv_ok
    wrong = (recomputed != flags_file).nonzero().flatten()
    # A flip is a near-tie when the label's margin on x or x_adv is within the logit tolerance.
    near = torch.minimum(margin_to_y(clean_logits, y).abs(), margin_to_y(adv_logits, y).abs())
    ties = [int(i) for i in wrong if near[i] <= tol]
    hard = [int(i) for i in wrong if near[i] > tol]
    return {"name": "c: robust flags", "passed": not hard, "mismatches": len(wrong),
            "near_tie_mismatches": ties, "mismatch_rows": hard,
            "text": f"{len(wrong)} of {len(y)} flags differ from PyTorch's"
                    f"{f' ({len(ties)} at near-ties within {tol:.3g}, tolerated)' if ties else ''}"
                    f"; file robust {int(flags_file.sum())}, recomputed {int(recomputed.sum())}"}


# ---------------------------------------------------------------------------------------------
# torchattacks.

def component_label(atk):
    kind = type(atk).__name__
    if kind == "APGD":
        return f"apgd-{atk.loss}"
    if kind == "APGDT":
        return "apgd-t"
    if kind == "FAB":
        return "fab-t" if atk.multi_targeted else "fab"
    return kind.lower()


def component_params(atk):
    names = ("norm", "eps", "steps", "n_restarts", "n_target_classes", "n_queries", "loss",
             "eot_iter", "rho", "alpha_max", "eta", "beta", "multi_targeted", "p_init",
             "rescale_schedule", "seed")
    out = {}
    for n in names:
        if hasattr(atk, n):
            v = getattr(atk, n)
            out[n] = v if isinstance(v, (bool, int, float, str)) or v is None else repr(v)
    return out


def on_device(args, model, x, y):
    """The attacks' copies of the model and the images on `--device` (the checks a-c stay on
    the CPU model)."""
    device = torch.device(args.device)
    if device.type == "cpu":
        return model, x, y
    return copy.deepcopy(model).to(device), x.to(device), y.to(device)


def logits_on_device(args, model, x, y, ours):
    """PyTorch's logits on `--device` against the file's, for information: classwise computed
    the file's logits on its own device (on CUDA with cuDNN's default TF32 convolutions), while
    check a compares them with PyTorch's fp32 logits on the CPU."""
    model_dev, x_dev, _ = on_device(args, model, x, y)
    theirs = predict(model_dev, x_dev, args.batch_size).cpu()
    del model_dev, x_dev
    return {"device": args.device, "tf32_convolutions": torch.backends.cudnn.allow_tf32,
            "max_abs_diff": float((ours - theirs).abs().max()) if ours.numel() else 0.0,
            "argmax_mismatches": int((ours.argmax(1) != theirs.argmax(1)).sum())}


def synchronize(device):
    """Waits for the device's queued work, so that a time read after it counts that work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def batches(n, size):
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def run_multiattack(aa, x, y, batch):
    """torchattacks' AutoAttack object itself, batch by batch."""
    out = torch.empty_like(x)
    start = time.perf_counter()
    for i, (lo, hi) in enumerate(batches(len(y), batch)):
        out[lo:hi] = aa(x[lo:hi], y[lo:hi]).detach()
        synchronize(x.device)
        progress(f"multiattack batch {i + 1}: {time.perf_counter() - start:.1f} s")
    return out, time.perf_counter() - start


def run_cascade(attacks, model, x, y, batch):
    """The components of torchattacks' AutoAttack (the objects its constructor built) run as a
    cascade here, with the hand-over rule of its MultiAttack (each attack gets the images no
    earlier attack has broken; an output counts when the model misclassifies it), so that each
    component can be timed. Same batches, same seeds: `--mode both` checks the outputs match."""
    out = x.clone()
    stats = [{"attack": component_label(a), "seconds": 0.0, "images_in": 0, "broken": 0}
             for a in attacks]
    start = time.perf_counter()
    for b, (lo, hi) in enumerate(batches(len(y), batch)):
        xb, yb = x[lo:hi], y[lo:hi]
        left = torch.arange(hi - lo, device=x.device)
        for atk, st in zip(attacks, stats):
            t0 = time.perf_counter()
            adv = atk(xb[left], yb[left]).detach()
            with torch.no_grad():
                fooled = model(adv).argmax(1) != yb[left]
            st["seconds"] += time.perf_counter() - t0
            st["images_in"] += len(left)
            st["broken"] += int(fooled.sum())
            out[lo + left[fooled]] = adv[fooled]
            left = left[~fooled]
            if len(left) == 0:
                break
        progress(f"cascade batch {b + 1}: {time.perf_counter() - start:.1f} s")
    return out, time.perf_counter() - start, stats


def progress(text):
    print(f"  [{text}]", file=sys.stderr, flush=True)


def set_original_params(attacks, k):
    """The values of the original AutoAttack's standard version where torchattacks' differ:
    100 iterations (APGD-CE, APGD-T, FAB-T), at most 9 target classes, Square's schedule not
    rescaled to the query budget."""
    for atk in attacks:
        if hasattr(atk, "steps"):
            atk.steps = 100
        if hasattr(atk, "n_target_classes"):
            atk.n_target_classes = min(9, k - 1)
        if hasattr(atk, "rescale_schedule"):
            atk.rescale_schedule = False


def run_torchattacks(args, model, x, y, k, eps, clean_ok):
    """torchattacks' AutoAttack on `--device`; the robust flags from the CPU model."""
    import torchattacks

    model_dev, x_dev, y_dev = on_device(args, model, x, y)
    aa = torchattacks.AutoAttack(model_dev, norm="Linf", eps=eps, version=args.version,
                                 n_classes=k, seed=args.seed)
    multi = aa._autoattack  # the MultiAttack the constructor built: its components, as given
    if type(multi).__name__ != "MultiAttack":
        raise BadInput(f"torchattacks {torchattacks.__version__}: unexpected AutoAttack layout")
    attacks = multi.attacks
    if args.original_params:
        set_original_params(attacks, k)
    result = {"version": torchattacks.__version__, "autoattack_version": args.version,
              "mode": args.mode, "original_params": args.original_params,
              "components": [{"attack": component_label(a), "params": component_params(a)}
                             for a in attacks]}
    n = len(y)
    if args.mode in ("cascade", "both"):
        adv, seconds, stats = run_cascade(attacks, model_dev, x_dev, y_dev, args.batch_size)
        for comp, st in zip(result["components"], stats):
            comp.update(st, seconds_per_image=st["seconds"] / n if n else None,
                        seconds_per_image_in=st["seconds"] / st["images_in"]
                        if st["images_in"] else None)
    if args.mode in ("multiattack", "both"):
        adv_m, seconds_m = run_multiattack(aa, x_dev, y_dev, args.batch_size)
        adv_m = adv_m.cpu()
        result["multiattack_seconds"] = seconds_m
        if args.mode == "multiattack":
            adv, seconds = adv_m, seconds_m
    adv = adv.cpu()
    adv_ok = predict(model, adv, args.batch_size).argmax(1) == y
    flags = clean_ok & adv_ok
    dist = (adv.double() - x.double()).abs().flatten(1).amax(1) if n else torch.zeros(0)
    result.update(seconds=seconds, seconds_per_image=seconds / n if n else None,
                  max_linf=float(dist.max()) if n else 0.0,
                  in_range=bool(n == 0 or (adv.min() >= 0 and adv.max() <= 1)))
    check = None
    if args.mode == "both":
        flags_m = clean_ok & (predict(model, adv_m, args.batch_size).argmax(1) == y)
        same_flags = bool(torch.equal(flags, flags_m))
        check = {"name": "d: cascade = MultiAttack", "passed": same_flags,
                 "same_flags": same_flags, "same_images": bool(torch.equal(adv, adv_m)),
                 "text": f"robust flags {'identical' if same_flags else 'DIFFER'}, adversarial "
                         f"images {'identical' if torch.equal(adv, adv_m) else 'differ'}; "
                         f"cascade {seconds:.1f} s, MultiAttack {seconds_m:.1f} s"}
    return flags, result, check


# ---------------------------------------------------------------------------------------------
# pyautoattack: fra31/auto-attack, the original AutoAttack, as packaged on PyPI.

def run_pyautoattack(args, model, x, y, eps, clean_ok):
    """The original AutoAttack (`pyautoattack`, fra31's code) on the same images, timed as a
    whole; robust = correct on the clean image and on its adversarial example."""
    import pyautoattack

    model_dev, x_dev, y_dev = on_device(args, model, x, y)
    adversary = pyautoattack.AutoAttack(model_dev, norm="Linf", eps=eps, version=args.version,
                                        seed=args.seed, device=x_dev.device)
    adversary.verbose = False
    start = time.perf_counter()
    adv, _ = adversary.run_standard_evaluation(x_dev, y_dev, batch_size=args.batch_size)
    synchronize(x_dev.device)
    seconds = time.perf_counter() - start
    adv = adv.cpu()
    flags = clean_ok & (predict(model, adv, args.batch_size).argmax(1) == y)
    n = len(y)
    dist = (adv.double() - x.double()).abs().flatten(1).amax(1) if n else torch.zeros(0)
    result = {"version": pyautoattack.__version__, "autoattack_version": args.version,
              "attacks": list(adversary.attacks_to_run), "seconds": seconds,
              "seconds_per_image": seconds / n if n else None,
              "max_linf": float(dist.max()) if n else 0.0,
              "in_range": bool(n == 0 or (adv.min() >= 0 and adv.max() <= 1))}
    return flags, result


def compare_flags(name, flags, theirs_flags, ours, theirs, index, n):
    """Their robust accuracy minus ours, overall and per class, and the images robust for one
    side only."""
    diffs = [t - o for t, o in zip(theirs["per_class"], ours["per_class"])
             if t is not None and o is not None]
    return {"overall_points": 100 * (theirs["overall"] - ours["overall"]) if n else None,
            "max_abs_per_class_points": 100 * max(map(abs, diffs)) if diffs else None,
            "robust_only_for_ours": index[flags & ~theirs_flags].tolist(),
            f"robust_only_for_{name}": index[theirs_flags & ~flags].tolist()}


# ---------------------------------------------------------------------------------------------

def describe_diff(name, diff):
    """One line: their robust accuracy minus ours and the images robust for one side only."""
    return (f"{name} minus ours: overall {diff['overall_points']:+.2f} points, max |per class| "
            f"{diff['max_abs_per_class_points']:.2f} points; robust only for ours: "
            f"{len(diff['robust_only_for_ours'])}, only for {name}: "
            f"{len(diff[f'robust_only_for_{name}'])}")


def pct(v):
    return "   -  " if v is None else f"{100 * v:6.2f}"


def print_table(k, clean, ours, theirs):
    cols = ["class", "n", "clean %", "ours %"] + (["torchattacks %", "diff pts"] if theirs else [])
    print("  " + "  ".join(f"{c:>14}" if "torch" in c else f"{c:>8}" for c in cols))
    rows = [(str(c), clean["n_per_class"][c], clean["per_class"][c], ours["per_class"][c],
             theirs["per_class"][c] if theirs else None) for c in range(k)]
    rows.append(("all", sum(clean["n_per_class"]), clean["overall"], ours["overall"],
                 theirs["overall"] if theirs else None))
    for name, n, c, o, t in rows:
        line = f"  {name:>8}  {n:>8}  {pct(c):>8}  {pct(o):>8}"
        if theirs:
            d = None if o is None or t is None else t - o
            line += f"  {pct(t):>14}  {'   -  ' if d is None else f'{100 * d:+6.2f}':>8}"
        print(line)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", required=True, help="classwise checkpoint (.safetensors)")
    p.add_argument("--adv", required=True, help="file of `classwise eval --save-adv`")
    p.add_argument("--version", default="standard", help="torchattacks AutoAttack version")
    p.add_argument("--batch-size", type=int, default=250)
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    p.add_argument("--device", default="cpu",
                   help="where the attacks run (cpu, cuda, cuda:1, ...); the checks a-c and "
                        "the robust flags use the CPU")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the result here")
    p.add_argument("--limit", type=int, help="only the first N images")
    p.add_argument("--no-attack", action="store_true", help="only checks a, b and c")
    p.add_argument("--mode", choices=["cascade", "multiattack", "both"], default="cascade",
                   help="run AutoAttack's components as a timed cascade (default), its "
                        "MultiAttack object as it is, or both and compare them")
    p.add_argument("--pyautoattack", action="store_true",
                   help="also run the original AutoAttack (PyPI pyautoattack, fra31's code) on "
                        "the same images, timed, and compare its robust accuracy with ours")
    p.add_argument("--no-torchattacks", action="store_true",
                   help="skip torchattacks (with --pyautoattack: the original alone)")
    p.add_argument("--original-params", action="store_true",
                   help="set the component parameters in which torchattacks' standard version "
                        "differs from the original AutoAttack to the original's (100 "
                        "iterations, at most 9 target classes, Square's schedule not rescaled); "
                        "off by default: torchattacks as it is")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    load_before = os.getloadavg()

    try:
        model, spec, notes = classwise_models.load_checkpoint(args.weights)
        data, meta, eps = load_adv(args.adv, spec)
    except (BadInput, ValueError, OSError) as e:
        print(f"crosscheck: {e}", file=sys.stderr)
        return 2
    n = data["x"].shape[0] if args.limit is None else min(args.limit, data["x"].shape[0])
    if n < 1:
        print("crosscheck: no images to check (empty file or --limit below 1)", file=sys.stderr)
        return 2
    x, x_adv, y = data["x"][:n], data["x_adv"][:n], data["y"][:n]
    logits, flags = data["logits"][:n], data["robust"][:n].bool()
    k = spec["num_classes"]

    print(f"model:  {classwise_models.describe(spec)} ({args.weights})")
    for note in notes:
        print(f"        note: {note}")
    print(f"adv:    {args.adv}: {n} of {data['x'].shape[0]} images, eps {meta['eps']} "
          f"= {eps:.9g}, attacks {meta['attacks']} (version {meta['version']})")
    print(f"torch {torch.__version__}, {args.threads} threads, attacks on {args.device}\n")

    clean_logits = predict(model, x, args.batch_size)
    adv_logits = predict(model, x_adv, args.batch_size)
    check_a = check_logits(logits, clean_logits)
    checks = [check_a, check_x_adv(x, x_adv, eps),
              check_robust(flags, clean_logits, adv_logits, y, check_a["bound"])]
    clean_ok = clean_logits.argmax(1) == y

    theirs_flags, ta = None, None
    if not args.no_attack and not args.no_torchattacks:
        print(f"running torchattacks AutoAttack ({args.version}, Linf, eps {eps:.9g}, "
              f"{k} classes, seed {args.seed}"
              f"{', original parameters' if args.original_params else ''}) on {n} images, "
              f"mode {args.mode} ...", flush=True)
        theirs_flags, ta, check_d = run_torchattacks(args, model, x, y, k, eps, clean_ok)
        if check_d:
            checks.append(check_d)

    print("\nchecks:")
    for c in checks:
        print(f"  {'PASS' if c['passed'] else 'FAIL'}  {c['name']}: {c['text']}")

    clean = rates(clean_ok, y, k)
    ours = rates(flags, y, k)
    theirs = rates(theirs_flags, y, k) if theirs_flags is not None else None
    result = {"weights": args.weights, "adv": args.adv, "model_spec": spec, "n": n,
              "eps": meta["eps"], "eps_value": eps, "ours_attacks": meta["attacks"],
              "ours_version": meta["version"], "threads": args.threads, "seed": args.seed,
              "torch": torch.__version__, "python": platform.python_version(),
              "checks": checks, "clean": clean, "ours": ours}
    if torch.device(args.device).type != "cpu":
        on_dev = logits_on_device(args, model, x, y, logits)
        result["logits_on_device"] = on_dev
        print(f"logits on {args.device} (information; TF32 convolutions "
              f"{on_dev['tf32_convolutions']}): max |ours - pytorch| = {on_dev['max_abs_diff']:.3g}, "
              f"{on_dev['argmax_mismatches']} argmax mismatches")
    print(f"\nrobust accuracy (clean and adversarial correct), {n} images:")
    print_table(k, clean, ours, theirs)
    if theirs:
        diff = compare_flags("torchattacks", flags, theirs_flags, ours, theirs,
                             data["index"][:n], n)
        result.update(torchattacks=dict(ta, robust=theirs), diff=diff)
        print("\n" + describe_diff("torchattacks", diff))
        print(f"torchattacks: {ta['seconds']:.1f} s, {ta['seconds_per_image']:.3f} s/image "
              f"(max Linf {ta['max_linf']:.6g}, in [0,1]: {ta['in_range']})")
        for comp in ta["components"]:
            if "seconds" in comp:
                per_in = comp["seconds_per_image_in"]
                print(f"  {comp['attack']:>8}: {comp['seconds']:8.1f} s = "
                      f"{comp['seconds_per_image']:.3f} s per image of all {n}"
                      f"{f' or {per_in:.3f} s per image attacked' if per_in else ''}; "
                      f"{comp['images_in']} attacked, {comp['broken']} broken")
    if args.pyautoattack and not args.no_attack:
        print(f"\nrunning pyautoattack AutoAttack ({args.version}, Linf, eps {eps:.9g}) on {n} "
              "images ...", flush=True)
        pa_flags, pa = run_pyautoattack(args, model, x, y, eps, clean_ok)
        pa_rates = rates(pa_flags, y, k)
        pa_diff = compare_flags("pyautoattack", flags, pa_flags, ours, pa_rates,
                                data["index"][:n], n)
        result.update(pyautoattack=dict(pa, robust=pa_rates), pyautoattack_diff=pa_diff)
        print(f"pyautoattack {pa['version']}: robust {pct(pa_rates['overall'])} % against ours "
              f"{pct(ours['overall'])} %; {pa['seconds']:.1f} s, "
              f"{pa['seconds_per_image']:.3f} s/image")
        print(describe_diff("pyautoattack", pa_diff))
    passed = all(c["passed"] for c in checks)
    # Timings are only comparable on an otherwise idle machine: keep the load with them.
    result.update(passed=passed, load_average_before=load_before,
                  load_average_after=os.getloadavg())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.json}")
    print(f"\n{'all checks passed' if passed else 'SOME CHECKS FAILED'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
