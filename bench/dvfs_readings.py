"""Can any reading of "QuCo-HW reads the current clock" give the paper's DVFS result?

QuCo Sec. V: on the MI100, Whisper-Tiny's FC-5 (encoder.layers[0].fc1, see
docs/workloads.md) runs a 512-element tile at 1500 MHz and 256 at 1300 MHz. The listing's
only clock-dependent inputs are latencyTotal and the bandwidth in bytes per core cycle, so
this script tries every way they could follow the clock, with the reference model (the
firmware matches it bit for bit), and asks the performance model what the change would be
worth. Nothing here feeds back into a constant.

    .venv/bin/python bench/dvfs_readings.py             # readings, Wfs, peak map, model (about 6 s)
    .venv/bin/python bench/dvfs_readings.py --weights   # also every cost weight pair (about 7 s)

Under the shipped rules FC-5's queues hold K = 384 elements, so two tiles per queue bound its
tile to 128 at every clock, whatever the reading: the tile tables show that bound; the peak map
and the model tables show what the scan itself would do.

A reading is emulated by rewriting the GST and launching at its nominal clock (the model
reads the latencies as core cycles at the nominal clock, so scaling them by f emulates a
time and leaving them emulates cycles fixed at the nominal clock's): at clock c
(f = c / 1500) a latency that is a time becomes `cycles x f`, and a bandwidth fixed in
bytes per second becomes `MB/s / f` (so that cycles per byte = nominal x CUs / (MB/s / f)).
"""
from __future__ import annotations

import dataclasses
import itertools
import sys
from contextlib import ExitStack
from pathlib import Path

from rich.table import Table

from _console import Console
from _progress import Steps, step
from calibrate import constant
from quco.gst import tables
from quco.host import explain, reference
from quco.perfmodel import search
from quco.perfmodel.params import machine
from quco.perfmodel.work import Config, Work
from quco.workloads.format import load
from quco.workloads.runner import model_ns

ROOT = Path(__file__).resolve().parent.parent
GPU = "mi100"
CLOCKS = (1500, 1400, 1300, 1200, 1100, 1000, 900)
LATENCIES = ("lat_att_cycles", "lat_l2_cycles", "lat_dram_cycles")
READINGS = {  # name: (what follows the clock as a time, whether DRAM bytes per second are fixed)
    "DRAM latency a time, bytes/s fixed": (("lat_dram_cycles",), True),
    "every latency in cycles, bytes/s fixed": ((), True),
    "shipped: every latency a time, bytes/s fixed": (LATENCIES, True),
    "DRAM latency a time, bytes/cycle fixed": (("lat_dram_cycles",), False),
}


def gst_at(g0: dict, reading: str, clock: int) -> bytes:
    timed, bytes_per_s = READINGS[reading]
    f = clock / g0["core_clock_mhz"]
    g = dict(g0)
    for name in timed:
        g[name] = max(round(g0[name] * f), 1 if name == "lat_dram_cycles" else 0)
    if bytes_per_s:
        g["dram_bw_mbps"] = round(g0["dram_bw_mbps"] / f)
    return tables.pack(g)


def tile(gst: bytes, kernel, **changes) -> int | None:
    try:
        return reference.configure(gst, dataclasses.replace(kernel, **changes).record()).tile
    except reference.ConfigError:
        return None


def scan_best(gst: bytes, kernel) -> int:
    """The merit scan's best tile, before the CI step (as `quco-emu explain` shows it)."""
    steps = explain.trace(gst, kernel.record())[3]
    return next(s for s in steps if s["step"] == "ci")["best"]


def main(argv: list[str]) -> int:
    # progress on stderr (_tables' step()s, one a table); stdout as without it
    with Steps("dvfs_readings", "table", 5 + ("--weights" in argv)):
        return _tables(argv)


def _tables(argv: list[str]) -> int:
    out = Console(highlight=False, width=150)  # on a terminal; piped, whole
    g0 = tables.unpack(tables.load(GPU))
    layers = load(ROOT / "quco" / "examples" / "workloads" / "whisper-tiny.json").layers
    linears = [lay for lay in layers if lay.type.startswith("FC")]
    fc5 = linears[4]
    encoder = {lay.type: lay for lay in layers[:8]}.values()   # conv1, conv2, one of each linear shape

    step("the tile at each clock, each reading")
    t = Table(title=f"Tile on the {GPU} at {', '.join(map(str, CLOCKS))} MHz (one value: the same at every clock); "
                    "Wfs 7, shipped constants, the encoder's layer shapes")
    t.add_column("layer (paper's name)")
    for reading in READINGS:
        t.add_column(reading, justify="right")
    for lay in encoder:
        paper = f"FC-{linears.index(lay) + 1}" if lay in linears else lay.type
        cells = []
        for reading in READINGS:
            seq = [tile(gst_at(g0, reading, c), lay.kernel) for c in CLOCKS]
            cells.append(str(seq[0]) if len(set(seq)) == 1 else "/".join(map(str, seq)))
        t.add_row(f"{lay.name} ({paper})", *cells)
    out.print(t)

    step("FC-5's tile per consumer wavefront count")
    t = Table(title="FC-5's tile at 1500/1300/1100/900 MHz per consumer wavefront count (the host API gives 7)")
    t.add_column("Wfs", justify="right")
    for reading in READINGS:
        t.add_column(reading, justify="right")
    for wfs in range(1, 17):
        t.add_row(str(wfs), *("/".join(str(tile(gst_at(g0, r, c), fc5.kernel, consumer_wavefronts=wfs))
                                       for c in (1500, 1300, 1100, 900)) for r in READINGS))
    out.print(t)

    step("FC-5's merit peak")
    factors = (0.25, 0.5, 1, 2, 4, 8)
    t = Table(title="FC-5's merit peak (before the CI step) for latencyTotal x bandwidth; "
                    "a 256 after the CI step needs a peak of 512")
    t.add_column("latencyTotal cycles", justify="right")
    for f in factors:
        t.add_column(f"{f} x MI100 bandwidth", justify="right")
    peaks = set()
    for lat in (25, 50, 100, 200, 400, 650, 1000, 2000, 4000):
        row = []
        for f in factors:
            g = dict(g0, lat_att_cycles=0, lat_l2_cycles=0, lat_dram_cycles=lat, dram_bw_mbps=round(g0["dram_bw_mbps"] * f))
            row.append(scan_best(tables.pack(g), fc5.kernel))
        peaks.update(row)
        t.add_row(str(lat), *map(str, row))
    out.print(t)
    out.print(f"peaks seen: {sorted(peaks)}; 512 is {'among them' if 512 in peaks else 'never one'}")

    step("256 against 512 on the performance model")
    work = dataclasses.replace(Work.of(fc5.kernel), name="")
    t = Table(title=f"What 256 instead of 512 would be worth for FC-5 on the performance model ({GPU}, us)")
    cfgs = {tl: Config(tl, tuple(2 for _ in work.queues)) for tl in (512, 256)}  # QuCo's 2 slots at either tile
    for col in ("MHz", cfgs[512].label(work), cfgs[256].label(work), "256 vs 512", "exhaustive best"):
        t.add_column(col, justify="right")
    for c in (1500, 1300, 1100, 900):
        m = machine(g0, c)
        ns = {tl: model_ns(m, work, cfg) for tl, cfg in cfgs.items()}
        best = search.exhaustive(m, g0, work)[0]
        t.add_row(str(c), f"{ns[512] / 1e3:.1f}", f"{ns[256] / 1e3:.1f}", f"{ns[512] / ns[256]:.3f}x",
                  f"{best.config.label(work)}: {best.outcome.ns / 1e3:.1f}")
    out.print(t)

    step("each layer type's exhaustive best at each clock")
    t = Table(title=f"The most knowing the clock could gain on the model ({GPU}): each Whisper-Tiny layer type's exhaustive "
                    "best at 1500 MHz, run at the clock, against the exhaustive best at the clock (an oracle QuCo-HW over an oracle QuCo-SW)")
    t.add_column("type (our names)")
    t.add_column("best at 1500", justify="right")
    for c in (1300, 1100, 900):
        t.add_column(f"{c} MHz: gain (best there)", justify="right")
    for lay in {lay.type: lay for lay in layers}.values():
        w = dataclasses.replace(Work.of(lay.kernel), name="")
        nominal = search.exhaustive(machine(g0, 1500), g0, w)[0].config
        cells = []
        for c in (1300, 1100, 900):
            m = machine(g0, c)
            best = search.exhaustive(m, g0, w)[0]
            cells.append(f"{model_ns(m, w, nominal) / best.outcome.ns:.3f}x ({best.config.label(w)})")
        t.add_row(lay.type, nominal.label(w), *cells)
    out.print(t)

    if "--weights" in argv:
        step("every cost weight pair")
        weights = (0, 0.01, 0.03, 0.1, 0.3, 1, 2, 3, 4, 6, 8, 16, 32)
        found = []
        for a, b in itertools.product(weights, weights):
            with ExitStack() as stack:
                stack.enter_context(constant("COST_A", a))
                stack.enter_context(constant("COST_B", b))
                for reading in READINGS:
                    pair = [tile(gst_at(g0, reading, c), fc5.kernel) for c in (1500, 1300)]
                    if pair == [512, 256]:
                        found.append((a, b, reading))
        out.print(f"cost weights COST_A x COST_B in {weights}^2 x {len(READINGS)} readings: "
                  f"{len(found)} of {len(weights) ** 2 * len(READINGS)} give FC-5 512 -> 256 at 1300 MHz"
                  + (f": {found}" if found else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
