"""The paper's evaluation on the model: the cases of Fig. 6, the ablation of Fig. 7 and the
portability matrices of Fig. 1, as tidy rows (one dict per kernel x GPU x case).

QuCo's configurations come from the firmware, run on the emulated unit; every other case
comes from `quco.perfmodel.search`. All are judged by the same model.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

from ..gst import abi, tables
from ..host.device import Device
from ..kernel.format import Kernel
from ..perfmodel import search
from ..perfmodel.params import machine
from ..perfmodel.residency import occupancy
from ..perfmodel.work import Config, Work, fits

CASES = ("NoATT/Non-Tuned", "NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned",
         "ATT/Fine-Tuned", "QuCo", "Ideal")
# Fig. 7: each step switches off one more of QuCo's heuristics, through the record's flags.
ABLATIONS = (("QuCo", 0),
             ("QuCo -CU", abi.FLAG_NO_CU_AWARE),
             ("QuCo -CU -Little", abi.FLAG_NO_CU_AWARE | abi.FLAG_NO_LITTLE),
             ("QuCo -CU -Little -CI", abi.FLAG_NO_CU_AWARE | abi.FLAG_NO_LITTLE | abi.FLAG_NO_CI_SCALING))

_devices: dict = {}


def firmware_config(gst: bytes, kernel: Kernel, flags: int = 0, firmware=None) -> Config | None:
    """The configuration the firmware writes for `kernel` (with extra ablation `flags`),
    or None when the unit refuses the launch. One booted unit per GST and process."""
    key = (gst, str(firmware))
    if key not in _devices:
        _devices[key] = Device(gst, firmware)
    res = _devices[key].launch(dataclasses.replace(kernel, flags=kernel.flags | flags))
    if not res.ok:
        return None
    return Config(res.tile, tuple(q.slots for q in res.queues))


def _row(gpu: str, work: Work, case: str, cfg: Config | None, outcome) -> dict:
    row = {"gpu": gpu, "kernel": work.name, "case": case,
           "config": cfg.label(work) if cfg else None, "tile": cfg.tile if cfg else None,
           "slots": "/".join(map(str, cfg.slots)) if cfg else None}
    if outcome is None:
        return {**row, "cycles": None}
    return {**row, "cycles": outcome.cycles, "ns": outcome.ns, "occupancy": outcome.occupancy,
            "dram_gbps": outcome.dram_gbps, "l2_hit": outcome.l2_hit, "compute_util": outcome.compute_util,
            "stall_producer": outcome.stall_producer, "stall_consumer": outcome.stall_consumer,
            "barrier_cycles": outcome.barrier_cycles}


def kernel_rows(gpu: str, gst: bytes, kernel: Kernel, firmware=None, ablations: bool = True,
                model: dict | None = None) -> list[dict]:
    """Every case (and ablation step) for one kernel on one GPU. Each row carries
    `ideal_cycles` and `fine_cycles` so it can be normalised on its own. `model`: the GST file's
    own [model] table (perfmodel.model_table; None: its preset's, by the GST's name)."""
    g = tables.unpack(gst) | ({"model": model} if model is not None else {})
    work = Work.of(kernel)
    m = machine(g, kernel.core_clock_mhz, kernel.active_cus, kernel.lds_bytes)
    ranked = search.exhaustive(m, g, work, top=1)
    fine = ranked[0] if ranked else None
    picks = {
        "NoATT/Non-Tuned": search.noatt(m, g, work, tuned=False),
        "NoATT/Fine-Tuned": search.noatt(m, g, work, tuned=True),
        "ATT/Non-Tuned": search.non_tuned(m, g, work),
        "ATT/Informed-Tuned": search.informed(m, g, work),
        "ATT/Fine-Tuned": fine,
        "Ideal": search.ideal(g, work, kernel.core_clock_mhz, kernel.active_cus),
    }
    rows = []
    for case in CASES:
        if case == "QuCo":
            continue
        r = picks[case]
        rows.append(_row(gpu, work, case, r.config if r else None, r.outcome if r else None))
    for case, flags in ABLATIONS if ablations else ABLATIONS[:1]:
        cfg = firmware_config(gst, kernel, flags, firmware)
        ok = cfg is not None and fits(work, cfg, m.lds_bytes, m.barrier_limit) and occupancy(m, work, cfg) >= 1
        rows.append(_row(gpu, work, case, cfg, search.evaluate(m, work, cfg) if ok else None))
    ideal = picks["Ideal"].outcome.cycles
    for row in rows:
        row["ideal_cycles"] = ideal
        row["fine_cycles"] = fine.outcome.cycles if fine else None
        row["vs_fine_pct"] = (100.0 * (row["cycles"] / row["fine_cycles"] - 1.0)
                              if row["cycles"] and row["fine_cycles"] else None)
    return rows


def geomean(values) -> float | None:
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def gap_summary(rows: list[dict], case: str = "QuCo") -> dict:
    """Per GPU: geometric mean of `case`'s cycles over Fine-Tuned's, as a percent gap."""
    out = {}
    for gpu in dict.fromkeys(r["gpu"] for r in rows):
        ratios = [r["cycles"] / r["fine_cycles"] for r in rows
                  if r["gpu"] == gpu and r["case"] == case and r["cycles"] and r["fine_cycles"]]
        gm = geomean(ratios)
        out[gpu] = 100.0 * (gm - 1.0) if gm else None
    return out


def adapt(cfg: Config, source: Work, target: Work) -> Config:
    """A configuration made for `source` applied to `target`: the same tile, and for each
    queue the slots the source gave its first queue of the same type (else its first)."""
    by_type = {}
    for q, s in zip(source.queues, cfg.slots):
        by_type.setdefault(q.type, s)
    return Config(cfg.tile, tuple(by_type.get(q.type, cfg.slots[0]) for q in target.queues))


def portability(best: dict, models: dict) -> list[dict]:
    """Fig. 1: `best[(gpu, kernel)]` = (Config, cycles) of each pair's Fine-Tuned pick;
    `models[(gpu, kernel)]` = (Machine, Work). Slowdown of using one GPU's best on another
    (same kernel) and one kernel's best on another (same GPU): cycles / the target's best.
    None where the configuration does not fit the target (other LDS, other queue count)."""
    rows = []
    gpus = list(dict.fromkeys(g for g, _ in best))
    kernels = list(dict.fromkeys(k for _, k in best))

    def cost(source, target):
        m, work = models[target]
        cfg = adapt(best[source][0], models[source][1], work)
        if not fits(work, cfg, m.lds_bytes, m.barrier_limit) or occupancy(m, work, cfg) < 1:
            return None
        return search.evaluate(m, work, cfg).cycles / best[target][1]

    # kind "gpu": one kernel's best moved between GPUs; kind "kernel": between kernels on one GPU
    for kind, scopes, members, key in (("gpu", kernels, gpus, lambda scope, x: (x, scope)),
                                       ("kernel", gpus, kernels, lambda scope, x: (scope, x))):
        for scope in scopes:
            for src, dst in itertools.product(members, repeat=2):
                if key(scope, src) in best and key(scope, dst) in best:
                    rows.append({"kind": kind, "scope": scope, "source": src, "target": dst,
                                 "slowdown": cost(key(scope, src), key(scope, dst))})
    return rows
