"""The launch protocol between the host and the unit, written once.

A launch: the host writes the launch record into the mailbox, then 1 into the doorbell,
and the doorbell interrupt wakes the core. The firmware clears the doorbell (its
acknowledgement), configures or refuses, writes the LDS configuration with its generation
word last, then the mailbox words with the status last, and sleeps again (wfi).

`ring` is the host's half. `boot_answer` and `launch_answer` read what the firmware left,
the mailbox and the LDS configuration once each, and hold it to the ABI: a firmware that
does not acknowledge the doorbell, answers a status the ABI does not have, skips or repeats
a generation, or leaves a configuration whose magic or counts are out of the ABI's limits
raises FirmwareMisbehaved, so nothing downstream (tables, JSON, the model comparison) sees
counts no real configuration can have.
"""
from __future__ import annotations

from dataclasses import dataclass

from quco.emulator.faults import FirmwareMisbehaved
from quco.gst import abi
from quco.gst.abi import Status

DOORBELL = abi.MAILBOX.base + abi.MAILBOX_LAYOUT.offset("doorbell")
RECORD = abi.MAILBOX.base + abi.MAILBOX_RECORD
CONFIG_MAX = abi.config_bytes(abi.MAX_QUEUES)  # the most a configuration can write


@dataclass(frozen=True)
class Answer:
    """What the firmware answered to a boot or a launch, checked against the ABI."""
    status: Status
    detail: int
    generation: int = 0
    cache_hit: bool = False
    config: bytes = b""  # header and descriptors at the LDS base (a launch with status OK)


def ring(bus, record: bytes) -> None:
    """The host's half of a launch: the record into the mailbox, then the doorbell.
    `bus` has write(address, data) (a Soc)."""
    if len(record) != abi.LAUNCH_SIZE:
        raise ValueError(f"launch record must be {abi.LAUNCH_SIZE} bytes, got {len(record)}")
    bus.write(RECORD, record)
    bus.write(DOORBELL, (1).to_bytes(4, "little"))


def _mailbox(bus) -> dict:
    return abi.MAILBOX_LAYOUT.unpack(bus.read(abi.MAILBOX.base, abi.MAILBOX_LAYOUT.size))


def _status(value: int, allowed, step: str, word: str) -> Status:
    if value not in {int(s) for s in allowed}:
        names = ", ".join(f"{int(s)} {s.name}" for s in allowed)
        raise FirmwareMisbehaved(step, f"mailbox {word} {value} is not one the ABI allows here ({names})")
    return Status(value)


def boot_answer(bus) -> Answer:
    """The boot step's answer: the GST check's status and detail."""
    mb = _mailbox(bus)
    status = _status(mb["boot_status"], abi.BOOT_STATUSES, "boot", "boot_status")
    if mb["generation"] != 0:
        raise FirmwareMisbehaved("boot", f"mailbox generation {mb['generation']} before any launch (expected 0)")
    return Answer(status, mb["detail"])


def launch_answer(bus, record: bytes, gst: dict, boot: Answer, generation: int, step: str = "launch") -> Answer:
    """A launch's answer, after the firmware slept again. `gst` is the unpacked GST the unit
    booted with, `boot` its boot answer, `generation` the mailbox generation before this
    launch. Reads the mailbox once and, on status OK, the configuration once."""
    mb = _mailbox(bus)
    if mb["doorbell"] != 0:
        raise FirmwareMisbehaved(step, f"the doorbell was not acknowledged (still {mb['doorbell']}; the firmware "
                                       "clears it when it takes a launch)")
    if boot.status != Status.OK:  # every launch answers the boot's refusal
        allowed = (boot.status,)
    else:
        allowed = tuple(s for s in Status if s not in abi.BOOT_STATUSES or s == Status.OK)
    status = _status(mb["status"], allowed, step, "status")
    ok = status == Status.OK
    if mb["cache_hit"] not in ((0, 1) if ok else (0,)):
        raise FirmwareMisbehaved(step, f"mailbox cache_hit {mb['cache_hit']} with status {status.name} "
                                       f"(expected {'0 or 1' if ok else '0'})")
    expected = generation + ok  # one step per configuration, none for a refusal
    if mb["generation"] != expected:
        raise FirmwareMisbehaved(step, f"mailbox generation {mb['generation']} after {generation} with status "
                                       f"{status.name} (expected {expected})")
    config = b""
    if ok:
        config = check_config(bus.read(abi.LDS.base, CONFIG_MAX), record, gst, expected, step)
    return Answer(status, mb["detail"], mb["generation"], bool(mb["cache_hit"]), config)


def check_config(lds: bytes, record: bytes, gst: dict, generation: int, step: str = "launch") -> bytes:
    """The configuration at the start of `lds`, trimmed to its size, once its header and
    descriptors are within the ABI's limits for this record and GST."""
    def bad(what):
        raise FirmwareMisbehaved(step, f"status OK but the LDS configuration has {what}")

    h = abi.LDS_HEADER.unpack(lds)
    if h["magic"] != abi.LDS_MAGIC:
        bad(f"magic 0x{h['magic']:08x}, not QCFG (0x{abi.LDS_MAGIC:08x})")
    if h["generation"] != generation:
        bad(f"generation {h['generation']}, not the mailbox's {generation}")
    n, asked = h["num_queues"], abi.LAUNCH_HEADER.unpack(record)["num_queues"]
    if n != asked or not 1 <= n <= abi.MAX_QUEUES:
        bad(f"num_queues {n}; the launch record has {asked} (the ABI allows 1..{abi.MAX_QUEUES})")
    meta = abi.meta_bytes(n)
    if h["meta_bytes"] != meta:
        bad(f"meta_bytes {h['meta_bytes']}; {n} queues take {meta}")
    lds_limit = abi.LAUNCH_HEADER.unpack(record)["lds_bytes"] or gst["lds_bytes"]
    if not meta <= h["used_bytes"] <= lds_limit:
        bad(f"used_bytes {h['used_bytes']} outside {meta}..{lds_limit} (metadata to the launch's LDS)")
    t = h["tile_elems"]
    if not (gst["min_tile_elems"] <= t <= gst["max_tile_elems"] and t & (t - 1) == 0):
        bad(f"tile_elems {t}, not a power of two within the GST's {gst['min_tile_elems']}..{gst['max_tile_elems']}")
    if h["barriers_used"] > gst["barrier_limit"]:
        bad(f"barriers_used {h['barriers_used']} above the GST's barrier_limit {gst['barrier_limit']}")
    for i in range(n):
        d = abi.QUEUE_DESC.unpack(lds[abi.LDS_HEADER.size + i * abi.QUEUE_DESC.size:])
        if not 1 <= d["slots"] <= gst["max_slots"]:
            bad(f"queue {i}: slots {d['slots']} outside 1..{gst['max_slots']} (the GST's max_slots)")
        end = d["offset"] + d["slots"] * d["slot_bytes"]
        if d["offset"] < meta or end > h["used_bytes"]:
            bad(f"queue {i}: block {d['offset']}..{end} outside the queue area {meta}..{h['used_bytes']}")
        if d["barrier_base"] + d["barrier_count"] > h["barriers_used"]:
            bad(f"queue {i}: barriers {d['barrier_base']}+{d['barrier_count']} past barriers_used "
                f"{h['barriers_used']}")
    return lds[:abi.config_bytes(n)]
