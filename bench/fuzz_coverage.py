"""Branch coverage of quco/firmware/src/*.c under a fuzzing campaign (bench/fuzz.py): the same C
built for the host with gcov (`gcc --coverage -O0`, bench/fuzz_host.c plays the mailbox), fed
the GSTs and records the campaign ran on the emulator. Its answers (boot status, every
launch's status, detail, generation, cache hit and configuration bytes) must equal the
emulator's, byte for byte: only then do its counts say what the firmware ran.

    from fuzz_coverage import Batch, build, run, mismatches, branches
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "quco" / "firmware" / "src").glob("*.c"))
CFLAGS = ["-O0", "-std=gnu11", "-ffp-contract=off", "-fno-builtin", "-w", f"-I{ROOT / 'quco' / 'firmware' / 'include'}"]

# Branches no input reaches, with the reason (docs/testing.md, "Branch coverage"): (file, source
# text of the line, branch index). Each is checked to still be unreached and still be there.
UNREACHABLE: dict[tuple[str, str, int], str] = {
    ("quco/firmware/src/gst.c", "static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }", 1):
        "is_pow2(0): every power-of-two field's range check (lo >= 16) runs first, so the shape "
        "rules never see a zero; the helper stays total (defensive)",
}


@dataclass
class Batch:
    """One GST and the records launched on it, with the emulator's answers."""
    gst: bytes
    records: list[bytes] = field(default_factory=list)
    boot: tuple[int, int] = (0, 0)
    answers: list[tuple] = field(default_factory=list)  # (status, detail, generation, cache_hit, config)


def available() -> bool:
    return shutil.which("gcc") is not None and shutil.which("gcov") is not None


def build(folder: Path) -> Path:
    """The host build with coverage in `folder` (its .gcda counts start empty); the executable."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.gcda"):
        old.unlink()
    objects = []
    for src in SOURCES:
        obj = folder / f"{src.stem}.o"
        subprocess.run(["gcc", "-c", "--coverage", *CFLAGS, "-include", str(ROOT / "bench" / "fuzz_host.h"),
                        "-Dmain=quco_firmware_main", "-o", str(obj), str(src)], check=True, cwd=folder)
        objects.append(str(obj))
    harness = folder / "fuzz_host.o"
    subprocess.run(["gcc", "-c", *CFLAGS, "-o", str(harness), str(ROOT / "bench" / "fuzz_host.c")], check=True)
    exe = folder / "fuzz_host"
    subprocess.run(["gcc", "--coverage", "-o", str(exe), *objects, str(harness)], check=True)
    return exe


def run(exe: Path, batches: list[Batch]) -> list[Batch]:
    """The host build's answers to the same inputs, as Batches."""
    data = b"".join(struct.pack("<I", len(b.records)) + b.gst + b"".join(b.records) for b in batches)
    done = subprocess.run([str(exe)], input=data, capture_output=True, cwd=exe.parent, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{exe} exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    out, pos, got = done.stdout, 0, []

    def words(n):
        nonlocal pos
        v = struct.unpack_from(f"<{n}I", out, pos)
        pos += 4 * n
        return v
    for b in batches:
        host = Batch(b.gst, b.records, words(2))
        for _ in b.records:
            status, detail, generation, hit, k = words(5)
            host.answers.append((status, detail, generation, hit, out[pos:pos + k]))
            pos += k
        got.append(host)
    if pos != len(out):
        raise RuntimeError(f"{exe}: {len(out) - pos} bytes of output left over")
    return got


def mismatches(emulated: list[Batch], host: list[Batch]) -> list[str]:
    """Where the host build answered otherwise than the emulator, with the inputs in hex."""
    bad = []
    for e, h in zip(emulated, host):
        if tuple(e.boot) != tuple(h.boot):
            bad.append(f"boot {h.boot} != emulator {e.boot}: gst={e.gst.hex()}")
        for rec, a, b in zip(e.records, e.answers, h.answers):
            if tuple(a) != tuple(b):
                bad.append(f"launch {b[:4]} != emulator {a[:4]} (config {len(b[4])} / {len(a[4])} B): "
                           f"gst={e.gst.hex()} record={rec.hex()}")
    return bad


@dataclass
class Branch:
    file: str      # quco/firmware/src/NAME.c
    line: int
    index: int     # of the line's branches, in gcov's order (at -O0: each condition's two ways)
    of: int
    count: int
    text: str      # the source line

    @property
    def key(self) -> tuple[str, str, int]:
        return self.file, self.text.strip(), self.index


def branches(folder: Path) -> list[Branch]:
    """Every branch of quco/firmware/src/*.c with the times gcov counted it taken."""
    out = []
    for src in SOURCES:
        gcda = folder / f"{src.stem}.gcda"
        if not gcda.exists():
            continue
        done = subprocess.run(["gcov", "-t", "-j", "-b", str(gcda)], capture_output=True, text=True, cwd=folder,
                              check=True)
        lines = src.read_text().splitlines()
        for doc in (json.loads(t) for t in done.stdout.splitlines() if t.strip()):
            for f in doc["files"]:
                if Path(f["file"]).resolve() != src.resolve():
                    continue  # quco.h's inline helpers: not quco/firmware/src
                for ln in f["lines"]:
                    bs = ln["branches"]
                    for i, b in enumerate(bs):
                        out.append(Branch(f"quco/firmware/src/{src.name}", ln["line_number"], i, len(bs), b["count"],
                                          lines[ln["line_number"] - 1]))
    return out
