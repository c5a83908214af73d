"""SELF-TEST ONLY: writes an `--adv` file in the format of `classwise eval --attack autoattack
--save-adv`, from a real classwise checkpoint and real IDX test images, so that
crosscheck.py can be tried before the Rust side exists. Its `x_adv` come from a plain PGD
written here (not AutoAttack) and its `logits` and `robust` flags from the PyTorch twin of the
model, so check (a) is trivially met; the `--tamper` options break one field on purpose to
see the checks fail.

It also checks the PyTorch port against numbers the Rust trainer wrote: the clean per-class
accuracy on the selected images against `--metrics` (a run's metrics.jsonl, field
`--metrics-field`.clean of `--epoch`), and on the whole test set against `--report` (clean.per_class of a
report JSON). Exits non-zero if either differs.
"""

import argparse
import gzip
import json
import os
import struct
import sys
from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

import classwise_models


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find_test_files(data_dir):
    for prefix in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        for suffix in (".gz", ""):
            path = os.path.join(data_dir, prefix + suffix)
            if os.path.exists(path):
                yield path
                break
        else:
            raise FileNotFoundError(f"no {prefix}[.gz] in {data_dir}")


def per_class_accuracy(correct, y, k):
    """Per class: correct count / image count, in f64 as the Rust reports compute it."""
    return [int(correct[y == c].sum()) / int((y == c).sum()) for c in range(k)]


def predict(model, x, batch):
    with torch.no_grad():
        return torch.cat([model(x[i:i + batch]) for i in range(0, len(x), batch)])


def pgd(model, x, y, eps, steps, seed):
    """Plain L-inf PGD (cross-entropy, uniform start, step eps/4) in [0, 1]."""
    gen = torch.Generator().manual_seed(seed)
    adv = (x + (torch.rand(x.shape, generator=gen) * 2 - 1) * eps).clamp(0, 1)
    for _ in range(steps):
        adv.requires_grad_(True)
        loss = F.cross_entropy(model(adv), y)
        (grad,) = torch.autograd.grad(loss, adv)
        adv = adv.detach() + eps / 4 * grad.sign()
        adv = torch.min(torch.max(adv, x - eps), x + eps).clamp(0, 1)
    return adv.detach()


def compare(name, ours, expected):
    diff = max(abs(a - b) for a, b in zip(ours, expected))
    ok = len(ours) == len(expected) and diff < 1e-9
    print(f"{name}: {'OK' if ok else 'MISMATCH'} (max diff {diff:.3g})")
    print(f"  pytorch:  {[round(v, 4) for v in ours]}")
    print(f"  expected: {[round(v, 4) for v in expected]}")
    return ok


def main():
    default_data = os.path.join(
        os.environ.get("CLASSWISE_CACHE_DIR")
        or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                        "classwise"), "data", "fashion-mnist")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--weights", required=True)
    p.add_argument("--data-dir", default=default_data)
    p.add_argument("--per-class", type=int, default=50)
    p.add_argument("--eps", default="0.1", help="decimal or ratio, e.g. 8/255")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--report", help="report JSON whose clean.per_class to match (whole test set)")
    p.add_argument("--metrics", help="metrics.jsonl whose test.clean of --epoch to match")
    p.add_argument("--epoch", type=int)
    p.add_argument("--metrics-field", default="test",
                   help="the metrics.jsonl field to match: test (raw model), ema_test, fawa_test")
    p.add_argument("--nested-metadata", action="store_true",
                   help="store the metadata as classwise's Rust writer does (one JSON map under "
                        "the key `classwise`)")
    p.add_argument("--tamper", choices=["logits", "x_adv", "robust"],
                   help="break one field on purpose (to see crosscheck.py fail)")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)

    model, spec, notes = classwise_models.load_checkpoint(a.weights)
    for note in notes:
        print("note:", note)
    k = spec["num_classes"]
    images_path, labels_path = find_test_files(a.data_dir)
    images, labels = read_idx(images_path), read_idx(labels_path)
    x_all = torch.from_numpy(images.copy()).float().div(255.0).unsqueeze(1)
    y_all = torch.from_numpy(labels.astype(np.int64))
    if list(x_all.shape[1:]) != spec["input_shape"]:
        sys.exit(f"images are {list(x_all.shape[1:])}, the model wants {spec['input_shape']}")

    ok = True
    if a.report:
        with open(a.report) as f:
            report = json.load(f)
        if report["n_samples"] != len(y_all):
            sys.exit(f"--report covers {report['n_samples']} images, the test set has "
                     f"{len(y_all)}")
        pred_all = predict(model, x_all, 500).argmax(1)
        ok &= compare(f"clean per-class accuracy, all {len(y_all)} test images vs {a.report}",
                      per_class_accuracy(pred_all == y_all, y_all, k),
                      report["clean"]["per_class"])

    # The first --per-class images of each class, in file order.
    taken, index = [0] * k, []
    for i, c in enumerate(labels.tolist()):
        taken[c] += 1
        if taken[c] <= a.per_class:
            index.append(i)
    index = torch.tensor(index, dtype=torch.int64)
    x, y = x_all[index].contiguous(), y_all[index].contiguous()
    logits = predict(model, x, 500)
    correct = logits.argmax(1) == y
    if a.metrics:
        with open(a.metrics) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        row = next(r for r in rows if r["epoch"] == a.epoch)
        ok &= compare(f"clean per-class accuracy, first {a.per_class} per class vs {a.metrics} "
                      f"epoch {a.epoch} {a.metrics_field}.clean",
                      per_class_accuracy(correct, y, k), row[a.metrics_field]["clean"])

    eps_text = a.eps
    eps = float(Fraction(eps_text))
    x_adv = pgd(model, x, y, eps, a.steps, a.seed)
    robust = correct & (predict(model, x_adv, 500).argmax(1) == y)
    if a.tamper == "logits":
        logits[0, 0] += 0.5
    elif a.tamper == "x_adv":
        x_adv[0].add_(2 * eps).clamp_(0, 1)
    elif a.tamper == "robust":
        robust[0] = ~robust[0]
    meta = {
        "eps": eps_text,
        "eps_value": repr(eps),
        "attacks": f"fixture-pgd-{a.steps}",
        "version": "fixture",
        "model_spec": json.dumps(spec, separators=(",", ":")),
    }
    if a.nested_metadata:
        meta = {"classwise": json.dumps(meta, sort_keys=True)}
    save_file({
        "x": x, "x_adv": x_adv.contiguous(), "y": y, "index": index,
        "logits": logits.contiguous(), "robust": robust.to(torch.uint8),
    }, a.out, metadata=meta)
    print(f"wrote {a.out}: {len(y)} images, clean {float(correct.float().mean()):.4f}, "
          f"robust under fixture PGD-{a.steps} {float(robust.float().mean()):.4f}"
          f"{f', tampered: {a.tamper}' if a.tamper else ''}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
