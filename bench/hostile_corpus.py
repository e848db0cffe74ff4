"""The hostile-input corpus of issues #13 and #24, as data: each case is a `quco-emu` command
line with its input files and what should happen (the exit codes and words of a clean error,
or an accept). bench/hostile.py runs them.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from quco.gst import abi, tables

ROOT = Path(__file__).resolve().parent.parent
MM = str(ROOT / "quco" / "examples" / "kernels" / "matrix-matrix.json")
KERNEL = {"name": "k", "compute_intensity": 1.0, "queues": [{"type": "streaming", "length": 1024, "elem_size": 2}]}
PRESET = (tables.PRESET_DIR / "r9-nano.toml").read_text()
PROFILE = (ROOT / "quco" / "emulator" / "profiles" / "cv32e40p.toml").read_text()
GOOD_GST = tables.load("r9-nano")
BAD_CRC = GOOD_GST[:20] + bytes([GOOD_GST[20] ^ 1]) + GOOD_GST[21:]
SPECIAL = {"/dev/zero": "not a regular file", "/dev/urandom": "not a regular file", "{fifo}": "not a regular file",
           "{dir}": "folder", "{tmp}/absent.json": "no such", "": "empty"}


@dataclass
class Case:
    name: str
    argv: list
    files: dict = field(default_factory=dict)  # file name in the case folder -> bytes
    codes: tuple = (2,)                        # () = an accept (exit 0)
    words: tuple = ()                          # in stderr (errors) or stdout (accepts)
    item: str = ""                             # "8" / "10": another helper's item (residual)


def kernel(**changes) -> bytes:
    doc = json.loads(json.dumps(KERNEL))
    for path, v in changes.items():
        *parents, last = path.split(".")
        cur = doc
        for p in parents:
            cur = cur[int(p)] if p.isdigit() else cur.setdefault(p, {})
        if v is DROP:
            del cur[last]
        else:
            cur[int(last) if last.isdigit() else last] = v
    return json.dumps(doc).encode()


DROP = object()
INTEGER_FIELDS = [("consumer_wavefronts", 1, 64), ("queues.0.length", 1, 2**32 - 1), ("queues.0.count", 1, 16),
                  ("partition.core_clock_mhz", 0, 10_000), ("partition.active_cus", 0, 1024),
                  ("partition.lds_bytes", 0, 262_144), ("grid.work_groups", 1, 2**32 - 1),
                  ("grid.output_bytes", 0, 2**32 - 1), ("grid.flops_per_work_group", 0, 10**15)]
NOT_INTEGERS = [8.0, 16.5, 1e300, -1e300, "8", True, None, [], {}, 10**30]


def kernel_cases():
    for path, lo, hi in INTEGER_FIELDS:
        leaf = path.split(".")[-1]
        extra = {"grid.work_groups": 1} if path.startswith("grid.") and path != "grid.work_groups" else {}
        for v in (lo, hi):
            yield Case(f"{path}={v}", ["check", "{k}"], {"k": kernel(**extra, **{path: v})}, ())
        for v in [lo - 1, hi + 1] + NOT_INTEGERS:
            for cmd in (["check", "{k}"], ["launch", "{k}", "--reference"]):
                yield Case(f"{cmd[0]} {path}={v!r:.20}", cmd, {"k": kernel(**extra, **{path: v})}, (2,), (leaf,))
    for v in (1, 2, 4, 8):
        yield Case(f"elem_size={v}", ["launch", "{k}", "--reference"], {"k": kernel(**{"queues.0.elem_size": v})}, ())
    for v in (0, 3, 16, 8.0, "2", None):
        yield Case(f"elem_size={v!r}", ["check", "{k}"], {"k": kernel(**{"queues.0.elem_size": v})}, (2,), ("elem_size",))
    for v in (0, 1e6, "low", "medium", "high", 97.5):
        yield Case(f"ci={v!r}", ["launch", "{k}", "--reference"], {"k": kernel(compute_intensity=v)}, ())
    for v in (-1, 1e6 + 1, "hgh", True, None, [], 1e300):
        yield Case(f"ci={v!r}", ["check", "{k}"], {"k": kernel(compute_intensity=v)}, (2,), ("compute_intensity",))
    for text in ('{"name": "k", "compute_intensity": NaN, "queues": []}',
                 '{"name": "k", "compute_intensity": Infinity, "queues": [{"type": "streaming", "length": 1, "elem_size": 2}]}',
                 '{"name": "k", "compute_intensity": 1e999, "queues": [{"type": "streaming", "length": 1, "elem_size": 2}]}',
                 '{"name": "k", "compute_intensity": -Infinity, "queues": [{"type": "streaming", "length": 1, "elem_size": 2}]}'):
        yield Case(f"non-finite {text[30:45]}", ["check", "{k}"], {"k": text.encode()}, (2,), ("finite",))
    # text fields: literal markup is fine, control characters and huge sizes are not
    for path, limit, empty_ok in (("name", 128, False), ("queues.0.name", 64, True), ("description", 65536, True)):
        leaf = path.split(".")[-1]
        for v in ("[/]", "[bold red]X", "ü名", "x" * limit) + (("",) if empty_ok else ()):
            yield Case(f"{path}={v[:12]!r}", ["launch", "{k}", "--reference"], {"k": kernel(**{path: v})}, ())
        bad = ["x" * (limit + 1), "x" * 300_000] + ([] if empty_ok else [""])
        bad += [] if leaf == "description" else ["\x1b[2J", "a\nb", "\x00", "\u202e", "a\rb", "\x9b31m"]
        for v in bad:
            for cmd in (["check", "{k}"], ["launch", "{k}", "--reference"]):
                yield Case(f"{cmd[0]} {path}={v[:12]!r}", cmd, {"k": kernel(**{path: v})}, (2,), (leaf,))
    for v in ("[/]", "\x1b[2J", "x" * 5000, "", "nope", "{dir}", "/dev/zero", "{fifo}", "{g}"):
        files = {"k": kernel(gpu=v)}
        if v == "{g}":
            files["g.toml"] = _preset("dram_bw_mbps", "[dram_bw_mbps]\nvalue = 0")
        for cmd in (["check", "{k}"], ["launch", "{k}", "--reference"], ["explain", "{k}"]):
            yield Case(f"{cmd[0]} gpu={v[:10]!r}", cmd, files, (2,), ("gpu",))
    for cmd in (["check", "{k}"], ["launch", "{k}", "--reference"]):
        yield Case(f"{cmd[0]} gpu=r9-nano", cmd, {"k": kernel(gpu="r9-nano")}, ())


def structure_cases():
    q = KERNEL["queues"][0]
    docs = {
        "deep 1000": ("[" * 1000 + "]" * 1000, "nested too deeply"),
        "deep 100000": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        "deep in description": (json.dumps(KERNEL)[:-1] + ', "description": ' + "[" * 990 + "]" * 990 + "}", ""),
        "top array": ("[1]", "top level"), "top string": ('"k"', "top level"), "top null": ("null", "top level"),
        "top number": ("5", "top level"), "empty": ("", "not JSON"), "blank": ("  \n", "not JSON"),
        "garbage after": (json.dumps(KERNEL) + "}", "not JSON"), "duplicate key": ('{"name": "a", "name": "b"}', "duplicate"),
        "many keys": ("{" + ",".join(f'"k{i}": {i}' for i in range(50_000)) + "}", "unknown field"),
        "many queues": (json.dumps(dict(KERNEL, queues=[q] * 10_000)), "queues"),
        "huge int": ('{"name": "k", "compute_intensity": 1' + "0" * 5000 + "}", "not JSON"),
        "unknown key": (json.dumps(dict(KERNEL, colour=1)), "colour"),
        "unknown escape key": (json.dumps(dict(KERNEL, **{"\x1b[31mred": 1})), "unknown field"),
        "unknown markup key": (json.dumps(dict(KERNEL, **{"[/]": 1})), "[/]"),
        "unknown 100 KB key": (json.dumps(dict(KERNEL, **{"k" * 100_000: 1})), "unknown field"),
        "17 queues": (json.dumps(dict(KERNEL, queues=[q] * 17)), "17 entries"),
        "count 17": (json.dumps(dict(KERNEL, queues=[dict(q, count=17)])), "count"),
        "count 8+9": (json.dumps(dict(KERNEL, queues=[dict(q, count=8), dict(q, count=9)])), "17 queues"),
        "count 17.0": (json.dumps(dict(KERNEL, queues=[dict(q, count=17.0)])), "count"),
        "count 16.0": (json.dumps(dict(KERNEL, queues=[dict(q, count=16.0)])), "decimal point"),
        "count 1e300": (json.dumps(dict(KERNEL, queues=[dict(q, count=1e300)])), "count"),
        "2 MB": (json.dumps(dict(KERNEL, description="x" * 2_000_000)), "larger than"),
        "queue not object": (json.dumps(dict(KERNEL, queues=[5])), "queues[0]"),
    }
    for name, (text, words) in docs.items():
        for cmd in (["check", "{k}"], ["launch", "{k}", "--reference"], ["launch", "{k}"]):
            yield Case(f"{cmd[0]}{cmd[-1] if len(cmd) > 2 else ''} {name}", cmd, {"k": text.encode()}, (2,),
                       (words,) if words else ())
    for raw, words in ((b'{"name": "\xff"}', "not UTF-8"), (b"\xff\xfe{\x00}\x00", "not UTF-8")):
        yield Case(f"binary {raw[:6]!r}", ["check", "{k}"], {"k": raw}, (2,), (words,))
    for name, queues in (("count 16", [dict(q, count=16)]), ("count 8+8", [dict(q, count=8), dict(q, count=8)]),
                         ("16 entries", [q] * 16)):
        for cmd in (["check", "{k}"], ["launch", "{k}", "--reference"], ["launch", "{k}"]):
            yield Case(f"{cmd[0]} {name}", cmd, {"k": json.dumps(dict(KERNEL, queues=queues)).encode()}, ())
    for path, words in SPECIAL.items():
        for cmd in (["check"], ["launch"], ["launch", "--reference"], ["explain"], ["search"], ["profile"]):
            yield Case(f"{cmd[0]} kernel {path or '(empty)'}", cmd[:1] + [path] + cmd[1:], {}, (2,), (words,))
    yield Case("active_cus 1000 on r9-nano, checked up front", ["launch", "{k}"],
               {"k": kernel(**{"partition.active_cus": 1000})}, (2,), ("active_cus: 1000 is out of range; expected 0 to 64",))


def _preset(field: str, text: str) -> bytes:
    """The R9 Nano preset with `field`'s table replaced by `text` (TOML lines)."""
    lines, out, skip = PRESET.splitlines(), [], False
    for line in lines:
        if line.startswith("["):
            skip = line == f"[{field}]"
            if skip:
                out.append(text)
                continue
        if not skip:
            out.append(line)
    return ("\n".join(out) + "\n").encode()


def gst_cases():
    checks = (["gst", "check", "{g}"], ["launch", MM, "--reference", "--gpu", "{g}"], ["launch", MM, "--gpu", "{g}"])
    for f in abi.GST_CHECKED:
        lo, hi = int(f.lo), int(f.hi)
        bad = {f"{hi + 1}": "out of range", f"{float(lo)}": "not an integer", f'"{lo}"': "not an integer",
               "true": "not an integer", "[]": "not an integer"}
        if lo > 0:
            bad[str(lo - 1)] = "out of range"
        for value, words in bad.items():
            for cmd in checks[:2]:
                yield Case(f"{cmd[0]} gst {f.name}={value}", cmd, {"g.toml": _preset(f.name, f"[{f.name}]\nvalue = {value}")},
                           (2,), (f.name, words))
        for text, words in ((f"[{f.name}]\nsource = \"x\"", "missing"), ("", "missing"),
                            (f"[{f.name}]\nvalue = {hi}\nunit = \"MHz\"", "unknown key"),
                            (f"[{f.name}]\nvalue = {hi}\nsource = 5", "source")):
            yield Case(f"gst {f.name} table {text[-12:]!r}", checks[0], {"g.toml": _preset(f.name, text)}, (2,), (words,))
    shape = {"cache_line_bytes": 100, "lds_bytes": 1100, "min_tile_elems": 48, "max_tile_elems": 32}
    for name, v in shape.items():  # within range, against the unit's shape rules
        files = {"g.toml": _preset(name, f"[{name}]\nvalue = {v}")}
        for cmd in checks + (["explain", MM, "--gpu", "{g}"], ["search", MM, "--gpu", "{g}"]):
            yield Case(f"{cmd[0]} gst {name}={v}", cmd, files, (2,), (name,))
        yield Case(f"gst pack {name}={v}", ["gst", "pack", "{g}", "-o", "{out}"], files, (2,), (name,), item="8")
    for v, ok in (('"' + "N" * 31 + '"', True), ('"' + "N" * 32 + '"', False), ('"[/]"', True), ('""', False),
                  ('"\\u001b[2J"', False), ('"Radeon\\u2122"', False), ("5", False)):
        text = PRESET.replace('name = "R9 Nano"', f"name = {v}").encode()
        for cmd in checks[:2] + (["gst", "show", "{g}"],):
            yield Case(f"{cmd[0]} gst name={v[:10]}", cmd, {"g.toml": text}, () if ok else (2,), () if ok else ("name",))
    big = "x" * 10_000_000
    for name, text, words in (
            ("source 10 MB", _preset("num_cus", f'[num_cus]\nvalue = 64\nsource = "{big}"'), "larger than"),
            ("source 5000", _preset("num_cus", f'[num_cus]\nvalue = 64\nsource = "{big[:5000]}"'), "source"),
            ("unknown field", PRESET.encode() + b"\n[colour]\nvalue = 1\n", "colour"),
            ("unknown escape field", PRESET.encode() + b'\n["\\u001b[2J"]\nvalue = 1\n', "unknown field"),
            ("not UTF-8", PRESET.encode().replace(b"R9 Nano", b"R9 \xff"), "UTF-8"),
            ("not TOML", PRESET.encode() + b"\n[[[\n", "TOML"), ("empty", b"", "name"),
            ("deep", b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested"),
            ("huge int", b"x = 1" + b"0" * 5000 + b"\n", "TOML")):
        for cmd in checks[:2] + (["gst", "show", "{g}"],):
            yield Case(f"{cmd[0]} gst {name}", cmd, {"g.toml": text}, (2,), (words,))
    for cmd in (["gst", "show", "{g}"], ["gst", "check", "{g}"]):
        text = _preset("num_cus", '[num_cus]\nvalue = 64\nsource = "[bold red]X \\u001b[2J"')
        yield Case(f"{cmd[1]} gst markup source", cmd, {"g.toml": text}, (), ("[bold red]X" if cmd[1] == "show" else "ok",))
    good = tables.load("r9-nano")
    bad_crc = bytearray(good)
    bad_crc[abi.GST.offset("num_cus")] ^= 1
    version2 = bytearray(good)
    version2[abi.GST.offset("version")] = 2
    magic = bytearray(good)
    magic[0] ^= 0xFF
    binaries = {"100 bytes": (good[:100], "256"), "257 bytes": (good + b"\0", "larger than"), "0 bytes": (b"", "256"),
                "bad CRC": (bytes(bad_crc), "checksum"), "version 2": (bytes(version2), "version"),
                "bad magic": (bytes(magic), "magic"), "random": (bytes(range(256)), "magic")}
    for name, (raw, words) in binaries.items():
        for cmd in checks + (["check", "{k}"],):
            files = {"g.gst": raw, "k": kernel(gpu="{g}")}
            yield Case(f"{cmd[0]} binary gst {name}", cmd, files, (2,), (words,))
        yield Case(f"gst pack binary {name}", ["gst", "pack", "{g}", "-o", "{out}"], {"g.gst": raw}, (2,), (words,),
                   item="8" if len(raw) == 256 else "")
    yield Case("gst check binary ok", ["gst", "check", "{g}"], {"g.gst": good}, (), ("R9 Nano",))
    for path, words in SPECIAL.items():
        for cmd in (["gst", "check", path], ["gst", "show", path], ["gst", "pack", path, "-o", "{out}"],
                    ["launch", MM, "--gpu", path], ["explain", MM, "--gpu", path], ["search", MM, "--gpu", path],
                    ["check", "{k}"]):
            yield Case(f"{' '.join(cmd[:2])} gst {path or '(empty)'}", cmd, {"k": kernel(gpu=path)} if path else
                       {"k": kernel(gpu="")}, (2,), (words if cmd[0] != "check" or path else "gpu",))


def profile_cases():
    edits = {"top hazard = 5": ("\n[hazard]", "\nhazard = 5\n[x]"), "top result = 5": ("\n[result]", "\nresult = 5\n[x]"),
             "top issue = 5": ("[issue]", "issue = 5\n[x]"), "jalr_operand one": ("jalr_operand = 1", 'jalr_operand = "one"'),
             "jalr_operand 1.7": ("jalr_operand = 1", "jalr_operand = 1.7"), "jalr_operand -1": ("jalr_operand = 1", "jalr_operand = -1"),
             "jalr_operand huge": ("jalr_operand = 1", "jalr_operand = 99999999999999999"),
             "jalr_operand 1001": ("jalr_operand = 1", "jalr_operand = 1001"),
             "fpu_busy string": ("fpu_busy_until_result = true", 'fpu_busy_until_result = "false"'),
             "fpu_busy int": ("fpu_busy_until_result = true", "fpu_busy_until_result = 1"),
             "unknown table": ("[wake]", "[turbo]\nx = 1\n[wake]"), "unknown class": ("alu = 1", "alu = 1\nvector = 2"),
             "missing class": ("\nalu = 1", "\n"), "wake negative": ("reset = 4", "reset = -4"),
             "div float": ("div = 35", "div = 35.0"), "div inf": ("div = 35", "div = inf"), "div nan": ("div = 35", "div = nan"),
             "load string": ("load = 1 ", 'load = "1"'), "load array": ("load = 1 ", "load = [1]"),
             "load date": ("load = 1 ", "load = 1979-05-27"), "name escape": ('name = "cv32e40p"', 'name = "\\u001b[2J"'),
             "name long": ('name = "cv32e40p"', f'name = "{"n" * 65}"'), "name empty": ('name = "cv32e40p"', 'name = ""'),
             "description 2000": ('description = "', f'description = "{"d" * 2000}'),
             "not TOML": ("[issue]", "[issue"), "not UTF-8": ("cv32e40p", "cv32e40p\udcff")}
    for name, (old, new) in edits.items():
        assert old in PROFILE, old
        text = PROFILE.replace(old, new, 1).encode("utf-8", "surrogateescape")
        for cmd in (["launch", MM, "--profile", "{p}"], ["profile", MM, "--profile", "{p}"]):
            yield Case(f"{cmd[0]} profile {name}", cmd, {"p.toml": text}, (2,), ("p.toml",))
    for name, text in (("copy", PROFILE), ("markup name", PROFILE.replace('name = "cv32e40p"', 'name = "[/]"')),
                       ("no optional tables", PROFILE.split("[result]")[0])):
        for cmd in (["launch", MM, "--profile", "{p}"], ["profile", MM, "--profile", "{p}"]):
            yield Case(f"{cmd[0]} profile {name}", cmd, {"p.toml": text.encode()}, ())
    for path, words in list(SPECIAL.items()) + [("nope", "no such")]:
        for cmd in (["launch", MM, "--profile", path], ["profile", MM, "--profile", path]):
            yield Case(f"{cmd[0]} profile {path or '(empty)'}", cmd, {}, (2,), (words,))


def option_cases():
    for v in ("0", "-1", "nan", "inf", "-inf", "1e308", "abc", "", "10000.1", "0x10", "\u0667\u0660\u0660", "\u00b2",
              "9" * 10_000):
        for cmd in (["launch", MM, "--cycles"], ["profile", MM]):
            yield Case(f"{cmd[0]} --clock {v!r}", cmd + ["--clock", v], {}, (2,), ("--clock",))
    for v in ("10000", "0.5", "700"):
        for cmd in (["launch", MM, "--cycles", "--json"], ["profile", MM]):
            yield Case(f"{cmd[0]} --clock {v}", cmd + ["--clock", v], {}, ())
    outputs = {"a folder": ("{dir}", "is a folder"), "a missing folder": ("{tmp}/no/such/x", "No such file")}
    for name, (path, words) in outputs.items():
        for cmd in (["profile", MM, "--trace", path], ["gst", "pack", "r9-nano", "-o", path],
                    ["launch", MM, "--model", "--model-trace", path]):
            yield Case(f"{cmd[0]} output to {name}", cmd, {}, (2,), (words,))
    for cmd in (["profile", MM, "--trace", "{out}"], ["gst", "pack", "r9-nano", "-o", "{out}"],
                ["launch", MM, "--model", "--model-trace", "{out}"]):
        yield Case(f"{cmd[0]} output over a file", cmd, {}, (), ("wrote",))
    for cmd in (["launch", "{k}", "--gpu", ""], ["explain", "{k}", "--gpu", ""], ["search", "{k}", "--gpu", ""],
                ["diff", "{k}", "--gpu", ""]):
        yield Case(f"{cmd[0]} --gpu ''", cmd, {"k": kernel()}, (2,), ("no GST given",))


def workload_cases():
    w = str(ROOT / "quco" / "examples" / "workloads" / "whisper-tiny-types.json")
    for path, words in SPECIAL.items():
        for cmd in (["run", path], ["run", w, "--dvfs", path], ["run", w, "--gpu", path],
                    ["import", path, "-o", "{out}"]):
            yield Case(f"{cmd[0]} {cmd[-1] if cmd[0] == 'run' else cmd[1]} {path or '(empty)'}", cmd, {}, (2,),
                       (words if cmd[2:3] != ["--gpu"] or path else "no GST given",))
    yield Case("run --gpu bad CRC", ["run", w, "--gpu", "{g}", "--no-baselines"],
               {"g.gst": BAD_CRC}, (2,), ("checksum",))
    yield Case("import not ONNX", ["import", "{g}", "-o", "{out}"], {"g.gst": tables.load("r9-nano")}, (2,), ("ONNX",))


def _workload(*layers, **top) -> bytes:
    return json.dumps({"name": "w", "layers": list(layers) or [GEMM], **top}).encode()


GEMM = {"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64}}


def _nested(depth: int) -> bytes:
    inner = GEMM
    for i in range(depth):
        inner = {"name": f"g{i}", "layers": [inner]}
    return _workload(inner)


def surface_cases():
    """Issue #24 part 5: the surfaces added since issue #13 (sweeps, tenants, gdb, workloads,
    DVFS traces, output kinds)."""
    ev = ["evaluate", MM, "--gpu", "r9-nano", "--no-ablation", "--no-portability"]
    for opts, words in ((["--workers", "0"], "--workers"), (["--workers", "\u00b2"], "--workers"),
                        (["--workers", "9" * 5000], "--workers"), (["--scheduler", "foo"], "--scheduler"),
                        (["--scheduler", "tcp://127.0.0.1:1"], "cannot reach"), (["--out", "{tmp}/x.xlsx"], "x.xlsx"),
                        (["--out", ""], "empty name"), (["--plot", ""], "empty name"), (["--out", "{dir}"], "is a folder"),
                        (["--out", "{tmp}/no/x.csv"], "No such file"), (["--plot", "{out}"], "expected a folder"),
                        (["--out", "{tmp}/dangling.csv"], "symbolic link to a missing file")):
        yield Case(f"evaluate {' '.join(opts)[:30]}", ev + opts, {}, (2,), (words,))
    w = "{tmp}/w.json"
    for share in ("\u00b2", "\u0663", "9" * 10_000, "8:1:2", "-1", "8:\u0661\u0662\u0668", "8:100"):
        yield Case(f"run tenant @{share[:12]}", ["run", f"{w}@{share}", "--no-baselines"], {"w.json": _workload()},
                   (2,), ("tenant",))
    for port in ("\u00b2", "\u0663\u0663", "9" * 5000, "-1", "65536", "1e3"):
        yield Case(f"gdb --port {port[:12]}", ["gdb", MM, "--port", port], {}, (2,), ("--port",))
    for n in ("0", "\u0663", "10001", "9" * 5000):
        yield Case(f"gdb --launches {n[:12]}", ["gdb", MM, "--port", "0", "--launches", n], {}, (2,), ("--launches",))
    for depth in (33, 200, 400):
        yield Case(f"run groups {depth} deep", ["run", w, "--no-baselines"], {"w.json": _nested(depth)}, (2,),
                   ("nested more than 32",))
    huge_q = json.dumps(dict(KERNEL, queues=[dict(KERNEL["queues"][0], length=2**32 - 1)])).encode()
    for cmd in (["search", "{k}"], ["launch", "{k}", "--model"], ["evaluate", "{k}", "--gpu", "r9-nano"]):
        yield Case(f"{cmd[0]} a 2^32-1 queue", cmd, {"k": huge_q}, (2,), ("every tile of a work-group",))
    yield Case("run a GEMM with k = 2^30", ["run", w, "--no-baselines"],
               {"w.json": _workload({"name": "fc", "gemm": {"m": 64, "k": 2**30, "n": 64}})}, (2,), ("every tile",))
    yield Case("run gemm m x n too large", ["run", w, "--no-baselines"],
               {"w.json": _workload({"name": "fc", "gemm": {"m": 2**30, "k": 64, "n": 2**30}})}, (2,), ("gemm: m =",))
    for name, doc, words in (("workload gpu", _workload(gpu="nope"), "w.json: gpu"),
                             ("escape name", _workload(name="w\x1b[2J"), "control character"),
                             ("escape layer", _workload(dict(GEMM, name="\x9b2J")), "control character"),
                             ("bidi type", _workload({"name": "a", "type": "t\u202e"},
                                                     layer_types={"t\u202e": {"gemm": GEMM["gemm"]}}), "control character")):
        yield Case(f"run {name}", ["run", w, "--no-baselines"], {"w.json": doc}, (2,), (words,))
    trace = lambda **f: json.dumps({"name": "t", "clocks_mhz": [1000], **f}).encode()  # noqa: E731
    for name, doc, gpu, words in (("trace gpu nope", trace(gpu="nope"), [], "t.json: gpu"),
                                  ("trace for the MI100 on the R9 Nano", trace(gpu="mi100"), ["--gpu", "r9-nano"],
                                   "made for mi100"),
                                  ("escape in a trace name", trace(name="t\x1b[2J"), [], "control character")):
        yield Case(f"run {name}", ["run", w, "--dvfs", "{tmp}/t.json", "--no-baselines", *gpu],
                   {"w.json": _workload(), "t.json": doc}, (2,), (words,))
    yield Case("run --dvfs nope", ["run", w, "--dvfs", "nope", "--no-baselines"], {"w.json": _workload()}, (2,),
               ("--dvfs: nope",))
    for opt in ("--trace", "--plot"):
        yield Case(f"run {opt} ''", ["run", w, "--no-baselines", opt, ""], {"w.json": _workload()}, (2,), ("empty name",))
    for cmd in (["gst", "pack", "r9-nano", "-o", "{tmp}/dangling.csv"], ["profile", MM, "--trace", "{tmp}/dangling.csv"],
                ["run", w, "--no-baselines", "--trace", "{tmp}/dangling.csv"]):
        yield Case(f"{cmd[0]} output to a dangling link", cmd, {"w.json": _workload()}, (2,), ("symbolic link",))
    if os.geteuid() == 0:  # a private /dev/full (char device 1,7): written through, never replaced
        for cmd in (["gst", "pack", "r9-nano", "-o", "{tmp}/full"], ["profile", MM, "--trace", "{tmp}/full"],
                    ["launch", MM, "--model", "--model-trace", "{tmp}/full"],
                    ["run", w, "--no-baselines", "--trace", "{tmp}/full"]):
            yield Case(f"{cmd[0]} output to a 1,7 character device", cmd, {"w.json": _workload()}, (2,),
                       ("No space left on device",))
    nameless = bytearray(GOOD_GST)
    nameless[abi.GST.offset("name"):abi.GST.offset("name") + 32] = b"X" * 32
    yield Case("gst check binary name without NUL", ["gst", "check", "{g}"], {"g.gst": _with_crc(nameless)}, (2,),
               ("terminating NUL",))
    zero = 'name = "zero"\n[issue]\n' + "".join(f"{c} = 0\n" for c in _classes())
    yield Case("launch an all-zero profile", ["launch", MM, "--profile", "{p}"], {"p.toml": zero.encode()}, (2,),
               ("0 cycles",))


def _with_crc(raw) -> bytes:
    import zlib
    raw = bytearray(raw)
    off = abi.GST.offset("checksum")
    raw[off:off + 4] = bytes(4)
    raw[off:off + 4] = zlib.crc32(bytes(raw)).to_bytes(4, "little")
    return bytes(raw)


def _classes():
    from quco.emulator.timing import CLASSES
    return CLASSES


def round_three_cases():
    """Issue #28 part 4 and issue #33's kernel files: search --config, paper --baseline, what
    the model can place, sizes it would take minutes on, import, names, split K."""
    for cfg in ("0/0", "0/2", "512/0", "1/4", "500/4", "\uff15\uff11\uff12/2", "\u0665\u0661\u0662/2", "512/", "16384/2"):
        yield Case(f"search --config {cfg}", ["search", "{k}", "--config", cfg], {"k": kernel()}, (2,), ("--config",))
    base = "id,verdict,ours\n"
    for name, text in (("short row", base + "C1,holds\n"), ("200 KB field", base + "C1,holds," + "x" * 200_000 + "\n"),
                       ("open quote", base + 'C1,holds,"x\n'), ("CR-only", base.replace("\n", "\r") + "C1,holds,1\r"),
                       ("escape", base + "C1,\x1b[2Jholds,1\n")):
        for extra in ([], ["--json"]):
            yield Case(f"paper --baseline {name} {' '.join(extra)}", ["paper", "--baseline", "{tmp}/b.csv"] + extra,
                       {"b.csv": text.encode()}, (2,), ("--baseline", "line"))
    for cw in (40, 64):
        for cmd in (["search", "{k}"], ["launch", "{k}", "--model"], ["evaluate", "{k}", "--gpu", "r9-nano"]):
            yield Case(f"{cmd[0]} consumer_wavefronts {cw}", cmd, {"k": kernel(consumer_wavefronts=cw)}, (2,),
                       ("consumer_wavefronts",))
    w = "{tmp}/w.json"
    yield Case("run a minimal layer of 64 wavefronts", ["run", w],
               {"w.json": _workload(dict(GEMM, consumer_wavefronts=64))}, (2,), ("consumer_wavefronts: 64",))
    yield Case("search a 4M queue", ["search", "{k}"], {"k": kernel(**{"queues.0.length": 4 << 20})}, (2,),
               ("every tile",))
    deep = kernel(**{"queues.0.passes": 1 << 20, "grid.work_groups": 64, "grid.phases": 65536})
    yield Case("evaluate maximum passes and phases", ["evaluate", "{k}", "--gpu", "r9-nano"], {"k": deep}, (2,),
               ("Ideal case",))
    for name, changes, words in (("fresh_passes 2.5", {"queues.0.passes": 5, "queues.0.fresh_passes": 2.5}, "whole number"),
                                 ("split_k over the queue", {"grid.work_groups": 65536, "grid.split_k": 65536}, "split_k"),
                                 ("split_k over the grid", {"grid.work_groups": 64, "grid.split_k": 128}, "split_k")):
        for cmd in (["check", "{k}"], ["launch", "{k}", "--model"], ["search", "{k}"]):
            yield Case(f"{cmd[0]} {name}", cmd, {"k": kernel(**changes)}, (2,), (words,))
    for n in (257, 10_000):
        yield Case(f"run a {n}-character layer name", ["run", w, "--no-baselines"],
                   {"w.json": _workload(dict(GEMM, name="y" * n))}, (2,), ("1 to 256 characters",))
    yield Case("run a 130-character layer name", ["run", w, "--no-baselines"],
               {"w.json": _workload(dict(GEMM, name="y" * 130))}, ())
    yield Case("run a@b.json alone", ["run", "{tmp}/a@b.json", "--no-baselines"], {"a@b.json": _workload()}, ())


def corpus() -> list[Case]:
    return [*kernel_cases(), *structure_cases(), *gst_cases(), *profile_cases(), *option_cases(), *workload_cases(),
            *surface_cases(), *round_three_cases()]
