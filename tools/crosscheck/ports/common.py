"""What every step port shares: the step's inputs, the per-sample gathers of the class plan,
the reference codes' KL, and the result a port returns.

A port never draws random numbers: every draw comes from the step file (``draw.*``, unscaled),
and the port scales and clamps it as its reference does. The model is in the mode the
reference puts it in; a port switches it (``model.eval()`` / ``model.train()``) exactly where
the reference does, so the number and order of train-mode forwards (BatchNorm's running
statistics) are the reference's.
"""

from dataclasses import dataclass, field

import torch
from torch import nn
import torch.nn.functional as F


@dataclass
class StepInputs:
    """One training step's inputs, as read from a step file (see STEP_FORMAT.md)."""

    model: nn.Module  # the twin, weights loaded; inputs in [0, 1] (normalisation inside)
    x: torch.Tensor  # f32 [N, C, H, W]
    y: torch.Tensor  # i64 [N]
    plan: dict  # eps, beta, natural_weight, boundary_weight: f32 [K]; step_size: float | None
    method: dict  # classwise's `[train] method` as JSON (serde form)
    rule: dict  # classwise's `[rule]` as JSON (serde form)
    epoch: int  # 0-based
    draws: dict  # name -> f32 tensor, unscaled (U(-1, 1) or N(0, 1))
    reference_inputs: dict = field(default_factory=dict)

    @property
    def k(self):
        return self.plan["eps"].numel()

    def per_sample(self, name):
        """plan[name][y_i] per sample (f32 [N])."""
        return self.plan[name][self.y]

    def eps_rows(self):
        """ε_{y_i} broadcast over the image dimensions (f32 [N, 1, 1, 1])."""
        return self.per_sample("eps").view(-1, *([1] * (self.x.dim() - 1)))

    def draw(self, name, reference):
        if name not in self.draws:
            raise KeyError(f"{reference} needs the draw `draw.{name}`, absent from the step file")
        return self.draws[name]

    def attack_step(self):
        """The attack's step α (every reference takes one absolute step size)."""
        step = self.method["attack"]["step"]
        if step["kind"] != "absolute":
            raise ValueError(f"attack step {step}: the references take an absolute step size")
        return float(step["value"])

    def uniform_beta(self):
        """The plan's β when it is the same for every class (WAT and FRL take a scalar β)."""
        beta = self.plan["beta"]
        if not bool((beta == beta[0]).all()):
            raise ValueError(f"this reference takes one β, the plan has {beta.tolist()}")
        return float(beta[0])


@dataclass
class StepResult:
    """What a port computed before the update."""

    loss: torch.Tensor  # scalar with its graph
    predicted: torch.Tensor  # i64 [N]: argmax of the loss forward's logits on the training input
    inputs: dict  # out.<name> -> f32 [N, C, H, W]: the training inputs (x_adv, x_c, x_a, ...)
    steps: torch.Tensor = None  # i64 [N] for the early-stopped attacks
    clean_forward_after_step: bool = False  # the reference's forward of x in train mode after
    reference: str = ""  # repo:path of the reference followed
    expected: dict = field(default_factory=dict)  # classwise switch -> the reference's value
    notes: list = field(default_factory=list)  # known differences no switch names (STEP_FORMAT.md)


def kl_div_sum(log_q, p):
    """``nn.KLDivLoss(size_average=False)(log_q, p)``: Σ p·(log p − log q), xlogy at p = 0, as
    the reference codes compute it (yaodongyu/TRADES:trades.py:27)."""
    return nn.KLDivLoss(reduction="sum")(log_q, p)


def kl_div_rows(log_q, p):
    """``nn.KLDivLoss(reduction='none')(log_q, p).sum(1)``: the per-sample KL of the references
    that weigh samples (PKU-ML/CFA:attack.py:98-104, boqili/WAT:...train.py:64-68)."""
    return nn.KLDivLoss(reduction="none")(log_q, p).sum(1)


def ce_rows(logits, y):
    return F.cross_entropy(logits, y, reduction="none")


def predicted_by(logits):
    return logits.detach().argmax(1)


def rows(t, like):
    """A per-sample vector broadcast over the image dimensions of ``like``."""
    return t.view(-1, *([1] * (like.dim() - 1)))


def dig(d, path, default=None):
    """d["a"]["b"] for path "a.b"; ``default`` when a key is missing."""
    for key in path.split("."):
        if not isinstance(d, dict) or key not in d:
            return default
        d = d[key]
    return d


def signed_ascent(model, x, x_adv, eps, step, steps, loss_of):
    """The eval-mode signed-gradient loop of the TRADES-family references (``yaodongyu/
    TRADES:trades.py:32-41``, ``YisenWang/MART:mart.py:21-30``): ``steps`` times, a step of
    ``step``·sign(∇ loss_of(x')) projected on the ε-ball around x and clamped to [0, 1]; the
    result clamped once more, the model left in train mode as the references leave it."""
    model.eval()
    for _ in range(steps):
        x_adv.requires_grad_()
        with torch.enable_grad():
            loss = loss_of(x_adv)
        grad = torch.autograd.grad(loss, [x_adv])[0]
        x_adv = x_adv.detach() + step * torch.sign(grad.detach())
        x_adv = torch.min(torch.max(x_adv, x - eps), x + eps)
        x_adv = torch.clamp(x_adv, 0.0, 1.0)
    model.train()
    return torch.clamp(x_adv, 0.0, 1.0).detach()
