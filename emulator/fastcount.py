"""The Soc's counting hooks in C (emulator/_fastcount.c), loaded with ctypes.

Why: a Python hook costs a ctypes round trip per call, and a launch runs about 180 blocks
and 320 loads and stores, so Python hooks, not the emulation, set the pace of counting
(issue 24: cycle accounting at a sixth of its earlier speed). The C hooks record the step's
path of blocks and count split accesses; emulator/hooks.py prices the path afterwards with
the same edge graph its Python hook walks, so the counts are the same to the cycle
(tests/test_fast_paths.py runs both).

The library is built by `pip install` (setup.py, an optional extension: without a C
compiler the install goes on without it). `load()` returns None when it is missing or
when QUCO_PYTHON_HOOKS=1, and the Soc then counts with its Python hooks.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.machinery
import os
from pathlib import Path

import numpy as np
from unicorn import UC_HOOK_BLOCK, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UcError
from unicorn.unicorn_py3 import unicorn as _binding

NEW_BLOCK = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_uint32)
# The path holds every block of a step: at most budget + 2 (a block retires at least one
# instruction; Unicorn's limit ends the step). 2^22 entries, 32 MiB, only touched as used.
PATH_MAX = 1 << 22


class CounterStruct(ctypes.Structure):
    """quco_counter of _fastcount.c, field for field."""
    _fields_ = [("code_base", ctypes.c_uint64), ("known_words", ctypes.c_uint32),
                ("known", ctypes.POINTER(ctypes.c_uint16)), ("on_new", NEW_BLOCK),
                ("path", ctypes.POINTER(ctypes.c_uint64)), ("used", ctypes.c_uint32),
                ("capacity", ctypes.c_uint32), ("overflow", ctypes.c_uint32), ("splits", ctypes.c_uint32)]


VERSION = 1  # QUCO_FASTCOUNT_VERSION of _fastcount.c


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


class Counter:
    """The C hooks installed on one Soc's Unicorn, and the memory they write: `path` (the
    step's blocks as address << 32 | size), `known` (per code word: the size of a block
    checked there), the split-access count."""

    def __init__(self, lib, uc, code_base: int, code_bytes: int, capacity: int, on_new, count_splits: bool):
        self.path = np.zeros(capacity, dtype=np.uint64)
        self.known = np.zeros(code_bytes // 4, dtype=np.uint16)
        self.on_new = NEW_BLOCK(on_new)  # kept alive as long as the hooks
        self.c = CounterStruct(code_base, len(self.known), self.known.ctypes.data_as(ctypes.POINTER(ctypes.c_uint16)),
                               self.on_new, self.path.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)), 0, capacity, 0, 0)
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

    def mark_known(self, address: int, size: int):
        offset = address - self.c.code_base
        if 0 <= offset < 4 * len(self.known) and offset % 4 == 0:
            self.known[offset // 4] = size

    def take(self) -> tuple[list, int]:
        """The step's path and split-access count; starts the next step empty."""
        c = self.c
        if c.overflow:
            raise RuntimeError(f"fastcount: {c.overflow} blocks past the path's {c.capacity} entries")
        path, splits = self.path[:c.used].tolist(), c.splits
        c.used = c.splits = 0
        return path, splits
