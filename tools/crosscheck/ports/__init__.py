"""PyTorch ports of the reference codes' training steps and class-wise rules, for the step
cross-check (``steps.py``; the format in ``STEP_FORMAT.md``). One module per method; each
function cites the reference lines it follows. Which reference a step file is checked against
is decided here, from the method, its variant or scaling, and the rule (``step_port``)."""

from . import bat, cfa, csl, fat, frl, mart, pgd_at, tian, trades, wat


def step_port(method, rule):
    """The port of one training step for classwise's ``method`` and ``rule`` (serde JSON)."""
    name, kind = method["method"], rule.get("kind", "uniform")
    if name == "pgd-at":
        return pgd_at.pgd_at_cfa
    if name == "fat":
        return fat.fat
    if name == "mart":
        return mart.mart
    if name == "bat":
        return bat.bat
    if name == "trades":
        if kind == "wat":
            return wat.wat
        if kind == "frl":
            return frl.frl
        if kind == "cfa" or method.get("scaling", "reference") == "reference":
            return trades.trades_cfa
        return trades.trades_paper
    raise ValueError(f"no port for method {name!r}")


RULES = {"cfa": cfa.cfa_rule, "wat": wat.wat_rule, "frl": frl.frl_rule, "csl": csl.csl_rule,
         "class-beta": tian.class_beta_rule}
