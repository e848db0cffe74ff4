"""What a reconfiguration costs, and how fast the emulator is. Prints figures; asserts
nothing (the tests do that).

    .venv/bin/python bench/bench.py [--profile cv32e40p] [--clock 700] [--seconds 2]

Table 1: every GST preset x example kernel: retired instructions, modelled cycles, ns at
the QuCo clock and memory-access energy for a cold launch (first launch after boot) and a
cached relaunch, plus the firmware's ROM/data bytes and the measured stack high-water mark.
Table 2: launches per second on one core, with and without cycle accounting, beside the
reference model's configurations per second, measured in the same run.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from elftools.elf.elffile import ELFFile
from rich.console import Console
from rich.table import Table

from quco.emulator import elf, soc
from quco.gst import abi, tables
from quco.host import reference
from quco.host.device import QUCO_CLOCK_MHZ, Device, firmware_path
from quco.host.kernel import load_kernel

ROOT = Path(__file__).resolve().parent.parent


def sizes(path: Path) -> dict:
    """ROM bytes as the loader counts them (what tests/test_budgets.py checks), and the
    data buffer's .data + .bss."""
    with path.open("rb") as f:
        sec = {s.name: s["sh_size"] for s in ELFFile(f).iter_sections()}
    return {"rom": elf.load(path).text_bytes, "data": sec.get(".data", 0) + sec.get(".bss", 0)}


def cost_table(kernels, profile: str, clock: float, elf_path: Path):
    t = Table(title=f"reconfiguration cost ({profile} profile, {clock:g} MHz): cold / cached")
    for col in ("gpu", "kernel", "tile", "instr", "cycles", "ns", "nJ", "instr $", "cycles $", "ns $", "nJ $"):
        t.add_column(col, justify="left" if col in ("gpu", "kernel") else "right")
    worst_stack, boots = 0, {}
    for gpu in tables.preset_names():
        for k in kernels:
            dev = Device(gpu, elf_path, profile=profile, clock_mhz=clock, count_memory=True)
            boots.setdefault(gpu, dev.boot_cost)
            cold, cached = dev.launch(k, check=True), dev.launch(k, check=True)
            assert cached.cache_hit, "an identical relaunch must hit the cache"
            c, h = cold.cost, cached.cost
            t.add_row(gpu, k.name, str(cold.tile), f"{c.instructions:,}", f"{c.cycles:,}", f"{c.ns:,.0f}",
                      f"{c.energy_nj:.2f}", f"{h.instructions:,}", f"{h.cycles:,}", f"{h.ns:,.0f}",
                      f"{h.energy_nj:.2f}")
            worst_stack = max(worst_stack, dev.stack_high_water())
    return t, worst_stack, boots


def rate(fn, seconds: float) -> float:
    """Calls per second: a warm-up (translation caches, CPU clock ramp) that is discarded,
    then the median of three windows, so one noisy window on a shared machine does not
    decide the figure."""
    def window(length):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < length:
            fn()
            n += 1
        return n / (time.perf_counter() - t0)
    window(min(0.5, seconds / 4))
    return sorted(window(seconds / 3) for _ in range(3))[1]


def speed_table(kernel, profile: str, elf_path: Path, seconds: float):
    """One core, one kernel (uncached: FLAG_NO_CACHE so every launch runs the algorithm)."""
    image, gst = elf.load(elf_path), tables.load("r9-nano")
    record = bytearray(kernel.record())
    flags_at = abi.LAUNCH_HEADER.offset("flags")
    record[flags_at:flags_at + 4] = (abi.FLAG_NO_CACHE).to_bytes(4, "little")
    record = bytes(record)

    def soc_launcher(**kw):
        s = soc.Soc(image, gst, profile=profile if kw.pop("timed", False) else None, **kw)
        s.boot()
        return lambda: s.launch(record)  # the whole protocol: ring, run, read and check the answer

    dev = Device(gst, elf_path, profile=profile)
    rows = [
        ("emulator, no accounting (Soc, count=False)", rate(soc_launcher(count=False), seconds)),
        ("emulator, instruction counts (Soc)", rate(soc_launcher(), seconds)),
        ("emulator, cycle accounting (Soc + timing)", rate(soc_launcher(timed=True), seconds)),
        ("host shim Device.launch with cycles (decodes LDS)", rate(lambda: dev.launch(record), seconds)),
        ("reference model configure()", rate(lambda: reference.configure(gst, record), seconds)),
    ]
    t = Table(title=f"speed on one core: {kernel.name}, R9 Nano, uncached launches")
    t.add_column("what")
    t.add_column("per second", justify="right")
    t.add_column("vs reference", justify="right")
    for what, r in rows:
        t.add_row(what, f"{r:,.0f}", f"{r / rows[-1][1]:.1f}x")
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cv32e40p")
    ap.add_argument("--clock", type=float, default=QUCO_CLOCK_MHZ)
    ap.add_argument("--seconds", type=float, default=2.0, help="per speed measurement")
    args = ap.parse_args(argv)
    con = Console(width=None if sys.stdout.isatty() else 130)
    elf_path = firmware_path()
    kernels = [load_kernel(p) for p in sorted((ROOT / "examples" / "kernels").glob("*.json"))]
    t, stack, boots = cost_table(kernels, args.profile, args.clock, elf_path)
    con.print(t)
    s = sizes(elf_path)
    con.print(f"ROM {s['rom']:,} B of {abi.ROM.size:,}; data (.data + .bss) {s['data']:,} B + "
              f"{abi.STACK_RESERVE} B stack reserve of {abi.DATA.size:,}; stack high-water {stack} B "
              f"(measured, all launches above); configuration cache: {abi.const('CACHE_ENTRIES')} entries")
    for gpu, boot in boots.items():  # the GST's CRC and the boot-time merit table
        con.print(f"boot on {gpu}: {boot.instructions:,} instructions, {boot.cycles:,} cycles, "
                  f"{boot.ns:,.0f} ns, {boot.energy_nj:.2f} nJ")
    mm = load_kernel(ROOT / "examples" / "kernels" / "matrix-matrix.json")
    con.print(speed_table(mm, args.profile, elf_path, args.seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
