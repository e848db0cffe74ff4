"""GST variants x kernels on the model, with QuCo's pick from the reference model: one tidy
row per task, fanned out by quco.util.parallel.

    tasks = make_tasks(g, {"dram_bw_mbps": [256000, 512000]}, kernels)
    rows = [row for rows in run(sweep_task, tasks, scheduler="tcp://host:8786") for row in rows]
    write_table(rows, "sweep.csv")

Every task is a pure function of its arguments, so every way `run` has of running them gives
the same rows.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

from ..gst import abi, tables
from ..host import reference
from ..util.parallel import SweepError
from ..perfmodel import params, search
from ..perfmodel.work import Config, Work


# ---------------------------------------------------------------- GST variants
_FIELDS = {f.name: f for f in abi.GST_CHECKED}


def _check_variant(values: dict, overrides: dict) -> None:
    """The firmware's own boot checks (gst/abi.py) on the packed variant; the first rule it
    breaks, as a message naming the field, the value and what is allowed."""
    bad = abi.gst_violation(tables.pack(values))
    if bad is not None:
        raise ValueError(f"GST variant {overrides}: {bad.message} ({bad.status.name})")


def gst_variants(g: dict, vary: dict[str, list]) -> list[tuple[dict, dict]]:
    """The cartesian product of GST field overrides: [(overrides, GST fields)], in the
    order of `vary`'s fields and values. Names and values are checked as the unit checks
    them at boot; a bad one raises ValueError naming the field, the value and the range."""
    for name, values in vary.items():
        f = _FIELDS.get(name)
        if f is None:
            raise ValueError(f"unknown GST field {name!r}; fields that can vary: {', '.join(_FIELDS)}")
        if not values:
            raise ValueError(f"{name}: no values to try")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{name} = {v!r}: expected an integer in {f.lo}..{f.hi} ({f.doc})")
            if not f.lo <= v <= f.hi:
                raise ValueError(f"{name} = {v}: out of range {f.lo}..{f.hi} ({f.doc})")
    out = []
    for combo in itertools.product(*vary.values()):
        overrides = dict(zip(vary, combo))
        values = {**g, **overrides}
        _check_variant(values, overrides)
        out.append((overrides, values))
    return out


# ---------------------------------------------------------------- one sweep task
class SweepTask(NamedTuple):
    gst: dict          # GST fields (quco.gst.tables.unpack, possibly with overrides)
    overrides: dict    # the fields this variant changed, for the row
    work: Work         # the kernel as the model sees it
    record: bytes      # the kernel's launch record (Kernel.record()), what the unit reads


def make_tasks(g: dict, vary: dict[str, list], kernels) -> list[SweepTask]:
    """One task per GST variant x kernel (quco.kernel.format.Kernel), variants outermost."""
    return [SweepTask(values, overrides, Work.of(k), k.record())
            for overrides, values in gst_variants(g, vary) for k in kernels]


def gpu_name(g: dict) -> str:
    name = g["name"]
    return name.split(b"\0", 1)[0].decode("ascii", "replace") if isinstance(name, bytes) else str(name)


def sweep_task(task) -> list[dict]:
    """QuCo's configuration (the reference model) and the exhaustive best on the model,
    for one GST variant and kernel: one tidy row. A model error names the task."""
    g, overrides, work, record = task
    try:
        return [_sweep_row(g, overrides, work, record)]
    except Exception as e:
        raise SweepError(f"{gpu_name(g)} x {work.name} {overrides}: {type(e).__name__}: {e}") from e


def _sweep_row(g: dict, overrides: dict, work: Work, record: bytes) -> dict:
    h = abi.LAUNCH_HEADER.unpack(record)
    m = params.machine(g, h["core_clock_mhz"], h["active_cus"], h["lds_bytes"])
    row = {"gpu": gpu_name(g), "kernel": work.name, **overrides}
    res = reference.configure(tables.pack(g), record)
    quco = quco_cycles = None
    if res.status == abi.Status.OK:
        quco = Config(res.tile, tuple(res.slots))
        quco_cycles = search.evaluate(m, work, quco).cycles
    ranked = search.exhaustive(m, g, work, top=1)
    best = ranked[0] if ranked else None
    ideal = search.ideal(g, work, h["core_clock_mhz"], h["active_cus"]) if search.tiles(g) else None
    row.update(
        quco_status=abi.STATUS_TEXT[res.status],
        quco_config=quco.label(work) if quco else None,
        quco_cycles=quco_cycles,
        best_config=best.config.label(work) if best else None,
        best_cycles=best.outcome.cycles if best else None,
        gap_pct=100.0 * (quco_cycles / best.outcome.cycles - 1.0) if quco and best else None,
        ideal_cycles=ideal.outcome.cycles if ideal else None)
    return row
