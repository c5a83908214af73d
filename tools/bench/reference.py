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
  `eval` per batch (trainer/src/eval/mod.rs `evaluate`).
Shared: eps 8/255, step 2/255, beta 6, SGD lr 0.01 momentum 0.9 weight decay 5e-4, inputs
uniform in [0, 1), labels uniform over 10 classes, one warm-up step, then `--steps` timed.

Optional tool: it needs the venv of tools/crosscheck/setup.sh; nothing in the Rust workspace or
in CI runs it.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crosscheck"))
from classwise_models import PreActResNet18, SmallCnn  # noqa: E402

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
}
WORKLOADS = ("pgd-at", "trades", "eval-pgd20")


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


def eval_pgd20_step(model, opt, x, y, natural):
    # torchattacks' PGD (3.5.1, as its users call it) with classwise's settings, then the clean
    # and adversarial predictions, as an evaluation loop does per batch.
    import torchattacks
    model.eval()
    atk = torchattacks.PGD(model, eps=EPS, alpha=ATTACK_STEP, steps=EVAL_ATTACK_STEPS,
                           random_start=True)
    x_adv = atk(x, y)
    with torch.no_grad():
        clean = model(x).argmax(1)
        adv = model(x_adv).argmax(1)
    return (clean == y) & (adv == y)


STEPS = {"pgd-at": pgd_at_step, "trades": trades_step, "eval-pgd20": eval_pgd20_step}
ATTACK_STEPS_OF = {"pgd-at": ATTACK_STEPS, "trades": ATTACK_STEPS,
                   "eval-pgd20": EVAL_ATTACK_STEPS}


def measure(name, workload, args):
    build, shape, description = MODELS[name]
    torch.manual_seed(0)
    model = build()
    fmt = torch.channels_last if args.memory_format == "channels-last" else torch.contiguous_format
    model = model.to(memory_format=fmt)
    x = torch.rand((args.batch, *shape)).to(memory_format=fmt)
    y = torch.arange(args.batch) % 10  # every class, as classwise bench
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM,
                          weight_decay=WEIGHT_DECAY)
    step = STEPS[workload]
    step(model, opt, x, y, args.natural)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step(model, opt, x, y, args.natural)
    seconds = (time.perf_counter() - t0) / args.steps
    return {
        "implementation": "pytorch",
        "model": name,
        "model_description": description,
        "workload": workload,
        "batch": args.batch,
        "img_per_s": args.batch / seconds,
        "seconds_per_step": seconds,
        "settings": {
            "device": "Cpu",  # as classwise writes tch::Device::Cpu
            "threads": torch.get_num_threads(),
            "memory_format": args.memory_format,
            "steps": args.steps,
            "warmup": 1,
            "attack_steps": ATTACK_STEPS_OF[workload],
            "attack_step": ATTACK_STEP,
            "eps": EPS,
            "beta": BETA,
            "trades_natural": args.natural,
            "torch": torch.__version__,
        },
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
    ap.add_argument("--model", type=comma_list(tuple(MODELS)), default=list(MODELS))
    ap.add_argument("--workload", type=comma_list(WORKLOADS), default=list(WORKLOADS))
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up")
    ap.add_argument("--memory-format", choices=("contiguous", "channels-last"),
                    default="contiguous")
    ap.add_argument("--natural", choices=("every-step", "once"), default="every-step",
                    help="TRADES: recompute model(x_natural) at every attack step "
                         "(trades.py, the default) or once")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads [default: torch's]")
    args = ap.parse_args()
    if args.batch < 1 or args.steps < 1:
        ap.error(f"--batch and --steps must be >= 1 (got {args.batch} and {args.steps})")
    if args.threads is not None:
        if args.threads < 1:
            ap.error(f"--threads must be >= 1 (got {args.threads})")
        torch.set_num_threads(args.threads)
    for name in args.model:
        for workload in args.workload:
            print(json.dumps(measure(name, workload, args)), flush=True)


if __name__ == "__main__":
    main()
