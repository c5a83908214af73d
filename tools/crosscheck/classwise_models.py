"""PyTorch twins of classwise's networks (trainer/src/model/*.rs), for the cross-check only.

Each class mirrors the Rust definition layer for layer and keeps its parameter names, so a
classwise checkpoint loads with ``load_state_dict(strict=True)`` (see ``load_checkpoint``).
Shared conventions of the Rust code (layers.rs): BatchNorm eps 1e-5, momentum 0.1; the ResNet
family's convs are 3x3 padding 1 (1x1 padding 0 for projections) without bias; 2x2 max-pools
floor odd sizes; the ResNet family pools adaptively to 1x1. The optional normalisation
(x - mean) / std, in f32, is the first layer (normalize.rs): inputs are images in [0, 1].
Dropout (SmallCNN) only acts in train mode; the cross-check runs in eval mode.
"""

import json
from collections import OrderedDict

import torch
from torch import nn
import torch.nn.functional as F
from safetensors import safe_open

SPEC_KEY = "classwise.model_spec"


def read_metadata(path):
    """The string metadata of a safetensors file, with classwise's nesting undone.

    classwise stores its metadata map as one JSON string under the key ``classwise``
    (trainer/src/model/safetensors.rs); other keys are taken as they are.
    """
    with safe_open(path, framework="pt") as f:
        raw = f.metadata() or {}
    meta = {}
    for key, value in raw.items():
        if key == "classwise":
            meta.update(json.loads(value))
        else:
            meta[key] = value
    return meta


def bn(channels):
    return nn.BatchNorm2d(channels, eps=1e-5, momentum=0.1)


def conv3x3(cin, cout, stride):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def conv1x1(cin, cout, stride):
    return nn.Conv2d(cin, cout, 1, stride=stride, padding=0, bias=False)


def global_avg_pool(x):
    return F.adaptive_avg_pool2d(x, 1).flatten(1)


class SmallCnn(nn.Module):
    """small_cnn.rs: 4 valid 3x3 convs (bias) with ReLU, max-pool after the 2nd and 4th,
    fc1 -> ReLU -> Dropout(0.5) -> fc2 -> ReLU -> fc3."""

    def __init__(self, in_ch, height, width, classes):
        super().__init__()
        side = lambda n: ((n - 4) // 2 - 4) // 2
        self.feature_extractor = nn.Sequential(OrderedDict([
            ("conv1", nn.Conv2d(in_ch, 32, 3)), ("relu1", nn.ReLU()),
            ("conv2", nn.Conv2d(32, 32, 3)), ("relu2", nn.ReLU()),
            ("pool1", nn.MaxPool2d(2, 2)),
            ("conv3", nn.Conv2d(32, 64, 3)), ("relu3", nn.ReLU()),
            ("conv4", nn.Conv2d(64, 64, 3)), ("relu4", nn.ReLU()),
            ("pool2", nn.MaxPool2d(2, 2)),
        ]))
        self.classifier = nn.Sequential(OrderedDict([
            ("fc1", nn.Linear(64 * side(height) * side(width), 200)), ("relu1", nn.ReLU()),
            ("drop", nn.Dropout(0.5)),
            ("fc2", nn.Linear(200, 200)), ("relu2", nn.ReLU()),
            ("fc3", nn.Linear(200, classes)),
        ]))

    def forward(self, x):
        return self.classifier(self.feature_extractor(x).flatten(1))


class SmallCnnCifar(nn.Module):
    """small_cnn_cifar.rs: 3 blocks of [conv 3x3 pad 1 (bias) -> BN -> ReLU] x 2 -> max-pool,
    widths 64, 128, 196; fc1 -> ReLU -> fc2. Names block{b}_conv{j}, batchnorm{b}_{j}."""

    widths = (64, 128, 196)

    def __init__(self, in_ch, height, width, classes):
        super().__init__()
        cin = in_ch
        for b, out in enumerate(self.widths, 1):
            for j in (1, 2):
                self.add_module(f"block{b}_conv{j}", nn.Conv2d(cin, out, 3, padding=1))
                self.add_module(f"batchnorm{b}_{j}", bn(out))
                cin = out
        self.fc1 = nn.Linear(cin * (height // 8) * (width // 8), 256)
        self.fc2 = nn.Linear(256, classes)

    def forward(self, x):
        for b in range(1, len(self.widths) + 1):
            for j in (1, 2):
                conv = getattr(self, f"block{b}_conv{j}")
                x = F.relu(getattr(self, f"batchnorm{b}_{j}")(conv(x)))
            x = F.max_pool2d(x, 2, 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class PreActBlock(nn.Module):
    """preact_resnet.rs: o = ReLU(BN1(x)); shortcut = conv1x1(o) if the shape changes else x;
    out = conv2(ReLU(BN2(conv1(o)))) + shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = bn(cin)
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn2 = bn(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(conv1x1(cin, cout, stride))

    def forward(self, x):
        o = F.relu(self.bn1(x))
        shortcut = self.shortcut(o) if hasattr(self, "shortcut") else x
        return self.conv2(F.relu(self.bn2(self.conv1(o)))) + shortcut


class BasicBlock(nn.Module):
    """resnet.rs: ReLU(BN2(conv2(ReLU(BN1(conv1(x))))) + shortcut(x)), the shortcut being
    conv1x1 -> BN when the shape changes, else the identity."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = bn(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        self.bn2 = bn(cout)
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(conv1x1(cin, cout, stride), bn(cout))

    def forward(self, x):
        o = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        shortcut = self.shortcut(x) if hasattr(self, "shortcut") else x
        return F.relu(o + shortcut)


def residual_stages(stages, blocks_per_stage, cin, block):
    """One nn.Sequential per (width, first stride) of ``stages`` (layers.rs
    residual_stages): the first block changes width and stride, the others keep them."""
    out = []
    for width, first_stride in stages:
        blocks = []
        for i in range(blocks_per_stage):
            blocks.append(block(cin, width, first_stride if i == 0 else 1))
            cin = width
        out.append(nn.Sequential(*blocks))
    return out, cin


RESNET18_STAGES = [(64, 1), (128, 2), (256, 2), (512, 2)]


class PreActResNet18(nn.Module):
    """preact_resnet.rs: conv1 -> layer1..4 (2 PreActBlocks each) -> [bn -> ReLU if
    final_bn_relu] -> global average pool -> linear."""

    def __init__(self, in_ch, classes, final_bn_relu):
        super().__init__()
        self.conv1 = conv3x3(in_ch, 64, 1)
        layers, width = residual_stages(RESNET18_STAGES, 2, 64, PreActBlock)
        for i, layer in enumerate(layers, 1):
            self.add_module(f"layer{i}", layer)
        self.bn = bn(width) if final_bn_relu else None
        self.linear = nn.Linear(width, classes)

    def forward(self, x):
        o = self.conv1(x)
        for i in range(1, 5):
            o = getattr(self, f"layer{i}")(o)
        if self.bn is not None:
            o = F.relu(self.bn(o))
        return self.linear(global_avg_pool(o))


class ResNet18(nn.Module):
    """resnet.rs: conv1 -> bn1 -> ReLU -> layer1..4 (2 BasicBlocks each) -> global average
    pool -> linear."""

    def __init__(self, in_ch, classes):
        super().__init__()
        self.conv1 = conv3x3(in_ch, 64, 1)
        self.bn1 = bn(64)
        layers, width = residual_stages(RESNET18_STAGES, 2, 64, BasicBlock)
        for i, layer in enumerate(layers, 1):
            self.add_module(f"layer{i}", layer)
        self.linear = nn.Linear(width, classes)

    def forward(self, x):
        o = F.relu(self.bn1(self.conv1(x)))
        for i in range(1, 5):
            o = getattr(self, f"layer{i}")(o)
        return self.linear(global_avg_pool(o))


class WideBlock(nn.Module):
    """wide_resnet.rs: a = ReLU(BN1(x)); shortcut = convShortcut(a) if the width or stride
    changes, else x; out = conv2(ReLU(BN2(conv1(a)))) + shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = bn(cin)
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn2 = bn(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        if cin != cout or stride != 1:
            self.convShortcut = conv1x1(cin, cout, stride)

    def forward(self, x):
        a = F.relu(self.bn1(x))
        shortcut = self.convShortcut(a) if hasattr(self, "convShortcut") else x
        return self.conv2(F.relu(self.bn2(self.conv1(a)))) + shortcut


class WideGroup(nn.Module):
    """Holds a group's blocks under ``layer`` (names block{g}.layer.{i}.*)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


class WideResNet(nn.Module):
    """wide_resnet.rs: conv1 (16) -> block1..3 ((depth - 4) / 6 WideBlocks of widths 16k, 32k,
    64k, first strides 1, 2, 2) -> bn1 -> ReLU -> global average pool -> fc."""

    def __init__(self, in_ch, classes, depth, widen):
        super().__init__()
        n = (depth - 4) // 6
        self.conv1 = conv3x3(in_ch, 16, 1)
        stages = [(16 * widen, 1), (32 * widen, 2), (64 * widen, 2)]
        layers, width = residual_stages(stages, n, 16, WideBlock)
        for g, layer in enumerate(layers, 1):
            self.add_module(f"block{g}", WideGroup(layer))
        self.bn1 = bn(width)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        o = self.conv1(x)
        for g in range(1, 4):
            o = getattr(self, f"block{g}")(o)
        return self.fc(global_avg_pool(F.relu(self.bn1(o))))


class Normalized(nn.Module):
    """(x - mean) / std per channel in f32, then the network (normalize.rs, mod.rs). mean and
    std are non-persistent buffers: they are not in the state dict (classwise keeps them in
    the spec, not among the weights)."""

    def __init__(self, net, normalization, channels):
        super().__init__()
        self.net = net
        self.normalize = normalization is not None
        if self.normalize:
            for name in ("mean", "std"):
                values = torch.tensor(normalization[name], dtype=torch.float64)
                t = values.to(torch.float32).reshape(1, channels, 1, 1)
                self.register_buffer(name, t, persistent=False)

    def forward(self, x):
        if self.normalize:
            x = (x - self.mean) / self.std
        return self.net(x)


SPEC_DEFAULTS = {"preact_resnet18": {"final_bn_relu": True}, "small_cnn": {"zero_last_layer": True}}


def canonical_spec(spec):
    """The spec with serde's defaults filled in (spec.rs), for comparing two specs."""
    arch = dict(SPEC_DEFAULTS.get(spec["architecture"]["kind"], {}), **spec["architecture"])
    return dict(spec, architecture=arch, normalization=spec.get("normalization"))


def build_network(spec):
    """The bare network (no normalisation) of a classwise ModelSpec given as a dict."""
    arch = spec["architecture"]
    kind = arch["kind"]
    k = spec["num_classes"]
    c, h, w = spec["input_shape"]
    if kind == "small_cnn":
        return SmallCnn(c, h, w, k)
    if kind == "small_cnn_cifar":
        return SmallCnnCifar(c, h, w, k)
    if kind == "preact_resnet18":
        return PreActResNet18(c, k, arch.get("final_bn_relu", True))
    if kind == "resnet18":
        return ResNet18(c, k)
    if kind == "wide_resnet":
        return WideResNet(c, k, arch["depth"], arch["widen"])
    raise ValueError(f"unknown architecture kind {kind!r} in the model spec")


def build_model(spec):
    """Normalisation (if any) followed by the network: inputs are images in [0, 1]."""
    return Normalized(build_network(spec), spec.get("normalization"), spec["input_shape"][0])


def describe(spec):
    arch = dict(spec["architecture"])
    kind = arch.pop("kind")
    flags = ", ".join(f"{k}={v}" for k, v in arch.items())
    c, h, w = spec["input_shape"]
    norm = ", normalised" if spec.get("normalization") else ""
    return f"{kind}{f' ({flags})' if flags else ''}, {spec['num_classes']} classes, " \
           f"input {c}x{h}x{w}{norm}"


def load_checkpoint(path):
    """(model in eval mode, spec dict, notes) from a classwise checkpoint.

    The state dict is loaded with strict=True. BatchNorm's ``num_batches_tracked`` buffers,
    which classwise (tch) does not keep, are filled with 0 when the file lacks them: they only
    matter for momentum=None training, never in eval mode.
    """
    from safetensors.torch import load_file

    meta = read_metadata(path)
    if SPEC_KEY not in meta:
        raise ValueError(f"{path}: no `{SPEC_KEY}` in the safetensors metadata")
    spec = json.loads(meta[SPEC_KEY])
    model = build_model(spec)
    state = load_file(path)
    notes = []
    filled = [name for name in model.net.state_dict()
              if name.endswith("num_batches_tracked") and name not in state]
    for name in filled:
        state[name] = torch.tensor(0, dtype=torch.long)
    if filled:
        notes.append(f"{len(filled)} BatchNorm num_batches_tracked buffers absent from the "
                     "file, set to 0 (unused in eval mode)")
    model.net.load_state_dict(state, strict=True)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model, spec, notes
