"""The launch protocol between the host and the unit, written once.

A launch: the host writes the launch record into the mailbox, then 1 into the doorbell,
and the doorbell interrupt wakes the core. The firmware clears the doorbell (its
acknowledgement), configures or refuses, writes the LDS configuration with its generation
word last, then the mailbox words with the status last, and sleeps again (wfi).

`ring` is the host's half. `boot_answer` and `launch_answer` read what the firmware left,
the mailbox and the LDS configuration, straight from the unit's memory, and hold it to the ABI: a firmware that
does not acknowledge the doorbell, answers a status the ABI does not have, skips or repeats
a generation, or leaves a configuration whose magic or counts are out of the ABI's limits
raises FirmwareMisbehaved, so nothing downstream (tables, JSON, the model comparison) sees
counts no real configuration can have.

This runs after every launch, so it is written for speed: each layout is a precompiled
struct (quco.gst.abi) read as one tuple, only the queues are looped over, and a Soc
remembers the configurations it has checked (check_config): the usual answer is then
decided by a few comparisons (launch_answer).
"""
from __future__ import annotations

import functools
import struct
from typing import NamedTuple

from .faults import FirmwareMisbehaved
from ..gst import abi
from ..gst.abi import Status

DOORBELL = abi.MAILBOX.base + abi.MAILBOX_LAYOUT.offset("doorbell")
RECORD = abi.MAILBOX.base + abi.MAILBOX_RECORD
_DOORBELL_AT, _RECORD_AT = DOORBELL - abi.MAILBOX.base, RECORD - abi.MAILBOX.base
CONFIG_MAX = abi.config_bytes(abi.MAX_QUEUES)  # the most a configuration can write
_DOORBELL_RUNG = (1).to_bytes(4, "little")

# the answers unpack the mailbox straight into names, in this order
assert abi.MAILBOX_LAYOUT.names == ("doorbell", "status", "detail", "generation", "cache_hit", "boot_status")
_R_LDS, _R_QUEUES = (abi.LAUNCH_HEADER.names.index(n) for n in ("lds_bytes", "num_queues"))
_QUEUE_DESC = abi.QUEUE_DESC.codec.iter_unpack
_META = [abi.meta_bytes(n) for n in range(abi.MAX_QUEUES + 1)]      # by queue count
_CONFIG = [abi.config_bytes(n) for n in range(abi.MAX_QUEUES + 1)]
# check_config unpacks each descriptor straight into names, in this order
assert abi.QUEUE_DESC.names == ("offset", "slot_bytes", "slots", "type", "elem_size", "barrier_base", "barrier_count")
_OK_STATUSES = frozenset(int(s) for s in Status if s not in abi.BOOT_STATUSES or s == Status.OK)
_BOOT_STATUSES = frozenset(int(s) for s in abi.BOOT_STATUSES)
_AFTER_GENERATION = abi.LDS_HEADER.offset("generation") + 4  # the rest of a configuration: its identity
assert abi.LDS_HEADER.names[:2] == ("magic", "generation")
_MAILBOX_UNPACK = abi.MAILBOX_LAYOUT.codec.unpack_from
_LDS_HEAD_UNPACK = struct.Struct("<3I").unpack_from  # magic, generation, num_queues
assert abi.LDS_HEADER.names[:3] == ("magic", "generation", "num_queues") and abi.LDS_HEADER.codec.format[0] == "<"
_OK = int(Status.OK)
_STATUS = {int(s): s for s in Status}  # a dictionary lookup; Status(value) costs ten times more
VERIFIED_MAX = 256  # configurations a Soc remembers as checked (check_config)


class Answer(NamedTuple):  # a NamedTuple: made once a launch, the cheapest immutable record
    """What the firmware answered to a boot or a launch, checked against the ABI."""
    status: Status
    detail: int
    generation: int = 0
    cache_hit: bool = False
    config: bytes = b""  # header and descriptors at the LDS base (a launch with status OK)


_answer = functools.partial(tuple.__new__, Answer)  # a third of the time of Answer(...) with its defaults


def ring(mailbox, record: bytes) -> None:
    """The host's half of a launch: the record into the mailbox, then the doorbell.
    `mailbox` is a writable buffer holding the mailbox at offset 0 (a Soc's own memory)."""
    mailbox[_RECORD_AT:_RECORD_AT + abi.LAUNCH_SIZE] = _checked(record)
    mailbox[_DOORBELL_AT:_DOORBELL_AT + 4] = _DOORBELL_RUNG


def _checked(record: bytes) -> bytes:
    if len(record) != abi.LAUNCH_SIZE:
        raise ValueError(f"launch record must be {abi.LAUNCH_SIZE} bytes, got {len(record)}")
    return record


def _status(value: int, allowed: frozenset, step: str, word: str) -> Status:
    if value not in allowed:
        names = ", ".join(f"{s} {Status(s).name}" for s in sorted(allowed))
        raise FirmwareMisbehaved(step, f"mailbox {word} {value} is not one the ABI allows here ({names})")
    return _STATUS[value]


def boot_answer(mailbox) -> Answer:
    """The boot step's answer: the GST check's status and detail (`mailbox`: a buffer
    holding the mailbox at offset 0)."""
    _, _, detail, generation, _, boot_status = _MAILBOX_UNPACK(mailbox, 0)
    status = _status(boot_status, _BOOT_STATUSES, "boot", "boot_status")
    if generation != 0:
        raise FirmwareMisbehaved("boot", f"mailbox generation {generation} before any launch (expected 0)")
    return Answer(status, detail)


def launch_answer(mailbox, lds, record: bytes, gst: dict, boot: Answer, generation: int,
                  step: str | int = "launch", verified: set | None = None) -> Answer:
    """A launch's answer, after the firmware slept again. `mailbox` and `lds` are buffers
    (bytes, or a Soc's own memory) holding the mailbox and the start of the LDS at offset 0;
    `gst` is the unpacked GST the unit booted with, `boot` its boot answer, `generation` the
    mailbox generation before this launch, `step` what an error calls the launch (an int n:
    "launch n"), `verified` the caller's memory of configurations already checked
    (check_config)."""
    # The usual answer, decided with a few comparisons: status OK after an OK boot, the
    # doorbell acknowledged, cache_hit 0 or 1, the next generation in the mailbox and the
    # LDS, and a configuration already checked for this record. It passes every rule below
    # (check_config's docstring says why a remembered pair passes again), so anything else
    # takes the full check and its messages.
    doorbell, status, detail, mb_generation, cache_hit, _ = _MAILBOX_UNPACK(mailbox, 0)
    expected = generation + 1
    if (verified is not None and status == _OK and mb_generation == expected and not doorbell
            and cache_hit <= 1 and boot.status == _OK):
        magic, lds_generation, n = _LDS_HEAD_UNPACK(lds)
        if magic == abi.LDS_MAGIC and lds_generation == expected and 1 <= n <= abi.MAX_QUEUES:
            config = lds[:_CONFIG[n]]
            if (record, config[_AFTER_GENERATION:]) in verified:
                return _answer((Status.OK, detail, expected, cache_hit == 1, config))
    return _full_answer(mailbox, lds, record, gst, boot, generation,
                        step if isinstance(step, str) else f"launch {step}", verified)


def _full_answer(mailbox: bytes, lds: bytes, record: bytes, gst: dict, boot: Answer, generation: int, step: str,
                 verified: set | None) -> Answer:
    """Every rule of launch_answer, with a message for each."""
    doorbell, status, detail, mb_generation, cache_hit, _ = _MAILBOX_UNPACK(mailbox, 0)
    if doorbell != 0:
        raise FirmwareMisbehaved(step, f"the doorbell was not acknowledged (still {doorbell}; the firmware "
                                       "clears it when it takes a launch)")
    # every launch answers the boot's refusal
    status = _status(status, _OK_STATUSES if boot.status == Status.OK else frozenset((int(boot.status),)),
                     step, "status")
    ok = status == Status.OK
    if not (cache_hit == 0 or (ok and cache_hit == 1)):  # a refusal reuses nothing
        raise FirmwareMisbehaved(step, f"mailbox cache_hit {cache_hit} with status {status.name} "
                                       f"(expected {'0 or 1' if ok else '0'})")
    expected = generation + ok  # one step per configuration, none for a refusal
    if mb_generation != expected:
        raise FirmwareMisbehaved(step, f"mailbox generation {mb_generation} after {generation} with status "
                                       f"{status.name} (expected {expected})")
    if not ok:
        return Answer(status, detail, mb_generation)
    config = check_config(lds[:CONFIG_MAX], record, gst, expected, step, verified)
    return Answer(status, detail, mb_generation, cache_hit == 1, config)


def check_config(lds: bytes, record: bytes, gst: dict, generation: int, step: str = "launch",
                 verified: set | None = None) -> bytes:
    """The configuration at the start of `lds`, trimmed to its size, once its header and
    descriptors are within the ABI's limits for this record and GST.

    `verified` (one set per GST: a Soc's) remembers (record, configuration after the
    generation word) pairs that passed: every rule but the magic and the generation reads
    only those bytes and the GST, so the same pair passes again; a relaunch then costs two
    comparisons and a set lookup instead of the per-queue rules."""
    def bad(what):
        raise FirmwareMisbehaved(step, f"status OK but the LDS configuration has {what}")

    magic, lds_generation, n, t, meta_bytes, used, barriers, _ = abi.LDS_HEADER.codec.unpack_from(lds)
    if magic != abi.LDS_MAGIC:
        bad(f"magic 0x{magic:08x}, not QCFG (0x{abi.LDS_MAGIC:08x})")
    if lds_generation != generation:
        bad(f"generation {lds_generation}, not the mailbox's {generation}")
    if verified is not None and 1 <= n <= abi.MAX_QUEUES:
        key = (record, lds[_AFTER_GENERATION:_CONFIG[n]])
        if key in verified:
            return lds[:_CONFIG[n]]
    header = abi.LAUNCH_HEADER.codec.unpack_from(record)
    record_lds, asked = header[_R_LDS], header[_R_QUEUES]
    if n != asked or not 1 <= n <= abi.MAX_QUEUES:
        bad(f"num_queues {n}; the launch record has {asked} (the ABI allows 1..{abi.MAX_QUEUES})")
    meta = _META[n]
    if meta_bytes != meta:
        bad(f"meta_bytes {meta_bytes}; {n} queues take {meta}")
    lds_limit = record_lds or gst["lds_bytes"]  # the launch's partition, else the whole LDS
    if not meta <= used <= lds_limit:
        bad(f"used_bytes {used} outside {meta}..{lds_limit} (metadata to the launch's LDS)")
    if not (gst["min_tile_elems"] <= t <= gst["max_tile_elems"] and t & (t - 1) == 0):
        bad(f"tile_elems {t}, not a power of two within the GST's {gst['min_tile_elems']}..{gst['max_tile_elems']}")
    if barriers > gst["barrier_limit"]:
        bad(f"barriers_used {barriers} above the GST's barrier_limit {gst['barrier_limit']}")
    max_slots, start = gst["max_slots"], abi.LDS_HEADER.size
    descs = _QUEUE_DESC(lds[start:start + n * abi.QUEUE_DESC.size])
    for i, (offset, slot_bytes, slots, _type, _elem, base, count) in enumerate(descs):
        if not 1 <= slots <= max_slots:
            bad(f"queue {i}: slots {slots} outside 1..{max_slots} (the GST's max_slots)")
        end = offset + slots * slot_bytes
        if offset < meta or end > used:
            bad(f"queue {i}: block {offset}..{end} outside the queue area {meta}..{used}")
        if base + count > barriers:
            bad(f"queue {i}: barriers {base}+{count} past barriers_used {barriers}")
    if verified is not None:
        if len(verified) >= VERIFIED_MAX:
            verified.clear()
        verified.add(key)
    return lds[:_CONFIG[n]]
