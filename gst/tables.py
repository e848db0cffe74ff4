"""GST files: human-readable TOML presets <-> the 256-byte binary table."""
from __future__ import annotations

import zlib
from importlib.resources import files
from pathlib import Path

from quco.gst import abi
from quco.gst.userinput import UserFileError, printable, read_bytes, read_toml

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
    """Turn a preset document into GST field values, checking names, types and ranges."""
    values = {"magic": abi.GST_MAGIC, "version": abi.GST_VERSION, "size": abi.GST.size}
    name = doc.get("name")
    size = abi.GST.field("name").size - 1  # room for the terminating NUL
    if not (isinstance(name, str) and name.isascii() and name.isprintable() and 1 <= len(name) <= size):
        raise GstFileError(f"{where}: name: {_shown(name)}: expected printable ASCII of 1..{size} characters "
                           f"(the table holds {size + 1} bytes with the terminating NUL)")
    values["name"] = name.encode()
    known = {f.name for f in abi.GST_CHECKED}
    for key in doc:
        if key != "name" and key not in known:
            raise GstFileError(f"{where}: {_shown(key)}: unknown field (known: name, {', '.join(sorted(known))})")
    for f in abi.GST_CHECKED:
        entry = doc.get(f.name)
        if entry is None:
            raise GstFileError(f"{where}: {f.name}: missing ({f.doc}, {f.lo}..{f.hi})")
        if isinstance(entry, dict):
            for key in entry:
                if key not in ENTRY_KEYS:
                    raise GstFileError(f"{where}: {f.name}.{_shown(key)}: unknown key (allowed: {', '.join(ENTRY_KEYS)})")
            source = entry.get("source", "")
            if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
                raise GstFileError(f"{where}: {f.name}.source: {_shown(source)}: expected a string of at most "
                                   f"{MAX_SOURCE_CHARS} characters")
            if "value" not in entry:
                raise GstFileError(f"{where}: {f.name}.value: missing ({f.doc}, {f.lo}..{f.hi})")
        value = entry.get("value") if isinstance(entry, dict) else entry
        if isinstance(value, bool) or not isinstance(value, int):
            raise GstFileError(f"{where}: {f.name}: {_shown(value)} is not an integer; expected {f.lo}..{f.hi} "
                               f"({f.doc})")
        if not f.lo <= value <= f.hi:
            raise GstFileError(f"{where}: {f.name} = {value}: out of range {f.lo}..{f.hi} ({f.doc})")
        values[f.name] = value
    return values


def _shown(v) -> str:
    """A user's value in a message: its repr, control characters escaped, cut short."""
    text = printable(repr(v)) if not isinstance(v, str) or len(v) < 1000 else printable(repr(v[:60]))
    return text if len(text) <= 60 else text[:57] + "..."


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
    return raw


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
        return (check(pack(fields_from_doc(doc, str(path))), str(path)),
                {k: v.get("source", "") for k, v in doc.items() if isinstance(v, dict)})
    try:
        raw = read_bytes(path, abi.GST.size, f"binary GST ({abi.GST.size} bytes) or .toml preset")
    except UserFileError as e:
        raise GstFileError(str(e)) from None
    unpack(raw, printable(str(path)))  # checks the size
    return check(raw, printable(str(path))), {}


def load(spec: str | Path) -> bytes:
    """A preset name, a .toml file or a binary .gst file -> 256 GST bytes."""
    return read(spec)[0]


def sources(spec: str | Path) -> dict:
    """Where each figure of a TOML preset comes from ({} for a binary table)."""
    return read(spec)[1]
