"""A workload's timeline as a Chrome trace (open in https://ui.perfetto.dev): per tenant a
"layers" track (each layer's modelled run) and an "exposed" track (the GPU waiting for the
unit), and one "QuCo unit" process whose track holds every reconfiguration, queued waits
included. Times are microseconds; each span's args carry the layer's figures.
"""
from __future__ import annotations

from .runner import Step, Tenant

UNIT_PID = 1


def chrome_trace(steps: list[Step], tenants: list[Tenant], gpu: str) -> dict:
    ev = [_meta(UNIT_PID, 0, "process_name", name=f"QuCo unit ({gpu})"),
          _meta(UNIT_PID, 1, "thread_name", name="reconfiguration"),
          _meta(UNIT_PID, 2, "thread_name", name="queued (unit busy)")]
    for tid, t in enumerate(tenants):
        pid = tid + 2
        ev += [_meta(pid, 0, "process_name", name=f"GPU: {t.label}"),
               _meta(pid, 1, "thread_name", name="layers"), _meta(pid, 2, "thread_name", name="exposed reconfiguration")]
    for s in steps:
        pid, who = s.tenant + 2, f"{s.layer.name}" if len(tenants) == 1 else f"{tenants[s.tenant].workload.name}: {s.layer.name}"
        args = {"index": s.layer.index, "type": s.layer.type, "config": s.label, "cache_hit": s.cache_hit,
                "clock_mhz": s.clock_mhz, "reconf_cycles": s.reconf_cycles, "instructions": s.instructions}
        ev.append(_span(pid, 1, s.layer.name, s.start, s.end, {**args, "run_ns": s.run_ns}))
        ev.append(_span(UNIT_PID, 1, f"{who} ({'hit' if s.cache_hit else 'miss'})", s.reconf_start, s.reconf_end, args))
        if s.queueing_ns > 0:
            ev.append(_span(UNIT_PID, 2, f"{who} waits", s.requested, s.reconf_start, {"queueing_ns": s.queueing_ns}))
        if s.exposed_ns > 0:
            ev.append(_span(pid, 2, f"exposed before {s.layer.name}", s.start - s.exposed_ns, s.start,
                            {"exposed_ns": s.exposed_ns}))
    return {"traceEvents": ev, "displayTimeUnit": "ns"}


def _meta(pid: int, tid: int, kind: str, **args) -> dict:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": args}


def _span(pid: int, tid: int, name: str, begin_ns: float, end_ns: float, args: dict) -> dict:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": begin_ns / 1000.0,
            "dur": (end_ns - begin_ns) / 1000.0, "args": args}
