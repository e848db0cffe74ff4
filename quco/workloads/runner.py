"""Run a workload: every layer through the firmware on one booted unit, in order, timed on
the performance model, with the unit's reconfigurations on the same timeline.

Timeline (per tenant; `quco-emu run` has one tenant, `--tenant` adds more): the host asks
the unit for layer i+1's configuration when layer i starts, so the reconfiguration runs
while layer i computes (the paper's overlap claim). Layer i+1 starts when layer i has ended
and its configuration is written; whatever of the reconfiguration outlasts layer i is
**exposed**. The first layer's reconfiguration is always exposed (nothing runs before it).
The unit is one server shared by every tenant, first come first served (a SimPy resource):
a request that finds it busy waits, and that wait is the unit's **queueing delay**.

Layer run times come from `quco.perfmodel` (the busiest CU of the layer's partition at the
layer's clock); reconfiguration times from the unit's cycle accounting (a timing profile,
default cv32e40p, at the QuCo clock, default 700 MHz).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import simpy

from ..gst import abi, tables
from ..host.device import QUCO_CLOCK_MHZ, Device
from ..kernel.format import partition_problems
from ..perfmodel import search
from ..perfmodel.model_table import described
from ..perfmodel.params import Machine, machine
from ..perfmodel.residency import occupancy
from ..perfmodel.work import Config, Work, fits
from .format import Layer, Workload, WorkloadError, shown


class UnitError(Exception):
    """The unit refused a layer's launch (status != OK); exit code 3."""


class ModelMismatch(UnitError):
    """The unit's configuration does not fit a CU on the performance model: the unit's fit rule
    (LDS, barriers) and the model's disagree; exit code 1 (they disagree), not the input's fault."""


@dataclass
class Tenant:
    """A workload on its share of the GPU (0 = the whole GPU)."""
    workload: Workload
    active_cus: int = 0
    lds_bytes: int = 0
    clocks: list[int] | None = None     # DVFS trace: the clock of each layer (overrides the layer's)
    tell_clock: bool = True             # QuCo-HW: the record carries the clock; QuCo-SW: 0 (the GST's)

    @property
    def label(self) -> str:
        share = f"@{self.active_cus or 'all'}:{self.lds_bytes or 'all'}" if (self.active_cus or self.lds_bytes) else ""
        return self.workload.name + share


@dataclass
class Step:
    """One layer's launch and run."""
    tenant: int
    layer: Layer
    clock_mhz: float          # the clock the layer runs at
    active_cus: int           # 0 = all
    lds_bytes: int
    config: Config
    work: Work
    label: str                # tile / slots per run of identical queues
    cache_hit: bool
    instructions: int
    reconf_cycles: int
    reconf_ns: float
    run_ns: float             # the layer on the performance model
    requested: float = 0.0    # ns: when the host asked the unit
    reconf_start: float = 0.0
    reconf_end: float = 0.0
    start: float = 0.0
    end: float = 0.0
    exposed_ns: float = 0.0   # time the GPU (this tenant) waited for the unit before this layer
    extra: dict = field(default_factory=dict)   # baselines, DVFS comparison

    @property
    def queueing_ns(self) -> float:
        return self.reconf_start - self.requested

    @property
    def hidden(self) -> bool:
        return self.exposed_ns <= 0.0

    def as_dict(self) -> dict:
        lay = self.layer
        return {"tenant": self.tenant, "index": lay.index, "name": lay.name, "type": lay.type,
                "clock_mhz": self.clock_mhz, "active_cus": self.active_cus, "lds_bytes": self.lds_bytes,
                "config": self.label, "tile": self.config.tile, "slots": list(self.config.slots),
                "cache_hit": self.cache_hit, "reconf_instructions": self.instructions,
                "reconf_cycles": self.reconf_cycles, "reconf_ns": self.reconf_ns, "run_ns": self.run_ns,
                "requested_ns": self.requested, "reconf_start_ns": self.reconf_start,
                "reconf_end_ns": self.reconf_end, "start_ns": self.start, "end_ns": self.end,
                "queueing_ns": self.queueing_ns, "exposed_ns": self.exposed_ns, "hidden": self.hidden, **self.extra}


class Session:
    """One booted unit for one GPU, and the model's view of that GPU."""

    def __init__(self, gpu: str, firmware=None, profile: str = "cv32e40p", clock_mhz: float = QUCO_CLOCK_MHZ):
        self.gpu, self.gst = gpu, tables.load(gpu)
        self.g = described(gpu, self.gst)  # with the GST file's own [model] table
        self.dev = Device(self.gst, firmware, profile=profile, clock_mhz=clock_mhz)
        if self.dev.boot_status != abi.Status.OK:
            raise UnitError(f"{gpu}: the unit rejected the GST at boot: {self.dev.boot_message}")
        self._kernels: dict = {}    # a layer's shape -> (its kernel on this partition, the record): see launch
        self._models: dict = {}     # evaluation key -> (work, clock, label, run ns): see launch
        self._last, self._answer, self._streak = b"", None, 0   # the unit's last answer: see _unit
        self.reused = 0             # launches answered without the emulator

    def machine(self, clock: int, cus: int, lds: int, dram_share: float = 1.0) -> Machine:
        m = machine(self.g, clock, cus, lds)
        return dataclasses.replace(m, dram_bytes_per_cycle=m.dram_bytes_per_cycle * dram_share) if dram_share != 1 else m

    def check(self, tenants: list[Tenant]) -> None:
        """Partitions and clocks the GST cannot give, named by layer (exit 2, before any launch)."""
        problems = []
        for t in tenants:
            for i, lay in enumerate(t.workload.layers):
                cus, lds = t.active_cus or lay.active_cus, t.lds_bytes or lay.lds_bytes
                where = f"{t.workload.path}: layer {lay.index} ({shown(lay.name)}, {lay.where})"
                problems += [f"{where}: {p}" for p in partition_problems(cus, lds, self.g, self.gpu)]
                if len(problems) >= 20:
                    break
        total = sum(t.active_cus for t in tenants)
        if len(tenants) > 1 and (total > self.g["num_cus"] or any(not t.active_cus for t in tenants)):
            problems.append(f"tenants: CUs {' + '.join(str(t.active_cus or 'all') for t in tenants)}; expected each "
                            f"tenant's own CUs (WORKLOAD@CUS[:LDS]), {self.g['num_cus']} in total at most on {self.gpu}")
        if problems:
            raise WorkloadError(problems)

    def launch(self, t: Tenant, tid: int, lay: Layer, dram_share: float) -> Step:
        clock = t.clocks[lay.index] if t.clocks else lay.clock_mhz
        cus, lds = t.active_cus or lay.active_cus, t.lds_bytes or lay.lds_bytes
        kk, told = lay.kernel, clock if t.tell_clock else 0
        # what the unit and the model see of the layer (not its name): identical layers share it
        shape = (tuple(kk.queues), kk.compute_intensity, kk.ci_class, kk.consumer_wavefronts, kk.flags, told, cus, lds,
                 tuple(kk.movement), kk.work_groups, kk.output_bytes, kk.flops_per_work_group, kk.phases, kk.split_k)
        if shape not in self._kernels:
            k = kk.with_fields(core_clock_mhz=told, active_cus=cus, lds_bytes=lds)
            self._kernels[shape] = (k, k.record())
        k, record = self._kernels[shape]
        res = self._unit(record)
        if not res.ok:
            raise UnitError(f"{t.workload.path}: layer {lay.index} ({shown(lay.name)}) on {self.gpu}: {res.message}")
        cfg = Config(res.tile, tuple(q.slots for q in res.queues))
        # the model's answer depends on the layer's shape, the clock, the DRAM share and the
        # configuration: identical layers are evaluated once
        key = (shape, clock, dram_share, cfg)
        if key not in self._models:
            work = dataclasses.replace(Work.of(k), name="")   # the model's cache key: shape, not name
            m = self.machine(clock, cus, lds, dram_share)
            self._models[key] = (work, m.clock_mhz, cfg.label(work), model_ns(m, work, cfg))
        work, mhz, label, run_ns = self._models[key]
        return Step(tid, lay, mhz, cus, lds, cfg, work, label, res.cache_hit, res.instructions,
                    res.cost.cycles, res.cost.ns, run_ns)

    def _unit(self, record: bytes):
        """The unit's answer to `record`. A relaunch of the record the unit just answered twice
        alike (status, configuration, cache hit, instructions, cycles) is answered alike again
        without the emulator: an identical answer leaves the unit's cache as it found it, so the
        firmware, run again, retraces the same instructions (tests compare with every launch run).
        100,000 identical layers cost three emulated launches, not 100,000."""
        if record == self._last and self._streak >= 2:
            self.reused += 1
            return self._answer
        res = self.dev.launch(record)
        alike = record == self._last and self._answer is not None and _answer_key(res) == _answer_key(self._answer)
        self._streak = self._streak + 1 if alike else 1
        self._last, self._answer = record, res
        return res


def _answer_key(res) -> tuple:
    return (res.status, res.detail, res.tile, tuple(q.slots for q in res.queues), res.cache_hit, res.instructions,
            res.cost.cycles if res.cost else None)


def model_ns(m: Machine, work: Work, cfg: Config) -> float | None:
    """The layer's modelled time with `cfg`, or None when it does not fit a CU."""
    if not fits(work, cfg, m.lds_bytes, m.barrier_limit) or occupancy(m, work, cfg) < 1:
        return None
    return search.evaluate(m, work, cfg).ns


def run(session: Session, tenants: list[Tenant], progress=None) -> list[Step]:
    """Every tenant's layers in order on one timeline; the unit serves them in turn.
    progress: optional callback(layers done, layers in all)."""
    session.check(tenants)
    env = simpy.Environment()
    unit = simpy.Resource(env, capacity=1)
    steps: list[Step] = []
    share = {i: (t.active_cus / session.g["num_cus"] if len(tenants) > 1 else 1.0) for i, t in enumerate(tenants)}

    def tenant(tid: int, t: Tenant):
        prev_end = 0.0
        for lay in t.workload.layers:
            requested = env.now
            with unit.request() as req:
                yield req
                begin = env.now
                step = session.launch(t, tid, lay, share[tid])
                if step.run_ns is None:
                    raise ModelMismatch(f"{t.workload.path}: layer {lay.index} ({shown(lay.name)}): the unit's "
                                        f"configuration {step.label} does not fit one work-group on a CU of the "
                                        "performance model: the unit's fit rule and the model's disagree")
                yield env.timeout(step.reconf_ns)
            step.requested, step.reconf_start, step.reconf_end = requested, begin, env.now
            if env.now < prev_end:
                yield env.timeout(prev_end - env.now)
            step.start = env.now
            step.exposed_ns = step.start - prev_end
            step.end = prev_end = step.start + step.run_ns
            steps.append(step)
            if progress:
                progress(len(steps), total)

    total = sum(len(t.workload.layers) for t in tenants)
    for tid, t in enumerate(tenants):
        env.process(tenant(tid, t))
    env.run()
    steps.sort(key=lambda s: (s.tenant, s.layer.index))
    return steps


def totals(steps: list[Step]) -> dict:
    """Whole-run figures: time, reconfiguration exposed and hidden, cache hit rate."""
    end = max(s.end for s in steps)
    exposed = sum(s.exposed_ns for s in steps)
    run_ns = sum(s.run_ns for s in steps)
    return {"layers": len(steps), "makespan_ns": end, "run_ns": run_ns,
            "reconf_ns": sum(s.reconf_ns for s in steps), "reconf_cycles": sum(s.reconf_cycles for s in steps),
            "reconf_instructions": sum(s.instructions for s in steps),
            "exposed_ns": exposed, "exposed_fraction": exposed / end if end else 0.0,
            "hidden_layers": sum(s.hidden for s in steps if s.layer.index > 0),
            "cache_hits": sum(s.cache_hit for s in steps),
            "cache_hit_rate": sum(s.cache_hit for s in steps) / len(steps),
            "queueing_ns": sum(s.queueing_ns for s in steps),
            "max_queueing_ns": max(s.queueing_ns for s in steps)}
