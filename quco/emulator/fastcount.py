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
from unicorn import UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UcError
from unicorn.unicorn_py3 import unicorn as _binding

NEW_EDGE = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32)
EMPTY = 0xFFFF_FFFF
VERSION = 4  # QUCO_FASTCOUNT_VERSION of _fastcount.c
NO_BUDGET = 2**64 - 1
STOP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
TIMED = ctypes.CFUNCTYPE(None, ctypes.c_uint64)
REG_READ = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
U32, U64 = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
I32, I64 = ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int64)
FIRST_EDGES, FIRST_SLOTS = 1024, 4096  # the tables' first sizes (the firmware's boot makes about 80 pairs)
FIRST_MEMO = 64  # the operand-timed memo's first size (a Matrix-Matrix launch runs 3 FDIVs)
MEMO_MAX = 1 << 16  # entries at most (about 6 MB of tables)


class CounterStruct(ctypes.Structure):
    """quco_counter of _fastcount.c, field for field."""
    _fields_ = [("on_edge", NEW_EDGE), ("edge_cycles", U32), ("edge_insns", U32), ("slot_edge", U32),
                ("slot_block", U64), ("slot_next", U32), ("mask", ctypes.c_uint32), ("edge", ctypes.c_uint32),
                ("cycles", ctypes.c_uint64), ("insns", ctypes.c_uint64), ("blocks", ctypes.c_uint32),
                ("splits", ctypes.c_uint32), ("budget", ctypes.c_uint64), ("stop", STOP), ("over", ctypes.c_uint32),
                ("on_timed", TIMED), ("reg_read", REG_READ), ("sites", ctypes.c_uint32), ("site_address", U64),
                ("site_reg", I32), ("timed_block", ctypes.c_uint32), ("timed_lat", ctypes.c_uint32),
                ("memo_mask", ctypes.c_uint32), ("memo_edge", U32), ("memo_site", U32), ("memo_ops", U64),
                ("memo_next", U32), ("memo_delta", I64), ("memo_lat", U32)]


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


def memo_slot(edge: int, site: int, ops: int, mask: int) -> int:
    """The C memo's hash of (edge, site, operands), as _fastcount.c computes it."""
    m = 0xFFFF_FFFF_FFFF_FFFF
    return ((ops * 0x9E37_79B9_7F4A_7C15 & m) ^ (edge * 0xC2B2_AE3D_27D4_EB4F & m)
            ^ (site * 0x1656_67B1_9E37_79F9 & m)) >> 32 & mask


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
        self.c.timed_block = EMPTY
        self._add(uc, UC_HOOK_BLOCK, lib.quco_on_block)
        if count_splits:
            self._add(uc, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, lib.quco_on_access)

    def _add(self, uc, kind, fn, begin: int = 1, end: int = 0):
        handle = ctypes.c_size_t()  # uc_hook_add with our struct as user data (the binding passes 0)
        status = _binding.uclib.uc_hook_add(uc._uch, ctypes.byref(handle), kind, ctypes.cast(fn, ctypes.c_void_p),
                                           ctypes.cast(ctypes.pointer(self.c), ctypes.c_void_p),
                                           ctypes.c_uint64(begin), ctypes.c_uint64(end))
        if status:
            raise UcError(status)

    def add_timed(self, lib, uc, sites: dict, on_timed) -> None:
        """The C code hook on each operand-timed instruction: `sites` maps its address to the
        Unicorn registers its latency reads (one or two); `on_timed(address)` is Python's
        answer to what the memo does not know (it calls `remember`)."""
        self.on_timed = TIMED(on_timed)  # kept alive as long as the hooks
        self.c.on_timed = self.on_timed
        self.c.reg_read = ctypes.cast(_binding.uclib.uc_reg_read, REG_READ)
        self.site_index = {a: i for i, a in enumerate(sites)}
        self.site_address = np.array(list(sites), dtype=np.uint64)
        self.site_reg = np.array([r for regs in sites.values() for r in (tuple(regs) + (-1, -1))[:2]], dtype=np.int32)
        self.c.sites = len(sites)
        self.c.site_address, self.c.site_reg = self.site_address.ctypes.data_as(U64), self.site_reg.ctypes.data_as(I32)
        self.memo: dict[tuple[int, int, int], tuple[int, int, int]] = {}
        self._memo(FIRST_MEMO)
        for address in sites:
            self._add(uc, UC_HOOK_CODE, lib.quco_on_timed, address, address)

    def _memo(self, slots: int):
        self.memo_edge, self.memo_site = np.full(slots, EMPTY, dtype=np.uint32), np.zeros(slots, dtype=np.uint32)
        self.memo_ops, self.memo_next = np.zeros(slots, dtype=np.uint64), np.zeros(slots, dtype=np.uint32)
        self.memo_delta, self.memo_lat = np.zeros(slots, dtype=np.int64), np.zeros(slots, dtype=np.uint32)
        self.c.memo_mask = slots - 1
        for key, answer in self.memo.items():
            self._memo_enter(key, answer)
        c = self.c
        c.memo_edge, c.memo_site, c.memo_next, c.memo_lat = (
            a.ctypes.data_as(U32) for a in (self.memo_edge, self.memo_site, self.memo_next, self.memo_lat))
        c.memo_ops, c.memo_delta = self.memo_ops.ctypes.data_as(U64), self.memo_delta.ctypes.data_as(I64)

    def _memo_enter(self, key: tuple, answer: tuple):
        (edge, site, ops), mask = key, self.c.memo_mask
        s = memo_slot(edge, site, ops, mask)
        while self.memo_edge[s] != EMPTY:
            s = (s + 1) & mask
        self.memo_edge[s], self.memo_site[s], self.memo_ops[s] = edge, site, ops
        self.memo_next[s], self.memo_delta[s], self.memo_lat[s] = answer

    def remember(self, edge: int, address: int, ops: int, nxt: int, delta: int, lat: int):
        """What the first operand-timed instruction of a block execution did from `edge` on
        operands `ops`, for the C hook to do next time; the memo grows to stay half empty."""
        key = (edge, self.site_index[address], ops)
        if key in self.memo:
            return
        if len(self.memo) >= MEMO_MAX:  # a long run of ever new operands: start again
            self.memo.clear()
            self._memo(FIRST_MEMO)
        self.memo[key] = (nxt, delta, lat)
        if 2 * len(self.memo) > self.c.memo_mask + 1:
            self._memo(2 * (self.c.memo_mask + 1))
        else:
            self._memo_enter(key, self.memo[key])

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
        c.timed_block = EMPTY
        return out


if __name__ == "__main__":
    print(describe())
