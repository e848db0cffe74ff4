"""How robust the calibration is, varying one open constant (or the pair of cost weights) at
a time around the shipped values of quco/gst/abi.py, with the reference model (the firmware
matches it bit for bit).

    .venv/bin/python bench/calibrate.py           # against the paper: R9 Nano Table III
    .venv/bin/python bench/calibrate.py --model   # against the performance model, every preset

Without --model: how many of the eight picks (tile and streaming slots) match QuCo's own R9
Nano column, the paper's exhaustive best there (Fine-Tuned) and QuCo's MI100 column, as
"R9 QuCo/R9 Fine-Tuned/MI100 QuCo" counts (bench/rule_search.py searches whole rule families).
With --model: QuCo's slowdown against the model's exhaustive best (geometric mean over each
preset's bundled Table III kernels), per preset and over all 40 pairs. A pick that does not
fit or leaves no work-group resident counts as 2x. Nothing here feeds back into a constant.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from rich.table import Table

from quco.gst import abi, tables
from quco.host import reference
from quco.kernel.format import load_kernel
from quco.perfmodel import search
from quco.harness.evaluate import geomean
from quco.perfmodel.params import machine
from quco.perfmodel.residency import occupancy
from quco.perfmodel.work import Config, Work, fits
from rule_search import KERNELS, TABLE_III

from _console import Console
from _progress import Steps, step

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = {  # (GPU, QuCo Table III column as tile / slots in rule_search.KERNELS order)
    "R9 QuCo": ("r9-nano", TABLE_III["r9-nano"]),
    "R9 Fine-Tuned": ("r9-nano", ((2048, 2), (2048, 8), (2048, 8), (1024, 2), (512, 2), (512, 2), (512, 2),
                                  (512, 2))),
    "MI100 QuCo": ("mi100", TABLE_III["mi100"]),
}


@contextmanager
def constant(name: str, value):
    saved = abi.CONSTANTS[name]
    abi.CONSTANTS[name] = (value,) + saved[1:]
    try:
        yield
    finally:
        abi.CONSTANTS[name] = saved


def matches(gsts: dict, kernels: dict) -> str:
    """Matching picks (tile and streaming slots) per column, as "R9 QuCo/R9 Fine-Tuned/MI100 QuCo"."""
    n = []
    for gpu, column in COLUMNS.values():
        hits = 0
        for name, want in zip(KERNELS, column):
            k = kernels[gpu, name]
            r = reference.configure(gsts[gpu], k.record())
            streaming = {s for s, q in zip(r.slots, k.queues) if q[1] == abi.QUEUE_STREAMING}
            hits += (r.tile, streaming) == (want[0], {want[1]})
        n.append(str(hits))
    return "/".join(n)


MODEL_SWEEP = (("CU_SLOT_REF", (16, 24, 32, 48, 64)), ("MIN_BUFFERS", (1, 2, 4)),
               ("LITTLE_SCALE", (0.03125, 0.0625, 0.125)),
               ("FALLBACK_SLOTS", (2, 4, 8)), ("FALLBACK_SLOTS_LOW_CI", (2, 4, 8, 16)),
               ("CI_LOW", (0.5, 1.0, 2.0)), ("CI_HIGH", (2.0, 4.0, 8.0)))
COST_PAIRS = ((0, 0), (0.0135, 0), (0.0224, 0), (0, 0.15), (0.5, 0))  # --model: COST_A, COST_B together
UNFIT_PENALTY = 2.0  # a pick the model cannot run counts as twice the best


def model_cases() -> list[tuple]:
    """(gpu, gst, kernel, work, machine, best cycles) for every preset x its bundled kernels."""
    from quco.cli.perf import bundled_kernels
    cases = []
    for gpu in tables.preset_names():
        step(f"the model's exhaustive best on {gpu}")
        gst = tables.load(gpu)
        g = tables.unpack(gst)
        for k in bundled_kernels(gpu):
            work, m = Work.of(k), machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes)
            cases.append((gpu, gst, k, work, m, search.exhaustive(m, g, work)[0].outcome.cycles))
    return cases


def model_gaps(cases) -> dict:
    """Per preset and "all": QuCo's geometric-mean slowdown against the model's best, in %."""
    ratios: dict = {}
    for gpu, gst, k, work, m, best in cases:
        r = reference.configure(gst, k.record())
        cfg = Config(r.tile, tuple(r.slots))
        runs = r.status == 0 and fits(work, cfg, m.lds_bytes, m.barrier_limit) and occupancy(m, work, cfg) >= 1
        ratio = search.evaluate(m, work, cfg).cycles / best if runs else UNFIT_PENALTY
        ratios.setdefault(gpu, []).append(ratio)
        ratios.setdefault("all", []).append(ratio)
    return {gpu: 100.0 * (geomean(v) - 1.0) for gpu, v in ratios.items()}


def main_model(con: Console) -> int:
    rows = [("shipped", None, None)] + [(n, n, v) for n, vs in MODEL_SWEEP for v in vs]
    rows += [(f"COST_A={a} COST_B={b}", ("COST_A", "COST_B"), (a, b))
             for a, b in COST_PAIRS]
    # progress on stderr (model_cases' step() a preset, one a row); stdout as without it
    with Steps("calibrate --model", "step", len(tables.preset_names()) + len(rows)):
        return _model_table(con, rows)


def _model_table(con: Console, rows: list[tuple]) -> int:
    cases = model_cases()
    gpus = list(dict.fromkeys(c[0] for c in cases)) + ["all"]
    t = Table(title="QuCo's slowdown vs the model's exhaustive best (geomean %), one constant varied; "
                    "shipped value marked *")
    t.add_column("constant = value")
    for gpu in gpus:
        t.add_column(gpu, justify="right")
    for label, name, value in rows:
        step(f"{name} = {value}" if isinstance(name, str) else label)
        if name is None:
            gaps = model_gaps(cases)
        elif isinstance(name, tuple):
            with constant(name[0], value[0]), constant(name[1], value[1]):
                gaps = model_gaps(cases)
        else:
            with constant(name, value):
                gaps = model_gaps(cases)
            label = f"{name} = {value}{' *' if value == abi.const(name) else ''}"
        t.add_row(label, *(f"{gaps[g]:+.1f}" for g in gpus))
    con.print(t)
    return 0


def main() -> int:
    con = Console()
    if "--model" in sys.argv[1:]:
        return main_model(con)   # the table without --model takes under a second: no progress
    kernels = {(gpu, n): load_kernel(ROOT / "quco" / "examples" / "kernels" / ("" if gpu == "r9-nano" else gpu) / f"{n}.json")
               for gpu in ("r9-nano", "mi100") for n in KERNELS}
    base = {gpu: tables.unpack(tables.load(gpu)) for gpu in ("r9-nano", "mi100")}
    gsts = {gpu: tables.pack(g) for gpu, g in base.items()}
    con.print(f"shipped constants: {matches(gsts, kernels)} of 8 picks match R9 QuCo / R9 Fine-Tuned / MI100 QuCo")
    t = Table(title="picks matching R9 QuCo/R9 Fine-Tuned/MI100 QuCo (of 8 each) when one constant varies "
                    "(shipped value in bold)")
    t.add_column("constant")
    t.add_column("value: matches")
    for name, values in (("COST_A", (0, 0.01, 0.02, 0.0225, 0.1, 0.5, 1.0)),
                         ("LITTLE_SCALE", (0.03125, 0.05, 0.0625, 0.075, 0.125)),
                         ("CU_SLOT_REF", (16, 23, 24, 32, 44, 45, 64)), ("MIN_BUFFERS", (1, 2, 4)),
                         ("FALLBACK_SLOTS", (1, 2, 4, 8)),
                         ("FALLBACK_SLOTS_LOW_CI", (2, 4, 8))):
        cells = []
        for v in values:
            with constant(name, v):
                m = matches(gsts, kernels)
            text = f"{v}: {m}"
            cells.append(f"[bold]{text}[/bold]" if v == abi.const(name) else text)
        t.add_row(name, "  ".join(cells))
    cells = []
    for att in (0, 50, 100, 200, 400):
        g = {gpu: tables.pack(dict(b, lat_att_cycles=att)) for gpu, b in base.items()}
        text = f"{att}: {matches(g, kernels)}"
        cells.append(f"[bold]{text}[/bold]" if att == base["r9-nano"]["lat_att_cycles"] else text)
    t.add_row("GST lat_att_cycles", "  ".join(cells))
    con.print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
