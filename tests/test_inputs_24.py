"""Issue #24 part 3: inputs that were accepted or answered unclearly, each with its message.
Binary GST names are held to the TOML rule; a timing profile where nothing takes time is
refused; a partition larger than the GPU is exit 2 with one message from every command;
emulator faults and firmware misbehaviour name the ELF; GST TOML messages speak TOML."""
import json
import re
import zlib

import pytest

from conftest import MM_KERNEL
from quco.emulator import timing
from quco.gst import abi, tables
from quco.cli.fuzz_files import run_cli

MM = str(MM_KERNEL)
PRESET = (tables.PRESET_DIR / "r9-nano.toml").read_text()


def gst_named(name: bytes) -> bytes:
    """The R9 Nano's table with these 32 name bytes and a correct checksum."""
    raw = bytearray(tables.load("r9-nano"))
    off = abi.GST.offset("name")
    raw[off:off + 32] = name
    crc = abi.GST.offset("checksum")
    raw[crc:crc + 4] = bytes(4)
    raw[crc:crc + 4] = zlib.crc32(bytes(raw)).to_bytes(4, "little")
    return bytes(raw)


@pytest.mark.parametrize("name,words", [
    (b"X" * 32, 'name: "' + "X" * 32 + '": 32 bytes without a terminating NUL'),
    (b"[/]\xff\xfe" + bytes(27), 'name: "[/]\\xff\\xfe" is not printable ASCII'),
    (b"\x1b[2J" + bytes(28), 'name: "\\x1b[2J" is not printable ASCII'),
    (bytes(32), "name: empty"),
])
@pytest.mark.parametrize("argv", [["gst", "check", "{g}"], ["gst", "show", "{g}"], ["gst", "pack", "{g}", "-o", "{d}/o.gst"],
                                  ["launch", MM, "--gpu", "{g}"]], ids=["check", "show", "pack", "launch"])
def test_binary_gst_names_follow_the_toml_rule(tmp_path, name, words, argv):
    raw = gst_named(name)
    assert abi.gst_violation(raw) is None  # the unit itself would take it: only the name is wrong
    (tmp_path / "g.gst").write_bytes(raw)
    o = run_cli([a.format(g=tmp_path / "g.gst", d=tmp_path) for a in argv])
    assert o.code == 2 and f"g.gst: {words}" in o.err and "1..31 characters and a terminating NUL" in o.err, o.err
    assert o.out == "" and not (tmp_path / "o.gst").exists() and not o.leaked_control()


def test_a_binary_name_of_31_characters_is_fine(tmp_path):
    (tmp_path / "g.gst").write_bytes(gst_named(b"N" * 31 + b"\0"))
    o = run_cli(["gst", "check", str(tmp_path / "g.gst")])
    assert o.code == 0 and "(" + "N" * 31 + ")" in o.out


def zero_profile(**keep) -> str:
    lines = ['name = "free"', "[issue]"] + [f"{c} = {keep.get(c, 0)}" for c in timing.CLASSES]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("argv", [["launch", MM, "--profile", "{p}"], ["profile", MM, "--profile", "{p}"],
                                  ["run", "{w}", "--no-baselines", "--profile", "{p}"]], ids=["launch", "profile", "run"])
@pytest.mark.parametrize("text,first", [(zero_profile(), "issue.alu: 0 cycles (and"),
                                        (zero_profile(**{c: 1 for c in timing.CLASSES if c != "div"}), "issue.div: 0 cycles;")])
def test_a_profile_where_instructions_take_no_time_is_refused(tmp_path, argv, text, first):
    (tmp_path / "p.toml").write_text(text)
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"name": "w", "layers": [{"name": "fc", "gemm": {"m": 64, "k": 64, "n": 64}}]}))
    o = run_cli([a.format(p=tmp_path / "p.toml", w=w) for a in argv])
    assert o.code == 2 and f"p.toml: {first}" in o.err and "at least 1 cycle for every [issue] class" in o.err, o.err
    assert "0 cycles = 0 ns" not in o.out and o.out == ""


def test_a_profile_of_ones_still_runs(tmp_path):
    (tmp_path / "p.toml").write_text(zero_profile(**{c: 1 for c in timing.CLASSES}))
    o = run_cli(["launch", MM, "--profile", str(tmp_path / "p.toml")])
    assert o.code == 0 and "modelled (free)" in o.out


BIG = {"name": "k", "compute_intensity": 1.0, "queues": [{"type": "streaming", "length": 1024, "elem_size": 2}],
       "partition": {"active_cus": 1024, "lds_bytes": 131072}}
CUS = "partition.active_cus: 1024 is out of range; expected 0 to 64 (r9-nano's num_cus; 0 = all)"
LDS = "partition.lds_bytes: 131072 is out of range; expected 0 to 65536 (r9-nano's lds_bytes per CU; 0 = all)"


@pytest.mark.parametrize("argv", [
    ["launch", "{k}"], ["launch", "{k}", "--reference"], ["launch", "{k}", "--cycles"], ["profile", "{k}"],
    ["search", "{k}"], ["explain", "{k}"], ["gdb", "{k}", "--port", "0"],
    ["evaluate", "{k}", "--gpu", "r9-nano", "--workers", "1"], ["run", "{w}", "--no-baselines"],
], ids=lambda a: " ".join(a[:2] if a[0] != "launch" else a[::2]))
def test_a_partition_larger_than_the_gpu_is_exit_2_everywhere(tmp_path, argv):
    k, w = tmp_path / "big.json", tmp_path / "w.json"
    k.write_text(json.dumps(BIG))
    w.write_text(json.dumps({"name": "w", "layers": [{"name": "big", "kernel_file": "big.json"}]}))
    o = run_cli([a.format(k=k, w=w) for a in argv], timeout=60)
    assert o.code == 2 and o.out == "", (o.code, o.err, o.trace)
    named = str(w) if argv[0] == "run" else str(k)
    assert named in o.err and CUS in o.err and LDS in o.err, o.err


def test_emulator_faults_and_misbehaviour_name_the_elf(gnu_as):
    faulting = gnu_as(".globl _start\n_start:\nli t0, 0x1234\nsw t0, 0(zero)\nj _start")  # a store to ROM
    o = run_cli(["launch", MM, "--firmware", str(faulting)])
    assert o.code == 4 and f"emulator fault in firmware {faulting}:" in o.err, o.err
    silent = gnu_as(".globl _start\n_start:\nwfi\nj _start")  # never acknowledges a doorbell
    o = run_cli(["launch", MM, "--firmware", str(silent)])
    assert o.code == 6 and o.err.startswith("error: firmware misbehaved") and f"(firmware {silent})" in o.err, o.err


def preset(field_text: str) -> str:
    """The R9 Nano preset with its [core_clock_mhz] table replaced by `field_text`."""
    text, n = re.subn(r"\[core_clock_mhz\]\n(?:[^\[].*\n|\n)*", lambda m: field_text + "\n", PRESET)
    assert n == 1
    return text


@pytest.mark.parametrize("text,words", [
    (PRESET.replace('name = "R9 Nano"', ""), "name: missing; expected a string of printable ASCII, 1..31 characters"),
    (PRESET.replace('name = "R9 Nano"', "name = 5"), "name: 5 is an integer; expected a string"),
    (PRESET.replace('name = "R9 Nano"', "name = true"), "name: true is a boolean; expected a string"),
    (PRESET.replace('name = "R9 Nano"', 'name = "' + "N" * 40 + '"'), "has 40 characters"),
    (preset("[core_clock_mhz]\nvalue = true"), "core_clock_mhz: true is a boolean, not an integer; expected an integer"),
    (preset("[core_clock_mhz]\nvalue = 1500.0"), "core_clock_mhz: 1500.0 is a float, not an integer"),
    (preset('[core_clock_mhz]\nvalue = "1500"'), 'core_clock_mhz: "1500" is a string, not an integer'),
    (preset("[core_clock_mhz]\nvalue = [1500]"), "core_clock_mhz: [...] is an array, not an integer"),
    (preset("[core_clock_mhz]\nvalue = 1979-05-27"), "core_clock_mhz: 1979-05-27 is a date, not an integer"),
    (preset("core_clock_mhz = {}"), "core_clock_mhz.value: missing; expected an integer"),
    (preset(""), "core_clock_mhz: missing; expected an integer"),
    (preset("[core_clock_mhz]\nvalue = 1\nsource = 5"), "core_clock_mhz.source: 5 is an integer; expected a string"),
    (preset("[core_clock_mhz]\nvalue = 1\nunit = 'MHz'"), "core_clock_mhz.unit: unknown key"),
    (preset("[core_clock_mhz]\nvalue = 1\n\"a b\" = 1"), 'core_clock_mhz."a b": unknown key'),
])
def test_gst_toml_messages_speak_toml(tmp_path, text, words):
    path = tmp_path / "g.toml"
    path.write_text(text)
    with pytest.raises(tables.GstFileError) as e:
        tables.load(path)
    message = str(e.value)
    assert message.startswith(f"{path}: ") and words in message, message
    assert "None" not in message and "True" not in message and "'" not in message.split(": ", 1)[1][:40]
