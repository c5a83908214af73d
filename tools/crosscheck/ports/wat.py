"""WAT, worst-class adversarial training (Li et al., AAAI 2023), as
``boqili/WAT:worst_class_adversarial_train.py`` runs it: TRADES with the Hedge weights of the
K class losses and the average loss (``--alg wat``), updated once per epoch from the
validation costs."""

import torch
import torch.nn.functional as F
from torch import nn

from .common import StepResult, ce_rows, dig, kl_div_rows, predicted_by
from .trades import trades_kl_attack

REF = "boqili/WAT:worst_class_adversarial_train.py"


def trades_loss(adv_logits, natural_logits, target, beta):
    """``...train.py:53-61``: CE mean + β·KL_sum/N (the average-loss decision's loss)."""
    batch_size = len(target)
    loss_natural = nn.CrossEntropyLoss(reduction="mean")(natural_logits, target)
    loss_robust = (1.0 / batch_size) * nn.KLDivLoss(reduction="sum")(
        F.log_softmax(adv_logits, dim=1), F.softmax(natural_logits, dim=1))
    return loss_natural + beta * loss_robust


def wat_loss(natural_logits, adv_logits, target, weights, beta):
    """``...train.py:89-105``: Σ_k w_k·(Σ_{y_i = k} CE_i + β·Σ_{y_i = k} KL_i)/N plus
    w_K·``trades_loss``; ``weights`` are the K + 1 Hedge weights (nat = bndy, lines 247-248)."""
    iter_nat_loss = ce_rows(natural_logits, target)
    iter_bndy_loss = kl_div_rows(F.log_softmax(adv_logits, dim=1), F.softmax(natural_logits, dim=1))
    k = len(weights) - 1
    nat_loss = sum(iter_nat_loss[target == i].sum() * weights[i] for i in range(k))
    bndy_loss = sum(iter_bndy_loss[target == i].sum() * weights[i] for i in range(k))
    loss = (nat_loss + beta * bndy_loss) / len(target)
    return loss + trades_loss(adv_logits, natural_logits, target, beta) * weights[k]


def wat(inp):
    """One batch of ``...train.py:71-110``: the TRADES attack of ``attack_generator.trades``
    (``attack_generator.py:45-69``: eval mode, 0.001·N(0, I) start; ε_{y_i} of the plan), then
    in train mode ``model(data)``, ``model(output_adv)`` (one clean forward: the KL target is
    softmax of the CE's logits) and ``wat_loss`` with the Hedge weights of
    ``reference_inputs.wat_weights`` (K + 1: the weights the rule holds for this epoch)."""
    weights = inp.reference_inputs.get("wat_weights")
    if weights is None:
        raise KeyError("WAT's step needs reference_inputs.wat_weights (K + 1 Hedge weights)")
    weights = torch.tensor(weights, dtype=torch.float32)
    x, y = inp.x, inp.y
    output_adv = trades_kl_attack(inp.model, x, inp.eps_rows(), inp.attack_step(),
                                  inp.method["attack"]["steps"], inp.draw("start", "WAT"))
    natural_logits = inp.model(x)
    adv_logits = inp.model(output_adv)
    loss = wat_loss(natural_logits, adv_logits, y, weights, inp.uniform_beta())
    expected = {"clean_forward_after_step": False, "method.scaling": "paper",
                "method.second_clean_forward": False,
                "method.attack.start": {"kind": "normal", "std": 0.001},
                "method.attack.loss": {"kind": "trades-kl"},
                "rule.normalization": "code", "rule.loss_scale": "as-written"}
    return StepResult(loss, predicted_by(adv_logits), {"x_adv": output_adv}, expected=expected,
                      reference=f"{REF}:53-110, attack_generator.py:45-69")


def hedge_weights(costs, eta, n_classes):
    """``...train.py:242-248``: after epoch e, class_factor = exp(η·Σ_{epochs ≤ e} cost) over
    the K + 1 decisions and w = K·class_factor/Σ class_factor; before any epoch, ones
    (``train.py:202-203``). ``costs`` is the list of the epochs' K + 1 costs
    (``wat_valid_cost``: nat + β·bndy, float32 as the reference's tensors)."""
    if len(costs) == 0:
        return torch.ones(n_classes + 1)
    wat_valid_cost = torch.tensor(costs, dtype=torch.float32)
    class_factor = (torch.sum(wat_valid_cost, dim=0) * eta).exp()
    return n_classes * class_factor / class_factor.sum()


def wat_rule(rule):
    """The rule-file port: the Hedge weights for 0-based epoch ``epoch`` from the validation
    costs of epochs 0..epoch−1 (``inputs.val_costs``, or ``val_nat_costs`` and
    ``val_bndy_costs`` combined as ``train.py:245``: nat + β·bndy), and the per-sample weight
    of class k in ``wat_loss``: w_k + w_K (both terms), which is what the plan's
    natural_weight and boundary_weight must hold with the code's scaling."""
    k = rule["context"]["n_classes"]
    inputs = rule["inputs"]
    costs = inputs.get("val_costs")
    if costs is None:
        beta = rule["context"]["beta"]
        costs = [[n + beta * b for n, b in zip(nat, bndy)]
                 for nat, bndy in zip(inputs["val_nat_costs"], inputs["val_bndy_costs"])]
    w = hedge_weights(costs, rule["settings"]["eta"], k)
    per_class = (w[:k] + w[k]).tolist()
    out = rule["outputs"]
    rows = [("weights", w.tolist(), dig(out, "weights")),
            ("plan.natural_weight", per_class, dig(out, "plan.natural_weight")),
            ("plan.boundary_weight", per_class, dig(out, "plan.boundary_weight"))]
    expected = {"settings.normalization": "code", "settings.loss_scale": "as-written"}
    return rows, expected, f"{REF}:202-203, 242-248"
