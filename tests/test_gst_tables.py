"""GST files are held to the firmware's own boot-time rules (gst/abi.py) wherever they are
read: `gst pack` refuses what `gst check` and the firmware would refuse (issue #13 item 8),
with exit code 2 and a message naming the file, the field, the value and what is allowed,
and writes nothing. Each refusal is also confirmed against the firmware itself: the same
table, forced into a unit, fails its boot with the status the message names."""
import datetime
import random
import re
import zlib

import pytest

from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.cli import main as cli
from quco.host.device import Device

PRESET = tables.PRESET_DIR / "r9-nano.toml"
GOOD = tables.load("r9-nano")


def toml_with(tmp_path, **values):
    """The R9 Nano preset with some fields' values replaced."""
    text = PRESET.read_text()
    for name, value in values.items():
        text, n = re.subn(rf"(\[{name}\]\nvalue = )\d+", rf"\g<1>{value}", text)
        assert n == 1, name
    path = tmp_path / "gpu.toml"
    path.write_text(text)
    return path


def with_crc(raw: bytearray) -> bytes:
    off = abi.GST.offset("checksum")
    raw[off:off + 4] = zlib.crc32(bytes(raw[:off]) + bytes(4) + bytes(raw[off + 4:])).to_bytes(4, "little")
    return bytes(raw)


def binary(tmp_path, raw: bytes):
    path = tmp_path / "gpu.gst"
    path.write_bytes(raw)
    return path


def pack_refuses(capsys, tmp_path, source, words):
    out = tmp_path / "out.gst"
    code = cli.main(["gst", "pack", str(source), "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == cli.EXIT_INPUT == 2, err
    assert "Traceback" not in err and not out.exists()
    for w in [str(source)] + words:
        assert w in err, (w, err)
    # and gst check says the same
    assert cli.main(["gst", "check", str(source)]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err


# field = value: (the words of the message, the firmware's boot status for the same table)
TOML_CASES = {
    "cache line 100": ({"cache_line_bytes": 100}, ["cache_line_bytes = 100", "a power of two", "16..1024"]),
    "LDS 1100": ({"lds_bytes": 1100}, ["lds_bytes = 1100", "a multiple of 256", "1024..262144"]),
    "min tile 48": ({"min_tile_elems": 48}, ["min_tile_elems = 48", "a power of two", "16..65536"]),
    "min > max": ({"min_tile_elems": 1024, "max_tile_elems": 512},
                  ["max_tile_elems = 512", "at least min_tile_elems = 1024", "16..65536"]),
}


@pytest.mark.parametrize("case", TOML_CASES)
def test_pack_refuses_a_toml_table_the_firmware_refuses(capsys, tmp_path, elf_path, case):
    values, words = TOML_CASES[case]
    pack_refuses(capsys, tmp_path, toml_with(tmp_path, **values), words)
    # the firmware, given the same figures, refuses the table at boot on the named field
    g = {**tables.unpack(GOOD), **values}
    dev = Device(tables.pack(g), elf_path)
    field = words[0].split(" = ")[0]
    assert (dev.boot_status, dev.boot_detail) == (Status.GST_FIELD, abi.GST.offset(field))


def _random_bytes():
    return random.Random(12).randbytes(abi.GST.size)


def _bad_crc():
    raw = bytearray(GOOD)
    raw[abi.GST.offset("num_cus")] ^= 1
    return bytes(raw)


def _next_version():  # a version this firmware does not know (the next layout's)
    raw = bytearray(GOOD)
    raw[abi.GST.offset("version"):abi.GST.offset("version") + 2] = (abi.GST_VERSION + 1).to_bytes(2, "little")
    return with_crc(raw)


BINARY_CASES = {
    "random bytes": (_random_bytes, ["magic 0x", 'expected 0x54534751 ("QGST")'], Status.GST_MAGIC),
    "bad CRC": (_bad_crc, ["checksum 0x", "the CRC-32 of the contents is 0x"], Status.GST_CHECKSUM),
    "next version": (_next_version, [f"version {abi.GST_VERSION + 1}, size 256", f"expected version {abi.GST_VERSION}, size 256"],
                     Status.GST_VERSION),
}


@pytest.mark.parametrize("case", BINARY_CASES)
def test_pack_refuses_a_binary_table_the_firmware_refuses(capsys, tmp_path, elf_path, case):
    make, words, status = BINARY_CASES[case]
    raw = make()
    pack_refuses(capsys, tmp_path, binary(tmp_path, raw), words)
    assert Device(raw, elf_path).boot_status == status


def test_pack_refuses_a_table_of_the_wrong_size(capsys, tmp_path):
    pack_refuses(capsys, tmp_path, binary(tmp_path, GOOD[:128]), ["128 bytes", "a GST is exactly 256"])


def test_pack_copies_a_valid_binary_table(capsys, tmp_path):
    out = tmp_path / "copy.gst"
    assert cli.main(["gst", "pack", str(binary(tmp_path, GOOD)), "-o", str(out)]) == 0
    assert out.read_bytes() == GOOD


@pytest.mark.parametrize("values", [
    {"cache_line_bytes": 16}, {"cache_line_bytes": 1024}, {"lds_bytes": 1024}, {"lds_bytes": 262144},
    {"min_tile_elems": 16, "max_tile_elems": 16}, {"min_tile_elems": 65536, "max_tile_elems": 65536},
])
def test_pack_accepts_tables_at_the_limits_and_so_does_the_firmware(capsys, tmp_path, elf_path, values):
    out = tmp_path / "edge.gst"
    assert cli.main(["gst", "pack", str(toml_with(tmp_path, **values)), "-o", str(out)]) == 0
    assert Device(out.read_bytes(), elf_path).boot_status == Status.OK


def test_every_shape_rule_is_declared_with_its_field():
    # the rules the firmware applies after the ranges, in its order
    assert [(f.name, f.shape) for f in abi.GST_SHAPED] == [
        ("cache_line_bytes", "a power of two"), ("lds_bytes", "a multiple of 256"),
        ("min_tile_elems", "a power of two"), ("max_tile_elems", "a power of two, at least min_tile_elems")]


# Edges found by bench/mutation.py: each expectation is TOML's own spelling, written by hand.
@pytest.mark.parametrize("value, kind, shown", [
    (True, "a boolean", "true"), (False, "a boolean", "false"), ("ab", "a string", '"ab"'),
    (1.5, "a float", "1.5"), (float("nan"), "a float", "nan"), (float("inf"), "a float", "inf"),
    (float("-inf"), "a float", "-inf"), ([], "an array", "[]"), ([1], "an array", "[...]"),
    ({}, "a table", "{}"), ({"a": 1}, "a table", "{...}"), (7, "an integer", "7"),
    (10**30 - 1, "an integer", "9" * 30), (10**30, "an integer", "10000000000000000000..."),
    (datetime.datetime(2026, 1, 2, 3, 4), "a date-time", "2026-01-02 03:04:00"),
    (datetime.date(2026, 1, 2), "a date", "2026-01-02"), (datetime.time(3, 4), "a time", "03:04:00"),
    (None, "a value", "None"), ("é", "a string", '"é"'),
])
def test_toml_kind_and_value_by_hand(value, kind, shown):
    assert (tables.toml_kind(value), tables.toml_value(value)) == (kind, shown)


def test_toml_value_shortens_long_text_to_sixty_characters():
    assert tables.toml_value("x" * 58) == '"' + "x" * 58 + '"'  # 60 with the quotes: kept whole
    assert tables.toml_value("x" * 59) == '"' + "x" * 56 + "..."  # 61: cut to 57 and an ellipsis
    assert tables.toml_value("y" * 1000) == '"' + "y" * 56 + "..."  # 1000 characters: only 60 encoded
    assert tables.toml_key("Ab_9-") == "Ab_9-" and tables.toml_key("a b") == '"a b"'


def test_a_delete_byte_in_a_binary_name_is_not_printable():
    raw = bytearray(tables.load("r9-nano"))
    off = abi.GST.offset("name")
    raw[off:off + 3] = b"a\x7f\0"
    assert tables.name_problem(bytes(raw)).startswith('name: "a\\x7f" is not printable ASCII')
    raw[off:off + 3] = b"a~\0"
    assert tables.name_problem(bytes(raw)) is None
