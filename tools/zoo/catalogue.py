#!/usr/bin/env python3
"""Generate trainer/catalogue/robustbench.toml: the RobustBench CIFAR-10/CIFAR-100 Linf model zoo
as classwise architecture specs.

What: every entry of the ``linf`` lists of RobustBench's ``robustbench/model_zoo/cifar10.py``
and ``cifar100.py`` becomes either a ``[[model]]`` (its network is exactly one of classwise's
architectures: ``wide_resnet``, ``dm_wide_resnet``, ``dm_preact_resnet``, ``resnet18``,
``preact_resnet18``, with the input normalisation its forward applies) or an
``[[unsupported]]`` entry with the reason. Facts (accuracies, paper, eps) come from
``model_info/<dataset>/Linf/<name>.json`` of the same checkout.

How: the zoo files and the architecture modules they import are parsed with ``ast`` (nothing
is imported: robustbench, torch and timm need not be installed). Each entry's constructor (a
class, a function, or a lambda calling one) is followed to a RobustBench base network, its
arguments are bound against the real signatures (defaults included), and a subclass is
accepted only if its ``__init__`` does nothing but call ``super().__init__`` and register
buffers, and its ``forward`` is one recognised normalisation followed by
``return super().forward(x)``. Anything else is unsupported.

Run (from the classwise repository root)::

    python3 tools/zoo/catalogue.py --repo PATH/TO/robustbench --out trainer/catalogue/robustbench.toml

``--repo`` is either a git directory (bare repository or ``.git``; files are read with
``git show REV:path``, ``--rev`` defaults to HEAD) or a plain checkout directory (a work
tree; its commit is taken from ``git rev-parse HEAD`` there, or from ``--commit``).
Sources: https://github.com/RobustBench/robustbench (the file header records the commit).
Without ``--out`` the TOML goes to stdout; counts per dataset and kind go to stderr.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field

ZOO_FILES = {
    "cifar10": "robustbench/model_zoo/cifar10.py",
    "cifar100": "robustbench/model_zoo/cifar100.py",
}
NUM_CLASSES = {"cifar10": 10, "cifar100": 100}
UTILS = "robustbench/utils.py"
PKG = "robustbench"
ARCH = "robustbench.model_zoo.architectures"

# RobustBench callables that are (parameterised) classwise networks.
WIDE_RESNET = f"{ARCH}.wide_resnet.WideResNet"
DM_WIDE_RESNET = f"{ARCH}.dm_wide_resnet.DMWideResNet"
DM_PREACT_RESNET = f"{ARCH}.dm_wide_resnet.DMPreActResNet"
RESNET = f"{ARCH}.resnet.ResNet"
PREACT_RESNET = f"{ARCH}.resnet.PreActResNet"
FAMILIES = (WIDE_RESNET, DM_WIDE_RESNET, DM_PREACT_RESNET, RESNET, PREACT_RESNET)

BASIC_BLOCK = f"{ARCH}.resnet.BasicBlock"
PREACT_BLOCK = f"{ARCH}.resnet.PreActBlock"
PREACT_BLOCK_V2 = f"{ARCH}.resnet.PreActBlockV2"

# Activation classes of the DM networks.
ACTIVATIONS = {
    f"{ARCH}.dm_wide_resnet.Swish": "swish",
    "torch.nn.SiLU": "swish",
    "torch.nn.ReLU": "relu",
}
NN_MODULE = "torch.nn.Module"

# Ding2020MMANet's per-image standardisation, statement by statement (ast.unparse form).
PER_IMAGE_STANDARDIZE = [
    "mu = x.mean(dim=(1, 2, 3), keepdim=True)",
    "std = x.std(dim=(1, 2, 3), keepdim=True)",
    "std_min = torch.ones_like(std) / (x.shape[1] * x.shape[2] * x.shape[3]) ** 0.5",
    "x = (x - mu) / torch.max(std, std_min)",
]

# One-sentence descriptions for constructors the analysis rejects as a whole (it decides
# *that* they are unsupported; these say *what* they are). Keys: qualified names.
DESCRIPTIONS = {
    f"{ARCH}.boosting_wide_resnet.BoostingWideResNet":
        "BoostingWideResNet's forward L2-normalises the pooled features and the rows of the "
        "bias-free fc weight (Pang et al.'s normalised softmax), which the wide_resnet spec "
        "cannot express",
    f"{ARCH}.resnest.ResNest152":
        "ResNeSt-152 (split-attention bottlenecks) is not a classwise architecture",
    f"{ARCH}.robust_wide_resnet.RobustWideResNet":
        "RobustWideResNet (stage widths 320/640/512 rather than 16k/32k/64k, adaptive pooling, "
        "parameters named stem_conv/blocks.i) is not a classwise architecture",
    f"{ARCH}.paf_wide_resnet.pssilu_wrn_28_10":
        "PAF_WideResNet-28-10 uses the learnable PSSiLU activation throughout, which the "
        "wide_resnet spec (ReLU) cannot express",
    f"{ARCH}.sodef_layers.rebuffi_sodef":
        "SODEF appends an orthogonal FC layer and a neural-ODE block to a DMWideResNet-70-16 "
        "feature extractor (an nn.Sequential), which no classwise spec expresses",
    f"{ARCH}.robust_resnet.get_model":
        "WRN-A4 (pre-activation WRN with per-stage depths 27/28/13, widths 10/14/6 and SiLU) "
        "is not a classwise architecture",
    f"{ARCH}.comp_model.get_composite_model":
        "a composite of a standard ResNet-152 and a robust WideResNet-70-16 mixed by a policy "
        "network (three checkpoints) is not a single classwise network",
    f"{ARCH}.comp_model.get_nonlin_mixed_classifier":
        "MixedNUTS nonlinearly mixes a standard ResNet-152 with a robust model (two "
        "checkpoints), which is not a single classwise network",
    f"{ARCH}.robustarch_wide_resnet.get_model":
        "RaWideResNet-70-16 (96-wide stem, stage depths 30/31/10, squeeze-and-excitation, SiLU) "
        "is not a classwise architecture",
    f"{ARCH}.sparsified_model.get_sparse_model":
        "MeanSparse inserts mean-centred sparsification (thresholding) layers into the "
        "network, which no classwise spec expresses",
    "timm.create_model":
        "a timm vision transformer (XCiT) is not a classwise architecture",
    f"{PKG}.model_zoo.cifar10.Chen2020AdversarialNet":
        "an ensemble of three pre-activation-bottleneck ResNet-50 branches whose softmax "
        "outputs are averaged is not a classwise architecture",
}


class Unsupported(Exception):
    """The entry is not one of the classwise specs; the message is the reason."""


class Unresolvable(Exception):
    """An expression could not be evaluated statically."""


# --------------------------------------------------------------------------- sources


class Source:
    """Files of one RobustBench commit: a git directory or a plain checkout."""

    def __init__(self, path: str, rev: str, commit: str | None):
        self.path = path
        self.plain = os.path.isfile(os.path.join(path, ZOO_FILES["cifar10"]))
        if self.plain:
            self.commit = commit or self._git(["-C", path, "rev-parse", "HEAD"], quiet=True)
            if not self.commit:
                sys.exit(f"{path}: not a git work tree; pass --commit")
            if not commit and self._git(["-C", path, "status", "--porcelain"], quiet=True):
                self.commit += "-dirty"
            self.date = self._git(["-C", path, "log", "-1", "--format=%cs"], quiet=True)
        else:
            self.git = ["--git-dir", path]
            self.commit = commit or self._git(self.git + ["rev-parse", "--verify", f"{rev}^{{commit}}"])
            self.date = self._git(self.git + ["log", "-1", "--format=%cs", self.commit])

    @staticmethod
    def _git(args: list[str], quiet: bool = False) -> str:
        try:
            out = subprocess.run(["git", *args], check=True, capture_output=True, text=True)
        except (subprocess.CalledProcessError, FileNotFoundError) as e:
            if quiet:
                return ""
            sys.exit(f"git {' '.join(args)} failed: {getattr(e, 'stderr', e)}")
        return out.stdout.strip()

    def read(self, rel: str) -> str | None:
        if self.plain:
            p = os.path.join(self.path, rel)
            if not os.path.isfile(p):
                return None
            with open(p, encoding="utf-8") as f:
                return f.read()
        try:
            out = subprocess.run(
                ["git", *self.git, "show", f"{self.commit}:{rel}"],
                check=True, capture_output=True,
            )
        except subprocess.CalledProcessError:
            return None
        return out.stdout.decode("utf-8")


# --------------------------------------------------------------------------- modules


@dataclass(frozen=True)
class Sym:
    """A resolved name: its qualified name and, if it is RobustBench code, its definition."""

    qual: str
    node: ast.AST | None = None
    module: "Module | None" = None

    @property
    def short(self) -> str:
        return self.qual.rsplit(".", 1)[-1]


@dataclass
class Ref:
    """A value that is a reference to a class/function (e.g. an activation class)."""

    sym: Sym


class Module:
    def __init__(self, loader: "Loader", dotted: str, text: str):
        self.loader = loader
        self.dotted = dotted
        self.rel = dotted.replace(".", "/") + ".py"
        self.tree = ast.parse(text, filename=self.rel)
        self.defs: dict[str, ast.AST] = {}
        self.values: dict[str, ast.expr] = {}
        self.imports: dict[str, str] = {}  # local name -> qualified name
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef)):
                self.defs[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name):
                self.values[stmt.targets[0].id] = stmt.value
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname:
                        self.imports[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.imports[top] = top
            elif isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ""
                if stmt.level:
                    pkg = dotted.split(".")[: -stmt.level]
                    base = ".".join(pkg + ([base] if base else []))
                for a in stmt.names:
                    self.imports[a.asname or a.name] = f"{base}.{a.name}"

    def resolve(self, name: str) -> Sym:
        if name in self.defs:
            return Sym(f"{self.dotted}.{name}", self.defs[name], self)
        if name in self.imports:
            return self.loader.resolve_qual(self.imports[name])
        if name in self.values:
            return Sym(f"{self.dotted}.{name}", self.values[name], self)
        raise Unresolvable(f"{self.rel}: name {name!r} is not defined at module level")

    def resolve_expr(self, node: ast.expr) -> Sym:
        """A Name or dotted Attribute chain as a symbol."""
        if isinstance(node, ast.Name):
            return self.resolve(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve_expr(node.value)
            if base.node is None and base.module is None:  # external (torch, timm, ...)
                return self.loader.resolve_qual(f"{base.qual}.{node.attr}")
            if isinstance(base.node, ast.Module):
                return base.module.resolve(node.attr)
        raise Unresolvable(f"{self.rel}: cannot resolve {ast.unparse(node)}")


class Loader:
    def __init__(self, source: Source):
        self.source = source
        self.modules: dict[str, Module | None] = {}

    def module(self, dotted: str) -> Module | None:
        if dotted not in self.modules:
            text = self.source.read(dotted.replace(".", "/") + ".py") if dotted.startswith(PKG) else None
            self.modules[dotted] = Module(self, dotted, text) if text is not None else None
        return self.modules[dotted]

    def resolve_qual(self, qual: str) -> Sym:
        """`pkg.mod.Name` -> definition in that module; `pkg.mod` -> the module itself."""
        mod = self.module(qual) if qual.startswith(PKG) else None
        if mod is not None:
            return Sym(qual, mod.tree, mod)
        if "." in qual and qual.startswith(PKG):
            parent, name = qual.rsplit(".", 1)
            pm = self.module(parent)
            if pm is not None:
                return pm.resolve(name)
        return Sym(qual)  # outside RobustBench: only its name is known


# --------------------------------------------------------------------------- evaluation


def evaluate(node: ast.expr, mod: Module, env: dict):
    """Statically evaluate a constructor argument."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [evaluate(e, mod, env) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, mod, env)
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left, mod, env), evaluate(node.right, mod, env)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.Div: lambda: a / b, ast.FloorDiv: lambda: a // b}
        if type(node.op) in ops:
            return ops[type(node.op)]()
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, (ast.Name, ast.Attribute)):
        sym = mod.resolve_expr(node)
        if isinstance(sym.node, ast.expr):  # a module-level constant
            return evaluate(sym.node, sym.module, {})
        return Ref(sym)
    if isinstance(node, ast.Call):
        # torch.tensor(values) and .view(...) of it: the values (shape checked by callers).
        if isinstance(node.func, ast.Attribute) and node.func.attr == "view":
            return evaluate(node.func.value, mod, env)
        if isinstance(node.func, (ast.Name, ast.Attribute)):
            sym = mod.resolve_expr(node.func)
            if sym.qual == "torch.tensor" and len(node.args) == 1 and not node.keywords:
                return evaluate(node.args[0], mod, env)
    raise Unresolvable(f"{mod.rel}:{getattr(node, 'lineno', '?')}: cannot evaluate {ast.unparse(node)}")


def bind(fn: ast.FunctionDef, mod: Module, args: list, kwargs: dict, method: bool) -> dict:
    """Bind evaluated arguments to `fn`'s parameters (defaults evaluated in `mod`)."""
    a = fn.args
    params = [p.arg for p in a.posonlyargs + a.args]
    if method:
        params = params[1:]
    defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
    bound: dict = {}
    if len(args) > len(params):
        raise Unresolvable(f"{fn.name}: too many positional arguments")
    bound.update(zip(params, args))
    extra = {}
    kwonly = [p.arg for p in a.kwonlyargs]
    for k, v in kwargs.items():
        if k in bound:
            raise Unresolvable(f"{fn.name}: {k} given twice")
        if k in params or k in kwonly:
            bound[k] = v
        elif a.kwarg is not None:
            extra[k] = v
        else:
            raise Unresolvable(f"{fn.name}: unexpected keyword {k}")
    for p in params:
        if p not in bound:
            if p not in defaults:
                raise Unresolvable(f"{fn.name}: missing argument {p}")
            bound[p] = evaluate(defaults[p], mod, {})
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        if p.arg not in bound:
            if d is None:
                raise Unresolvable(f"{fn.name}: missing argument {p.arg}")
            bound[p.arg] = evaluate(d, mod, {})
    if a.kwarg is not None:
        bound[a.kwarg.arg] = extra
    return bound


def call_args(call: ast.Call, mod: Module, env: dict) -> tuple[list, dict]:
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        raise Unresolvable(f"{mod.rel}:{call.lineno}: *args/**kwargs in {ast.unparse(call)}")
    return ([evaluate(x, mod, env) for x in call.args],
            {k.arg: evaluate(k.value, mod, env) for k in call.keywords})


def method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


# --------------------------------------------------------------------------- analysis


@dataclass
class Spec:
    architecture: dict
    normalization: dict | None = None
    buffers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def floats(value, what: str) -> list[float]:
    if isinstance(value, (int, float)):
        value = [value] * 3
    if not (isinstance(value, list) and len(value) == 3
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        raise Unresolvable(f"{what}: expected three numbers, got {value!r}")
    return [float(v) for v in value]


def activation(value, what: str) -> str:
    if isinstance(value, Ref) and value.sym.qual in ACTIVATIONS:
        return ACTIVATIONS[value.sym.qual]
    name = value.sym.qual if isinstance(value, Ref) else repr(value)
    raise Unsupported(f"{what} uses activation {name}, which is neither ReLU nor Swish/SiLU")


def check_classes(b: dict, num_classes: int, what: str):
    if b["num_classes"] != num_classes:
        raise Unsupported(f"{what} is built with num_classes={b['num_classes']}, "
                          f"but the data set has {num_classes} classes")


def family(qual: str, b: dict, num_classes: int) -> Spec:
    """Map a RobustBench base network with bound arguments to a classwise spec."""
    short = qual.rsplit(".", 1)[-1]
    check_classes(b, num_classes, short)
    if qual == WIDE_RESNET:
        depth, widen = b["depth"], b["widen_factor"]
        if (depth - 4) % 6:
            raise Unsupported(f"WideResNet depth {depth} has (depth-4) not divisible by 6")
        arch = {"kind": "wide_resnet", "depth": depth, "widen": widen}
        if b["sub_block1"]:
            arch["sub_block1"] = True
        if not b["bias_last"]:
            arch["bias_last"] = False
        spec = Spec(arch)
        if b["dropRate"]:
            spec.notes.append(f"dropRate={b['dropRate']} (dropout is inactive in evaluation)")
        return spec
    if qual in (DM_WIDE_RESNET, DM_PREACT_RESNET):
        if b["num_input_channels"] != 3:
            raise Unsupported(f"{short} has {b['num_input_channels']} input channels")
        act = activation(b["activation_fn"], short)
        if qual == DM_WIDE_RESNET:
            if (b["depth"] - 4) % 6:
                raise Unsupported(f"DMWideResNet depth {b['depth']} has (depth-4) not divisible by 6")
            arch = {"kind": "dm_wide_resnet", "depth": b["depth"], "width": b["width"], "activation": act}
        else:
            if b["depth"] not in (18, 34) or b["width"] != 0:
                raise Unsupported(f"DMPreActResNet(depth={b['depth']}, width={b['width']}) "
                                  f"raises in RobustBench's constructor")
            arch = {"kind": "dm_preact_resnet", "depth": b["depth"], "activation": act}
        if b["padding"]:
            arch["padding"] = b["padding"]
        # mean/std are persistent=False buffers: not in the checkpoint.
        norm = {"mean": floats(b["mean"], f"{short}.mean"), "std": floats(b["std"], f"{short}.std")}
        return Spec(arch, norm)
    if qual == RESNET:
        block = b["block"]
        blocks = b["num_blocks"]
        bname = block.sym.short if isinstance(block, Ref) else repr(block)
        if isinstance(block, Ref) and block.sym.qual == BASIC_BLOCK and blocks == [2, 2, 2, 2]:
            return Spec({"kind": "resnet18"})
        raise Unsupported(f"ResNet({bname}, {blocks}) is not ResNet-18 (BasicBlock, [2, 2, 2, 2]), "
                          f"the only classwise ResNet")
    if qual == PREACT_RESNET:
        block = b["block"]
        blocks = b["num_blocks"]
        bq = block.sym.qual if isinstance(block, Ref) else None
        if blocks != [2, 2, 2, 2] or bq not in (PREACT_BLOCK, PREACT_BLOCK_V2):
            bname = block.sym.short if isinstance(block, Ref) else repr(block)
            raise Unsupported(f"PreActResNet({bname}, {blocks}) is not a PreActResNet-18")
        # classwise's preact_resnet18 block (trainer/src/model/preact_resnet.rs, Rice et al.)
        # feeds the projection shortcut ReLU(BN(x)). RobustBench's PreActBlockV2 and
        # PreActBlock(out_shortcut=True) do the same; PreActBlock(out_shortcut=False) feeds it x.
        if bq == PREACT_BLOCK and not b["out_shortcut"]:
            raise Unsupported(
                "PreActResNet(PreActBlock, out_shortcut=False) feeds the projection shortcuts "
                "the raw block input x, whereas classwise's preact_resnet18 feeds them ReLU(BN(x))")
        return Spec({"kind": "preact_resnet18", "final_bn_relu": bool(b["bn_before_fc"])})
    raise AssertionError(qual)


def is_super_call(node: ast.expr, attr: str) -> bool:
    """`super().attr` or `super(Cls, self).attr` as a call target."""
    return (isinstance(node, ast.Attribute) and node.attr == attr
            and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "super")


def is_self_attr(node: ast.expr, name: str | None = None) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self" and (name is None or node.attr == name):
        return node.attr
    return None


def forward_normalization(fwd: ast.FunctionDef, buffers: dict[str, list[float]], what: str) -> dict | None:
    """The normalisation a subclass forward applies before `return super().forward(x)`."""
    params = [p.arg for p in fwd.args.args]
    body = [s for s in fwd.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(params) != 2 or not body:
        raise Unsupported(f"{what}.forward has an unexpected signature")
    x = params[1]
    last = body[-1]
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Call)
            and is_super_call(last.value.func, "forward") and len(last.value.args) == 1
            and not last.value.keywords and isinstance(last.value.args[0], ast.Name)
            and last.value.args[0].id == x):
        raise Unsupported(f"{what}.forward re-implements the network instead of calling "
                          f"super().forward({x})")
    pre = body[:-1]
    if not pre:
        return None
    text = [ast.unparse(s) for s in pre]
    if x == "x" and text == PER_IMAGE_STANDARDIZE:
        return {"per_image": "standardize"}
    if len(pre) == 1 and isinstance(pre[0], ast.Assign) and len(pre[0].targets) == 1 \
            and isinstance(pre[0].targets[0], ast.Name) and pre[0].targets[0].id == x:
        v = pre[0].value
        # x = (x - self.m) / self.s
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Div) and isinstance(v.left, ast.BinOp) \
                and isinstance(v.left.op, ast.Sub) and isinstance(v.left.left, ast.Name) \
                and v.left.left.id == x:
            m, s = is_self_attr(v.left.right), is_self_attr(v.right)
            if m in buffers and s in buffers:
                return {"mean": buffers[m], "std": buffers[s]}
        # x = a * x - b  ==  (x - b/a) / (1/a)
        if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Sub) and isinstance(v.left, ast.BinOp) \
                and isinstance(v.left.op, ast.Mult) and isinstance(v.left.left, ast.Constant) \
                and isinstance(v.left.right, ast.Name) and v.left.right.id == x \
                and isinstance(v.right, ast.Constant):
            a, b = float(v.left.left.value), float(v.right.value)
            if a > 0:
                return {"mean": [b / a] * 3, "std": [1.0 / a] * 3}
    raise Unsupported(f"{what}.forward applies `{'; '.join(text)}` before the network, which no "
                      f"classwise normalisation expresses")


def subclass(sym: Sym, args: list, kwargs: dict, num_classes: int) -> Spec:
    """A RobustBench class: a family base plus buffers and a recognised forward prefix."""
    cls, mod = sym.node, sym.module
    what = cls.name
    if len(cls.bases) != 1 or cls.keywords:
        raise Unsupported(f"{what} has several bases")
    base = mod.resolve_expr(cls.bases[0])
    if base.qual not in FAMILIES:
        if base.qual == NN_MODULE:
            raise Unsupported(f"{what} is a custom nn.Module, not a classwise architecture")
        raise Unsupported(f"{what} subclasses {base.short}, which is not a classwise architecture")
    others = [s for s in cls.body if not (
        (isinstance(s, ast.FunctionDef) and s.name in ("__init__", "forward"))
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)))]
    if others:
        raise Unsupported(f"{what} defines {', '.join(getattr(s, 'name', type(s).__name__) for s in others)}")
    init = method(cls, "__init__")
    if init is None:
        raise Unsupported(f"{what} has no __init__")
    env = bind(init, mod, args, kwargs, method=True)
    base_args = None
    buffers: dict[str, list[float]] = {}
    for stmt in init.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
        if call is not None and is_super_call(call.func, "__init__") and base_args is None:
            base_args = call_args(call, mod, env)
            continue
        if call is not None and is_self_attr(call.func, "register_buffer") and len(call.args) == 2 \
                and isinstance(call.args[0], ast.Constant) and not call.keywords:
            view = call.args[1]
            if not (isinstance(view, ast.Call) and isinstance(view.func, ast.Attribute)
                    and view.func.attr == "view"
                    and [evaluate(a, mod, env) for a in view.args] == [1, 3, 1, 1]):
                raise Unsupported(f"{what} registers buffer {call.args[0].value!r} with an unexpected shape")
            buffers[call.args[0].value] = floats(evaluate(view, mod, env), f"{what}.{call.args[0].value}")
            continue
        raise Unsupported(f"{what}.__init__ does more than build its base and register buffers "
                          f"(`{ast.unparse(stmt)}`)")
    if base_args is None:
        raise Unsupported(f"{what}.__init__ does not call super().__init__")
    base_fn = method(base.node, "__init__")
    spec = family(base.qual, bind(base_fn, base.module, *base_args, method=True), num_classes)
    fwd = method(cls, "forward")
    if fwd is not None:
        norm = forward_normalization(fwd, buffers, what)
        if norm is not None:
            if spec.normalization is not None:
                raise Unsupported(f"{what} normalises twice (its own forward and its base's)")
            spec.normalization = norm
    spec.buffers = sorted(buffers)
    return spec


def analyze(sym: Sym, args: list, kwargs: dict, num_classes: int, depth: int = 0) -> Spec:
    """Follow a constructor to a classwise spec or raise Unsupported."""
    if depth > 8:
        raise Unresolvable(f"{sym.qual}: call chain too deep")
    if sym.qual in FAMILIES:
        return family(sym.qual, bind(method(sym.node, "__init__"), sym.module, args, kwargs, True),
                      num_classes)
    if isinstance(sym.node, ast.ClassDef):
        return subclass(sym, args, kwargs, num_classes)
    if isinstance(sym.node, ast.FunctionDef):
        body = [s for s in sym.node.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call):
            env = bind(sym.node, sym.module, args, kwargs, method=False)
            call = body[0].value
            inner = sym.module.resolve_expr(call.func)
            return analyze(inner, *call_args(call, sym.module, env), num_classes, depth + 1)
        raise Unsupported(f"{sym.short} builds its network in several steps; not a classwise architecture")
    raise Unsupported(f"{sym.qual} is not a classwise architecture")


# --------------------------------------------------------------------------- zoo entries


@dataclass
class Entry:
    name: str
    dataset: str
    constructor: str  # the class/function name as written in the zoo file
    expression: str  # the 'model' value, unparsed
    checkpoints: int  # 0: none (timm pretrained), 1, or the length of a gdrive_id list
    info: dict
    spec: Spec | None = None
    reason: str | None = None


def linf_entries(mod: Module) -> list[tuple[str, ast.expr, ast.expr | None]]:
    node = mod.values.get("linf")
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.List)):
        sys.exit(f"{mod.rel}: no `linf = OrderedDict([...])`")
    out = []
    for elt in node.args[0].elts:
        if not (isinstance(elt, ast.Tuple) and len(elt.elts) == 2
                and isinstance(elt.elts[0], ast.Constant) and isinstance(elt.elts[1], ast.Dict)):
            sys.exit(f"{mod.rel}:{elt.lineno}: unexpected linf element {ast.unparse(elt)}")
        d = {k.value: v for k, v in zip(elt.elts[1].keys, elt.elts[1].values)}
        if "model" not in d:
            sys.exit(f"{mod.rel}:{elt.lineno}: entry without 'model'")
        out.append((elt.elts[0].value, d["model"], d.get("gdrive_id")))
    names = [n for n, _, _ in out]
    dup = [n for n, c in Counter(names).items() if c > 1]
    if dup:
        sys.exit(f"{mod.rel}: duplicate linf names {dup}")
    return out


def constructor_call(model: ast.expr, mod: Module) -> tuple[str, Sym, list, dict]:
    """The callee (as written and resolved) and evaluated arguments of a 'model' value."""
    if isinstance(model, ast.Lambda):
        if model.args.args or model.args.vararg or model.args.kwarg:
            raise Unresolvable(f"{mod.rel}:{model.lineno}: lambda with parameters")
        call = model.body
        if not isinstance(call, ast.Call):
            raise Unresolvable(f"{mod.rel}:{model.lineno}: lambda body is not a call")
        written = ast.unparse(call.func)
        sym = mod.resolve_expr(call.func)
        if sym.node is None:
            return written, sym, [], {}  # outside RobustBench: arguments not needed
        return (written, sym, *call_args(call, mod, {}))
    if isinstance(model, (ast.Name, ast.Attribute)):
        return ast.unparse(model), mod.resolve_expr(model), [], {}
    raise Unresolvable(f"{mod.rel}:{model.lineno}: unexpected model value {ast.unparse(model)}")


def checkpoint_count(node: ast.expr | None) -> int:
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return 0
    if isinstance(node, ast.List):
        return len(node.elts)
    return 1


def build(source: Source) -> tuple[list[Entry], dict]:
    loader = Loader(source)
    entries: list[Entry] = []
    extra_info: dict[str, int] = {}
    used: set[str] = set()
    for dataset, rel in ZOO_FILES.items():
        mod = loader.module(rel[:-3].replace("/", "."))
        if mod is None:
            sys.exit(f"{rel} not found in {source.path}")
        for name, model, gdrive in linf_entries(mod):
            info_text = source.read(f"model_info/{dataset}/Linf/{name}.json")
            if info_text is None:
                sys.exit(f"model_info/{dataset}/Linf/{name}.json not found")
            e = Entry(name, dataset, "", ast.unparse(model), checkpoint_count(gdrive),
                      json.loads(info_text))
            written, sym, args, kwargs = None, None, [], {}
            try:
                written, sym, args, kwargs = constructor_call(model, mod)
                e.constructor = written
                try:
                    e.spec = analyze(sym, args, kwargs, NUM_CLASSES[dataset])
                except Unsupported:
                    # The analysis decides; a description only says what the network is.
                    if sym.qual in DESCRIPTIONS:
                        used.add(sym.qual)
                        raise Unsupported(DESCRIPTIONS[sym.qual]) from None
                    raise
                if sym.qual in DESCRIPTIONS:
                    sys.exit(f"{dataset} {name}: {sym.qual} is described as unsupported, "
                             f"but the analysis accepts it; fix DESCRIPTIONS")
                if e.checkpoints != 1:
                    raise Unsupported(
                        f"its weights come as {e.checkpoints} separate checkpoints, not one file"
                        if e.checkpoints else "it has no RobustBench checkpoint (gdrive_id is None)")
            except Unsupported as u:
                e.spec, e.reason = None, str(u)
            except Unresolvable as u:
                sys.exit(f"{dataset} {name}: {u}")
            entries.append(e)
        # model_info entries without zoo weights (leaderboard only): counted, not listed.
        listed = {n for n, _, _ in linf_entries(mod)}
        extra_info[dataset] = count_info_only(source, dataset, listed)
    for qual in sorted(set(DESCRIPTIONS) - used):
        print(f"warning: DESCRIPTIONS[{qual!r}] matched no Linf entry", file=sys.stderr)
    return entries, extra_info


def count_info_only(source: Source, dataset: str, listed: set[str]) -> int:
    folder = f"model_info/{dataset}/Linf"
    if source.plain:
        path = os.path.join(source.path, folder)
        names = [f[:-5] for f in os.listdir(path) if f.endswith(".json")] if os.path.isdir(path) else []
    else:
        out = subprocess.run(["git", *source.git, "ls-tree", "--name-only", f"{source.commit}:{folder}"],
                             check=True, capture_output=True, text=True).stdout.split()
        names = [f[:-5] for f in out if f.endswith(".json")]
    return len(set(names) - listed)


def known_failing(source: Source) -> set[str]:
    """Names `utils._safe_load_state_dict` loads with strict=False after a known error."""
    text = source.read(UTILS)
    if text is None:
        return set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "known_failing_models" \
                and isinstance(node.value, ast.Set):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


# --------------------------------------------------------------------------- TOML


def tstr(s: str) -> str:
    out = []
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def tval(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        return r if ("." in r or "e" in r or "inf" in r or "nan" in r) else r + ".0"
    if isinstance(v, str):
        return tstr(v)
    if isinstance(v, list):
        return "[" + ", ".join(tval(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {tval(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def number(s) -> float | None:
    try:
        f = float(s)
    except (TypeError, ValueError):
        return None
    return f if f == f else None


def render(entries: list[Entry], source: Source, extra_info: dict, failing: set[str]) -> str:
    short = source.commit[:12]
    lines = [
        "# GENERATED FILE - do not edit by hand.",
        "# RobustBench CIFAR-10 / CIFAR-100 Linf model zoo as classwise architecture specs.",
        "# Regenerate (from the classwise repository root) with:",
        "#   python3 tools/zoo/catalogue.py --repo PATH/TO/robustbench --out trainer/catalogue/robustbench.toml",
        f"# Source: RobustBench/robustbench commit {source.commit}"
        + (f" ({source.date})" if source.date else "") + ";",
        "#   robustbench/model_zoo/cifar10.py, cifar100.py (the `linf` lists, in order),",
        "#   robustbench/model_zoo/architectures/*.py, model_info/<dataset>/Linf/<name>.json.",
        "# [[model]]: the network is exactly one classwise architecture (normalisation included);",
        "# [[unsupported]]: it is not, with the reason. Every Linf zoo entry is in exactly one list.",
        "# Accuracies are percentages from model_info (clean, AutoAttack, and the paper's reported",
        "# robust accuracy); eps is model_info's string as given.",
        "# Checkpoints (robustbench.utils.load_model): a .pt file; the state_dict is",
        "# checkpoint['state_dict'] when present, else the checkpoint itself; RobustBench removes",
        "# the first len('module.') / len('model.') characters of every key containing 'module.' /",
        "# 'model.'. `buffers` lists registered buffers (in the model's state_dict; the loader must",
        "# drop them after checking them against `normalization`). DM models' mean/std are",
        "# non-persistent buffers: never in the checkpoint.",
    ]
    for ds in ZOO_FILES:
        sup = [e for e in entries if e.dataset == ds and e.spec]
        uns = [e for e in entries if e.dataset == ds and not e.spec]
        kinds = Counter(e.spec.architecture["kind"] for e in sup)
        lines.append(f"# {ds}: {len(sup) + len(uns)} Linf zoo entries: {len(sup)} supported ("
                     + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
                     + f"), {len(uns)} unsupported; model_info lists {extra_info[ds]} more "
                     f"(leaderboard only, no zoo weights), not included.")
    for ds, rel in ZOO_FILES.items():
        for table, supported in (("model", True), ("unsupported", False)):
            group = [e for e in entries if e.dataset == ds and bool(e.spec) == supported]
            lines += ["", f"# {'=' * 76}", f"# {ds}: {'supported' if supported else 'unsupported'}"
                      f" ({len(group)})", f"# {'=' * 76}"]
            for e in group:
                lines += [""] + entry_lines(e, table, short, rel, failing)
    return "\n".join(lines) + "\n"


def entry_lines(e: Entry, table: str, short: str, rel: str, failing: set[str]) -> list[str]:
    i = e.info
    out = [f"# {rel}: {e.expression}"]
    if i.get("dataset") != e.dataset:
        out.append(f"# note: model_info gives dataset = {i.get('dataset')!r}; the entry is in {rel}")
    if i.get("unreliable"):
        out.append("# note: model_info marks this evaluation unreliable")
    if i.get("external") not in (None, ""):
        out.append(f"# model_info external (leaderboard) robust accuracy: {i['external']}")
    if i.get("footnote"):
        out.append(f"# model_info footnote: {' '.join(str(i['footnote']).split())}")
    if e.spec:
        if e.name in failing:
            out.append("# note: RobustBench loads this name with strict=False after a known load "
                       "error (utils._safe_load_state_dict): listed buffers may be absent.")
        out += [f"# note: {n}" for n in e.spec.notes]
    out.append(f"[[{table}]]")
    kv = lambda k, v: out.append(f"{k} = {tval(v)}")  # noqa: E731
    if e.spec:
        kv("name", e.name)
        kv("dataset", e.dataset)
        kv("threat_model", "Linf")
        kv("eps", i["eps"])
        kv("architecture", e.spec.architecture)
        if e.spec.normalization:
            kv("normalization", e.spec.normalization)
        if e.spec.buffers:
            kv("buffers", e.spec.buffers)
        kv("clean_acc", float(i["clean_acc"]))
        kv("autoattack_acc", float(i["autoattack_acc"]))
        if number(i.get("reported")) is not None:
            kv("reported", number(i["reported"]))
        kv("additional_data", bool(i["additional_data"]))
        kv("paper", i["name"])
        kv("authors", i["authors"])
        kv("venue", i["venue"])
        kv("link", i["link"])
        kv("source", f"RobustBench/robustbench@{short}: {rel}; "
                     f"model_info/{e.dataset}/Linf/{e.name}.json")
    else:
        kv("name", e.name)
        kv("dataset", e.dataset)
        kv("architecture_text", i["architecture"])
        kv("constructor", e.constructor)
        kv("reason", e.reason[0].upper() + e.reason[1:] + ("" if e.reason.endswith(".") else "."))
        kv("clean_acc", float(i["clean_acc"]))
        kv("autoattack_acc", float(i["autoattack_acc"]))
        kv("link", i["link"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="RobustBench git directory or plain checkout")
    ap.add_argument("--rev", default="HEAD", help="revision to read from a git directory")
    ap.add_argument("--commit", help="commit hash to record (plain checkouts outside git)")
    ap.add_argument("--out", help="output path (default: stdout)")
    a = ap.parse_args()
    source = Source(a.repo, a.rev, a.commit)
    entries, extra_info = build(source)
    text = render(entries, source, extra_info, known_failing(source))
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for ds in ZOO_FILES:
        group = [e for e in entries if e.dataset == ds]
        kinds = Counter(e.spec.architecture["kind"] for e in group if e.spec)
        uns = sum(1 for e in group if not e.spec)
        print(f"{ds}: {len(group)} Linf entries, {len(group) - uns} supported, {uns} unsupported",
              file=sys.stderr)
        for k, n in sorted(kinds.items()):
            print(f"  {k:18} {n}", file=sys.stderr)
        print(f"  {'unsupported':18} {uns}", file=sys.stderr)


if __name__ == "__main__":
    main()
