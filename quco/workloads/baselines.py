"""The paper's workload baselines (QuCo Fig. 8-9) next to QuCo's picks, on the same model.

- ATT/Fine-Tuned: for every layer, the best configuration of the exhaustive space
  (`quco.perfmodel.search.exhaustive`), searched once per unique (machine, layer shape).
- ATT/Semi-Tuned: the first layer's Fine-Tuned configuration reused for every layer. A
  layer with other queues gets the same tile and, per queue, the slots the first layer gave
  its first queue of the same type (`harness.evaluate.adapt`). Where that does not fit the
  layer (LDS, barriers, a wavefront slot), the tile is halved until it fits: what a
  programmer reusing one setting would have to do. Such layers are marked `adapted`.
- QuCo: what the firmware wrote at each launch (`runner.run`).

Baselines are static configurations chosen before the run: they pay no reconfiguration.
QuCo's whole-model time includes its exposed reconfiguration time; its per-layer speedups
compare run times only.
"""
from __future__ import annotations

import functools

from ..perfmodel import search
from ..harness.evaluate import adapt, geomean
from ..perfmodel.params import Machine
from ..perfmodel.work import Config, Work
from .runner import Step, model_ns

CASES = ("ATT/Semi-Tuned", "ATT/Fine-Tuned", "QuCo")


def gst_key(g: dict) -> tuple:
    """The GST's values as a hashable key for fine_tuned's cache (the name's bytes left out; the
    file's own [model] table, a dict, as its sorted items: params.machine reads either)."""
    return tuple(sorted((k, tuple(sorted(v.items())) if isinstance(v, dict) else v)
                        for k, v in g.items() if not isinstance(v, bytes)))


@functools.lru_cache(maxsize=4096)
def fine_tuned(m: Machine, g_items: tuple, work: Work) -> tuple[Config, float] | None:
    ranked = search.exhaustive(m, dict(g_items), work, top=1)
    return (ranked[0].config, ranked[0].outcome.ns) if ranked else None


def semi_config(first: Config, first_work: Work, m: Machine, work: Work) -> tuple[Config, bool] | None:
    """The first layer's configuration on `work`, and whether its tile had to shrink."""
    cfg = adapt(first, first_work, work)
    tile = cfg.tile
    while tile >= 1:
        trial = Config(tile, cfg.slots)
        if model_ns(m, work, trial) is not None:
            return trial, tile != first.tile
        tile //= 2
    return None


def compare(steps: list[Step], session) -> dict:
    """Adds ATT/Semi-Tuned and ATT/Fine-Tuned columns to every step (in place, `extra`)
    and returns the per-workload summary: totals and geometric-mean speedups."""
    g_items = gst_key(session.g)
    summary = {}
    for tid in dict.fromkeys(s.tenant for s in steps):
        mine = [s for s in steps if s.tenant == tid]
        ms = {id(s): session.machine(int(s.clock_mhz), s.active_cus, s.lds_bytes) for s in mine}
        first = fine_tuned(ms[id(mine[0])], g_items, mine[0].work)
        seen: dict = {}  # (machine, work) -> the columns: identical layers are looked up once
        for s in mine:
            m = ms[id(s)]
            if (m, s.work) not in seen:
                fine = fine_tuned(m, g_items, s.work)
                semi = semi_config(first[0], mine[0].work, m, s.work) if first else None
                seen[(m, s.work)] = {
                    "fine_config": fine[0].label(s.work) if fine else None, "fine_ns": fine[1] if fine else None,
                    "semi_config": semi[0].label(s.work) if semi else None,
                    "semi_ns": model_ns(m, s.work, semi[0]) if semi else None,
                    "semi_adapted": semi[1] if semi else None}
            s.extra.update(seen[(m, s.work)])
            s.extra["quco_vs_fine"] = s.extra["fine_ns"] / s.run_ns if s.extra["fine_ns"] else None
            s.extra["quco_vs_semi"] = s.extra["semi_ns"] / s.run_ns if s.extra["semi_ns"] else None
        quco_total = max(s.end for s in mine)
        fine_total = _total(mine, "fine_ns")
        semi_total = _total(mine, "semi_ns")
        summary[tid] = {
            "quco_ns": quco_total, "quco_run_ns": sum(s.run_ns for s in mine),
            "fine_ns": fine_total, "semi_ns": semi_total,
            "speedup_vs_fine": fine_total / quco_total if fine_total else None,
            "speedup_vs_semi": semi_total / quco_total if semi_total else None,
            "geomean_layer_vs_fine": geomean(s.extra["quco_vs_fine"] for s in mine),
            "geomean_layer_vs_semi": geomean(s.extra["quco_vs_semi"] for s in mine),
            "worst_layer_vs_fine": min((s for s in mine if s.extra["quco_vs_fine"]),
                                       key=lambda s: s.extra["quco_vs_fine"]).layer.name,
            "layers_semi_adapted": sum(bool(s.extra["semi_adapted"]) for s in mine),
            "layers_semi_missing": sum(s.extra["semi_ns"] is None for s in mine)}
    return summary


def _total(steps: list[Step], key: str) -> float | None:
    values = [s.extra[key] for s in steps]
    return None if any(v is None for v in values) else sum(values)


def by_type(steps: list[Step]) -> list[dict]:
    """One row per unique layer type (Fig. 9): configurations and time of each case."""
    rows: dict = {}
    for s in steps:
        r = rows.setdefault((s.tenant, s.layer.type), {
            "tenant": s.tenant, "type": s.layer.type, "count": 0, "quco_config": s.label,
            "semi_config": s.extra.get("semi_config"), "fine_config": s.extra.get("fine_config"),
            "quco_ns": 0.0, "semi_ns": 0.0, "fine_ns": 0.0})
        r["count"] += 1
        for key in ("quco_ns", "semi_ns", "fine_ns"):
            v = s.run_ns if key == "quco_ns" else s.extra.get(key)
            r[key] = None if v is None or r[key] is None else r[key] + v
    for r in rows.values():
        r["quco_vs_fine"] = r["fine_ns"] / r["quco_ns"] if r["fine_ns"] else None
        r["quco_vs_semi"] = r["semi_ns"] / r["quco_ns"] if r["semi_ns"] else None
    return list(rows.values())
