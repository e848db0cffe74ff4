"""Attribute a traced launch to firmware functions, and write it as a Chrome trace.

Input is the block trace of one step: (address, size, cycles) per executed basic block.
Blocks are attributed to the ELF function symbol that contains their first instruction;
calls and returns (jal/jalr with ra) rebuild the call stack for the trace's nested slices.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from quco.emulator.elf import Image
from quco.emulator.timing import Timer


@dataclass
class FunctionCost:
    name: str
    calls: int = 0
    blocks: int = 0
    instructions: int = 0
    cycles: int = 0


class Symbols:
    def __init__(self, image: Image):
        funcs = [s for s in image.symbols if s[1] > 0] or image.symbols
        self.starts = [s[0] for s in funcs]
        self.names = [s[2] for s in funcs]

    def function(self, address: int) -> tuple[int, str]:
        i = bisect.bisect_right(self.starts, address) - 1
        return (self.starts[i], self.names[i]) if i >= 0 else (0, "??")


def by_function(image: Image, trace: list) -> list[FunctionCost]:
    syms, costs = Symbols(image), {}
    for address, size, cycles in trace:
        start, name = syms.function(address)
        fc = costs.setdefault(name, FunctionCost(name))
        fc.blocks += 1
        fc.instructions += size >> 2
        fc.cycles += cycles
        fc.calls += address == start
    return sorted(costs.values(), key=lambda c: -c.cycles)


def chrome_trace(image: Image, timer: Timer, trace: list, clock_mhz: float, label: str) -> dict:
    """Trace Event Format (opens in Perfetto / chrome://tracing); times in microseconds."""
    syms, events, stack, t = Symbols(image), [], [], 0
    us = 1.0 / clock_mhz

    def close(entry, end):
        name, begin = entry
        events.append({"name": name, "ph": "X", "pid": 1, "tid": 1, "ts": begin * us,
                       "dur": (end - begin) * us, "args": {"cycles": end - begin}})

    prev_kind = "call"
    for address, size, cycles in trace:
        _, name = syms.function(address)
        if prev_kind == "ret" and len(stack) > 1:
            close(stack.pop(), t)
        if not stack or prev_kind == "call":
            stack.append((name, t))
        elif stack[-1][0] != name:  # tail call or fall-through into another function
            close(stack.pop(), t)
            stack.append((name, t))
        t += cycles
        prev_kind = timer.block(address, size).end_kind
    while stack:
        close(stack.pop(), t)
    return {"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": label}}] + events,
            "displayTimeUnit": "ns"}
