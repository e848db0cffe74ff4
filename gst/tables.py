"""GST files: human-readable TOML presets <-> the 256-byte binary table."""
from __future__ import annotations

import tomllib
import zlib
from importlib.resources import files
from pathlib import Path

from quco.gst import abi

PRESET_DIR = Path(files(__package__) / "presets")  # package data


class GstFileError(Exception):
    """A GST file a user gave us is unreadable or wrong; the message says what and where."""


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def load_toml(path: Path) -> dict:
    try:
        doc = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise GstFileError(f"{path}: cannot read: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise GstFileError(f"{path}: not valid TOML: {e}") from None
    return doc


def fields_from_doc(doc: dict, where: str) -> dict:
    """Turn a preset document into GST field values, checking names, types and ranges."""
    values = {"magic": abi.GST_MAGIC, "version": abi.GST_VERSION, "size": abi.GST.size}
    name = doc.get("name")
    if not isinstance(name, str) or not name or len(name.encode()) > 31:
        raise GstFileError(f"{where}: name: expected a string of 1..31 bytes, got {name!r}")
    values["name"] = name.encode()
    known = {f.name for f in abi.GST_CHECKED}
    for key in doc:
        if key != "name" and key not in known:
            raise GstFileError(f"{where}: {key}: unknown field (known: {', '.join(sorted(known))})")
    for f in abi.GST_CHECKED:
        entry = doc.get(f.name)
        if entry is None:
            raise GstFileError(f"{where}: {f.name}: missing ({f.doc}, {f.lo}..{f.hi})")
        value = entry.get("value") if isinstance(entry, dict) else entry
        if isinstance(value, bool) or not isinstance(value, int):
            raise GstFileError(f"{where}: {f.name}: expected an integer, got {value!r}")
        if not f.lo <= value <= f.hi:
            raise GstFileError(f"{where}: {f.name} = {value}: out of range {f.lo}..{f.hi} ({f.doc})")
        values[f.name] = value
    return values


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


def unpack(raw: bytes) -> dict:
    if len(raw) != abi.GST.size:
        raise GstFileError(f"GST is {len(raw)} bytes; expected {abi.GST.size}")
    return abi.GST.unpack(raw)


def _resolve(spec: str | Path) -> Path:
    if str(spec) in preset_names():
        return PRESET_DIR / f"{spec}.toml"
    path = Path(spec)
    if not path.exists():
        raise GstFileError(f"{spec}: no such file and no such preset (presets: {', '.join(preset_names())})")
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
        raw = path.read_bytes()
    except OSError as e:
        raise GstFileError(f"{path}: cannot read: {e.strerror}") from None
    if len(raw) != abi.GST.size:
        raise GstFileError(f"{path}: {len(raw)} bytes; a GST is exactly {abi.GST.size}")
    return check(raw, str(path)), {}


def load(spec: str | Path) -> bytes:
    """A preset name, a .toml file or a binary .gst file -> 256 GST bytes."""
    return read(spec)[0]


def sources(spec: str | Path) -> dict:
    """Where each figure of a TOML preset comes from ({} for a binary table)."""
    return read(spec)[1]
