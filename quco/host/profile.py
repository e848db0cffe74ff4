"""Attribute a traced launch to firmware source functions, inlined ones included, and
write it as a Chrome trace.

Input is the block trace of one step: (address, size, cycles) per executed basic block.
Each block's cycles are split over its instructions by the timing model (issue plus the
stalls an instruction waits for), and each instruction is attributed to the chain of
source functions DWARF gives for its address (quco.emulator.dwarf), under the chains of
the call sites that are still open (calls and returns rebuild the call stack). The
firmware is built with LTO, so this is what still separates launch_check from plan.
Without DWARF, ELF function symbols are used instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..emulator.dwarf import InlineMap
from ..emulator.elf import Image
from ..emulator.timing import Timer


@dataclass
class FunctionCost:
    name: str
    entries: int = 0       # times execution entered it (called or inlined copy reached)
    instructions: int = 0  # retired while it was the innermost function (self)
    cycles: int = 0        # self cycles
    total_cycles: int = 0  # including what it called or inlined


class Source:
    """address -> chain of source functions, outermost first."""

    def __init__(self, image: Image):
        self.image, self.inline = image, InlineMap(image.path)

    def chain(self, address: int) -> tuple[str, ...]:
        inlined = self.inline.chain(address)
        if inlined:
            return inlined
        symbol = self.image.function_at(address)  # no DWARF for this address (crt0, stripped ELF)
        return (symbol[1] if symbol else "??",)


def attribute(image: Image, timer: Timer, trace: list) -> list[tuple[tuple[str, ...], int]]:
    """(stack, cycles) per retired instruction; stack = source functions, outermost first.
    by_function() and chrome_trace() both read this list: DWARF is parsed once."""
    src, calls, prev, out = Source(image), [], None, []
    for entry in trace:
        address, size, cycles = entry
        lats = getattr(entry, "lats", ())  # the latencies its divides and FDIVs ran with (hooks.Traced)
        if prev is not None:
            kind = timer.block(*prev).end_kind
            if kind == "call":
                calls.append(src.chain(prev[0] + prev[1] - 4))
            elif kind == "ret" and calls:
                calls.pop()
        split = timer.split(prev, address, size, lats)
        split[0] += cycles - sum(split)  # the trace's own count is authoritative (a split access)
        outer = tuple(name for chain in calls for name in chain)
        out += [(outer + src.chain(address + 4 * i), c) for i, c in enumerate(split)]
        prev = (address, size, lats) if lats else (address, size)
    return out


def _slices(steps):
    """(name, depth, begin, end) of every period a function was on the stack."""
    open_, t = [], 0
    for stack, c in steps:
        common = 0
        while common < min(len(open_), len(stack)) and open_[common][0] == stack[common]:
            common += 1
        while len(open_) > common:
            name, begin = open_.pop()
            yield name, len(open_), begin, t
        open_.extend((name, t) for name in stack[common:])
        t += c
    while open_:
        name, begin = open_.pop()
        yield name, len(open_), begin, t


def by_function(steps) -> list[FunctionCost]:
    """Self and total cost per source function, from attribute()'s list."""
    costs: dict[str, FunctionCost] = {}
    for stack, c in steps:
        fc = costs.setdefault(stack[-1], FunctionCost(stack[-1]))
        fc.instructions += 1
        fc.cycles += c
    for name, _depth, begin, end in _slices(steps):
        fc = costs.setdefault(name, FunctionCost(name))
        fc.entries += 1
        fc.total_cycles += end - begin
    return sorted(costs.values(), key=lambda c: (-c.cycles, -c.total_cycles))


def chrome_trace(steps, clock_mhz: float, label: str) -> dict:
    """Trace Event Format (opens in Perfetto / chrome://tracing); times in microseconds."""
    us = 1.0 / clock_mhz
    events = [{"name": name, "ph": "X", "pid": 1, "tid": 1, "ts": begin * us, "dur": (end - begin) * us,
               "args": {"cycles": end - begin}} for name, _d, begin, end in _slices(steps)]
    return {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": label}}] + events,
            "displayTimeUnit": "ns"}
