"""PyTorch eager reference of `classwise bench`: the same training steps, timed the same way.

One measurement per model x workload, printed as one JSON object per line in the format of
`classwise bench --json` (trainer/src/bench.rs), with "implementation": "pytorch".

The workloads are written as a PyTorch user writes them, following the papers' public code:
- pgd-at: PGD-10 on the cross-entropy from a uniform start in [-eps, eps], model in eval mode
  (as classwise's PGD-AT with attack_train_mode = false), then model.train(), one SGD step on
  the cross-entropy of the adversarial batch.
- trades: yaodongyu/TRADES:trades.py `trades_loss`: model.eval(), x + 0.001 * randn, 10 steps
  on KL(sum) between the adversarial and natural softmax, then model.train(),
  CE(model(x), y) + beta * KL(batchmean). `--natural every-step` (the default) recomputes
  model(x_natural) inside the attack loop, as trades.py does; `--natural once` computes it
  once before the loop (the same maths, and what classwise does).
- eval-pgd20: one evaluation batch, torchattacks 3.5.1's PGD (20 steps of 2/255 from a uniform
  start, model in eval mode) and the clean and adversarial predictions; classwise times its
  `eval` per batch (trainer/src/eval/mod.rs `evaluate`). Without torchattacks (a bare GPU
  machine), an inline copy of its PGD runs instead; `settings.eval_pgd` says which.
Shared: eps 8/255, step 2/255, beta 6, SGD lr 0.01 momentum 0.9 weight decay 5e-4, inputs
uniform in [0, 1), labels cycling through the 10 classes, `--warmup` (1) warm-up steps, then
`--steps` timed. On CUDA the timed loop is bracketed by torch.cuda.synchronize().

Models (the twins of tools/crosscheck/classwise_models.py, without input normalisation):
small-cnn (TRADES' SmallCNN, 1x28x28), preact-resnet18 (CFA's PreActResNet-18), resnet18 (the
CIFAR ResNet-18 of PKU-ML/CFA and boqili/WAT), wrn-34-10 (the WideResNet-34-10 of TRADES/CFA).

Settings: `--device cpu|cuda|cuda:N`; `--memory-format channels-last` (or `--channels-last`)
lays the model and the batch out channels-last; `--cudnn-benchmark` sets
torch.backends.cudnn.benchmark; `--amp bf16` (or `--precision bf16`) runs every forward pass
(training step, attack, evaluation) under torch.autocast(device, torch.bfloat16) with fp32
master weights: the logits are cast to fp32 before every loss, and the attack's steps and
projection stay in fp32 image space. The JSON `settings` record all of them ("precision":
"fp32" | "bf16", "cudnn_benchmark", "device" as classwise writes it: "Cpu", "Cuda(0)").

Optional tool: it needs PyTorch (the venv of tools/crosscheck/setup.sh on a CPU, or any
CUDA-enabled torch); nothing in the Rust workspace or in CI runs it.
"""

import argparse
import json
import os
import sys
import time
import types

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crosscheck"))
try:
    import safetensors  # noqa: F401  (classwise_models imports it; only checkpoints need it)
except ImportError:  # a bare GPU machine's torch: the models themselves do not use it
    sys.modules["safetensors"] = types.SimpleNamespace(safe_open=None)
from classwise_models import PreActResNet18, ResNet18, SmallCnn, WideResNet  # noqa: E402

try:
    import torchattacks
    PGD_IMPL = "torchattacks " + torchattacks.__version__
except Exception as e:  # noqa: BLE001
    torchattacks = None
    PGD_IMPL = f"inline copy of torchattacks 3.5.1's PGD (torchattacks: {type(e).__name__})"

EPS = 8.0 / 255.0
ATTACK_STEP = 2.0 / 255.0
ATTACK_STEPS = 10
EVAL_ATTACK_STEPS = 20
BETA = 6.0
LR, MOMENTUM, WEIGHT_DECAY = 0.01, 0.9, 5e-4

MODELS = {
    "small-cnn": (lambda: SmallCnn(1, 28, 28, 10), (1, 28, 28),
                  "SmallCNN, 10 classes, input 1x28x28"),
    "preact-resnet18": (lambda: PreActResNet18(3, 10, True), (3, 32, 32),
                        "PreActResNet-18, 10 classes, input 3x32x32"),
    "resnet18": (lambda: ResNet18(3, 10), (3, 32, 32),
                 "ResNet-18, 10 classes, input 3x32x32"),
    "wrn-34-10": (lambda: WideResNet(3, 10, 34, 10), (3, 32, 32),
                  "WideResNet-34-10, 10 classes, input 3x32x32"),
}
WORKLOADS = ("pgd-at", "trades", "eval-pgd20")


class Autocast(torch.nn.Module):
    """The model's forward pass under torch.autocast(bfloat16), logits returned in fp32.

    Wrapping the model (rather than the steps) puts every forward pass under autocast, those
    inside torchattacks' PGD included, while the losses, the input gradients' sign steps and
    the projection run in fp32 outside it. The weights stay fp32 (autocast casts per op).
    """

    def __init__(self, net, device_type):
        super().__init__()
        self.net = net
        self.device_type = device_type

    def forward(self, x):
        with torch.autocast(self.device_type, dtype=torch.bfloat16):
            logits = self.net(x)
        return logits.float()


def project(x_adv, x):
    x_adv = torch.min(torch.max(x_adv, x - EPS), x + EPS)
    return torch.clamp(x_adv, 0.0, 1.0)


def pgd_at_step(model, opt, x, y, natural):
    model.eval()
    x_adv = torch.clamp(x + torch.empty_like(x).uniform_(-EPS, EPS), 0.0, 1.0).detach()
    for _ in range(ATTACK_STEPS):
        x_adv.requires_grad_()
        with torch.enable_grad():
            loss = F.cross_entropy(model(x_adv), y)
        grad = torch.autograd.grad(loss, [x_adv])[0]
        x_adv = project(x_adv.detach() + ATTACK_STEP * torch.sign(grad.detach()), x)
    model.train()
    opt.zero_grad()
    loss = F.cross_entropy(model(x_adv), y)
    loss.backward()
    opt.step()


def trades_step(model, opt, x, y, natural):
    kl = torch.nn.KLDivLoss(reduction="sum")
    model.eval()
    x_adv = x.detach() + 0.001 * torch.randn_like(x).detach()
    p_nat = None if natural == "every-step" else F.softmax(model(x), dim=1).detach()
    for _ in range(ATTACK_STEPS):
        x_adv.requires_grad_()
        with torch.enable_grad():
            target = F.softmax(model(x), dim=1) if p_nat is None else p_nat
            loss_kl = kl(F.log_softmax(model(x_adv), dim=1), target)
        grad = torch.autograd.grad(loss_kl, [x_adv])[0]
        x_adv = project(x_adv.detach() + ATTACK_STEP * torch.sign(grad.detach()), x)
    model.train()
    x_adv = x_adv.detach()
    opt.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits, y) + BETA * (1.0 / len(x)) * kl(
        F.log_softmax(model(x_adv), dim=1), F.softmax(logits, dim=1))
    loss.backward()
    opt.step()


def inline_pgd(model, x, y):
    # torchattacks 3.5.1 PGD.forward, random_start=True, targeted=False
    x = x.clone().detach()
    adv = x + torch.empty_like(x).uniform_(-EPS, EPS)
    adv = torch.clamp(adv, 0, 1).detach()
    for _ in range(EVAL_ATTACK_STEPS):
        adv.requires_grad = True
        cost = F.cross_entropy(model(adv), y)
        grad = torch.autograd.grad(cost, adv, retain_graph=False, create_graph=False)[0]
        adv = adv.detach() + ATTACK_STEP * grad.sign()
        delta = torch.clamp(adv - x, min=-EPS, max=EPS)
        adv = torch.clamp(x + delta, min=0, max=1).detach()
    return adv


def eval_pgd20_step(model, opt, x, y, natural):
    # torchattacks' PGD (3.5.1, as its users call it) with classwise's settings, then the clean
    # and adversarial predictions, as an evaluation loop does per batch.
    model.eval()
    if torchattacks is not None:
        atk = torchattacks.PGD(model, eps=EPS, alpha=ATTACK_STEP, steps=EVAL_ATTACK_STEPS,
                               random_start=True)
        x_adv = atk(x, y)
    else:
        x_adv = inline_pgd(model, x, y)
    with torch.no_grad():
        clean = model(x).argmax(1)
        adv = model(x_adv).argmax(1)
    return (clean == y) & (adv == y)


STEPS = {"pgd-at": pgd_at_step, "trades": trades_step, "eval-pgd20": eval_pgd20_step}
ATTACK_STEPS_OF = {"pgd-at": ATTACK_STEPS, "trades": ATTACK_STEPS,
                   "eval-pgd20": EVAL_ATTACK_STEPS}


def device_name(device):
    """The device as classwise writes tch::Device (`Cpu`, `Cuda(0)`)."""
    if device.type == "cuda":
        return f"Cuda({device.index if device.index is not None else torch.cuda.current_device()})"
    return device.type.capitalize()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(name, workload, args, device):
    build, shape, description = MODELS[name]
    torch.manual_seed(0)
    fmt = torch.channels_last if args.memory_format == "channels-last" else torch.contiguous_format
    net = build().to(device).to(memory_format=fmt)
    model = Autocast(net, device.type) if args.precision == "bf16" else net
    x = torch.rand((args.batch, *shape), device=device).to(memory_format=fmt)
    y = torch.arange(args.batch, device=device) % 10  # every class, as classwise bench
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM,
                          weight_decay=WEIGHT_DECAY)
    step = STEPS[workload]
    for _ in range(args.warmup):
        step(model, opt, x, y, args.natural)
    sync(device)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step(model, opt, x, y, args.natural)
    sync(device)
    seconds = (time.perf_counter() - t0) / args.steps
    settings = {
        "device": device_name(device),
        "threads": torch.get_num_threads(),
        "memory_format": args.memory_format,
        "precision": args.precision,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "steps": args.steps,
        "warmup": args.warmup,
        "attack_steps": ATTACK_STEPS_OF[workload],
        "attack_step": ATTACK_STEP,
        "eps": EPS,
        "beta": BETA,
        "trades_natural": args.natural,
        "torch": torch.__version__,
    }
    if args.precision == "bf16":
        settings["amp"] = f"torch.autocast({device.type!r}, torch.bfloat16), fp32 weights and losses"
    if device.type == "cuda":
        settings["gpu"] = torch.cuda.get_device_name(device)
        settings["cudnn_allow_tf32"] = torch.backends.cudnn.allow_tf32
        settings["matmul_allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
    if workload == "eval-pgd20":
        settings["eval_pgd"] = PGD_IMPL
    return {
        "implementation": "pytorch",
        "model": name,
        "model_description": description,
        "workload": workload,
        "batch": args.batch,
        "img_per_s": args.batch / seconds,
        "seconds_per_step": seconds,
        "settings": settings,
    }


def comma_list(choices):
    def parse(s):
        items = [v for v in s.split(",") if v]
        bad = [v for v in items if v not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"{s!r}: expected a comma-separated list of {', '.join(choices)}")
        return items
    return parse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=comma_list(tuple(MODELS)),
                    default=["small-cnn", "preact-resnet18"],
                    help=f"comma-separated: {', '.join(MODELS)} [default: small-cnn,preact-resnet18]")
    ap.add_argument("--workload", type=comma_list(WORKLOADS), default=list(WORKLOADS))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3, help="timed steps after the warm-up")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N [default: cpu]")
    ap.add_argument("--memory-format", choices=("contiguous", "channels-last"),
                    default="contiguous")
    ap.add_argument("--channels-last", dest="memory_format", action="store_const",
                    const="channels-last", help="the same as --memory-format channels-last")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="bf16: forward passes under torch.autocast(bfloat16), fp32 weights "
                         "and losses")
    ap.add_argument("--amp", dest="precision", choices=("bf16",),
                    help="the same as --precision bf16")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True")
    ap.add_argument("--natural", choices=("every-step", "once"), default="every-step",
                    help="TRADES: recompute model(x_natural) at every attack step "
                         "(trades.py, the default) or once")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads [default: torch's]")
    args = ap.parse_args()
    if args.batch < 1 or args.steps < 1 or args.warmup < 0:
        ap.error(f"--batch and --steps must be >= 1 and --warmup >= 0 "
                 f"(got {args.batch}, {args.steps}, {args.warmup})")
    if args.threads is not None:
        if args.threads < 1:
            ap.error(f"--threads must be >= 1 (got {args.threads})")
        torch.set_num_threads(args.threads)
    try:
        device = torch.device(args.device)
    except RuntimeError as e:
        ap.error(f"--device {args.device}: {e}")
    if device.type not in ("cpu", "cuda"):
        ap.error(f"--device {args.device}: expected cpu, cuda or cuda:N")
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: this torch ({torch.__version__}) sees no CUDA device")
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    for name in args.model:
        for workload in args.workload:
            print(json.dumps(measure(name, workload, args, device)), flush=True)


if __name__ == "__main__":
    main()
