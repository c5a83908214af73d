"""Trains RobustBench's WideResNet in PyTorch for one epoch on a CIFAR-10 binary set and writes
its `torch.save` state dict with a classwise model card: the model of the GPU check's AutoAttack
comparison on weights classwise did not train (step 9 of tools/gpu/check.sh).

The network is built by RobustBench 1.1.1's own definition
(`robustbench/model_zoo/architectures/wide_resnet.py`, `WideResNet(depth, widen_factor,
sub_block1=True)`, the class of RobustBench's CIFAR-10 `Standard` WRN-28-10), loaded by path
as tools/zoo/fixtures.py does. The epoch is "fast" adversarial training (Wong, Rice and Kolter
2020, "Fast is better than free", Algorithm 3: FGSM from a uniform start in [-eps, eps], step
1.25 eps, eps 8/255) with their cyclic learning rate (linear from 0 to 0.2 over the first 40 %
of the steps, back to 0 after), SGD momentum 0.9, weight decay 5e-4, batch 128, random crop
(4 pixels, zero padding) and horizontal flip. `--bf16` runs the forward passes under
torch.autocast(bfloat16), the weights stay fp32; `--channels-last` lays them out so.

Input: `--data DIR` holding `cifar-10-batches-bin` (`classwise data synth` writes a synthetic
one in the real format). Output in `--out`: NAME.pt, NAME.card.toml (file, architecture,
eps 8/255, no normalisation) and train.json (seconds, images per second, the last batches'
loss and accuracy). Optional tool, run by step 9 of tools/gpu/check.sh; needs torch and robustbench
(its wheel, --no-deps: only the architecture file is read).
"""

import argparse
import importlib.util
import json
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

EPS = 8.0 / 255.0
ALPHA = 1.25 * EPS
RECORD = 3 * 32 * 32 + 1  # a label byte, then the image's 3 x 32 x 32 bytes (CHW)


def load_train(data: pathlib.Path, limit):
    """The five training files of `data/cifar-10-batches-bin` as uint8 images and labels."""
    folder = data / "cifar-10-batches-bin"
    raw = [np.fromfile(folder / f"data_batch_{i}.bin", dtype=np.uint8) for i in range(1, 6)]
    raw = np.concatenate(raw)
    if raw.size % RECORD:
        sys.exit(f"{folder}: {raw.size} bytes is not a whole number of {RECORD}-byte records")
    rec = raw.reshape(-1, RECORD)[:limit]
    if rec[:, 0].max() > 9:
        sys.exit(f"{folder}: a label above 9")
    x = torch.from_numpy(rec[:, 1:].reshape(-1, 3, 32, 32).copy())
    return x, torch.from_numpy(rec[:, 0].astype(np.int64))


def wide_resnet(depth, widen):
    """RobustBench's WideResNet, from the installed package's architecture file."""
    spec = importlib.util.find_spec("robustbench")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("robustbench is not importable (carry its wheel: tools/gpu/README.md)")
    path = pathlib.Path(spec.submodule_search_locations[0]) / "model_zoo/architectures/wide_resnet.py"
    module_spec = importlib.util.spec_from_file_location("rb_wide_resnet", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.WideResNet(depth=depth, widen_factor=widen, sub_block1=True), path


def augment(x):
    """Random crop with 4 pixels of zero padding and a horizontal flip, per image."""
    n = x.shape[0]
    padded = F.pad(x, (4, 4, 4, 4))
    i, j = torch.randint(0, 9, (2, n), device=x.device)
    rows = (i[:, None] + torch.arange(32, device=x.device))[:, None, :, None]
    cols = (j[:, None] + torch.arange(32, device=x.device))[:, None, None, :]
    batch = torch.arange(n, device=x.device)[:, None, None, None]
    chan = torch.arange(3, device=x.device)[None, :, None, None]
    out = padded[batch, chan, rows, cols]
    flip = torch.rand(n, device=x.device) < 0.5
    return torch.where(flip[:, None, None, None], out.flip(3), out)


def fgsm_rs(model, x, y, autocast):
    """Wong et al. 2020, Algorithm 3: one signed gradient step of 1.25 eps from a uniform start."""
    delta = torch.empty_like(x).uniform_(-EPS, EPS)
    delta = (x + delta).clamp(0, 1) - x
    delta.requires_grad_(True)
    with autocast():
        loss = F.cross_entropy(model(x + delta).float(), y)
    (grad,) = torch.autograd.grad(loss, delta)
    delta = (delta + ALPHA * grad.sign()).clamp(-EPS, EPS)
    return ((x + delta).clamp(0, 1) - x).detach()


def train(args, model, x_all, y_all, device):
    steps = (len(y_all) + args.batch - 1) // args.batch
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=0.2, total_steps=steps, pct_start=0.4, anneal_strategy="linear",
        cycle_momentum=False, div_factor=1e4, final_div_factor=1.0)
    autocast = lambda: torch.autocast(device.type, torch.bfloat16, enabled=args.bf16)  # noqa: E731
    order = torch.randperm(len(y_all), generator=torch.Generator().manual_seed(args.seed))
    order = order.to(device)
    memory = torch.channels_last if args.channels_last else torch.contiguous_format
    tail, model = [], model.train()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    for s in range(steps):
        idx = order[s * args.batch:(s + 1) * args.batch]
        x = augment(x_all[idx].float().div_(255)).contiguous(memory_format=memory)
        y = y_all[idx]
        x_adv = x + fgsm_rs(model, x, y, autocast)
        with autocast():
            logits = model(x_adv).float()
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if s >= steps - max(1, steps // 10):
            tail.append((loss.detach(), (logits.argmax(1) == y).float().mean().detach()))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    loss, acc = (float(torch.stack(v).mean()) for v in zip(*tail))
    return {"seconds": seconds, "images_per_second": len(y_all) / seconds, "steps": steps,
            "last_tenth_loss": loss, "last_tenth_adversarial_accuracy": acc}


def card(name, file, depth, widen, source):
    return "\n".join([
        f'name = "{name}"', f'file = "{file}"', 'dataset = "cifar10"', 'threat_model = "Linf"',
        'eps = "8/255"',
        f'architecture = {{ kind = "wide_resnet", depth = {depth}, widen = {widen}, sub_block1 = true }}',
        'normalization = "none"', f'source = "{source}"', ""])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=pathlib.Path)
    p.add_argument("--out", required=True, type=pathlib.Path)
    p.add_argument("--depth", type=int, default=28)
    p.add_argument("--widen", type=int, default=10)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--limit", type=int, help="only the first N training images")
    p.add_argument("--device", default="cuda")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = device.type == "cuda"
    x_all, y_all = load_train(args.data, args.limit)
    model, path = wide_resnet(args.depth, args.widen)
    model = model.to(device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    # The whole set (150 MB of uint8 for CIFAR-10) on the device once: no copy per batch.
    result = train(args, model, x_all.to(device), y_all.to(device), device)
    name = f"wrn-{args.depth}-{args.widen}-fast-at"
    args.out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    torch.save(state, args.out / f"{name}.pt")
    source = (f"tools/gpu/train_card.py: {path.name} WideResNet(depth={args.depth}, "
              f"widen_factor={args.widen}, sub_block1=True), 1 epoch of fast AT on "
              f"{len(y_all)} images of {args.data}, torch {torch.__version__}")
    (args.out / f"{name}.card.toml").write_text(card(name, f"{name}.pt", args.depth, args.widen, source))
    result.update(images=len(y_all), device=str(device), bf16=args.bf16,
                  channels_last=args.channels_last, torch=torch.__version__, card=f"{name}.card.toml")
    (args.out / "train.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
