"""The command line against hostile input files: run `quco-emu` in-process and say what it
did, and mutate kernel.json, GST (.toml, .gst) and timing-profile files.

    outcome = run_cli(["check", "k.json"], timeout=10)
    outcome.kind   # "ok", "error" (a documented exit code, no traceback), "traceback", "hang"

Shared by bench/fuzz.py (random mutations), bench/hostile.py (the hostile corpus) and the
tests. Seeded `random.Random` only, so a campaign is reproducible.
"""
from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import time
import traceback
from dataclasses import dataclass

from ..util import schema

EXIT_CODES = {0, 1, 2, 3, 4, 5}  # cli/common.py's codes an input file can cause (6, a misbehaving firmware, cannot)


class Hang(BaseException):
    """Raised in the CLI by the timer: a BaseException, so no `except Exception` swallows it."""


@dataclass
class Outcome:
    kind: str          # "ok", "error", "traceback", "hang", "bad-exit" (an undocumented code)
    code: int | None
    out: str
    err: str
    seconds: float
    trace: str = ""

    def leaked_control(self) -> bool:
        """A raw control character (other than newline and tab) reached the output."""
        return any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) < 0xA0 for c in self.out + self.err)


def run_cli(argv: list[str], timeout: float = 120.0) -> Outcome:
    """quco-emu's main(argv) with stdout and stderr captured and a wall-clock limit (SIGALRM).
    The default limit is for a hang, generous for a loaded machine (tests use it; the fuzz
    campaign and bench/hostile.py pass their own --timeout)."""
    from . import main  # loaded at the first run, not when a test collects this module

    def alarm(signum, frame):
        raise Hang()
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    t0, trace, code, kind = time.perf_counter(), "", None, "ok"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main.main([str(a) for a in argv])
            except SystemExit as e:  # argparse: exit 2 on a usage error
                code = e.code if isinstance(e.code, int) else 2
    except Hang:
        kind = "hang"
    except Exception:  # noqa: BLE001 -- what we are looking for
        kind, trace = "traceback", traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if kind == "ok":
        kind = "ok" if code == 0 else "error" if code in EXIT_CODES else "bad-exit"
    return Outcome(kind, code, out.getvalue(), err.getvalue(), time.perf_counter() - t0, trace)


# ---------------------------------------------------------------- mutations
INTERESTING = (0, -1, 1, 8.0, 17.0, 1e300, -1e300, 2**31, 2**32, 2**64, 10**30, 0.5, 1.7, "8", "", "false",
               True, None, [], {}, [[[]]], "[/]", "[bold red]X", "\x1b[2J", "x" * 5000, "\u202e", "\x00")
TOML_VALUES = ("0", "-1", "1", "8.0", "1e300", "-1e300", "nan", "inf", "2147483648", "4294967296",
               "99999999999999999999", "1.7", '"8"', '""', '"false"', "true", "[]", "{}", "[[[]]]", '"[/]"',
               '"\\u001b[2J"', '"' + "x" * 5000 + '"', "1979-05-27", "0x10", "0b101")


def _set(doc, path, value):
    if not path:
        return value
    cur = doc
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return doc


def mutate_doc(rng: random.Random, doc):
    """A structure mutation of a JSON-like document: a value replaced by an interesting
    one, a key dropped, renamed or added, an entry duplicated, a value nested deeper."""
    doc = json.loads(dump(doc))
    paths = [p for p, _ in schema.nodes(doc)]
    path = rng.choice(paths)
    what = rng.random()
    if what < 0.5:
        return _set(doc, path, rng.choice(INTERESTING))
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if what < 0.65 and path:
        del parent[path[-1]]
    elif what < 0.75 and path and isinstance(path[-1], str):
        parent[path[-1] + rng.choice(["_", "\x1b", "X" * 200])] = parent.pop(path[-1])
    elif what < 0.85 and isinstance(parent, list):
        parent.extend([parent[path[-1]]] * rng.choice([1, 8, 16, 100]))
    elif path:  # nested deeper than json.dumps would go: spliced in as text by dump()
        parent[path[-1]] = Nested(parent[path[-1]], rng.choice([2, 50, 2000]))
    return doc


class Nested:
    """A value wrapped in `depth` arrays, written out by dump()."""

    def __init__(self, value, depth: int):
        self.value, self.depth = value, depth


def dump(doc) -> str:
    """json.dumps, with Nested values written as `depth` brackets around the value."""
    spliced = []

    def encode(v):
        if isinstance(v, Nested):
            spliced.append("[" * v.depth + json.dumps(v.value) + "]" * v.depth)
            return f"\0NEST{len(spliced) - 1}\0"
        raise TypeError(type(v))
    text = json.dumps(doc, default=encode)
    for i, part in enumerate(spliced):
        text = text.replace(json.dumps(f"\0NEST{i}\0"), part)
    return text


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """A byte mutation: flips, an inserted or deleted run, a truncation, a duplicated run."""
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        what = rng.random()
        i = rng.randrange(len(b) + 1)
        if what < 0.35 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif what < 0.55:
            b[i:i] = rng.choice([b"\xff", b"\x00", b"\x1b[2J", b"[/]", b"{", b"[" * 200, b'"', b"\n[x]\n",
                                 rng.randbytes(rng.randrange(1, 9))])
        elif what < 0.75 and b:
            del b[i:i + rng.randrange(1, 16)]
        elif what < 0.85:
            del b[i:]
        else:
            b[i:i] = b[i:i + rng.randrange(1, 64)] * rng.choice([2, 10, 100])
    return bytes(b)


def toml_line_mutation(rng: random.Random, text: str) -> str:
    """A TOML mutation on one `key = value` line: another value, or the key renamed."""
    lines = text.splitlines()
    where = [i for i, line in enumerate(lines) if "=" in line and not line.lstrip().startswith("#")]
    if not where:
        return text
    i = rng.choice(where)
    key, _, rest = lines[i].partition("=")
    if rng.random() < 0.8:
        lines[i] = f"{key}= {rng.choice(TOML_VALUES)}"
    else:
        lines[i] = f"{key.strip()}{rng.choice(['_x', '2', ''])}x ={rest}"
    if rng.random() < 0.1:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["[extra]", "[issue]", "hazard = 5", "x = 1"]))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- a campaign
def _sources():
    from .. import examples
    from ..emulator import timing
    from ..gst import tables
    return (sorted(examples.KERNELS.rglob("*.json")), sorted(tables.PRESET_DIR.glob("*.toml")),
            sorted(timing.PROFILE_DIR.glob("*.toml")))


def mutant(rng: random.Random, folder) -> tuple[str, list[str]]:
    """One mutated input file written into `folder` and the command line that reads it:
    (kind, argv), kind one of kernel, gst-toml, gst-binary, profile."""
    from pathlib import Path
    from ..gst import tables
    kernels, presets, profiles = _sources()
    folder, n = Path(folder), rng.randrange(10**9)
    kind = rng.choice(["kernel", "kernel", "gst-toml", "gst-binary", "profile"])
    if kind == "kernel":
        src = rng.choice(kernels)
        data = (dump(mutate_doc(rng, json.loads(src.read_text()))).encode() if rng.random() < 0.6
                else mutate_bytes(rng, src.read_bytes()))
        path = folder / f"k{n}.json"
        argv = rng.choice([["check", path], ["launch", path, "--reference"], ["launch", path, "--json"],
                           ["explain", path], ["launch", path, "--gpu", rng.choice(["r9-nano", "mi100"])]])
    elif kind == "gst-toml":
        src = rng.choice(presets).read_text()
        data = (toml_line_mutation(rng, src).encode() if rng.random() < 0.6
                else mutate_bytes(rng, src.encode()))
        path = folder / f"g{n}.toml"
        argv = rng.choice([["gst", "check", path], ["gst", "show", path], ["gst", "show", path, "--json"],
                           ["launch", kernels[0], "--reference", "--gpu", path], ["launch", kernels[0], "--gpu", path]])
    elif kind == "gst-binary":
        data = mutate_bytes(rng, tables.load(rng.choice(presets).stem))
        path = folder / f"g{n}.gst"
        argv = rng.choice([["gst", "check", path], ["gst", "show", path], ["launch", kernels[0], "--gpu", path]])
    else:
        src = rng.choice(profiles).read_text()
        data = (toml_line_mutation(rng, src).encode() if rng.random() < 0.6
                else mutate_bytes(rng, src.encode()))
        path = folder / f"p{n}.toml"
        argv = ["launch", kernels[0], "--profile", path]
    path.write_bytes(data)
    return kind, [str(a) for a in argv]


def campaign(rng: random.Random, cases: int, folder, timeout: float = 20.0, progress=None):
    """`cases` mutated files through the CLI. Returns (counts by (kind, outcome), failures):
    a failure is a traceback, a hang, an undocumented exit code or a control character
    that reached the terminal."""
    import collections
    counts, failures = collections.Counter(), []
    for i in range(cases):
        kind, argv = mutant(rng, folder)
        o = run_cli(argv, timeout)
        leaked = o.leaked_control()
        counts[(kind, "leaked" if leaked else o.kind)] += 1
        if leaked or o.kind not in ("ok", "error"):
            failures.append((argv, o))
        else:
            import os
            os.unlink(argv[argv.index(next(a for a in argv if a.startswith(str(folder))))])
        if progress:
            progress(i + 1)
    return counts, failures
