"""The Soc's counting hooks in C (emulator/_fastcount.c), loaded with ctypes.

Why: a Python hook costs a ctypes round trip per call, and a launch runs about 180 blocks
and 320 loads and stores, so Python hooks, not the emulation, set the pace of counting
(issue 24: cycle accounting at a sixth of its earlier speed). The C block hook walks the
Soc's edge graph (emulator/hooks.py) through a hash table of (edge, block) -> next edge
that Python fills as pairs first occur, so the counts are the same to the cycle as the
Python hooks' (tests/test_fast_paths.py runs both); the C access hook counts split loads
and stores.

The library is built by `pip install` (setup.py, an optional extension: without a C
compiler the install goes on without it). `load()` returns None when it is missing, built
from another version of the C file, or when QUCO_PYTHON_HOOKS=1; the Soc then counts with
its Python hooks.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import os
import shutil
import sysconfig
from pathlib import Path

import numpy as np
from unicorn import UC_HOOK_BLOCK, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UcError
from unicorn.unicorn_py3 import unicorn as _binding

NEW_EDGE = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32)
EMPTY = 0xFFFF_FFFF
VERSION = 3  # QUCO_FASTCOUNT_VERSION of _fastcount.c
NO_BUDGET = 2**64 - 1
STOP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
U32, U64 = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
FIRST_EDGES, FIRST_SLOTS = 1024, 4096  # the tables' first sizes (the firmware's boot makes about 80 pairs)


class CounterStruct(ctypes.Structure):
    """quco_counter of _fastcount.c, field for field."""
    _fields_ = [("on_edge", NEW_EDGE), ("edge_cycles", U32), ("edge_insns", U32), ("slot_edge", U32),
                ("slot_block", U64), ("slot_next", U32), ("mask", ctypes.c_uint32), ("edge", ctypes.c_uint32),
                ("cycles", ctypes.c_uint64), ("insns", ctypes.c_uint64), ("blocks", ctypes.c_uint32),
                ("splits", ctypes.c_uint32), ("budget", ctypes.c_uint64), ("stop", STOP), ("over", ctypes.c_uint32)]


@functools.lru_cache(maxsize=1)
def load():
    """The C hooks' library, or None (not built, built from another version of the C file,
    or QUCO_PYTHON_HOOKS=1)."""
    if os.environ.get("QUCO_PYTHON_HOOKS") == "1":
        return None
    here = Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = here / f"_fastcount{suffix}"
        if path.exists():
            try:
                lib = ctypes.CDLL(str(path))
                lib.quco_fastcount_abi.restype = ctypes.c_uint
                same = lib.quco_fastcount_abi() == ctypes.sizeof(CounterStruct) << 8 | VERSION
            except (OSError, AttributeError):  # not loadable, or older than the version check
                return None
            return lib if same else None
    return None


def build_compiler() -> str | None:
    """The C compiler `pip install` builds _fastcount.c with (setuptools: $CC, else the one
    Python was built with), where it is on the PATH; None where it is not."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(cc.split()[0]) if cc.split() else None


def describe() -> str:
    """Which counting path this install takes, in one line (the Makefile and bench/bench.py say it)."""
    lib = load()
    if lib is not None:
        return f"counting hooks: C ({lib._name})"
    if os.environ.get("QUCO_PYTHON_HOOKS") == "1":
        return "counting hooks: Python (QUCO_PYTHON_HOOKS=1)"
    cc = build_compiler()
    why = (f"a C compiler is here ({cc}) but emulator/_fastcount.c is not built, or from another version: "
           "reinstall (pip install -e .)" if cc else "no C compiler when it was installed")
    return f"counting hooks: Python, about 2.7 times slower than the C ones ({why})"


def slot_of(edge: int, block: int, mask: int) -> int:
    """The C table's hash of (edge, block), as _fastcount.c computes it."""
    return ((block * 0x9E37_79B9_7F4A_7C15 & 0xFFFF_FFFF_FFFF_FFFF)
            ^ (edge * 0xC2B2_AE3D_27D4_EB4F & 0xFFFF_FFFF_FFFF_FFFF)) >> 32 & mask


class Counter:
    """The C hooks installed on one Soc's Unicorn, and the tables they read: per edge its
    cycles and instructions, and the (edge, block) -> next edge table, half full at most."""

    def __init__(self, lib, uc, on_edge, count_splits: bool):
        self.on_edge = NEW_EDGE(on_edge)  # kept alive as long as the hooks
        self.c = CounterStruct(self.on_edge)
        self.c.budget, self.c.stop = NO_BUDGET, ctypes.cast(_binding.uclib.uc_emu_stop, STOP)
        self.edges = 0
        self.pairs: dict[tuple[int, int], int] = {}  # everything in the table, to grow it
        self._edge_arrays(FIRST_EDGES)
        self._table(FIRST_SLOTS)
        self._add(uc, UC_HOOK_BLOCK, lib.quco_on_block)
        if count_splits:
            self._add(uc, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, lib.quco_on_access)

    def _add(self, uc, kind, fn):
        handle = ctypes.c_size_t()  # uc_hook_add with our struct as user data (the binding passes 0)
        status = _binding.uclib.uc_hook_add(uc._uch, ctypes.byref(handle), kind, ctypes.cast(fn, ctypes.c_void_p),
                                           ctypes.cast(ctypes.pointer(self.c), ctypes.c_void_p),
                                           ctypes.c_uint64(1), ctypes.c_uint64(0))
        if status:
            raise UcError(status)

    def _edge_arrays(self, n: int):
        old = (self.edge_cycles[:self.edges], self.edge_insns[:self.edges]) if self.edges else None
        self.edge_cycles, self.edge_insns = np.zeros(n, dtype=np.uint32), np.zeros(n, dtype=np.uint32)
        if old:
            self.edge_cycles[:self.edges], self.edge_insns[:self.edges] = old
        self.c.edge_cycles, self.c.edge_insns = (a.ctypes.data_as(U32) for a in (self.edge_cycles, self.edge_insns))

    def _table(self, slots: int):
        self.slot_edge = np.full(slots, EMPTY, dtype=np.uint32)
        self.slot_block, self.slot_next = np.zeros(slots, dtype=np.uint64), np.zeros(slots, dtype=np.uint32)
        self.c.mask = slots - 1
        for (edge, block), nxt in self.pairs.items():
            self._enter(edge, block, nxt)
        self.c.slot_edge, self.c.slot_next = (a.ctypes.data_as(U32) for a in (self.slot_edge, self.slot_next))
        self.c.slot_block = self.slot_block.ctypes.data_as(U64)

    def _enter(self, edge: int, block: int, nxt: int):
        s, mask = slot_of(edge, block, self.c.mask), self.c.mask
        while self.slot_edge[s] != EMPTY:
            s = (s + 1) & mask
        self.slot_edge[s], self.slot_block[s], self.slot_next[s] = edge, block, nxt

    def new_edge(self, cycles: int, insns: int) -> int:
        """A new edge's number, its cycles and instructions entered."""
        if self.edges == len(self.edge_cycles):
            self._edge_arrays(2 * self.edges)
        i, self.edges = self.edges, self.edges + 1
        self.edge_cycles[i], self.edge_insns[i] = cycles, insns
        return i

    def new_pair(self, edge: int, block: int, nxt: int):
        """Enter (edge, block) -> nxt, growing the table to stay at most half full."""
        self.pairs[(edge, block)] = nxt
        if 2 * len(self.pairs) > self.c.mask + 1:
            self._table(2 * (self.c.mask + 1))
        else:
            self._enter(edge, block, nxt)

    def take(self) -> tuple[int, int, int, int]:
        """(cycles, instructions, blocks, split accesses) of the step; the next starts at edge 0."""
        c = self.c
        out = c.cycles, c.insns, c.blocks, c.splits
        c.cycles = c.insns = c.blocks = c.splits = c.edge = 0
        return out


if __name__ == "__main__":
    print(describe())
