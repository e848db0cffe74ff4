"""`quco-emu explain`: how the unit reaches its pick, step by step, from the reference model.

The Planner records what each step computed (`Planner(trace=[...])`); this module only lays
those values out as tables, so what it shows is what the firmware computes (bit for bit).
"""
from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..gst import abi, tables
from ..gst.abi import const
from . import reference
from .device import describe

CLASS_NAMES = {abi.CI_CLASS_LOW: "low", abi.CI_CLASS_MEDIUM: "medium", abi.CI_CLASS_HIGH: "high"}


def _f(v, digits=6) -> str:
    return f"{float(v):.{digits}g}"


def trace(gst: bytes, record: bytes) -> tuple[reference.Planner, int, list[int], list[dict]]:
    """Run the model on a GST and launch record, keeping every step's values.
    Raises reference.ConfigError as the unit would answer."""
    steps: list[dict] = []
    p = reference.planner(gst, record, steps)
    tile, slots = p.plan()
    return p, tile, slots, steps


def _inputs(p: reference.Planner) -> Table:
    t = Table(title="inputs (GST and launch record, as the planner derives them)")
    for col in ("quantity", "value", "from"):
        t.add_column(col)
    g = p.g
    t.add_row("clock", f"{p.clock} MHz", "launch record (0 = the GST's nominal clock)")
    t.add_row("cycles per byte, one CU's DRAM share", _f(p.cpb), f"clock x {g['num_cus']} CUs / {g['dram_bw_mbps']:,} MB/s")
    t.add_row("latencyTotal", f"{_f(p.lat)} cycles", f"(ATT + L2 + DRAM) x clock / {g['core_clock_mhz']} MHz: "
              "core cycles at the GST's clock, a time under DVFS")
    t.add_row("1 / (SIMD muls x Wfs)", _f(p.inv_sched), "bestLatency = T x this (no Wfs cap)")
    t.add_row("overlap min(Wfs - 1, WfPools)", _f(p.overlap), "")
    t.add_row("cost constant", _f(p.cost_const), f"COST_A {const('COST_A')} / BW + COST_B {const('COST_B')} / CL")
    t.add_row("element size of the tile", f"{p.e_tile} B", "largest streaming element")
    t.add_row("shortest queue", f"{p.min_len:,} elements", "the length bound: at least MIN_BUFFERS transfers"
              + (" (quco+: length x passes)" if p.plus else ""))
    t.add_row("bytes per element of a kernel step", f"{p.step_bytes} B", "one element of every streaming queue")
    t.add_row("CI class", CLASS_NAMES[p.ci_class], "given by the host" if p.ci_given else
              f"CI {_f(p.ci)} against CI_LOW {const('CI_LOW')} and CI_HIGH {const('CI_HIGH')}")
    t.add_row("active CUs", str(p.cus), f"CU step: slots x CU_SLOT_REF {const('CU_SLOT_REF')} / CUs, at least "
              f"MIN_BUFFERS {const('MIN_BUFFERS')}" + (" (switched off)" if p.flags & abi.FLAG_NO_CU_AWARE else
                                                       " (quco+: none)" if p.plus else ""))
    t.add_row("LDS for queue blocks", f"{p.avail:,} B", f"partition LDS - {p.meta} B metadata")
    return t


def _tiles(steps: list[dict]) -> Table:
    t = Table(title="Algorithm 2: merit per tile (weighted = merit x cost; the best wins, the first on ties)")
    for col in ("tile", "procTime", "memTime", "merit", "cost", "weighted merit", "best so far"):
        t.add_column(col, justify="right")
    for s in (s for s in steps if s["step"] == "tile"):
        merit = np.float32(s["proc"]) / np.float32(s["mem"])  # shown only; the scan cross-multiplies
        weighted = np.float32(s["num"]) / np.float32(s["mem"])
        t.add_row(str(s["tile"]), _f(s["proc"]), _f(s["mem"]), _f(merit), _f(s["cost"]), _f(weighted),
                  "yes" if s["best"] else "")
    return t


def _tile_steps(p: reference.Planner, steps: list[dict]) -> Table:
    ci = next(s for s in steps if s["step"] == "ci")
    length = next(s for s in steps if s["step"] == "length")
    bound = next(s for s in steps if s["step"] == "bound")
    t = Table(title="tile: CI step, length and LDS bounds")
    for col in ("step", "tile", "why"):
        t.add_column(col)
    t.add_row("best weighted merit", str(ci["best"]), "")
    if p.flags & abi.FLAG_NO_CI_SCALING:
        why = "CI scaling switched off"
    else:
        why = {abi.CI_CLASS_LOW: "low CI (< CI_LOW): doubled", abi.CI_CLASS_HIGH: "high CI (> CI_HIGH): halved",
               abi.CI_CLASS_MEDIUM: "medium CI: unchanged"}[ci["ci_class"]]
    t.add_row("CI step", str(ci["tile"]), why)
    short = (const("MIN_BUFFERS") - 1) * length["tile"] >= length["length"]
    t.add_row("length bound", str(length["tile"]),
              f"the shortest queue ({length['length']:,} elements{', x its passes' if p.plus else ''}) must take "
              f"{const('MIN_BUFFERS')} transfers"
              + (" (halved)" if length["tile"] < length["tile_in"] else "")
              + ("; stopped at the GST's minimum tile" if short else ""))
    t.add_row("LDS bound", str(bound["tile"]),
              f"Little's {bound['slots']} slots per streaming queue + 1 per stationary: {bound['bytes']:,} B of "
              f"{bound['avail']:,}" + (" (halved to fit)" if bound["tile"] < bound["tile_in"] else ""))
    return t


def _slots(p: reference.Planner, steps: list[dict]) -> Table:
    t = Table(title="Algorithm 3: slots (Little's law per kernel)")
    for col in ("queue", "kind", "memTime of a step", "procTime", "Little's ratio",
                "integer, rounded up (quco+)" if p.plus else "power of two",
                "deepened, neighbours kept (quco+)" if p.plus else "CU step",
                "final"):
        t.add_column(col, justify="right")
    fit = next((s for s in steps if s["step"] == "fit"), None)
    final = None if fit is None or fit["fits"] else fit["fallback"][-1]
    little = next((s for s in steps if s["step"] == "little"), None)
    for q, slots in (little["slots"].items() if little else ()):
        ratio = "off: max_slots" if p.flags & abi.FLAG_NO_LITTLE else _f(little["ratio"])
        capped = "" if slots == little["stepped"] else (f" (transfers of the queue x its {p.q[q].passes} passes: {slots})"
                                                        if p.plus else f" (transfers of the queue: {slots})")
        t.add_row(str(q), "streaming", _f(little["mem"]), _f(little["proc"]), ratio, str(little["rounded"]),
                  str(little["stepped"]), (str(slots) + capped) if final is None else str(p.cap(little["tile"], q, final)))
    for s in (s for s in steps if s["step"] == "stationary"):
        t.add_row(str(s["queue"]), "stationary", "", "", f"room {s['room']}", "", "", str(s["slots"]))
    return t


def _fit(steps: list[dict]) -> Text:
    fit = next((s for s in steps if s["step"] == "fit"), None)
    if fit is None:
        return Text("no streaming queues")
    if fit["fits"]:
        return Text(f"fit: the streaming queues fit ({fit['bytes']:,} B with one slot per stationary queue, "
                    f"{fit['barriers']} barriers)")
    tried = " -> ".join(map(str, fit["fallback"]))
    return Text(f"fit: they do not fit; CI fallback {tried} slots each until they do "
                f"({fit['bytes']:,} B, {fit['barriers']} barriers)")


def render(console: Console, errors: Console, gst: bytes, kernel, gpu: str) -> int:
    """Print the explanation; returns 0, or 3 when the unit would answer with an error
    (printed on `errors`)."""
    try:
        p, tile, slots, steps = trace(gst, kernel.record())
    except reference.ConfigError as e:
        errors.print(Text(f"error: {kernel.name} on {gpu}: {describe(e.status, e.detail)}"))
        return 3
    name = tables.unpack(gst)["name"].rstrip(b"\0").decode(errors="replace")
    console.print(Text(f"{kernel.name} on {gpu} ({name}): tile {tile}, slots {'/'.join(map(str, slots))}",
                       style="bold"))
    for part in (_inputs(p), _tiles(steps), _tile_steps(p, steps), _fit(steps), _slots(p, steps)):
        console.print(part)
    return 0
