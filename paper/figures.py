"""The paper's figures redrawn from our sources (PNG + SVG, atomic, deterministic bytes).

The model's figures reuse quco.perfmodel.plots (Fig. 6, 7, 1) and quco.workloads.plots
(Fig. 9, DVFS), whose layouts follow the paper's: grouped bars per kernel, the cases in
the paper's order, the paper's normalisation. Drawn here: Fig. 10 (per GPU, over
NoATT/Fine-Tuned), Fig. 8 (whole models, over Fine-Tuned) and the scorecard itself.
`draw(sources, rows, out_dir)` draws what the sources allow and returns
[(source, caption, [png, svg, ...])]; a figure whose sources were not computed is left out.
"""
from __future__ import annotations

from matplotlib import rc_context

from . import ours
from .verdict import VERDICTS
from ..perfmodel import plots
from ..perfmodel.plots import STYLE, _bars, _figure, _save
from ..workloads import plots as wplots
from ..workloads.baselines import CASES as WORKLOAD_CASES

FIG10_CASES = ("NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned", "ATT/Fine-Tuned", "QuCo")
VERDICT_COLOURS = dict(zip(VERDICTS, ("tab:green", "gold", "tab:red", "0.75", "0.3")))


def _ok(data) -> bool:
    return isinstance(data, (dict, list)) and not (isinstance(data, dict) and "error" in data)


def _kernel_rows(sources: dict, gpu: str | None = None) -> list[dict]:
    """The kernel sources' rows, GPUs and kernels in the paper's order."""
    rows = []
    for g in ours.GPUS if gpu is None else (gpu,):
        for stem in ours.stems(g):
            v = sources.get(("kernel", g, stem))
            rows += v["rows"] if _ok(v) else []
    return rows


def fig6(sources, out_dir):
    rows = [r for r in _kernel_rows(sources, "r9-nano") if r["case"] in plots.FIG6_CASES]
    return plots.fig6(rows, out_dir) if rows else None


def fig7(sources, out_dir):
    rows = [r for r in _kernel_rows(sources, "r9-nano") if r["case"] in plots.FIG7_CASES]
    return plots.fig7(rows, out_dir) if rows else None


def fig10(sources, out_dir):
    """Per GPU: each case's speedup over NoATT/Fine-Tuned (the paper's Fig. 10 claim)."""
    rows = []
    for r in _kernel_rows(sources):
        if r["case"] in FIG10_CASES:
            rows.append(r)
    noatt = {(r["gpu"], r["kernel"]): r["cycles"] for r in rows if r["case"] == "NoATT/Fine-Tuned"}
    # NoATT/Fine-Tuned is the reference: 1.0 everywhere, drawn as the dashed line, not as bars
    rows = [{**r, "noatt_cycles": noatt.get((r["gpu"], r["kernel"]))} for r in rows if r["case"] != FIG10_CASES[0]]
    if not rows:
        return None
    return _bars(rows, FIG10_CASES[1:], "noatt_cycles", "speedup over NoATT/Fine-Tuned", out_dir, "fig10",
                 reference_label="NoATT/Fine-Tuned = 1")


FIG1_PANELS = (("gpu", "Matrix-Matrix"), ("kernel", "r9-nano"))   # the two the paper's claims quote


def fig1(sources, out_dir):
    """The paper's two panels (`quco-emu evaluate --plot` draws every kernel and GPU)."""
    port = sources.get(("portability",))
    rows = [r for r in port if (r["kind"], r["scope"]) in FIG1_PANELS] if _ok(port) else []
    return plots.fig1(rows, out_dir) if rows else None


def fig8(sources, out_dir):
    """Whole models and composite kernels: each case's whole-run time over Fine-Tuned's."""
    rows = []
    for k, v in sources.items():
        if k[0] == "workload" and _ok(v):
            s = v["summary"]
            for case, key in zip(WORKLOAD_CASES, ("semi_ns", "fine_ns", "quco_ns")):
                rows.append({"gpu": "whole runs (each workload on its file's GPU)", "kernel": f"{v['title']} ({v['gpu']})",
                             "case": case, "cycles": s[key], "fine_cycles": s["fine_ns"]})
    return _bars(rows, WORKLOAD_CASES, "fine_cycles", "performance / Fine-Tuned", out_dir, "fig8") if rows else None


def fig9(sources, out_dir):
    w = sources.get(("workload", "whisper-tiny"))
    return wplots.fig9(w["types"], f"{w['title']} on {w['gpu']}", out_dir) if _ok(w) else None


def fig12(sources, out_dir) -> list:
    paths = []
    for k, v in sorted(sources.items()):
        if k[0] == "dvfs" and _ok(v):
            paths += wplots.dvfs({"rows": v["rows"], "summary": v["summary"]}, out_dir)
    return paths or None


def scorecard(rows: list[dict], out_dir):
    """Verdicts per source of the paper, stacked."""
    if not rows:
        return None
    groups = list(dict.fromkeys(r["source"] for r in rows))
    with rc_context(STYLE):
        fig = _figure(7.0, 0.32 * len(groups) + 1.4)
        ax = fig.subplots()
        left = [0] * len(groups)
        for v in VERDICTS:
            n = [sum(r["verdict"] == v for r in rows if r["source"] == g) for g in groups]
            if any(n):
                ax.barh(range(len(groups)), n, left=left, color=VERDICT_COLOURS[v], label=v)
                left = [a + b for a, b in zip(left, n)]
        ax.set_yticks(range(len(groups)), groups)
        ax.invert_yaxis()
        ax.set_xlabel("claims")
        fig.legend(loc="outside upper center", ncols=len(VERDICTS), frameon=False, fontsize="small")
        ax.set_title("the paper's claims on this tree")
        return _save(fig, out_dir, "scorecard")


# (the paper's source the figure belongs to, caption, drawing function); None: the scorecard
FIGURES = (
    (None, "The scorecard: verdicts per source of the paper", None),
    ("Fig. 6", "Fig. 6 (R9 Nano): each case's performance over the ideal ATT run with unlimited LDS (1.0 = ideal)", fig6),
    ("Fig. 7", "Fig. 7 (R9 Nano): ablation, QuCo without its heuristics one by one, over ATT/Fine-Tuned", fig7),
    ("Fig. 10", "Fig. 10: each case's speedup over NoATT/Fine-Tuned on the three GPUs", fig10),
    ("Fig. 1", "Fig. 1: a best configuration moved to another GPU (Matrix-Matrix) or kernel (R9 Nano), "
               "slowdown over the target's own best", fig1),
    ("Fig. 8", "Fig. 8: whole-run performance of the workloads over per-layer ATT/Fine-Tuned", fig8),
    ("Fig. 9", "Fig. 9: Whisper-Tiny per layer type over ATT/Fine-Tuned", fig9),
    ("Fig. 12", "Fig. 12 (MI100, Whisper-Tiny): QuCo-HW over QuCo-SW per layer, and the clock, on each DVFS trace", fig12),
)


def draw(sources: dict, rows: list[dict], out_dir, progress=None) -> list[tuple[str | None, str, list]]:
    """[(source, caption, paths)] of every figure the sources allow."""
    out = []
    for source, caption, fn in FIGURES:
        paths = scorecard(rows, out_dir) if fn is None else fn(sources, out_dir)
        if paths:
            out.append((source, caption, paths))
        if progress:
            progress()
    return out
