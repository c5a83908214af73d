"""Loading a WRN-70-16-sized checkpoint: classwise against PyTorch, in alternating fresh
processes (the issue's benchmark; never a test).

    PY=$(bash tools/crosscheck/setup.sh | tail -n 1)
    cargo build --release
    $PY tools/zoo/bench_load.py --dir /tmp/zoo-bench --rounds 3

It writes (once) RobustBench's `DMWideResNet(depth=70, width=16, activation_fn=Swish)` with
PyTorch's default initialisation as `torch.save(model.state_dict())` (about 1.07 GB) and a card
for it, then alternates:

* classwise: `classwise bench --import CARD` (open the checkpoint, build the model, copy every
  tensor; one JSON line with the seconds and the process's peak resident memory);
* PyTorch: a fresh python that builds the same model, then times `torch.load(FILE,
  map_location="cpu", weights_only=True)` + `model.load_state_dict(sd)`, and reports its peak
  resident memory (`resource.getrusage`).

Both report peak memory against the file's size; the model itself is one file's worth.
"""

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent))

CARD = """name = "dm-wrn-70-16-init"
file = "dm-wrn-70-16.pt"
dataset = "cifar10"
threat_model = "Linf"
eps = "8/255"
architecture = { kind = "dm_wide_resnet", depth = 70, width = 16, activation = "swish" }
normalization = { mean = [0.4914, 0.4822, 0.4465], std = [0.2471, 0.2435, 0.2616] }
source = "tools/zoo/bench_load.py: DMWideResNet(depth=70, width=16, Swish), PyTorch's initialisation"
"""


def build():
    import fixtures
    import torch  # noqa: F401

    dm = fixtures.load_file(fixtures.robustbench_dir() / "model_zoo/architectures/dm_wide_resnet.py", "dm")
    return dm.DMWideResNet(num_classes=10, depth=70, width=16, activation_fn=dm.Swish)


def write(dir: pathlib.Path) -> pathlib.Path:
    import torch

    dir.mkdir(parents=True, exist_ok=True)
    card = dir / "dm-wrn-70-16.card.toml"
    if not (dir / "dm-wrn-70-16.pt").exists():
        torch.save(build().state_dict(), dir / "dm-wrn-70-16.pt")
    card.write_text(CARD)
    return card


def torch_side(file: str) -> None:
    """Runs in its own process: prints one JSON line."""
    import torch

    model = build()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    sd = torch.load(file, map_location="cpu", weights_only=True)
    model.load_state_dict(sd)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"side": "pytorch", "seconds": seconds, "peak_before_load_bytes": before,
                      "peak_rss_bytes": peak, "torch": torch.__version__}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/zoo-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--classwise", default="target/release/classwise")
    ap.add_argument("--torch-side", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_side:
        torch_side(a.torch_side)
        return 0
    card = write(pathlib.Path(a.dir))
    file = card.parent / "dm-wrn-70-16.pt"
    size = file.stat().st_size
    print(f"file {file}: {size / 1e9:.3f} GB")
    for r in range(a.rounds):
        ours = json.loads(subprocess.run([a.classwise, "bench", "--import", str(card)],
                                         check=True, capture_output=True, text=True).stdout)
        theirs = json.loads(subprocess.run([sys.executable, __file__, "--torch-side", str(file)],
                                           check=True, capture_output=True, text=True).stdout)
        s_ours = ours["open_seconds"] + ours["load_seconds"]
        print(f"round {r + 1}: classwise {s_ours:.2f} s (open {ours['open_seconds']:.2f}, build+copy "
              f"{ours['load_seconds']:.2f}), peak {ours['peak_rss_bytes'] / size:.2f}x file "
              f"(before {ours['rss_before_bytes'] / size:.2f}x); "
              f"pytorch {theirs['seconds']:.2f} s, peak {theirs['peak_rss_bytes'] / size:.2f}x file "
              f"(model built: {theirs['peak_before_load_bytes'] / size:.2f}x); "
              f"time ratio classwise/pytorch {s_ours / theirs['seconds']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
