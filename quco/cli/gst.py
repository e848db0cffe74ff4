"""quco-emu gst: show, pack or check a GPU Specification Table (gst/tables.py).
cli/main.py registers this command and maps errors to exit codes.
"""
from __future__ import annotations

import json

from rich.table import Table

from . import common
from ..gst import abi, tables
from ..util.userinput import printable
from ..util import atomic
from ..perfmodel.model_table import model_table


def _text(raw: bytes) -> str:
    """A NUL-padded GST string field (the GPU name) as text, control characters escaped."""
    return printable(raw.rstrip(b"\0").decode(errors="replace"))


def as_toml(g: dict, src: dict, where: str, model: dict | None = None) -> str:
    """A table as a TOML preset (`gst show X --toml > my-gpu.toml`, then edit): every checked
    field with its value and source; a binary table's sources say which file it came from.
    json.dumps writes a valid TOML basic string (escapes included)."""
    lines = [f"# GST {where} as a TOML preset (quco-emu gst show --toml): edit values and sources, then",
             "# quco-emu gst check FILE.toml; --gpu FILE.toml and gst pack take it as it is (docs/gst-presets.md)",
             f"name = {json.dumps(_text(g['name']))}", ""]
    for f in abi.GST_CHECKED:
        lines += [f"[{f.name}]", f"value = {g[f.name]}",
                  f"source = {json.dumps(src.get(f.name) or f'copied from {where}')}"]
    if model:  # the performance model's description of the GPU, not part of the GST
        lines += ["", "# ---- The performance model's description of this GPU (not in the GST; docs/perf-model.md)"]
        for k, v in model.items():
            lines += [f"[model.{k}]", f"value = {json.dumps(v)}",
                      f"source = {json.dumps(src.get(f'model.{k}') or f'copied from {where}')}"]
    return "\n".join(lines) + "\n"


def cmd_gst(args) -> int:
    if args.action == "show":
        raw, src = tables.read(args.file)  # a TOML preset says where each figure comes from
        g = tables.unpack(raw)
        if args.toml:
            print(as_toml(g, src, printable(args.file), tables.model_table(args.file)), end="")
            return 0
        if args.json:
            print(json.dumps({k: (_text(v) if isinstance(v, bytes) else v) for k, v in g.items()}, indent=2))
            return 0
        t = Table(title=f"GST {printable(args.file)}")
        for col in ("field", "value", "meaning") + (("source",) if src else ()):
            t.add_column(col, overflow="fold")
        for f in abi.GST.fields:
            v = g[f.name]
            shown = _text(v) if isinstance(v, bytes) else (
                f"0x{v:08x}" if f.name in ("magic", "checksum") else f"{v:,}")
            t.add_row(f.name, shown, f.doc, *((printable(src.get(f.name, "")),) if src else ()))
        common.out.print(t)
        return 0
    if args.action == "pack":
        if args.output is None:
            raise common.UserError("gst pack: give -o OUTPUT.gst")
        atomic.check_target(args.output)
        raw = tables.load(args.file)
        common.write_output(args.output, raw)
        common.out.print(f"wrote {printable(args.output)} ({len(raw)} bytes)")
        return 0
    raw = common.checked_gst(args.file)  # check: the firmware's own boot rules (gst/abi.py)
    model_table(args.file)  # and the performance model's [model] table, when the file has one
    name = _text(tables.unpack(raw)["name"])
    common.out.print(f"{printable(args.file)}: ok ({name})")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("gst", help="show, pack or check a GPU Specification Table")
    p.add_argument("action", choices=("show", "pack", "check"))
    p.add_argument("file", help="preset name, .toml preset or binary .gst")
    p.add_argument("-o", "--output", help="pack: where to write the 256-byte table")
    p.add_argument("--json", action="store_true")
    p.add_argument("--toml", action="store_true",
                   help="show: print the table as a TOML preset (value and source per field), to edit and use "
                   "as --gpu FILE.toml")
    p.set_defaults(func=cmd_gst)
