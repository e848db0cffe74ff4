"""Host shim: the QuCo unit as a Python object.

    dev = Device("r9-nano")              # loads the firmware, boots once (GST check)
    res = dev.launch(kernel)             # a Kernel, or raw launch-record bytes
    res.tile, res.queues[0].slots, res.instructions

and the flow of QuCo's host API (Fig. 4a, InitQuCo(HIGH, 512, 64)):

    dev.init("high", work_group_size=512, active_cus=64)   # or a CI number
    a = dev.register_queue("streaming", length=2048, elem_size=2)
    res = dev.size_queue()                                 # launches the Kernel these calls describe
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..emulator import elf, soc, timing
from ..firmware import IMAGE as DEFAULT_FIRMWARE  # firmware/build/quco.elf, or the wheel's copy
from ..gst import abi, tables
from ..gst.abi import Status
from ..kernel.format import DEFAULT_WAVEFRONTS, Kernel, check_values


QUCO_CLOCK_MHZ = 700       # QuCo Sec. VI: 700 MHz at 28 nm FDSOI
WAVEFRONT = 64             # work-items per wavefront (GCN / CDNA)
READ_NJ, WRITE_NJ = 0.0032, 0.0061  # QuCo Sec. VI: energy per ROM/data/GST access


@dataclass
class Cost:
    """What one step (boot or launch) cost the unit."""
    instructions: int
    cycles: int | None = None
    ns: float | None = None
    reads: dict | None = None
    writes: dict | None = None
    energy_nj: float | None = None
    trace: list | None = None

    @classmethod
    def of(cls, step: soc.Step, clock_mhz: float) -> "Cost":
        ns = step.cycles * 1000.0 / clock_mhz if step.cycles is not None else None
        nj = None
        if step.reads is not None:
            nj = sum(step.reads.values()) * READ_NJ + sum(step.writes.values()) * WRITE_NJ
        return cls(step.instructions, step.cycles, ns, step.reads, step.writes, nj, step.trace)

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "trace"}


def firmware_path(path: str | Path | None = None) -> Path:
    return Path(path or os.environ.get("QUCO_FIRMWARE") or DEFAULT_FIRMWARE)


@dataclass
class QueueConfig:
    index: int
    type: str
    elem_size: int
    length: int
    tile: int
    slots: int
    offset: int
    slot_bytes: int
    barrier_base: int
    barrier_count: int

    @property
    def block_bytes(self) -> int:
        return self.slots * self.slot_bytes


@dataclass
class LaunchResult:
    status: Status
    detail: int
    message: str
    generation: int = 0
    cache_hit: bool = False
    instructions: int = 0
    tile: int = 0
    meta_bytes: int = 0
    used_bytes: int = 0
    barriers_used: int = 0
    queues: list[QueueConfig] = field(default_factory=list)
    lds: bytes = b""
    cost: Cost | None = None

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def as_dict(self) -> dict:
        return {"status": self.status.name, "detail": self.detail, "message": self.message,
                "generation": self.generation, "cache_hit": self.cache_hit,
                "instructions": self.instructions, "tile": self.tile, "meta_bytes": self.meta_bytes,
                "used_bytes": self.used_bytes, "barriers_used": self.barriers_used,
                "queues": [dict(vars(q), block_bytes=q.block_bytes) for q in self.queues],
                "cost": self.cost.as_dict() if self.cost else None}


class DeviceError(Exception):
    """The unit answered with an error status; the message says which field and why."""

    def __init__(self, result: LaunchResult):
        super().__init__(result.message)
        self.result = result


def describe(status: Status, detail: int) -> str:
    """A status and its detail word as a sentence a user can act on."""
    text = abi.STATUS_TEXT[status]
    if status == Status.GST_FIELD:
        f = next((f for f in abi.GST_CHECKED if abi.GST.offset(f.name) == detail), None)
        if f is not None:
            extra = f"; must also be {f.shape}" if f.shape else ""
            return f"{text}: {f.name} must be within {f.lo:g}..{f.hi:g}{extra} ({f.doc})"
    if status == Status.RECORD_FIELD:
        f = next((f for f in abi.LAUNCH_HEADER.fields
                  if abi.LAUNCH_HEADER.offset(f.name) == detail and f.lo is not None), None)
        if f is not None:
            return f"{text}: {f.name} must be within {f.allowed} ({f.doc})"
    if status in (Status.QUEUE_TYPE, Status.QUEUE_LENGTH, Status.ELEM_SIZE, Status.QUEUE_RESERVED):
        return f"queue {detail}: {text}"
    if status == Status.QUEUE_COUNT:
        return f"{text}: {detail} queues; allowed 1..{abi.MAX_QUEUES} and at most the GST's max_queues"
    if status == Status.LDS_NO_FIT:
        return f"{text}: the smallest configuration needs {detail} bytes"
    if status == Status.BARRIER_LIMIT:
        return f"{text}: one slot per queue needs {detail} barriers"
    if status == Status.BAD_FLAGS:
        return f"{text}: 0x{detail:x} (known flags: 0x{abi.FLAGS_ALL:x})"
    return text


# decode_lds unpacks the descriptors straight into names, in these orders
assert abi.QUEUE_DESC.names == ("offset", "slot_bytes", "slots", "type", "elem_size", "barrier_base", "barrier_count")
assert abi.ATT_DESC.names[:2] == ("lds_addr", "box_elems") and abi.ATT_DESC.names[5] == "global_length"
_KINDS = ("streaming", "stationary")


def decode_lds(meta: bytes, queue_lengths: list[int] | None = None) -> dict:
    """Header and queue descriptors of an LDS configuration image (each layout unpacked
    once: Device.launch runs this after every launch)."""
    h = abi.LDS_HEADER.unpack(meta)
    n, qd = h["num_queues"], abi.LDS_HEADER.size
    ad = qd + n * abi.QUEUE_DESC.size
    descs = abi.QUEUE_DESC.codec.iter_unpack(meta[qd:ad])
    atts = abi.ATT_DESC.codec.iter_unpack(meta[ad:ad + n * abi.ATT_DESC.size])
    queues = [QueueConfig(i, _KINDS[1 if qtype else 0], elem, att[5], att[1], slots, offset, slot_bytes, base, count)
              for i, ((offset, slot_bytes, slots, qtype, elem, base, count), att) in enumerate(zip(descs, atts))]
    return {"header": h, "queues": queues}


def result_from(status: int, detail: int, meta: bytes = b"", **extra) -> LaunchResult:
    status = Status(status)
    res = LaunchResult(status, detail, describe(status, detail), **extra)
    if status == Status.OK:
        d = decode_lds(meta)
        h = d["header"]
        res.tile, res.meta_bytes, res.used_bytes = h["tile_elems"], h["meta_bytes"], h["used_bytes"]
        res.barriers_used, res.queues, res.lds = h["barriers_used"], d["queues"], meta
    return res


class Device:
    """One QuCo unit: firmware in ROM, a GST, and the LDS window it configures."""

    def __init__(self, gst: bytes | str | Path = "r9-nano", firmware: str | Path | None = None,
                 budget: int = soc.DEFAULT_BUDGET, profile: str | Path | None = None,
                 clock_mhz: float = QUCO_CLOCK_MHZ, count_memory: bool = False, trace: bool = False):
        """`profile` names a timing profile (emulator/profiles) or a TOML file; without one
        only instructions are counted. `count_memory` adds access counts and energy;
        `trace` records every executed block (for `quco-emu profile`)."""
        if not 0 < clock_mhz <= 10_000:  # also refuses nan: the costs divide by it
            raise ValueError(f"clock_mhz {clock_mhz!r}: expected MHz above 0, at most 10000")
        self.gst = gst if isinstance(gst, bytes) else tables.load(gst)
        self.image = elf.load(firmware_path(firmware))
        self.budget, self.clock_mhz = budget, clock_mhz
        self.profile = timing.load_profile(profile) if profile is not None else None
        self.count_memory, self.trace = count_memory, trace
        self._pending: dict | None = None
        self.reset()

    def reset(self) -> None:
        """Power-cycle: fresh memories, boot again. Usable after any fault."""
        self.soc = soc.Soc(self.image, self.gst, budget=self.budget, profile=self.profile,
                           count_memory=self.count_memory, trace=self.trace)
        self.boot_step = self.soc.boot()
        self.boot_cost = Cost.of(self.boot_step, self.clock_mhz)
        self.boot_status, self.boot_detail = self.boot_step.answer.status, self.boot_step.answer.detail

    @property
    def boot_message(self) -> str:
        return describe(self.boot_status, self.boot_detail)

    def launch(self, kernel, check: bool = False) -> LaunchResult:
        """Configure a Kernel (or raw launch-record bytes) on the unit. Raises a Fault when
        the emulated core faults, FirmwareMisbehaved when the firmware's answer breaks the
        ABI, DeviceError (with check) when the unit refuses the launch."""
        record = bytes(kernel if isinstance(kernel, (bytes, bytearray)) else kernel.record())
        step = self.soc.launch(record)
        a = step.answer
        res = result_from(a.status, a.detail, a.config, generation=a.generation, cache_hit=a.cache_hit,
                          instructions=step.instructions, cost=Cost.of(step, self.clock_mhz))
        if check and not res.ok:
            raise DeviceError(res)
        return res

    # ---------------------------------------------------------------- what tests and tools inspect
    @property
    def generation(self) -> int:
        """The generation of the last configuration the firmware acknowledged (0 after boot)."""
        return self.soc.generation

    @property
    def timer(self):
        """The Soc's cycle model (None without a profile), for attributing a trace."""
        return self.soc.timer

    def lds_window(self) -> bytes:
        """The whole LDS as the GST declares it (to check what a launch left untouched)."""
        return self.soc.lds()

    def stack_high_water(self) -> int:
        """Deepest firmware stack use since reset, bytes."""
        return self.soc.stack_high_water()

    # ---------------------------------------------------------------- QuCo-style flow
    def init(self, compute_intensity: float | str, consumer_wavefronts: int | None = None, flags: int = 0,
             core_clock_mhz: int = 0, active_cus: int = 0, lds_bytes: int = 0,
             work_group_size: int | None = None) -> None:
        """QuCo's InitQuCo(class, work-group size, CUs): `compute_intensity` is a number or a
        class ("low", "medium", "high"); `work_group_size` work-items are that many 64-wide
        wavefronts, one of them the producer (512 -> 7 consumers); without either, 7."""
        if isinstance(compute_intensity, str) and compute_intensity in abi.CI_CLASSES:
            ci, cls = 0.0, compute_intensity
        else:
            ci, cls = compute_intensity, None
        if work_group_size is not None:
            if work_group_size % WAVEFRONT or not 2 <= work_group_size // WAVEFRONT <= 65:
                raise ValueError(f"work_group_size {work_group_size}: expected a multiple of {WAVEFRONT} "
                                 f"from {2 * WAVEFRONT} to {65 * WAVEFRONT} work-items")
            consumer_wavefronts = work_group_size // WAVEFRONT - 1  # one producer wavefront
        if consumer_wavefronts is None:
            consumer_wavefronts = DEFAULT_WAVEFRONTS
        check_values({("compute_intensity",): compute_intensity, ("consumer_wavefronts",): consumer_wavefronts,
                      ("partition", "core_clock_mhz"): core_clock_mhz, ("partition", "active_cus"): active_cus,
                      ("partition", "lds_bytes"): lds_bytes}, flags)  # kernel.json's rules and messages
        # the Kernel size_queue builds (kernel/format.py packs the record, as for a kernel.json)
        self._pending = dict(name="Device.init", compute_intensity=ci, ci_class=cls, flags=flags,
                             consumer_wavefronts=consumer_wavefronts, core_clock_mhz=core_clock_mhz,
                             active_cus=active_cus, lds_bytes=lds_bytes, queues=[], movement=[])

    def register_queue(self, type: str, length: int, elem_size: int, passes: int = 1) -> int:
        """QuCo's registerQueue(type, length, element size); `passes` (not the paper's: how many
        times a work-group streams the length, kernel.json's queues[].passes) reaches the launch
        record's `passes` field, which only quco+ reads."""
        if self._pending is None:
            raise RuntimeError("call init() before register_queue()")
        kinds = {"streaming": abi.QUEUE_STREAMING, "stationary": abi.QUEUE_STATIONARY}
        if len(self._pending["queues"]) >= abi.MAX_QUEUES:
            raise ValueError(f"at most {abi.MAX_QUEUES} queues per launch")
        check_values({("queues", len(self._pending["queues"])): dict(type=type, length=length, elem_size=elem_size,
                                                                      passes=passes)})
        self._pending["queues"].append((length, kinds[type], elem_size))
        self._pending["movement"].append((passes, 0, 0))
        return len(self._pending["queues"]) - 1

    def size_queue(self, check: bool = True) -> LaunchResult:
        if self._pending is None:
            raise RuntimeError("call init() and register_queue() before size_queue()")
        movement = self._pending["movement"]
        return self.launch(Kernel(**{**self._pending, "queues": list(self._pending["queues"]),
                                     "movement": list(movement) if any(m[0] != 1 for m in movement) else []}),
                           check=check)
