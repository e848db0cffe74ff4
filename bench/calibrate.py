"""How robust the R9 Nano calibration is: for each open constant, how many of the eight
R9 Nano picks (tile and streaming slots of the example kernels) match QuCo's own column and
the paper's exhaustive best (Fine-Tuned) of Table III, as "QuCo/Fine-Tuned" counts.

    .venv/bin/python bench/calibrate.py

Uses the reference model (the firmware matches it bit for bit), varying one constant (or
the pair of cost weights) at a time around the shipped values of gst/abi.py.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

from quco.gst import abi, tables
from quco.host import reference
from quco.host.kernel import load_kernel

ROOT = Path(__file__).resolve().parent.parent
TABLE_III_R9_NANO = {  # QuCo Table III, R9 Nano column: tile elements / slots
    "elementwise-k": (2048, 2), "elementwise": (2048, 4), "sumvectors": (2048, 4), "dot-product": (2048, 4),
    "matrix-vector": (512, 4), "matrix-matrix": (512, 4), "matrix-matrix-reduction": (512, 2),
    "batched-matrix-matrix": (512, 2)}
FINE_TUNED_R9_NANO = {  # QuCo Table III, R9 Nano, exhaustive simulation
    "elementwise-k": (2048, 2), "elementwise": (2048, 8), "sumvectors": (2048, 8), "dot-product": (1024, 2),
    "matrix-vector": (512, 2), "matrix-matrix": (512, 2), "matrix-matrix-reduction": (512, 2),
    "batched-matrix-matrix": (512, 2)}


@contextmanager
def constant(name: str, value):
    saved = abi.CONSTANTS[name]
    abi.CONSTANTS[name] = (value,) + saved[1:]
    try:
        yield
    finally:
        abi.CONSTANTS[name] = saved


def matches(gst: bytes, kernels: dict) -> str:
    n = [0, 0]
    for name, k in kernels.items():
        r = reference.configure(gst, k.record())
        streaming = {s for s, q in zip(r.slots, k.queues) if q[1] == abi.QUEUE_STREAMING}
        for i, column in enumerate((TABLE_III_R9_NANO, FINE_TUNED_R9_NANO)):
            tile, slots = column[name]
            n[i] += (r.tile, streaming) == (tile, {slots})
    return f"{n[0]}/{n[1]}"


def main() -> int:
    con = Console(width=None if sys.stdout.isatty() else 130)
    kernels = {n: load_kernel(ROOT / "examples" / "kernels" / f"{n}.json") for n in TABLE_III_R9_NANO}
    base = tables.unpack(tables.load("r9-nano"))
    gst = tables.pack(base)
    con.print(f"shipped constants: {matches(gst, kernels)} of 8 R9 Nano picks match QuCo / Fine-Tuned")
    t = Table(title="R9 Nano picks matching QuCo/Fine-Tuned when one constant varies (shipped value in bold)")
    t.add_column("constant")
    t.add_column("value: matches QuCo/Fine-Tuned out of 8")
    for name, values in (("CU_SLOT_REF", (4, 8, 9, 16, 17, 32, 64)), ("TILE_BOUND_SLOTS", (1, 2, 4)),
                         ("FALLBACK_SLOTS", (1, 2, 4, 8)), ("FALLBACK_SLOTS_LOW_CI", (2, 4, 8))):
        cells = []
        for v in values:
            with constant(name, v):
                m = matches(gst, kernels)
            text = f"{v}: {m}"
            cells.append(f"[bold]{text}[/bold]" if v == abi.const(name) else text)
        t.add_row(name, "  ".join(cells))
    cells = []
    for att in (0, 50, 100, 200, 400):
        g = dict(base, lat_att_cycles=att)
        text = f"{att}: {matches(tables.pack(g), kernels)}"
        cells.append(f"[bold]{text}[/bold]" if att == base["lat_att_cycles"] else text)
    t.add_row("GST lat_att_cycles", "  ".join(cells))
    con.print(t)
    grid = Table(title="COST_A (rows) x COST_B (columns): matches QuCo/Fine-Tuned out of 8")
    bs = (0, 0.1, 0.2, 0.5, 1, 2)
    grid.add_column("a \\ b")
    for b in bs:
        grid.add_column(str(b), justify="right")
    for a in (0, 0.01, 0.02, 0.05, 0.5, 1):
        row = []
        for b in bs:
            with constant("COST_A", a), constant("COST_B", b):
                row.append(str(matches(gst, kernels)))
        grid.add_row(str(a), *row)
    con.print(grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
