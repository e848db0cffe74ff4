"""The paper's figures from the performance model's rows, as PNG and SVG files.

    fig6(rows, "out/")   # performance of each case normalised to the ideal, per GPU and kernel
    fig7(rows, "out/")   # ablation: QuCo without its parts, extra cycles over the full QuCo (%)
    fig1(rows, "out/")   # portability: fig1-gpus (between GPUs), fig1-kernels (between kernels)

Each writes <name>.png and <name>.svg into the folder (created if missing), atomically,
and returns their paths. Output is deterministic: the same rows give the same bytes.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib import colormaps, rc_context
# The Agg canvas, attached to each Figure: no pyplot, so no global backend or figure
# registry is touched and nothing is ever shown (safe in a CLI or a Dask worker).
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..util.atomic import atomic_path

FIG6_CASES = ("NoATT/Non-Tuned", "NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned",
              "ATT/Fine-Tuned", "QuCo")
FIG7_CASES = ("QuCo", "QuCo -CU", "QuCo -CU -Little", "QuCo -CU -Little -CI")
GEOMEAN = "geomean"
# svg.fonttype none: text stays text (searchable, smaller); a fixed hash salt and no date
# make the SVG bytes repeatable.
STYLE = {"svg.fonttype": "none", "svg.hashsalt": "quco", "font.size": 9}
DPI = 150
HEAT = colormaps["YlOrRd"].with_extremes(bad="0.88")  # grey: does not fit, or not measured


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, out_dir, stem: str) -> list[Path]:
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OSError(e.errno, f"cannot create the figure folder {out}: {e.strerror}") from e
    png, svg = out / f"{stem}.png", out / f"{stem}.svg"
    # both rendered before either replaces an old file
    with atomic_path(png) as tmp_png, atomic_path(svg) as tmp_svg:
        fig.savefig(tmp_png, format="png", dpi=DPI)
        fig.savefig(tmp_svg, format="svg", metadata={"Date": None})
    return [png, svg]


# ---------------------------------------------------------------- grouped bars
def _normalised(rows: list[dict], cases: tuple, reference_key: str) -> dict:
    """{gpu: {(kernel, case): reference / cycles}}, first-seen order; rows without cycles
    (a configuration that does not fit) are left out, not drawn as zero."""
    if not rows:
        raise ValueError("no rows to plot")
    out: dict[str, dict] = {}
    for r in rows:
        if r["case"] not in cases:
            raise ValueError(f"unknown case {r['case']!r}; expected one of: {', '.join(cases)}")
        cell = out.setdefault(r["gpu"], {})
        key = (r["kernel"], r["case"])
        if key in cell:
            raise ValueError(f"two rows for {r['gpu']} / {r['kernel']} / {r['case']}")
        if r.get("cycles") and r.get(reference_key):
            cell[key] = r[reference_key] / r["cycles"]
    return out


def _with_geomean(values: dict, cases: tuple) -> tuple[list[str], dict]:
    """The kernels plus a geomean group: per case, over the kernels that have the case."""
    kernels = list(dict.fromkeys(k for k, _ in values))
    extra = {}
    for case in cases:
        ys = [v for (k, c), v in values.items() if c == case]
        if ys:
            extra[(GEOMEAN, case)] = math.exp(sum(math.log(y) for y in ys) / len(ys))
    return kernels + [GEOMEAN], {**values, **extra}


def _bars(rows, cases: tuple, reference_key: str, ylabel: str, out_dir, stem: str, percent: bool = False,
          reference_label: str = "") -> list[Path]:
    """Grouped bars of reference / cycles per case; `percent`: drawn as the case's extra cycles
    over the reference, 100 x (cycles / reference - 1), around 0, so differences of a fraction of
    a percent show. `reference_label` names the dashed line the bars are measured from."""
    per_gpu = _normalised(rows, cases, reference_key)
    shown = (lambda v: 100.0 * (1.0 / v - 1.0)) if percent else (lambda v: v)
    colours = {c: f"C{i}" for i, c in enumerate(cases)}
    width = 0.8 / len(cases)
    n_groups = max(len({k for k, _ in v}) for v in per_gpu.values()) + 1
    with rc_context(STYLE):
        # a panel tall enough to read a 5% difference between bars, plus the legend's band on top
        fig = _figure(max(6.0, 0.2 * len(cases) * n_groups + 2), 3.4 * len(per_gpu) + 0.8)
        axes = fig.subplots(len(per_gpu), 1, squeeze=False)[:, 0]
        for ax, (gpu, values) in zip(axes, per_gpu.items()):
            groups, values = _with_geomean(values, cases)
            for i, case in enumerate(cases):
                at = [(g, values[(k, case)]) for g, k in enumerate(groups) if (k, case) in values]
                if at:
                    xs = [g + (i - (len(cases) - 1) / 2) * width for g, _ in at]
                    ax.bar(xs, [shown(y) for _, y in at], width, color=colours[case])
                    if percent:  # a step exactly as fast as the reference: a tick, so 0 is not read as missing
                        zero = [x for x, (_, y) in zip(xs, at) if abs(shown(y)) < 1e-9]
                        ax.plot(zero, [0.0] * len(zero), linestyle="none", marker="o", markersize=2.5,
                                color=colours[case])
            ax.axhline(shown(1.0), color="0.3", linewidth=0.8, linestyle="--")
            if reference_label:
                ax.annotate(reference_label, (0.0, shown(1.0)), xycoords=("axes fraction", "data"),
                            xytext=(3, 2), textcoords="offset points", ha="left", va="bottom",
                            fontsize="small", color="0.3")
            ax.axvline(len(groups) - 1.5, color="0.7", linewidth=0.8)  # kernels | geomean
            ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
            ax.set_ylabel(ylabel)
            ax.yaxis.grid(True, color="0.9", linewidth=0.6)
            ax.set_axisbelow(True)
            ax.set_title(gpu)
        used = [c for c in cases if any(c == case for v in per_gpu.values() for _, case in v)]
        fig.legend(handles=[Patch(color=colours[c], label=c) for c in used], loc="outside upper center",
                   ncols=min(len(used), 3), frameon=False)
        return _save(fig, out_dir, stem)


def fig6(rows: list[dict], out_dir) -> list[Path]:
    """Fig. 6 analogue. Rows: gpu, kernel, case (FIG6_CASES), cycles, ideal_cycles;
    bar = ideal_cycles / cycles (1.0 = the ideal, higher is better)."""
    return _bars(rows, FIG6_CASES, "ideal_cycles", "performance / ideal", out_dir, "fig6")


def ablation_pct(rows: list[dict]) -> dict:
    """{(gpu, kernel, case): extra cycles of each ablation step over the full QuCo, %}: what
    Fig. 7 and evaluate's ablation table both show. Steps whose QuCo or own cycles are missing
    are left out."""
    quco = {(r["gpu"], r["kernel"]): r["cycles"] for r in rows if r["case"] == FIG7_CASES[0] and r.get("cycles")}
    return {(r["gpu"], r["kernel"], r["case"]): 100.0 * (r["cycles"] / quco[(r["gpu"], r["kernel"])] - 1.0)
            for r in rows if r["case"] in FIG7_CASES[1:] and r.get("cycles") and (r["gpu"], r["kernel"]) in quco}


def fig7(rows: list[dict], out_dir) -> list[Path]:
    """Fig. 7 analogue (ablation). Rows: gpu, kernel, case (FIG7_CASES), cycles; bar = the
    step's extra cycles over the full QuCo, % (0 = as fast as QuCo; the steps differ by 0.1-50%,
    which bars of performance on a 0-1 axis would not show)."""
    for r in rows:
        if r["case"] not in FIG7_CASES:
            raise ValueError(f"unknown case {r['case']!r}; expected one of: {', '.join(FIG7_CASES)}")
    quco = {(r["gpu"], r["kernel"]): r["cycles"] for r in rows if r["case"] == FIG7_CASES[0]}
    steps = [dict(r, quco_cycles=quco.get((r["gpu"], r["kernel"]))) for r in rows if r["case"] != FIG7_CASES[0]]
    return _bars(steps, FIG7_CASES[1:], "quco_cycles", "cycles over the full QuCo (%)", out_dir, "fig7",
                 percent=True, reference_label="QuCo with all its heuristics")


# ---------------------------------------------------------------- heat maps
def _panels(rows: list[dict]) -> dict:
    """{(kind, scope): {(source, target): slowdown or None}}, first-seen order."""
    if not rows:
        raise ValueError("no rows to plot")
    out: dict[tuple, dict] = {}
    for r in rows:
        if r["kind"] not in ("gpu", "kernel"):
            raise ValueError(f"kind {r['kind']!r}: expected 'gpu' or 'kernel'")
        out.setdefault((r["kind"], r["scope"]), {})[(r["source"], r["target"])] = r["slowdown"]
    return out


def fig1(rows: list[dict], out_dir) -> list[Path]:
    """Fig. 1 analogue, two figures, each with its own colour scale: fig1-gpus (kind "gpu": a
    kernel's best configuration moved between GPUs, one heat map per kernel `scope`) and
    fig1-kernels (kind "kernel": a best configuration moved between kernels on GPU `scope`).
    Rows: kind, scope, source, target, slowdown (target cycles of the source's best / the
    target's best; None: it does not fit, shown "n/a"). Returns the paths of those written."""
    panels = _panels(rows)
    out = []
    for kind, stem in (("gpu", "fig1-gpus"), ("kernel", "fig1-kernels")):
        mine = {key: cells for key, cells in panels.items() if key[0] == kind}
        if mine:
            out += _heat_maps(mine, kind, out_dir, stem)
    return out


def _heat_maps(panels: dict, kind: str, out_dir, stem: str) -> list[Path]:
    noun = "GPU" if kind == "gpu" else "kernel"
    finite = [v for p in panels.values() for v in p.values() if v is not None]
    top = max(finite + [1.0])
    vmax = top if top > 1.0 else 1.01  # a colour scale needs some range
    ncols = min(4, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    side = max(len({n for pair in p for n in pair}) for p in panels.values())
    with rc_context(STYLE):
        fig = _figure(ncols * (0.7 * side + 2.2), nrows * (0.6 * side + 1.8) + 0.5)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        image = None
        for ax, ((_, scope), cells) in zip(axes, panels.items()):
            sources = list(dict.fromkeys(s for s, _ in cells))
            targets = list(dict.fromkeys(t for _, t in cells))
            grid = np.full((len(sources), len(targets)), np.nan)
            for (s, t), v in cells.items():
                if v is not None:
                    grid[sources.index(s), targets.index(t)] = v
            image = ax.imshow(np.ma.masked_invalid(grid), cmap=HEAT, vmin=1.0, vmax=vmax, aspect="auto")
            for (s, t), v in cells.items():
                dark = v is not None and (v - 1.0) / (vmax - 1.0) > 0.6
                ax.text(targets.index(t), sources.index(s), "n/a" if v is None else f"{v:.2f}",
                        ha="center", va="center", color="white" if dark else "black")
            ax.set_xticks(range(len(targets)), targets, rotation=30, ha="right")
            ax.set_yticks(range(len(sources)), sources)
            ax.set_xlabel(f"run on {noun}")
            ax.set_ylabel(f"best configuration of {noun}")
            ax.set_title(f"{scope}: across {noun}s")
        for ax in axes[len(panels):]:
            ax.set_axis_off()
        fig.suptitle(f"a best configuration moved to another {noun}" +
                     (" (one panel per kernel)" if kind == "gpu" else " (one panel per GPU)"))
        fig.colorbar(image, ax=list(axes[:len(panels)]), label="slowdown vs the target's own best (n/a: does not fit)",
                     shrink=0.8)
        return _save(fig, out_dir, stem)


# ---------------------------------------------------------------- measured vs model
NEAR_SPAN = 1.3   # the zoom panels show times up to 1.3x the best, measured and modelled


def hardware(results: list[dict], out_dir, stem: str = "hardware") -> list[Path]:
    """Measured vs modelled time, one column per kernel x size (quco.perfmodel.hardware.compare's
    rows). Top: every configuration, log-log, coloured by slots, the diagonal y = x, the measured
    best ringed and the model's best crossed. Below it, where the choice is made: each time over
    its own best (model's over the model's best, measured over the measured best) up to NEAR_SPAN,
    the band the model's best must land in (within 2% of the measured best) shaded; a point past
    the span is drawn on its edge as a triangle (the model calls it near the best and it is not,
    or the reverse)."""
    results = [r for r in results if any(p.model_us is not None for p in r["points"])]
    if not results:
        raise ValueError("no compared kernel to plot")
    ncols = min(5, len(results))
    nrows = math.ceil(len(results) / ncols)
    cmap = colormaps["viridis"]
    with rc_context(STYLE):
        fig = _figure(3.0 * ncols + 0.8, 5.6 * nrows)
        grid = fig.subplots(2 * nrows, ncols, squeeze=False)
        pairs = [(grid[2 * (i // ncols), i % ncols], grid[2 * (i // ncols) + 1, i % ncols]) for i in range(nrows * ncols)]
        for (ax, zoom), r in zip(pairs, results):
            on = [p for p in r["points"] if p.model_us is not None]
            x = np.array([p.model_us for p in on])
            y = np.array([p.measured_us for p in on])
            c = np.array([p.slots for p in on])
            ax.scatter(x, y, c=c, cmap=cmap, vmin=1, vmax=8, s=12, linewidths=0)
            lo, hi = min(x.min(), y.min()) / 1.2, max(x.max(), y.max()) * 1.2
            ax.plot([lo, hi], [lo, hi], color="0.5", lw=0.8, ls="--")
            best = min(on, key=lambda p: p.measured_us)
            ax.scatter([best.model_us], [best.measured_us], s=70, facecolors="none", edgecolors="red", lw=1.0)
            mb = min(on, key=lambda p: (p.model_us, -p.tile, p.slots))
            ax.scatter([mb.model_us], [mb.measured_us], marker="x", s=40, color="black", lw=1.0)
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):  # labels at 1, 2, 5 x 10^k: a panel may span less than a decade
                axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                axis.set_minor_formatter(NullFormatter())
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            rho = r.get("spearman")
            ax.set_title(f"{r['kernel']} ({r['size']}, {r['work_groups']} WGs)\n"
                         f"rho {rho:.2f}, model best +{r['model_best_cost_pct']:.1f}%" if rho is not None
                         else f"{r['kernel']} ({r['size']})", fontsize=8)
            ax.set_xlabel("model (us)")
            ax.set_ylabel("measured (us)")
            floor = min(p.measured_us for p in r["points"])
            _near(zoom, x / x.min(), y / floor, c, cmap, (best.model_us / x.min(), best.measured_us / floor),
                  (mb.model_us / x.min(), mb.measured_us / floor))
        for ax, zoom in pairs[len(results):]:
            ax.set_axis_off()
            zoom.set_axis_off()
        sm = fig.colorbar(pairs[0][0].collections[0], ax=[a for pair in pairs[:len(results)] for a in pair], shrink=0.8)
        sm.set_label("slots (red ring: measured best; x: model's best)")
        return _save(fig, out_dir, stem)


def _near(ax, x, y, c, cmap, measured_best, model_best) -> None:
    """One zoom panel of `hardware`: relative times, clipped to NEAR_SPAN (triangles on the edge)."""
    edge = NEAR_SPAN
    ax.axhspan(1.0, 1.02, color="0.85", lw=0)
    inside = (x <= edge) & (y <= edge)
    ax.scatter(x[inside], y[inside], c=c[inside], cmap=cmap, vmin=1, vmax=8, s=14, linewidths=0)
    out = ~inside & ((x <= edge) | (y <= edge))  # near the best on one side only
    ax.scatter(np.minimum(x[out], edge), np.minimum(y[out], edge), c=c[out], cmap=cmap, vmin=1, vmax=8, s=18,
               marker="^", linewidths=0, clip_on=False)
    ax.plot([1.0, edge], [1.0, edge], color="0.5", lw=0.8, ls="--")
    ax.scatter([min(measured_best[0], edge)], [measured_best[1]], s=70, facecolors="none", edgecolors="red", lw=1.0,
               clip_on=False)
    ax.scatter([model_best[0]], [min(model_best[1], edge)], marker="x", s=40, color="black", lw=1.0, clip_on=False)
    ax.set_xlim(0.99, edge)
    ax.set_ylim(0.99, edge)
    ax.set_xlabel("model / model's best")
    ax.set_ylabel("measured / measured best")
    ax.set_title(f"near the best (shaded: within 2%; {int(inside.sum())} of {len(x)} shown)", fontsize=7)
