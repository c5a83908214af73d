"""Helpers of tools/gpu/check.sh (Python standard library only, 3.8 or later).

  summarize.py plan CONFIGS RUNS ARGS_DIR [options]   -> the preset runs of the check, in order
  summarize.py run RUN_DIR NAME RC WALL_S LOG         -> one JSON line: a run's numbers
  summarize.py note RUN_JSON                          -> that run in one line, for the summary
  summarize.py epoch RUN_JSON [BENCH_JSONL]           -> the full epoch of step 7 in one line
                                                         (against the bench's step)
  summarize.py aa REPORT_JSON                         -> an AutoAttack report in one line
  summarize.py doctor DOCTOR_JSON                     -> `classwise doctor --json` in one line
  summarize.py datasets DOCTOR_JSON                   -> one line per data set: id status path
  summarize.py bench BENCH_JSONL MODEL PRECISION      -> classwise and PyTorch img/s and ratios
  summarize.py bf16 BENCH_JSONL MODEL                 -> bf16 / fp32 img/s of each side
  summarize.py card TRAIN_OUT BENCH_DIR               -> step 9: the epoch and both AutoAttacks
  summarize.py table SUMMARY_TSV                      -> the summary table
"""

import glob
import json
import os
import re
import statistics
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

WORKLOADS = ("pgd-at", "trades", "eval-pgd20")


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:  # noqa: BLE001
        return None


# ------------------------------------------------------------------------------------ presets

def parse_toml(path):
    """The tables of a preset file. tomllib where there is one; else a reader of the few
    one-line keys the plan needs (extends, [data] source, [model] architecture, [train]
    init_from, [ema], [fawa], [rule] begin)."""
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)
    doc = {}
    doc_table = doc
    for raw in open(path):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.match(r"^\[\[?([A-Za-z0-9_.-]+)\]\]?$", line)
        if m:
            doc_table = doc
            for part in m.group(1).split("."):
                doc_table = doc_table.setdefault(part, {})
            continue
        m = re.match(r'^([A-Za-z0-9_]+)\s*=\s*(.*)$', line)
        if not m:
            continue
        key, value = m.groups()
        if value.startswith("{"):
            inner = {}
            for k, v in re.findall(r'([A-Za-z0-9_]+)\s*=\s*("[^"]*"|[-0-9.e]+|true|false)', value):
                inner.setdefault(k, v.strip('"'))
            doc_table[key] = inner
        elif value.startswith('"'):
            doc_table[key] = value.strip('"')
        else:
            try:
                doc_table[key] = float(value) if "." in value else int(value)
            except ValueError:
                doc_table[key] = value
    return doc


def merge(base, child):
    out = dict(base)
    for k, v in child.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k != "architecture":
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def resolve(path, depth=0):
    """A preset with its `extends` chain merged in (the child's keys win)."""
    doc = parse_toml(path)
    parent = doc.pop("extends", None)
    if parent and depth < 10:
        base = resolve(os.path.join(os.path.dirname(path), parent), depth + 1)
        doc = merge(base, doc)
    return doc


def toml_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan(argv):
    """Writes ARGS_DIR/<run>.args (one `classwise train` argument per line) for every CIFAR
    preset and prints `phase<TAB>run<TAB>preset<TAB>init-source<TAB>architecture` lines in the
    order to run them: phase 1 the presets that start from scratch, phase 2 those that start
    from another run's weights (FRL), which start from that run of the check."""
    import argparse
    ap = argparse.ArgumentParser(prog="summarize.py plan")
    ap.add_argument("configs")
    ap.add_argument("runs")
    ap.add_argument("args_dir")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--c10", default="30,10,5", help="train,test,val images per class")
    ap.add_argument("--c100", default="3,1,1", help="train,test,val images per class")
    ap.add_argument("--counts-any", action="store_true",
                    help="the data set is not at the official counts: counts = \"any\"")
    ap.add_argument("--arch", default="", help="replace every architecture by this kind")
    ap.add_argument("--wrn-arch", default="",
                    help="replace the WideResNet presets' architecture by this inline table")
    ap.add_argument("--bf16", default="", help="presets also run with precision = \"bf16\"")
    ap.add_argument("--only", default="", help="only these presets (comma-separated)")
    a = ap.parse_args(argv)
    os.makedirs(a.args_dir, exist_ok=True)
    sizes = {"cifar10": a.c10.split(","), "cifar100": a.c100.split(",")}
    only = {s for s in a.only.split(",") if s}
    bf16 = [s for s in a.bf16.split(",") if s]
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(a.configs, "cifar*.toml")))
    if only:
        # the runs that the chosen FRL presets start from come along
        for n in list(only):
            if os.path.exists(os.path.join(a.configs, n + ".toml")):
                init = (resolve(os.path.join(a.configs, n + ".toml")).get("train") or {}).get("init_from") or {}
                if init.get("path"):
                    only.add(os.path.basename(str(init["path"]).rstrip("/")))
        names = [n for n in names if n in only]
    lines = []
    for name in names + [f"{n}-bf16" for n in bf16 if n in names]:
        preset = name[:-5] if name.endswith("-bf16") and name not in names else name
        c = resolve(os.path.join(a.configs, preset + ".toml"))
        data_id = (c.get("data", {}).get("source") or {}).get("id", "cifar10")
        tr, te, va = sizes.get(data_id, sizes["cifar10"])
        arch = (c.get("model", {}).get("architecture") or {})
        kind = arch.get("kind", "?")
        if kind == "wide_resnet":
            kind = f"wrn-{arch.get('depth')}-{arch.get('widen')}"
        heavy = kind.startswith("wrn")
        args = [f"epochs={a.epochs}", f"data.train_per_class={tr}", f"data.test_per_class={te}",
                f"eval.test_per_class={te}", f"eval.val_per_class={va}"]
        if a.counts_any:
            args.append(f'data.source={{ kind = "files", id = {toml_str(data_id)}, '
                        f'options = {{ counts = "any" }} }}')
        # Averaging and class-wise rules that start late in a 200-epoch schedule start at once,
        # so that their code runs within the 2 epochs.
        if "ema" in c:
            args.append("ema.start_epoch=0")
        if "fawa" in c:
            args += ["fawa.start_epoch=0", "fawa.delta=0.0"]
        rule = c.get("rule") or {}
        if isinstance(rule.get("begin"), int) and rule["begin"] > 1:
            args.append("rule.begin=1")
        if a.arch:
            args.append(f"model.architecture={{ kind = {toml_str(a.arch)} }}")
            kind = f"{kind} as {a.arch}"
        elif a.wrn_arch and kind.startswith("wrn"):
            args.append(f"model.architecture={a.wrn_arch}")
            kind += " as " + a.wrn_arch
        init = (c.get("train", {}) or {}).get("init_from") or {}
        source = "-"
        if init.get("path"):
            source = os.path.basename(str(init["path"]).rstrip("/"))
            args.append(f"train.init_from.path={toml_str(os.path.join(a.runs, source))}")
        if name.endswith("-bf16") and name not in names:
            args.append('precision="bf16"')
        with open(os.path.join(a.args_dir, name + ".args"), "w") as f:
            for arg in args:
                f.write("--set\n" + arg + "\n")
        lines.append((2 if source != "-" else 1, name, preset, source, kind, heavy))
    # Within a phase the WideResNets go first: the longest runs start first, so that the lanes
    # end together.
    order = sorted(lines, key=lambda t: (t[0], not t[5], t[1]))
    for phase, name, preset, source, kind, _ in order:
        print(f"{phase}\t{name}\t{preset}\t{source}\t{kind}")


# ------------------------------------------------------------------------------------- runs

def first_problem(log):
    try:
        text = open(log, errors="replace").read()
    except OSError:
        return ""
    for pat in (r"panicked at[^\n]*\n[^\n]*", r"[Dd]evice[^\n]*mismatch[^\n]*",
                r"Expected all tensors to be on the same device[^\n]*", r"CUDA error[^\n]*",
                r"out of memory[^\n]*", r"(^|\n)[Ee]rror: [^\n]*(\n  [^\n]*){0,3}",
                r"\n[^\n]*(NaN|non-finite|not finite)[^\n]*"):
        m = re.search(pat, text)
        if m:
            return " ".join(m.group(0).split())[:400]
    return ""


def run_summary(run_dir, name, rc, wall, log):
    out = {"name": name, "rc": int(rc), "wall_s": round(float(wall), 1)}
    lines = []
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        pass
    out["epochs_done"] = len(lines)
    if lines:
        out["train_img_s"] = [round(r.get("train_images_per_second") or 0, 1) for r in lines]
        out["train_s"] = [round(r.get("train_seconds") or 0, 2) for r in lines]
        out["eval_s"] = [round(r.get("eval_seconds") or 0, 2) for r in lines]
        out["epoch_s"] = [round(r.get("seconds") or 0, 2) for r in lines]
        out["train_loss"] = [round(r.get("train_loss") or 0, 4) for r in lines]
        t = lines[-1].get("test")
        if t:
            out["test_clean"] = round(t["clean_avg"], 4)
            out["test_robust"] = round(t["robust_avg"], 4)
            out["test_robust_worst"] = round(t["robust_worst"], 4)
    env = load_json(os.path.join(run_dir, "env.json"))
    if env and env.get("sessions"):
        s = env["sessions"][-1]
        out["device"] = s.get("device")
        out["precision"] = s.get("precision")
        out["cudnn_benchmark"] = s.get("cudnn_benchmark")
    out["problem"] = first_problem(log)
    return out


def note(path):
    r = load_json(path)
    if r is None:
        return "no run summary"
    parts = [f"ep={r.get('epochs_done')}"]
    if r.get("train_loss"):
        parts.append("loss " + ",".join(f"{v:.3g}" for v in r["train_loss"]))
    if r.get("test_clean") is not None:
        parts.append(f"test clean/rob {r['test_clean']:.2f}/{r['test_robust']:.2f}")
    if r.get("train_img_s"):
        parts.append("img/s " + ",".join(f"{v:.0f}" for v in r["train_img_s"]))
    if r.get("epoch_s"):
        parts.append("epoch s " + ",".join(f"{v:.1f}" for v in r["epoch_s"]))
    if r.get("device"):
        parts.append(f"{r['device']}" + (f" {r['precision']}" if r.get("precision") else ""))
    if r.get("problem"):
        parts.append("PROBLEM: " + r["problem"][:240])
    return "; ".join(parts)


def epoch(path, bench_path=None):
    """The full epoch of check.sh step 7 in one line, its img/s against the bench's PGD-10 AT
    step of the same model (PreActResNet-18, fp32, batch 128; goal >= 0.95)."""
    r = load_json(path)
    if r is None:
        return "no run summary"

    def first(key):
        return (r.get(key) or [None])[0]
    t, s = first("train_s"), first("train_img_s")
    parts = []
    if t and s:
        parts.append(f"train {t} s at {s} img/s ({round(t * s)} images), epoch with its "
                     f"evaluation {first('epoch_s')} s (eval {first('eval_s')} s)")
        step = medians(bench_path).get(("preact-resnet18", "fp32", "pgd-at", "classwise")) \
            if bench_path else None
        if step:
            parts.append(f"loop/bench step {s / step:.2f} ({s} / {num(step)} img/s)")
    else:
        parts.append("no epoch finished")
    if r.get("device"):
        parts.append(f"{r['device']} {r.get('precision')}")
    if r.get("problem"):
        parts.append(f"PROBLEM: {r['problem'][:240]}")
    return "; ".join(parts)


def acc(d):
    """An evaluation's overall accuracy (its class mean where it has no overall)."""
    return d.get("overall") if d.get("overall") is not None else d.get("class_mean")


def aa(path):
    rep = load_json(path)
    if rep is None:
        return "no AutoAttack report"
    ev = rep.get("evaluation", rep)
    rob, cl = ev["robust"], ev["clean"]
    steps = "; ".join(f"{st.get('attack')} {st.get('seconds', 0):.1f}s"
                      for st in rep.get("steps", []))
    return (f"n {ev.get('n_samples')} clean {acc(cl):.3f} robust {acc(rob):.3f} "
            f"({rep.get('seconds', 0):.1f} s, {rep.get('seconds_per_image', 0) * 1000:.1f} ms/img; "
            f"{steps})")


def card(train_out, bench_dir):
    """Step 9: the PyTorch epoch, then classwise's and pyautoattack's AutoAttack on the card."""
    parts = []
    try:
        with open(train_out) as f:
            t = json.loads([line for line in f if line.startswith("{")][-1])
        parts.append(f"train {t['images']} images in {t['seconds']:.1f} s "
                     f"({t['images_per_second']:.0f} img/s, bf16 {t['bf16']}), last tenth "
                     f"adversarial accuracy {t['last_tenth_adversarial_accuracy']:.3f}")
    except (OSError, ValueError, IndexError, KeyError):
        parts.append("no training result")
    ours = load_json(os.path.join(bench_dir, "classwise.json"))
    if ours is not None:
        ev = ours.get("evaluation", {})
        steps = ", ".join(f"{st.get('attack')} {st.get('seconds', 0):.1f} s broke "
                          f"{st.get('broken')}/{st.get('attacked')}" for st in ours.get("steps", []))
        parts.append(f"classwise {ours.get('seconds', 0):.1f} s on {ev.get('n_samples')} images, "
                     f"robust {100 * acc(ev.get('robust', {})):.2f} % ({steps})")
    theirs = load_json(os.path.join(bench_dir, "crosscheck.json"))
    pa = (theirs or {}).get("pyautoattack")
    if pa:
        ratio = f", classwise/pyautoattack {ours['seconds'] / pa['seconds']:.2f}" if ours else ""
        failed = [c["name"] for c in theirs.get("checks", []) if not c.get("passed")]
        parts.append(f"pyautoattack {pa['seconds']:.1f} s, robust {100 * pa['robust']['overall']:.2f} %"
                     f"{ratio}; checks {'FAILED: ' + ', '.join(failed) if failed else 'passed'}")
    return "; ".join(parts)


# -------------------------------------------------------------------------------- doctor

def doctor(path):
    d = load_json(path)
    if d is None:
        return "doctor JSON unreadable"
    cuda = d.get("cuda", {})
    lt = d.get("libtorch", {})
    problems = d.get("problems", [])
    # Fashion-MNIST is the only required data set; the check does not need it.
    other = [p for p in problems if "Fashion-MNIST" not in p]
    return (f"cuda_available={cuda.get('available')} devices={cuda.get('device_count')} "
            f"cudnn={cuda.get('cudnn_version')} libtorch={lt.get('loaded_version')} "
            f"device={d.get('default_device')} threads={(d.get('threads') or {}).get('intra_op')} "
            f"problems={len(problems)} (not Fashion-MNIST: {len(other)})"
            + "".join(f"\n  problem: {p}" for p in other))


def datasets(path):
    d = load_json(path)
    if d is None:
        return "doctor JSON unreadable"
    return "\n".join(f"{s.get('id')} {s.get('status')} {s.get('path', '-')} {s.get('counts', '')}"
                     for s in d.get("datasets", []))


# --------------------------------------------------------------------------------- bench

def medians(path):
    """{(model, precision, workload, implementation): median img/s} of a bench.jsonl."""
    rows = []
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip().startswith("{")]
    except (OSError, ValueError):
        pass
    got = {}
    for r in rows:
        precision = r.get("settings", {}).get("precision") or "fp32"
        key = (r.get("model"), precision, r.get("workload"), r.get("implementation"))
        got.setdefault(key, []).append(r["img_per_s"])
    return {k: statistics.median(v) for k, v in got.items()}


def num(v):
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def bench(path, model, precision):
    """`pgd-at 2038/2258 = 0.90; ...`: classwise img/s / PyTorch img/s per workload."""
    got = medians(path)
    parts = []
    for w in WORKLOADS:
        c = got.get((model, precision, w, "classwise"))
        p = got.get((model, precision, w, "pytorch"))
        if not c and not p:
            continue
        text = f"{w} {num(c)}" if c else f"{w} -"
        text += f"/{num(p)}" if p else "/-"
        if c and p:
            text += f" = {c / p:.2f}"
        parts.append(text)
    return ("img/s classwise/pytorch: " + "; ".join(parts)) if parts else "no measurement"


def bf16_gain(path, model):
    """bf16 img/s / fp32 img/s per workload, classwise's and PyTorch's (goal on WRN-34-10:
    classwise >= 1.5)."""
    got = medians(path)
    parts = []
    for impl in ("classwise", "pytorch"):
        gains = []
        for w in WORKLOADS:
            b, f = got.get((model, "bf16", w, impl)), got.get((model, "fp32", w, impl))
            if b and f:
                gains.append(f"{w} {b / f:.2f}")
        if gains:
            parts.append(f"{impl} " + ", ".join(gains))
    return (f"{model} bf16/fp32: " + "; ".join(parts)) if parts else "no fp32 and bf16 pair"


def table(path):
    rows = []
    with open(path) as f:
        for line in f:
            cells = line.rstrip("\n").split("\t")
            if len(cells) >= 4:
                rows.append(cells)
    width = max([len(r[0]) for r in rows] + [4])
    print(f"{'step':<{width}}  {'status':<7} {'seconds':>7}  note")
    for step, status, seconds, text in (r[:4] for r in rows):
        print(f"{step:<{width}}  {status:<7} {seconds:>7}  {text[:400]}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "plan":
        plan(args)
    elif cmd == "run":
        print(json.dumps(run_summary(*args[:5])))
    elif cmd == "note":
        print(note(args[0]))
    elif cmd == "epoch":
        print(epoch(*args[:2]))
    elif cmd == "bf16":
        print(bf16_gain(*args[:2]))
    elif cmd == "aa":
        print(aa(args[0]))
    elif cmd == "card":
        print(card(*args[:2]))
    elif cmd == "doctor":
        print(doctor(args[0]))
    elif cmd == "datasets":
        print(datasets(args[0]))
    elif cmd == "bench":
        print(bench(*args[:3]))
    elif cmd == "table":
        table(args[0])
    else:
        sys.exit(f"unknown command {cmd!r}\n{__doc__}")


if __name__ == "__main__":
    main()
