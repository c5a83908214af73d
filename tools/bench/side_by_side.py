"""classwise against PyTorch eager, round by round, in alternating fresh processes.

Every round runs, for each model x workload, one fresh `classwise bench --json` process and one
fresh `reference.py` process per PyTorch setting, in alternating order (odd rounds start with
classwise, even rounds with PyTorch), so that drifts of a shared machine fall on both sides.
It prints each measurement, the ratio classwise img/s / PyTorch img/s per round, and the median
ratio over the rounds. Nothing is asserted: the numbers are the result.

    PY=$(bash tools/crosscheck/setup.sh | tail -n 1)
    cargo build --release
    $PY tools/bench/side_by_side.py --rounds 3 --json-out bench.jsonl

Optional tool (the crosscheck venv); not part of the README's two commands or of CI.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def run_json(cmd, what):
    """Runs `cmd` in a fresh process and returns the JSON objects of its stdout lines."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    rows = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rows.append(json.loads(line))
    if not rows:
        sys.exit(f"{what} printed no JSON measurement: {' '.join(cmd)}\n{p.stdout[-2000:]}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--classwise", default=os.path.join(ROOT, "target", "release", "classwise"),
                    help="the classwise binary [default: target/release/classwise]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="small-cnn,preact-resnet18")
    ap.add_argument("--workload", default="pgd-at,trades,eval-pgd20")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--classwise-memory-format", choices=("contiguous", "channels-last"),
                    help="classwise's layout [default: classwise's own, channels-last]")
    ap.add_argument("--torch-settings", default="contiguous,channels-last",
                    help="PyTorch settings to compare against, comma-separated: contiguous "
                         "(NCHW, PyTorch's default), channels-last; a suffix '+once' runs "
                         "TRADES with the natural forward computed once")
    ap.add_argument("--json-out", help="also append every measurement to this JSON-lines file")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error(f"--rounds must be >= 1 (got {args.rounds})")
    if not os.path.isfile(args.classwise):
        ap.error(f"--classwise {args.classwise}: no such file (cargo build --release first)")
    torch_settings = [s for s in args.torch_settings.split(",") if s]
    for s in torch_settings:
        fmt = s.split("+")[0]
        if fmt not in ("contiguous", "channels-last") or s not in (fmt, fmt + "+once"):
            ap.error(f"--torch-settings: {s!r} is not contiguous or channels-last "
                     "(optionally with +once)")

    pairs = [(m, w) for m in args.model.split(",") if m for w in args.workload.split(",") if w]
    common = ["--batch", str(args.batch), "--steps", str(args.steps)]
    ratios = {}  # (model, workload, torch setting) -> [ratio per round]
    out = open(args.json_out, "a") if args.json_out else None
    for r in range(1, args.rounds + 1):
        print(f"round {r}/{args.rounds}", flush=True)
        for model, workload in pairs:
            sel = ["--model", model, "--workload", workload]
            layout = (["--memory-format", args.classwise_memory_format]
                      if args.classwise_memory_format else [])
            cw_cmd = [args.classwise, "bench", "--json"] + layout + sel + common
            jobs = [("classwise", cw_cmd)]
            for s in torch_settings:
                fmt, _, natural = s.partition("+")
                jobs.append((s, [sys.executable, os.path.join(HERE, "reference.py"),
                                 "--memory-format", fmt,
                                 "--natural", "once" if natural else "every-step"] + sel + common))
            if r % 2 == 0:
                jobs = jobs[1:] + jobs[:1]
            got = {}
            for name, cmd in jobs:
                row = run_json(cmd, name)[0]
                row["round"] = r
                got[name] = row
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            cw = got["classwise"]["img_per_s"]
            line = f"  {model:<16} {workload:<7} classwise {cw:7.1f} img/s"
            for s in torch_settings:
                t = got[s]["img_per_s"]
                ratios.setdefault((model, workload, s), []).append(cw / t)
                line += f" | torch {s} {t:7.1f} img/s, ratio {cw / t:5.2f}"
            print(line, flush=True)
    print("\nmedian ratio classwise / PyTorch (per round):")
    for (model, workload, s), rs in ratios.items():
        per = ", ".join(f"{v:.2f}" for v in rs)
        print(f"  {model:<16} {workload:<7} vs torch {s:<18} {statistics.median(rs):5.2f}"
              f"   ({per})")
    if out:
        out.close()


if __name__ == "__main__":
    main()
