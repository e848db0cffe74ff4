"""GST files: human-readable TOML presets <-> the 256-byte binary table."""
from __future__ import annotations

import datetime
import json
import math
import re
import zlib
from importlib.resources import files
from pathlib import Path

from . import abi
from ..util.userinput import UserFileError, printable, read_bytes, read_toml

PRESET_DIR = Path(files(__package__) / "presets")  # package data
MAX_TOML_BYTES = 64 * 1024  # a preset is about 3 KB; a cap keeps /dev/zero and 10 MB strings out
MAX_SOURCE_CHARS = 1000     # one field's `source` note (the longest shipped one is about 200)
ENTRY_KEYS = ("value", "source")  # what a field's table may hold


class GstFileError(Exception):
    """A GST file a user gave us is unreadable or wrong; the message says what and where."""


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def load_toml(path: Path) -> dict:
    try:
        return read_toml(path, MAX_TOML_BYTES, "GST preset (.toml)")
    except UserFileError as e:
        raise GstFileError(str(e)) from None


def fields_from_doc(doc: dict, where: str) -> dict:
    """Turn a preset document into GST field values, checking names, types and ranges; the
    messages speak TOML (missing, a boolean, a float, a table), not Python."""
    values = {"magic": abi.GST_MAGIC, "version": abi.GST_VERSION, "size": abi.GST.size}
    name = doc.get("name")
    size = abi.GST.field("name").size - 1  # room for the terminating NUL
    rule = f"expected a string of printable ASCII, 1..{size} characters (the table holds {size + 1} bytes with the terminating NUL)"
    if name is None:
        raise GstFileError(f"{where}: name: missing; {rule}")
    if not (isinstance(name, str) and name.isascii() and name.isprintable() and 1 <= len(name) <= size):
        what = f"is {toml_kind(name)}" if not isinstance(name, str) else (
            f"has {len(name)} characters" if not 1 <= len(name) <= size else "is not printable ASCII")
        raise GstFileError(f"{where}: name: {toml_value(name)} {what}; {rule}")
    values["name"] = name.encode()
    known = {f.name for f in abi.GST_CHECKED}
    for key in doc:
        # [model]: the performance model's description of the GPU (quco.perfmodel.params),
        # not part of the GST: the unit never sees it
        if key not in ("name", "model") and key not in known:
            raise GstFileError(f"{where}: {toml_key(key)}: unknown field (known: name, {', '.join(sorted(known))})")
    for f in abi.GST_CHECKED:
        expected = f"expected an integer {f.lo}..{f.hi} ({f.doc})"
        entry = doc.get(f.name)
        if entry is None:
            raise GstFileError(f"{where}: {f.name}: missing; {expected}")
        if isinstance(entry, dict):
            for key in entry:
                if key not in ENTRY_KEYS:
                    raise GstFileError(f"{where}: {f.name}.{toml_key(key)}: unknown key (allowed: {', '.join(ENTRY_KEYS)})")
            source = entry.get("source", "")
            if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
                what = f"is {toml_kind(source)}" if not isinstance(source, str) else f"has {len(source):,} characters"
                raise GstFileError(f"{where}: {f.name}.source: {toml_value(source)} {what}; expected a string of "
                                   f"at most {MAX_SOURCE_CHARS} characters")
            if "value" not in entry:
                raise GstFileError(f"{where}: {f.name}.value: missing; {expected}")
        value = entry.get("value") if isinstance(entry, dict) else entry
        if isinstance(value, bool) or not isinstance(value, int):
            raise GstFileError(f"{where}: {f.name}: {toml_value(value)} is {toml_kind(value)}, not an integer; {expected}")
        if not f.lo <= value <= f.hi:
            raise GstFileError(f"{where}: {f.name} = {value}: out of range {f.lo}..{f.hi} ({f.doc})")
        values[f.name] = value
    return values


def toml_kind(v) -> str:
    """What a decoded TOML value is, in TOML's words."""
    if isinstance(v, bool):
        return "a boolean"
    kinds = ((str, "a string"), (int, "an integer"), (float, "a float"), (list, "an array"), (dict, "a table"),
             (datetime.datetime, "a date-time"), (datetime.date, "a date"), (datetime.time, "a time"))
    return next((word for t, word in kinds if isinstance(v, t)), "a value")


def toml_value(v) -> str:
    """A user's value as TOML writes it (true, "text", 1.5, [...], {...}), short, control
    characters escaped."""
    if isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, str):
        text = json.dumps(v if len(v) < 1000 else v[:60], ensure_ascii=False)  # a TOML basic string
    elif isinstance(v, float):
        text = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    elif isinstance(v, list):
        text = "[...]" if v else "[]"
    elif isinstance(v, dict):
        text = "{...}" if v else "{}"
    else:
        text = str(v) if not isinstance(v, int) or abs(v) < 10**30 else f"{str(v)[:20]}..."
    text = printable(text)
    return text if len(text) <= 60 else text[:57] + "..."


def toml_key(k: str) -> str:
    """A key as TOML writes it: bare when it can be (A-Z a-z 0-9 _ -), else quoted."""
    return k if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", k) else toml_value(k)


def pack(values: dict) -> bytes:
    """Binary GST with a correct checksum."""
    raw = bytearray(abi.GST.pack({**values, "checksum": 0}))
    off = abi.GST.offset("checksum")
    raw[off:off + 4] = zlib.crc32(bytes(raw)).to_bytes(4, "little")
    return bytes(raw)


def check(raw: bytes, where: str) -> bytes:
    """The table, if the firmware would accept it at boot (the rules of gst/abi.py);
    otherwise GstFileError naming `where`, the field, its value and what is allowed."""
    bad = abi.gst_violation(raw)
    if bad is not None:
        raise GstFileError(f"{where}: {bad.message} (the unit would refuse it at boot: {bad.status.name})")
    problem = name_problem(raw)
    if problem:
        raise GstFileError(f"{where}: {problem}")
    return raw


def name_problem(raw: bytes) -> str | None:
    """What is wrong with a binary table's name field under the rule TOML presets are held to
    (printable ASCII, 1..31 characters, a terminating NUL); None when nothing is. The unit
    ignores the name, but the tools print it and a user reads it."""
    f = abi.GST.field("name")
    off = abi.GST.offset("name")
    field = raw[off:off + f.size]
    nul = field.find(b"\0")
    text = field if nul < 0 else field[:nul]
    shown = "".join(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}" for b in text)
    rule = f"expected printable ASCII of 1..{f.size - 1} characters and a terminating NUL, as in a TOML preset"
    if nul < 0:
        return f"name: \"{shown}\": {f.size} bytes without a terminating NUL; {rule}"
    if nul == 0:
        return f"name: empty; {rule}"
    if not all(0x20 <= b < 0x7F for b in text):
        return f"name: \"{shown}\" is not printable ASCII; {rule}"
    return None


def unpack(raw: bytes, where: str = "GST") -> dict:
    if len(raw) != abi.GST.size:
        raise GstFileError(f"{where}: {len(raw):,} bytes; a GST is exactly {abi.GST.size} bytes")
    return abi.GST.unpack(raw)


def _resolve(spec: str | Path) -> Path:
    if str(spec) in preset_names():
        return PRESET_DIR / f"{spec}.toml"
    if str(spec) == "":
        raise GstFileError(f"no GST given (an empty name); expected a preset ({', '.join(preset_names())}) "
                           "or a .toml / .gst file")
    path = Path(spec)
    if not path.exists():
        raise GstFileError(f"{printable(str(spec))}: no such file and no such preset "
                           f"(presets: {', '.join(preset_names())})")
    return path


def read(spec: str | Path) -> tuple[bytes, dict]:
    """A preset name, a .toml file or a binary .gst file -> (256 GST bytes, where each
    figure comes from: {field: source} for a TOML preset, {} for a binary table). A table
    the firmware would refuse at boot raises GstFileError: nothing reads one it cannot use."""
    path = _resolve(spec)
    if path.suffix == ".toml":
        doc = load_toml(path)
        src = {k: v.get("source", "") for k, v in doc.items() if isinstance(v, dict) and k != "model"}
        # the performance model's entries ([model], not in the GST) as "model.FIELD"
        src.update({f"model.{k}": v.get("source", "") if isinstance(v, dict) else ""
                    for k, v in doc.get("model", {}).items()} if isinstance(doc.get("model"), dict) else {})
        return check(pack(fields_from_doc(doc, str(path))), str(path)), src
    try:
        raw = read_bytes(path, abi.GST.size, f"binary GST ({abi.GST.size} bytes) or .toml preset")
    except UserFileError as e:
        raise GstFileError(str(e)) from None
    unpack(raw, printable(str(path)))  # checks the size
    return check(raw, printable(str(path))), {}


def load(spec: str | Path) -> bytes:
    """A preset name, a .toml file or a binary .gst file -> 256 GST bytes."""
    return read(spec)[0]


def document(spec: str | Path) -> tuple[Path, dict | None]:
    """The file a preset name or path stands for, and its TOML document (None for a binary .gst)."""
    path = _resolve(spec)
    return path, (load_toml(path) if path.suffix == ".toml" else None)


def model_table(spec: str | Path) -> dict:
    """A TOML preset's [model] values ({field: value}; {} for a binary table or none given)."""
    path = _resolve(spec)
    if path.suffix != ".toml":
        return {}
    model = load_toml(path).get("model", {})
    return {k: v.get("value") if isinstance(v, dict) else v for k, v in model.items()} if isinstance(model, dict) else {}


def sources(spec: str | Path) -> dict:
    """Where each figure of a TOML preset comes from ({} for a binary table)."""
    return read(spec)[1]
