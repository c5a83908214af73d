"""classwise against PyTorch eager, round by round, in alternating fresh processes.

Every round runs, for each model x workload x precision, one fresh `classwise bench --json`
process and one fresh `reference.py` process per PyTorch setting, in alternating order (odd
rounds start with classwise, even rounds with PyTorch), so that drifts of a shared machine fall
on both sides. It prints each measurement, the ratio classwise img/s / PyTorch img/s per round,
and the median ratio over the rounds, rows paired by model, workload and precision. Nothing is
asserted: the numbers are the result. A measurement that fails is reported and skipped; the
exit status is then 1.

    PY=$(bash tools/crosscheck/setup.sh | tail -n 1)
    cargo build --release
    $PY tools/bench/side_by_side.py --rounds 3 --json-out bench.jsonl
    # on a GPU, both precisions, PyTorch at its best setting:
    $PY tools/bench/side_by_side.py --device cuda --model preact-resnet18,wrn-34-10 \
        --precision fp32,bf16 --torch-settings channels-last+cudnn-benchmark
    # pair the rows of JSON-lines files written before (by --json-out, tools/gpu/check.sh, or
    # `classwise bench --json` and `reference.py` by hand), without running anything:
    python3 tools/bench/side_by_side.py --table bench.jsonl

Optional tool (the crosscheck venv, or any python with torch for the PyTorch side; --table
needs only the standard library); not part of the README's two commands or of CI.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PRECISIONS = ("fp32", "bf16")
TORCH_FLAGS = ("once", "cudnn-benchmark")


def run_json(cmd, what):
    """Runs `cmd` in a fresh process: (JSON objects of its stdout lines, None) or (None, why)."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"{what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}"
    rows = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    if not rows:
        return None, f"{what} printed no JSON measurement: {' '.join(cmd)}\n{p.stdout[-2000:]}"
    return rows, None


def precision_of(row):
    """A row's precision; rows of builds before `--precision` ran fp32."""
    return row.get("settings", {}).get("precision") or "fp32"


def label_of(row):
    """The setting a row ran with, as --torch-settings writes it (`channels-last+once`)."""
    s = row.get("settings", {})
    label = s.get("memory_format", "?")
    if row.get("workload") == "trades" and s.get("trades_natural") == "once":
        label += "+once"
    if s.get("cudnn_benchmark"):
        label += "+cudnn-benchmark"
    return label


def table(rows, out=sys.stdout):
    """Pairs classwise and PyTorch rows of the same model, workload, precision and device and
    prints the median img/s of each side (every measurement in brackets) and their ratio."""
    groups = {}
    for r in rows:
        s = r.get("settings", {})
        key = (r.get("model"), r.get("workload"), precision_of(r), s.get("device", "Cpu"),
               r.get("batch"))
        side = "classwise" if r.get("implementation") == "classwise" else "pytorch"
        groups.setdefault(key, {}).setdefault((side, label_of(r)), []).append(r["img_per_s"])
    print(f"{'model':<16} {'workload':<10} {'prec':<4} {'device':<8} {'batch':>5}  "
          f"{'classwise img/s':<34} {'pytorch img/s':<50} {'cw/pt':>6}", file=out)

    def num(v):
        return f"{v:.1f}" if v >= 10 else f"{v:.3g}"

    def cell(label, values):
        each = ",".join(num(v) for v in values) if len(values) > 1 else ""
        text = f"{num(statistics.median(values)):>9} {label}"
        return text + (f" ({each})" if each else "")

    ratios = []
    for key, g in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        model, workload, precision, device, batch = key
        cws = sorted((lab, v) for (side, lab), v in g.items() if side == "classwise")
        pts = sorted((lab, v) for (side, lab), v in g.items() if side == "pytorch")
        head = f"{model:<16} {workload:<10} {precision:<4} {device:<8} {batch!s:>5}  "
        # every classwise setting against every PyTorch setting
        pairs = [(c, p) for c in (cws or [None]) for p in (pts or [None])]
        for c, p in pairs:
            ratio = (statistics.median(c[1]) / statistics.median(p[1])) if c and p else None
            if ratio is not None:
                ratios.append((key, c[0], p[0], ratio))
            print(f"{head}{(cell(*c) if c else '-'):<34} "
                  f"{(cell(*p) if p else '-'):<50} "
                  f"{(f'{ratio:6.2f}' if ratio is not None else '-'):>6}", file=out)
    return ratios


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    return rows


def parse_torch_setting(s, ap):
    fmt, *flags = s.split("+")
    if fmt not in ("contiguous", "channels-last") or any(f not in TORCH_FLAGS for f in flags) \
            or len(set(flags)) != len(flags):
        ap.error(f"--torch-settings: {s!r} is not contiguous or channels-last, optionally "
                 f"with +once and/or +cudnn-benchmark")
    args = ["--memory-format", fmt, "--natural", "once" if "once" in flags else "every-step"]
    if "cudnn-benchmark" in flags:
        args.append("--cudnn-benchmark")
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", nargs="+", metavar="JSONL",
                    help="only print the paired table of the rows in these JSON-lines files")
    ap.add_argument("--classwise", default=os.path.join(ROOT, "target", "release", "classwise"),
                    help="the classwise binary [default: target/release/classwise]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="small-cnn,preact-resnet18",
                    help="small-cnn, preact-resnet18, resnet18, wrn-34-10 (comma-separated)")
    ap.add_argument("--workload", default="pgd-at,trades,eval-pgd20")
    ap.add_argument("--precision", default="fp32",
                    help="fp32, bf16 or both (comma-separated): classwise bench --precision, "
                         "reference.py --amp bf16 [default: fp32]")
    ap.add_argument("--device", default="cpu",
                    help="cpu, cuda or cuda:N, for both sides [default: cpu]")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--classwise-memory-format", choices=("contiguous", "channels-last"),
                    help="classwise's layout [default: classwise's own, channels-last]")
    ap.add_argument("--torch-settings", default="contiguous,channels-last",
                    help="PyTorch settings to compare against, comma-separated: contiguous "
                         "(NCHW, PyTorch's default) or channels-last, each optionally with "
                         "'+once' (TRADES with the natural forward computed once) and "
                         "'+cudnn-benchmark' (torch.backends.cudnn.benchmark = True), e.g. "
                         "channels-last+cudnn-benchmark, PyTorch's best setting on a GPU")
    ap.add_argument("--json-out", help="also append every measurement to this JSON-lines file")
    args = ap.parse_args()
    if args.table:
        table(read_rows(args.table))
        return
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1 (got {args.rounds})")
    if not os.path.isfile(args.classwise):
        ap.error(f"--classwise {args.classwise}: no such file (cargo build --release first)")
    precisions = [p for p in args.precision.split(",") if p]
    if not precisions or any(p not in PRECISIONS for p in precisions):
        ap.error(f"--precision {args.precision!r}: expected fp32, bf16 or fp32,bf16")
    torch_settings = [s for s in args.torch_settings.split(",") if s]
    torch_args = {s: parse_torch_setting(s, ap) for s in torch_settings}

    triples = [(m, w, p) for m in args.model.split(",") if m for w in args.workload.split(",") if w
               for p in precisions]
    common = ["--batch", str(args.batch), "--steps", str(args.steps)]
    ratios = {}  # (model, workload, precision, torch setting) -> [ratio per round]
    all_rows, failures = [], []
    out = open(args.json_out, "a") if args.json_out else None
    for r in range(1, args.rounds + 1):
        print(f"round {r}/{args.rounds}", flush=True)
        for model, workload, precision in triples:
            sel = ["--model", model, "--workload", workload]
            layout = (["--memory-format", args.classwise_memory_format]
                      if args.classwise_memory_format else [])
            # --device always: classwise's own default is auto (CUDA when there is one).
            cw_extra = ["--precision", precision, "--device", args.device]
            cw_cmd = [args.classwise, "bench", "--json"] + layout + cw_extra + sel + common
            jobs = [("classwise", cw_cmd)]
            for s in torch_settings:
                jobs.append((s, [sys.executable, os.path.join(HERE, "reference.py"),
                                 "--device", args.device, "--precision", precision]
                             + torch_args[s] + sel + common))
            if r % 2 == 0:
                jobs = jobs[1:] + jobs[:1]
            got = {}
            for name, cmd in jobs:
                rows, why = run_json(cmd, name)
                if rows is None:
                    print(f"  FAILED: {why}", flush=True)
                    failures.append(why.splitlines()[0])
                    continue
                row = rows[0]
                row["round"] = r
                got[name] = row
                all_rows.append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            line = f"  {model:<16} {workload:<10} {precision:<4}"
            cw = got.get("classwise", {}).get("img_per_s")
            line += f" classwise {cw:7.1f} img/s" if cw else " classwise      - img/s"
            for s in torch_settings:
                t = got.get(s, {}).get("img_per_s")
                if cw and t:
                    ratios.setdefault((model, workload, precision, s), []).append(cw / t)
                    line += f" | torch {s} {t:7.1f} img/s, ratio {cw / t:5.2f}"
                else:
                    line += f" | torch {s} " + (f"{t:7.1f} img/s" if t else "-")
            print(line, flush=True)
    print("\nmedian ratio classwise / PyTorch (per round):")
    for (model, workload, precision, s), rs in ratios.items():
        per = ", ".join(f"{v:.2f}" for v in rs)
        print(f"  {model:<16} {workload:<10} {precision:<4} vs torch {s:<32} "
              f"{statistics.median(rs):5.2f}   ({per})")
    print("\nall measurements, paired by model, workload, precision and device "
          "(medians over the rounds):")
    table(all_rows)
    if out:
        out.close()
    if failures:
        print(f"\n{len(failures)} measurement(s) failed:", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
