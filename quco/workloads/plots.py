"""Figures of a workload run, in the style of quco.perfmodel.plots (PNG + SVG, atomic,
deterministic bytes).

    fig9(rows, "out/")    # per unique layer type: Semi-Tuned, Fine-Tuned, QuCo / Fine-Tuned
    dvfs(result, "out/")  # clock per layer, QuCo-HW's speedup over QuCo-SW (%), what knowing the clock is worth
"""
from __future__ import annotations

from pathlib import Path

from matplotlib import rc_context

from ..perfmodel.plots import STYLE, _bars, _figure, _save
from .baselines import CASES


def fig9(types: list[dict], workload: str, out_dir) -> list[Path]:
    """Fig. 8/9 analogue: `types` from baselines.by_type; bar = Fine-Tuned time / the case's
    (1.0 = ATT/Fine-Tuned, higher is better), one group per layer type plus the geomean."""
    rows = []
    for t in types:
        for case, key in zip(CASES, ("semi_ns", "fine_ns", "quco_ns")):
            rows.append({"gpu": workload, "kernel": t["type"], "case": case, "cycles": t[key],
                         "fine_cycles": t["fine_ns"]})
    slug = "".join(c if c.isalnum() else "-" for c in workload.lower()).strip("-")
    return _bars(rows, CASES, "fine_cycles", "performance / Fine-Tuned", out_dir, f"fig9-{slug}")


SHOWN_LAYERS = 60   # a longer run is drawn over the trace's own layers (the rest hold its last clock)


def dvfs(result: dict, out_dir) -> list[Path]:
    rows = result["rows"]
    if len(rows) > SHOWN_LAYERS:
        rows = rows[:result["summary"]["trace_layers"]]
    x = range(len(rows))
    with rc_context(STYLE):
        fig = _figure(max(6.0, 0.35 * len(rows) + 2), 3.6)
        ax = fig.subplots()
        # in percent around 0: the gains are 0-10%, which bars of the ratio on a 0-1 axis would not show
        pct = [100.0 * (r["hw_speedup"] - 1.0) for r in rows]
        ax.bar(x, pct, color=["C2" if v >= 0 else "C3" for v in pct], label="QuCo-HW over QuCo-SW")
        zero = [i for i, v in zip(x, pct) if abs(v) < 1e-9]  # as fast: a dot, so 0 is not read as missing
        ax.plot(zero, [0.0] * len(zero), linestyle="none", marker="o", markersize=3, color="C2")
        if any(r.get("clock_aware_gain") for r in rows):
            ax.plot(list(x), [100.0 * (r["clock_aware_gain"] - 1.0) if r.get("clock_aware_gain") else float("nan")
                              for r in rows], linestyle="none", marker="_",
                    markersize=12, color="0.2", label="Fine-Tuned for the clock over Fine-Tuned for the GST's")
            ax.legend(loc="lower left", fontsize="small")
        ax.axhline(0.0, color="0.3", linewidth=0.8, linestyle="--")
        ax.set_ylabel("QuCo-HW's speedup over QuCo-SW, %\n(SW time / HW time - 1)")
        ax.set_xticks(list(x), [r["name"] for r in rows], rotation=30, ha="right")
        clock = ax.twinx()
        clock.plot(list(x), [r["clock_mhz"] for r in rows], color="C0", marker="o", markersize=3)
        clock.set_ylabel("core clock (MHz)", color="C0")
        ax.set_title(f"DVFS trace {result['summary']['trace']}")
        return _save(fig, out_dir, f"dvfs-{result['summary']['trace']}")
