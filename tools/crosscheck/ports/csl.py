"""CSL, cost-sensitive learning (Benz et al. 2020), as WAT runs it for a baseline (WAT §5,
Tables 1-2, one hyper-parameter γ = 0.05 on CIFAR-10). **No reference exists**: neither paper
gives the rule and no code was published. This port follows classwise's own documentation of
its reconstruction (``core/src/rule/csl.rs``, module docs), so its check only says that the
implementation does what its documentation says. The step is the base loss (TRADES) with the
weights on both terms (``trades.py``)."""

import torch

from .common import dig

DOC = "classwise core/src/rule/csl.rs module docs (no reference code or formula exists)"


def csl_update(weights, robust_error, gamma):
    """The documented update: w_k ← w_k + γ·(e_k − mean_j e_j), clipped at 0, rescaled to mean 1
    (e_k: class k's validation robust error)."""
    w = torch.tensor(weights, dtype=torch.float64)
    e = torch.tensor(robust_error, dtype=torch.float64)
    w = torch.clamp(w + gamma * (e - e.mean()), min=0)
    return w / w.mean()


def csl_rule(rule):
    """The rule-file port: the weights of 0-based epoch ``epoch`` from the previous weights
    (``inputs.weights``; ones before the first update) and the validation robust errors
    measured after epoch ``epoch − 1``; both plan weights hold them."""
    k = rule["context"]["n_classes"]
    inputs, out = rule["inputs"], rule["outputs"]
    w = csl_update(inputs.get("weights", [1.0] * k), inputs["val_robust_error"],
                   rule["settings"]["gamma"]).tolist()
    rows = [("weights", w, dig(out, "weights")),
            ("plan.natural_weight", w, dig(out, "plan.natural_weight")),
            ("plan.boundary_weight", w, dig(out, "plan.boundary_weight"))]
    return rows, {}, DOC
