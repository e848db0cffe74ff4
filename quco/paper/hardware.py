"""The scorecard's real-hardware section: measures on the H100 sources (quco.paper.ours._hardware).

("hardware",) holds per kernel x size quco.perfmodel.hardware.compare()'s row (the measured cost of
QuCo's firmware pick and of the model's best over the measured best, the rank correlation, the
median error), the measured and modelled time of every configuration, and ATT vs NoATT measured;
("hardware", "heldout") the same rows from the model refitted without the kernel's family.
Registered in measures.MEASURES on import (measures.py imports this module at its end).
"""
from __future__ import annotations

from .measures import Check, SourceFailed, _measure, of_rules

HW, HW_HELDOUT = ("hardware",), ("hardware", "heldout")


def _hw_key(heldout: bool, rules: str = "") -> tuple:
    """rules "plus": quco+'s twin of the full fit's rows (QuCo's pick quco+'s; the model's columns the same)."""
    if heldout and rules:
        raise ValueError("the held-out rows are the model's: they have no quco+ twin")
    return HW_HELDOUT if heldout else of_rules(HW, rules)


def hardware_row(src, kernel, size, heldout=False, rules="") -> dict:
    """One kernel x size of the H100 rows (ours._hardware), of the full fit or the held-out one."""
    data = src[_hw_key(heldout, rules)]
    r = next((r for r in data["rows"] if r["kernel"] == kernel and r["size"] == size), None)
    if r is None:
        raise SourceFailed(f"{data['data']}: no {kernel} ({size}) compared with the model; there are: "
                           + (", ".join(f"{x['kernel']} ({x['size']})" for x in data["rows"]) or "none"))
    return r


@_measure(lambda a: [_hw_key(a.get("heldout", False), a.get("rules", ""))])
def hardware_value(src, column, kernel, size, heldout=False, rules=""):
    """One column of one kernel x size (quco.perfmodel.hardware.compare()'s keys: quco_cost_pct,
    model_best_cost_pct, spearman, median_error_pct, ...); `heldout`: from the model refitted
    without the kernel's family; `rules` "plus": QuCo's pick is quco+'s."""
    return hardware_row(src, kernel, size, heldout, rules)[column]


@_measure(lambda a: [HW])
def hardware_column(src, column, kernels=None):
    """One column of every kernel x size (or those of `kernels`): a range holds when every value is."""
    rows = [r for r in src[HW]["rows"] if kernels is None or r["kernel"] in kernels]
    if not rows:
        raise SourceFailed(f"no hardware row for {', '.join(kernels or ['any kernel'])}")
    return [r[column] for r in rows]


@_measure(lambda a: [of_rules(HW, a.get("rules", ""))])
def hardware_mean(src, column, rules=""):
    """The arithmetic mean of a column over every kernel x size (the paper's 1.04% is a mean over
    kernels, fig6-quco-gap-mean's reading); a row without a value makes it missing, named."""
    rows = src[of_rules(HW, rules)]["rows"]
    lacking = [f"{r['kernel']} ({r['size']})" for r in rows if r.get(column) is None]
    if lacking or not rows:
        raise SourceFailed(f"{column}: no value for " + (", ".join(lacking) or "any kernel"))
    return sum(r[column] for r in rows) / len(rows)


def _att(src, kernel, size) -> dict:
    data = src[HW]
    r = next((r for r in data["att"] if r["kernel"] == kernel and r["size"] == size), None)
    if r is None:
        raise SourceFailed(f"{data['data']}: no {kernel} ({size}) with both TMA and plain-load rows; there are: "
                           + (", ".join(f"{x['kernel']} ({x['size']})" for x in data["att"]) or "none"))
    return r


@_measure(lambda a: [HW])
def hardware_att(src, kernel, size, loads="any"):
    """Measured on the H100: the best plain-load time over the best TMA time of one kernel x size
    (above 1: ATT ahead); `loads` "any" (every depth of plain loads) or "sync" (1 slot: synchronous)."""
    return _att(src, kernel, size)[loads]


@_measure(lambda a: [HW])
def hardware_att_all(src, bound, loads="sync"):
    """Every kernel x size with both variants: plain loads / TMA at least `bound`; the model's ratio
    for the same kernel in the label where it has one."""
    checks = []
    for r in src[HW]["att"]:
        model = "" if r["model"] is None else f"; model {r['model']:.3f}"
        checks.append(Check(f"{r['kernel']} ({r['size']}): best {'synchronous ' if loads == 'sync' else ''}"
                            f"plain loads / best TMA{model}", r[loads], ">=", bound))
    if not checks:
        raise SourceFailed(f"{src[HW]['data']}: no kernel with both TMA and plain-load rows")
    return checks
