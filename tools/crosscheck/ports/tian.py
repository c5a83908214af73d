"""Tian et al. (KDD 2021), class-wise β: TRADES with a β per class, their eq. (5)
(``/work/shared/papers/tian-classwise-robustness.txt`` lines 300-304):
(1/n)·Σ_i CE(h(x_i), y_i) + β_{y_i}·max KL(h(x_i), h(x'_i)). No code was published. The step is
``trades.trades_paper`` (yaodongyu/TRADES with β_{y_i}), also ``mart.mart`` with β_{y_i}; the
rule is a fixed plan."""

from .common import dig

REF = "Tian et al. eq. (5) (no code)"


def class_beta_rule(rule):
    """The plan of every epoch: β_k from the settings, ε and the weights uniform."""
    k, ctx = rule["context"]["n_classes"], rule["context"]
    out = rule["outputs"]
    rows = [("plan.beta", [float(b) for b in rule["settings"]["beta"]], dig(out, "plan.beta")),
            ("plan.eps", [ctx["eps"]] * k, dig(out, "plan.eps")),
            ("plan.natural_weight", [1.0] * k, dig(out, "plan.natural_weight")),
            ("plan.boundary_weight", [1.0] * k, dig(out, "plan.boundary_weight"))]
    return rows, {}, REF
