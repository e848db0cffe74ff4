"""DVFS: the clock changes layer by layer; QuCo-HW reads the current clock, QuCo-SW assumes
the GST's (the paper's MI100 study, default 1,500 MHz).

A trace file is JSON: {"name", "gpu", "description", "clocks_mhz": [layer 0, layer 1, ...]};
layer i runs at clocks_mhz[i], and layers past the end hold the last value. Both variants
run the same layers at the same clocks on the model; they differ only in the launch record's
`core_clock_mhz` (the clock for HW, 0 for SW), so only the configuration differs.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path


from ..examples import WORKLOADS
from ..util import schema
from ..util.userinput import printable
from ..harness.evaluate import geomean
from . import baselines, runner
from .format import WorkloadError, Workload, read_json

TRACE_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["name", "clocks_mhz"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": schema.PRINTABLE},
        "description": {"type": "string"},
        "gpu": {"type": "string", "minLength": 1},
        "clocks_mhz": {"type": "array", "minItems": 1, "maxItems": 100000,
                       "items": {"type": "integer", "minimum": 1, "maximum": 10000}}}}
TRACES = WORKLOADS / "dvfs"


@functools.lru_cache(maxsize=1)
def _checker() -> schema.Checker:
    return schema.Checker(TRACE_SCHEMA)


@dataclasses.dataclass
class Trace:
    name: str
    clocks_mhz: list[int]
    gpu: str | None = None
    description: str = ""
    path: str = ""        # the file it was read from, for messages

    def clocks(self, n: int) -> list[int]:
        """The clock of each of `n` layers (the last value holds past the end)."""
        return [self.clocks_mhz[min(i, len(self.clocks_mhz) - 1)] for i in range(n)]


def load_trace(path) -> Trace:
    if str(path) == "":
        raise WorkloadError([f"no DVFS trace given (an empty name); expected a file or one of {', '.join(bundled())}"])
    p = Path(path)
    if not p.exists() and (TRACES / f"{path}.json").exists():   # a bundled trace by name
        p = TRACES / f"{path}.json"
    elif not p.exists() and not p.is_symlink():
        raise WorkloadError([f"{printable(str(path))}: no such DVFS trace file and no bundled trace of that name "
                             f"(bundled: {', '.join(bundled())})"])
    doc = read_json(p, "DVFS trace", 1 << 20)
    problems = _checker().problems(doc)  # kernel.json's rules and words: 1500.0 is no integer
    if problems:
        raise WorkloadError(schema.report([f"{p}: {message}" for _, message in problems]))
    return Trace(doc["name"], doc["clocks_mhz"], doc.get("gpu"), doc.get("description", ""), printable(str(p)))


def bundled() -> list[str]:
    return sorted(t.stem for t in TRACES.glob("*.json"))


def compare(gpu: str, workload: Workload, trace: Trace, clock_aware_best: bool = True, active_cus: int = 0,
            lds_bytes: int = 0, hw_run: tuple | None = None, **session_options) -> dict:
    """QuCo-HW and QuCo-SW on the same trace; rows per layer and a summary. The workload runs
    on `active_cus` and `lds_bytes` per CU (0 = all). `hw_run` = (session, steps) of a run
    already made with the trace's clocks told to the unit (the CLI's own run), so QuCo-HW is
    not run twice.

    With `clock_aware_best`, each row also says what knowing the clock is worth at all: the
    exhaustive best (ATT/Fine-Tuned) for the layer's clock against the exhaustive best for the
    GST's clock, both run at the layer's clock (`clock_aware_gain`, >= 1). QuCo-HW cannot gain
    more than an oracle's choice would, so this bounds what any clock-aware configurator could
    get on the model."""
    clocks = trace.clocks(len(workload.layers))
    runs, sessions = {}, {}
    if hw_run is not None:
        sessions["hw"], runs["hw"] = hw_run
    for variant, tell in (("hw", True), ("sw", False)):
        if variant not in runs:
            sessions[variant] = runner.Session(gpu, **session_options)
            tenant = runner.Tenant(workload, active_cus, lds_bytes, clocks=clocks, tell_clock=tell)
            runs[variant] = runner.run(sessions[variant], [tenant])
    rows = []
    for hw, sw in zip(runs["hw"], runs["sw"]):
        rows.append({"index": hw.layer.index, "name": hw.layer.name, "type": hw.layer.type, "clock_mhz": hw.clock_mhz,
                     "hw_config": hw.label, "sw_config": sw.label, "hw_ns": hw.run_ns, "sw_ns": sw.run_ns,
                     "hw_speedup": sw.run_ns / hw.run_ns, "same_config": hw.config == sw.config})
    if clock_aware_best:
        _clock_aware_best(sessions["hw"], runs["hw"], rows)
    hw_total, sw_total = (max(s.end for s in runs[v]) for v in ("hw", "sw"))
    best = max(rows, key=lambda r: r["hw_speedup"])
    worst = min(rows, key=lambda r: r["hw_speedup"])
    summary = {"trace": trace.name, "trace_layers": len(trace.clocks_mhz), "hw_ns": hw_total, "sw_ns": sw_total,
               "hw_speedup_total": sw_total / hw_total,
               "hw_speedup_geomean": geomean(r["hw_speedup"] for r in rows),
               "max_hw_speedup": best["hw_speedup"], "max_at": best["name"],
               "min_hw_speedup": worst["hw_speedup"], "min_at": worst["name"],
               "layers_config_differs": sum(not r["same_config"] for r in rows)}
    gains = [r for r in rows if r.get("clock_aware_gain") is not None]
    if gains:
        top = max(gains, key=lambda r: r["clock_aware_gain"])
        summary.update({"max_clock_aware_gain": top["clock_aware_gain"], "max_clock_aware_at": top["name"],
                        "clock_aware_gain_total": sum(r["fine_nominal_ns"] for r in gains)
                        / sum(r["fine_ns"] for r in gains)})
    return {"rows": rows, "summary": summary, "steps": runs}


def _clock_aware_best(session: runner.Session, steps: list[runner.Step], rows: list[dict]) -> None:
    """Adds the oracle's columns to `rows` (see compare); None where no configuration fits."""
    g_items = baselines.gst_key(session.g)
    for step, row in zip(steps, rows):
        m = session.machine(int(step.clock_mhz), step.active_cus, step.lds_bytes)
        nominal = session.machine(0, step.active_cus, step.lds_bytes)
        here, there = (baselines.fine_tuned(x, g_items, step.work) for x in (m, nominal))
        nominal_ns = runner.model_ns(m, step.work, there[0]) if here and there else None
        row.update({"fine_config": here[0].label(step.work) if here else None,
                    "fine_nominal_config": there[0].label(step.work) if there else None,
                    "fine_ns": here[1] if here else None, "fine_nominal_ns": nominal_ns,
                    "clock_aware_gain": nominal_ns / here[1] if nominal_ns else None})
