"""Checks that `classwise export` writes what PyTorch loads: each exported safetensors file
is loaded with `load_state_dict(..., strict=True)` into RobustBench's own definition of its
architecture (built as `fixtures.py` builds the fixture of the same name), and its logits on
the fixtures' input batch must equal the logits PyTorch computed from the original
`torch.save` file (`expected.safetensors`).

    PY=$(bash tools/crosscheck/setup.sh | tail -n 1)
    cargo run --release -- export --card CARD --out DIR/<fixture>.safetensors   # per fixture
    $PY tools/zoo/check_export.py trainer/tests/fixtures/zoo DIR/<fixture>.safetensors ...

The fixture name is the file's stem (`wide_resnet`, `dm_wide_resnet_relu`, ...). Exits 1 on
any difference.
"""

import pathlib
import sys

import torch
from safetensors.torch import load_file

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import fixtures  # noqa: E402


def main() -> int:
    fixture_dir = pathlib.Path(sys.argv[1])
    expected = load_file(fixture_dir / "expected.safetensors")
    built = {name: model for name, model, *_ in fixtures.models(fixtures.robustbench_dir())}
    failed = 0
    for path in map(pathlib.Path, sys.argv[2:]):
        name = path.name.split(".")[0]
        model = built[name]
        state = load_file(path)
        if name == "wide_resnet":  # classwise does not build the unused sub_block1
            model.sub_block1 = None
        model.load_state_dict(state, strict=True)
        model.eval()
        with torch.no_grad():
            logits = model(expected["input"])
        want = expected[f"{name}.logits"]
        err = ((logits - want).abs().max() / want.abs().max()).item()
        ok = err <= 1e-6
        failed += not ok
        print(f"{'ok ' if ok else 'BAD'} {path}: strict load into {type(model).__name__}, "
              f"relative logit error {err:.2e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
