"""Writes the zoo fixtures of `trainer/tests/fixtures/zoo/` from RobustBench's own code.

Every network here is built by the reference definitions of robustbench 1.1.1 (PyPI), loaded
from the installed package's files (`model_zoo/architectures/*.py`, and the model classes of
`model_zoo/cifar10.py` cut out of that file with `ast`), never re-typed: the package's
`__init__` imports timm, requests and more, which the tool does not need. Widths and depths
are tiny so the files stay small; the forward passes are the reference ones.

What it writes (all read by `trainer/tests/zoo_fixtures.rs`):

* `<model>.pt`: `torch.save(model.state_dict())` (zip format) of a tiny network with random
  weights and random BatchNorm statistics (models that differ only in normalisation or in
  Swish/SiLU share one file: `file` in the manifest);
* `expected.safetensors`: the input batch `input` (`[4, 3, 32, 32]` in [0, 1]) and each
  model's fp32 logits `<model>.logits` on it, in eval mode;
* `manifest.json`: per model, the weight file, the classwise architecture spec, the
  normalisation, and the reference constructor it came from;
* `shapes.json`: the `state_dict` names and shapes of full-size networks (WRN-28-10,
  WRN-34-20, WRN-70-16, DM WRN-70-16, DM PreActResNet-18, ResNet-18) built
  on PyTorch's `meta` device, so no weights are drawn;
* `cards/<model>.card.toml`: a model card per model (random weights: for mechanics only);
* checkpoint variants of the DM PreActResNet (`variants/`): the legacy (pre-1.6) format,
  WAT's `{'epoch', 'state_dict', 'optimizer'}` with every key prefixed `module.`, `{'model':
  ...}`, a file holding a pickled call to `os.system` (never to be run), and a truncated copy.

Run (the cross-check venv of `tools/crosscheck/setup.sh`, which installs robustbench with
`--no-deps`):

    PY=$(bash tools/crosscheck/setup.sh | tail -n 1)
    $PY tools/zoo/fixtures.py trainer/tests/fixtures/zoo
"""

import ast
import importlib.util
import json
import os
import pathlib
import sys

import torch
from safetensors.torch import save_file

SEED = 20261129


def robustbench_dir() -> pathlib.Path:
    spec = importlib.util.find_spec("robustbench")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("robustbench is not installed (run tools/crosscheck/setup.sh)")
    return pathlib.Path(spec.submodule_search_locations[0])


def load_file(path: pathlib.Path, name: str):
    """Executes one reference file as a module, without the package's `__init__`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def cifar10_class(rb: pathlib.Path, name: str, namespace: dict):
    """The class `name` of `model_zoo/cifar10.py`, its source cut out with `ast` and run in
    `namespace` (which supplies its base class)."""
    source = (rb / "model_zoo" / "cifar10.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            exec(ast.get_source_segment(source, node), namespace)
            return namespace[name]
    sys.exit(f"{name} not found in model_zoo/cifar10.py")


def randomise_bn(model: torch.nn.Module, gen: torch.Generator) -> None:
    """Random BN affine parameters and running statistics, so that eval-mode BN matters."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=gen))
                m.bias.copy_(0.2 * torch.randn(n, generator=gen))
                m.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(n, generator=gen))
                m.num_batches_tracked.fill_(7)


def tiny_preact(dm, activation):
    """The reference `DMPreActResNet` at widths 2-4-8-16 instead of 64-128-256-512: the
    constructor fixes the widths, so this subclass calls the reference `_make_layer`
    (reference `_PreActBlock`s) with smaller ones and keeps the reference `forward`."""

    class TinyDMPreActResNet(dm.DMPreActResNet):
        def __init__(self):
            torch.nn.Module.__init__(self)
            self.register_buffer("mean", torch.tensor(dm.CIFAR10_MEAN).view(3, 1, 1), persistent=False)
            self.register_buffer("std", torch.tensor(dm.CIFAR10_STD).view(3, 1, 1), persistent=False)
            self.mean_cuda = None
            self.std_cuda = None
            self.padding = 0
            self.conv_2d = torch.nn.Conv2d(3, 2, kernel_size=3, stride=1, padding=1, bias=False)
            self.layer_0 = self._make_layer(2, 2, 2, 1, activation)
            self.layer_1 = self._make_layer(2, 4, 2, 2, activation)
            self.layer_2 = self._make_layer(4, 8, 2, 2, activation)
            self.layer_3 = self._make_layer(8, 16, 2, 2, activation)
            self.batchnorm = torch.nn.BatchNorm2d(16)
            self.relu = activation()
            self.logits = torch.nn.Linear(16, 10)

    return TinyDMPreActResNet()


def models(rb: pathlib.Path):
    """(name, module, classwise spec, normalisation, reference constructor, shares) of every
    fixture model; `shares` names an earlier model whose weights this one is given (and then
    has no weight file of its own), or is None."""
    arch = rb / "model_zoo" / "architectures"
    wrn = load_file(arch / "wide_resnet.py", "rb_wide_resnet")
    dm = load_file(arch / "dm_wide_resnet.py", "rb_dm_wide_resnet")
    ns = {"torch": torch, "nn": torch.nn, "WideResNet": wrn.WideResNet}
    c10 = {"mean": list(dm.CIFAR10_MEAN), "std": list(dm.CIFAR10_STD)}
    c100 = {"mean": list(dm.CIFAR100_MEAN), "std": list(dm.CIFAR100_STD)}
    wrn_spec = {"kind": "wide_resnet", "depth": 10, "widen": 1}
    dm_wrn = {"kind": "dm_wide_resnet", "depth": 10, "width": 1}
    yield ("wide_resnet", wrn.WideResNet(depth=10, widen_factor=1, sub_block1=True),
           dict(wrn_spec, sub_block1=True), None,
           "wide_resnet.py: WideResNet(depth=10, widen_factor=1, sub_block1=True)", None)
    yield ("dm_wide_resnet_relu",
           dm.DMWideResNet(num_classes=10, depth=10, width=1, activation_fn=torch.nn.ReLU),
           dict(dm_wrn, activation="relu"), c10,
           "dm_wide_resnet.py: DMWideResNet(depth=10, width=1, activation_fn=nn.ReLU)", None)
    swish = "dm_wide_resnet.py: DMWideResNet(num_classes=100, depth=10, width=1, " \
            "activation_fn={}, mean=CIFAR100_MEAN, std=CIFAR100_STD)"
    for name, fn, shares in [("dm_wide_resnet_swish", dm.Swish, None),
                             ("dm_wide_resnet_silu", torch.nn.SiLU, "dm_wide_resnet_swish")]:
        net = dm.DMWideResNet(num_classes=100, depth=10, width=1, activation_fn=fn,
                              mean=dm.CIFAR100_MEAN, std=dm.CIFAR100_STD)
        yield (name, net, dict(dm_wrn, activation="swish"), c100,
               swish.format(fn.__name__), shares)
    yield ("dm_preact_resnet", tiny_preact(dm, dm.Swish),
           {"kind": "dm_preact_resnet", "depth": 18, "activation": "swish", "base_width": 2},
           c10, "dm_wide_resnet.py: DMPreActResNet(activation_fn=Swish), widths 2-4-8-16", None)
    for cls in ["Ding2020MMANet", "Hendrycks2019UsingNet", "Rice2020OverfittingNet"]:
        net = cifar10_class(rb, cls, ns)(depth=10, widen_factor=1)
        norm = {
            "Ding2020MMANet": {"per_image": "standardize"},
            "Hendrycks2019UsingNet": {"mean": [0.5] * 3, "std": [0.5] * 3},
        }.get(cls) or {"mean": net.mu.flatten().tolist(), "std": net.sigma.flatten().tolist()}
        # Ding and Hendrycks are given the weights of `wide_resnet.pt`, sub_block1 included.
        shares = None if cls == "Rice2020OverfittingNet" else "wide_resnet"
        spec = wrn_spec if shares is None else dict(wrn_spec, sub_block1=True)
        yield (cls, net, spec, norm, f"cifar10.py: {cls}(depth=10, widen_factor=1)", shares)


def shapes(rb: pathlib.Path) -> dict:
    """Names and shapes of full-size reference networks (on the meta device)."""
    arch = rb / "model_zoo" / "architectures"
    wrn = sys.modules["rb_wide_resnet"]
    dm = sys.modules["rb_dm_wide_resnet"]
    res = load_file(arch / "resnet.py", "rb_resnet")
    full = {
        "wide_resnet-28-10": lambda: wrn.WideResNet(depth=28, widen_factor=10),
        "wide_resnet-34-20-sub_block1": lambda: wrn.WideResNet(depth=34, widen_factor=20, sub_block1=True),
        "wide_resnet-70-16": lambda: wrn.WideResNet(depth=70, widen_factor=16),
        "dm_wide_resnet-70-16": lambda: dm.DMWideResNet(num_classes=10, depth=70, width=16, activation_fn=dm.Swish),
        "dm_preact_resnet-18": lambda: dm.DMPreActResNet(num_classes=10, depth=18, width=0, activation_fn=dm.Swish),
        "resnet18": lambda: res.ResNet18(),
    }
    out = {}
    with torch.device("meta"):
        for name, build in full.items():
            out[name] = {k: list(v.shape) for k, v in build().state_dict().items()}
    return out


def variants(model: torch.nn.Module, out: pathlib.Path) -> None:
    """Checkpoint layouts other libraries write, and bad files, from one small state dict."""
    d = out / "variants"
    d.mkdir(exist_ok=True)
    sd = model.state_dict()
    torch.save(sd, d / "legacy.pt", _use_new_zipfile_serialization=False)
    wat = {"epoch": 3, "state_dict": {f"module.{k}": v for k, v in sd.items()},
           "optimizer": {"state": {}, "param_groups": [{"lr": 0.1}]}}
    torch.save(wat, d / "wat_style.pth")
    torch.save({"model": sd}, d / "nested_model.pt")

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo this must never run",))

    torch.save({"conv_2d.weight": sd["conv_2d.weight"], "hook": Payload()}, d / "code.pt")
    whole = (out / "dm_preact_resnet.pt").read_bytes()
    (d / "truncated.pt").write_bytes(whole[: len(whole) // 2])


def toml_value(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def cards(manifest: dict, out: pathlib.Path) -> None:
    """A model card per fixture (`cards/<model>.card.toml`), for `classwise eval --card` and
    `classwise export --card` (tools/zoo/check_export.py)."""
    d = out / "cards"
    d.mkdir(exist_ok=True)
    for name, m in manifest["models"].items():
        dataset = "cifar100" if m["num_classes"] == 100 else "cifar10"
        lines = [
            f"name = {json.dumps(name)}",
            f"file = {json.dumps('../' + m['file'])}",
            f"dataset = \"{dataset}\"",
            'threat_model = "Linf"',
            'eps = "8/255"',
            f"architecture = {toml_value(m['architecture'])}",
            f"normalization = {toml_value(m.get('normalization', 'none'))}",
            f"source = {json.dumps('tools/zoo/fixtures.py: ' + m['source'])}",
        ]
        (d / f"{name}.card.toml").write_text("\n".join(lines) + "\n")


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "trainer/tests/fixtures/zoo")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    x = torch.rand(4, 3, 32, 32, generator=gen)
    expected = {"input": x}
    manifest = {"robustbench": "1.1.1", "torch": torch.__version__, "models": {}}
    states = {}
    for name, model, spec, norm, source, shares in models(robustbench_dir()):
        randomise_bn(model, gen)
        if shares is not None:
            wanted = model.state_dict().keys()
            model.load_state_dict({k: v for k, v in states[shares].items() if k in wanted})
        model.eval()
        with torch.no_grad():
            expected[f"{name}.logits"] = model(x).contiguous()
        states[name] = model.state_dict()
        file = f"{shares or name}.pt"
        if shares is None:
            torch.save(model.state_dict(), out / file)
        classes = expected[f"{name}.logits"].shape[1]
        entry = {"file": file, "architecture": spec, "num_classes": classes, "source": source}
        if norm is not None:
            entry["normalization"] = norm
        manifest["models"][name] = entry
        if name == "dm_preact_resnet":
            variants(model, out)
    save_file(expected, out / "expected.safetensors")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    cards(manifest, out)
    (out / "shapes.json").write_text(json.dumps(shapes(robustbench_dir())) + "\n")
    for p in sorted(out.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:>9}  {p}")


if __name__ == "__main__":
    main()
