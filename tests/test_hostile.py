"""Issue #13, hostile input: one table of command lines, each with its input files, the exit
code and the words its message must carry. Every row also holds the run to: no traceback, no
hang, no control character on the terminal, nothing on stdout for a bad input (exit 2) and
every file in the folder as it was (an output file a failed run was asked to replace too).
bench/hostile.py runs the same checks over a corpus of several hundred cases."""
import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import MM_KERNEL
from quco import examples
from quco.emulator import timing
from quco.gst import tables
from quco.host.device import Device
from quco.cli.fuzz_files import run_cli
from quco.kernel.format import Kernel, KernelError
from quco.util.userinput import printable

MM = str(MM_KERNEL)
WORKLOAD = str(examples.WORKLOADS / "whisper-tiny-types.json")
Q = {"type": "streaming", "length": 1024, "elem_size": 2}


def kernel(**fields) -> str:
    return json.dumps({"name": "k", "compute_intensity": 1.0, "queues": [Q], **fields})


PRESET = (tables.PRESET_DIR / "r9-nano.toml").read_text()
PROFILE = (timing.PROFILE_DIR / "cv32e40p.toml").read_text()
GST = tables.load("r9-nano")
BAD_CRC = GST[:20] + bytes([GST[20] ^ 1]) + GST[21:]


def profile(old, new):
    assert old in PROFILE
    return PROFILE.replace(old, new, 1)


# (id, files {name: text or bytes}, argv ({d}: the case folder), exit code, words in stderr / stdout)
CASES = [
    # 1 deep JSON
    ("deep JSON", {"k.json": "[" * 100_000 + "]" * 100_000}, ["check", "{d}/k.json"], 2, ["nested too deeply"]),
    # 2 markup is shown literally; control characters are refused or escaped
    ("markup name", {"k.json": kernel(name="[bold red]X [/]")}, ["check", "{d}/k.json"], 0, ["[bold red]X [/]"]),
    ("emoji code in name", {"k.json": kernel(name="a :100: b")}, ["launch", "{d}/k.json"], 0, ["a :100: b"]),
    ("escape in name", {"k.json": kernel(name="\x1b[2Jk")}, ["check", "{d}/k.json"], 2,
     ["name", "control character \\x1b"]),
    ("escape in queue name", {"k.json": kernel(queues=[dict(Q, name="\x9b2J")])}, ["launch", "{d}/k.json"], 2,
     ["queues[0].name"]),
    ("escape in unknown key", {"k.json": kernel(**{"\x1b[31mred": 1})}, ["check", "{d}/k.json"], 2,
     ["\\x1b[31mred: unknown field"]),
    ("escape in GST name", {"g.toml": PRESET.replace('"R9 Nano"', '"R9\\u001b[2J"')}, ["gst", "check", "{d}/g.toml"], 2,
     ["name", "printable ASCII"]),
    ("markup GST name", {"g.toml": PRESET.replace('"R9 Nano"', '"[/]"')}, ["gst", "show", "{d}/g.toml"], 0, ["[/]"]),
    ("escape in GST source", {"g.toml": PRESET.replace('source = "QuCo (HPCA', 'source = "\\u001b[2J(HPCA', 1)},
     ["gst", "show", "{d}/g.toml"], 0, ["\\x1b[2J(HPCA"]),
    ("markup profile name", {"p.toml": profile('name = "cv32e40p"', 'name = "[/]"')},
     ["launch", MM, "--profile", "{d}/p.toml"], 0, ["modelled ([/])"]),
    # 3 whole numbers only, no decimal point
    ("count 17.0", {"k.json": kernel(queues=[dict(Q, count=17.0)])}, ["check", "{d}/k.json"], 2,
     ["queues[0].count: 17.0 is written with a decimal point"]),
    ("count 1e300", {"k.json": kernel(queues=[dict(Q, count=1e300)])}, ["launch", "{d}/k.json"], 2,
     ["queues[0].count: 1e+300", "integer 1 to 16"]),
    ("length 64.0", {"k.json": kernel(queues=[dict(Q, length=64.0)])}, ["check", "{d}/k.json"], 2, ["queues[0].length"]),
    ("elem_size 8.0", {"k.json": kernel(queues=[dict(Q, elem_size=8.0)])}, ["check", "{d}/k.json"], 2,
     ["queues[0].elem_size"]),
    # 4 sizes
    ("100 KB name", {"k.json": kernel(name="x" * 100_000)}, ["check", "{d}/k.json"], 2,
     ["name: 100,000 characters", "1 to 128"]),
    ("10 MB source", {"g.toml": PRESET.replace('source = "QuCo (HPCA', f'source = "{"x" * 10_000_000}', 1)},
     ["gst", "show", "{d}/g.toml"], 2, ["larger than 65,536 bytes"]),
    ("5000-character source", {"g.toml": PRESET.replace('source = "QuCo (HPCA', f'source = "{"x" * 5000}', 1)},
     ["gst", "show", "{d}/g.toml"], 2, ["core_clock_mhz.source", "at most 1000"]),
    ("2 MB kernel", {"k.json": kernel(description="x" * 2_000_000)}, ["check", "{d}/k.json"], 2, ["larger than"]),
    # 5 devices, FIFOs, folders
    ("/dev/zero as --gpu", {}, ["launch", MM, "--gpu", "/dev/zero"], 2, ["--gpu: /dev/zero: not a regular file"]),
    ("/dev/urandom as --gpu", {}, ["gst", "check", "/dev/urandom"], 2, ["not a regular file"]),
    ("FIFO as --gpu", {"fifo": None}, ["launch", MM, "--gpu", "{d}/fifo"], 2, ["not a regular file"]),
    ("FIFO as a kernel's gpu", {"fifo": None, "k.json": kernel(gpu="{d}/fifo")}, ["launch", "{d}/k.json"], 2,
     ["k.json: gpu:", "not a regular file"]),
    ("/dev/zero as --profile", {}, ["launch", MM, "--profile", "/dev/zero"], 2, ["/dev/zero: not a regular file"]),
    ("FIFO as --profile", {"fifo": None}, ["profile", MM, "--profile", "{d}/fifo"], 2, ["not a regular file"]),
    ("FIFO as kernel", {"fifo": None}, ["explain", "{d}/fifo"], 2, ["not a regular file"]),
    ("/dev/zero as .toml preset", {}, ["gst", "show", "/dev/zero"], 2, ["not a regular file"]),
    ("/dev/zero as a workload", {}, ["run", "/dev/zero"], 2, ["/dev/zero: not a regular file"]),
    ("FIFO as an ONNX model", {"fifo": None}, ["import", "{d}/fifo", "-o", "{d}/w.json"], 2, ["not a regular file"]),
    ("FIFO as a DVFS trace", {"fifo": None}, ["run", WORKLOAD, "--dvfs", "{d}/fifo"], 2, ["not a regular file"]),
    # 6 --clock everywhere it is taken
    ("--clock 0", {}, ["launch", MM, "--cycles", "--clock", "0"], 2, ["--clock: 0 is out of range"]),
    ("--clock -1 profile", {}, ["profile", MM, "--clock", "-1"], 2, ["--clock"]),
    ("--clock nan profile", {}, ["profile", MM, "--clock", "nan"], 2, ["--clock"]),
    ("--clock inf", {}, ["launch", MM, "--cycles", "--json", "--clock", "inf"], 2, ["--clock"]),
    # 7 outputs: atomic, clear errors, the old file intact
    ("trace to a folder", {"old.json": "old"}, ["profile", MM, "--trace", "{d}"], 2, ["is a folder"]),
    ("trace to a missing folder", {}, ["profile", MM, "--trace", "{d}/no/such/t.json"], 2, ["No such file"]),
    ("pack to a missing folder", {}, ["gst", "pack", "r9-nano", "-o", "{d}/no/such/t.gst"], 2, ["No such file"]),
    ("model trace to a folder", {}, ["launch", MM, "--model", "--model-trace", "{d}"], 2, ["is a folder"]),
    # 9 timing profiles against their schema
    ("profile hazard = 5", {"p.toml": profile("[hazard]", "hazard = 5\n[unused]")},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["p.toml: result.hazard: unknown field"]),
    ("profile top-level hazard = 5", {"p.toml": 'hazard = 5\n' + profile("[hazard]", "[hazard_]")},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["p.toml: hazard: 5 is a number; expected object"]),
    ("profile result = 5", {"p.toml": "result = 5\n" + profile("[result]", "[x]")},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["result: 5 is a number; expected object"]),
    ("profile issue = 5", {"p.toml": "issue = 5\n" + profile("[issue]", "[x]")},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["issue: 5 is a number"]),
    ("jalr_operand one", {"p.toml": profile("jalr_operand = 1", 'jalr_operand = "one"')},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ['hazard.jalr_operand: "one" is a string; expected integer 0 to 1000']),
    ("jalr_operand 1.7", {"p.toml": profile("jalr_operand = 1", "jalr_operand = 1.7")},
     ["profile", MM, "--profile", "{d}/p.toml"], 2, ["hazard.jalr_operand: 1.7 is not a whole number"]),
    ("negative cycles", {"p.toml": profile("div = 35", "div = -35")},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["issue.div: -35 is out of range"]),
    ("huge cycles", {"p.toml": profile("div = 35", "div = 99999999999999999999")},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["issue.div", "out of range"]),
    ('"false" as a boolean', {"p.toml": profile("= true", '= "false"')},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ['hazard.fpu_busy_until_result: "false" is a string; expected true or false']),
    ("unknown table", {"p.toml": PROFILE + "\n[turbo]\nboost = 2\n"},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["p.toml: turbo: unknown field"]),
    ("profile not UTF-8", {"p.toml": PROFILE.encode().replace(b"cv32e40p", b"cv32\xff", 1)},
     ["launch", MM, "--profile", "{d}/p.toml"], 2, ["p.toml: not UTF-8 text"]),
    # 11 a bad GST file is exit 2 everywhere
    ("bad CRC: gst check", {"g.gst": BAD_CRC}, ["gst", "check", "{d}/g.gst"], 2, ["checksum"]),
    ("bad CRC: launch --gpu", {"g.gst": BAD_CRC}, ["launch", MM, "--gpu", "{d}/g.gst"], 2, ["--gpu", "g.gst", "checksum"]),
    ("bad CRC: explain --gpu", {"g.gst": BAD_CRC}, ["explain", MM, "--gpu", "{d}/g.gst"], 2, ["checksum"]),
    ("bad CRC: run --gpu", {"g.gst": BAD_CRC}, ["run", WORKLOAD, "--gpu", "{d}/g.gst"], 2, ["--gpu", "checksum"]),
    ("valid GST the model accepts", {"g.gst": GST}, ["launch", MM, "--gpu", "{d}/g.gst"], 0, ["generation 1"]),
    # 12 messages
    ("GST size names the file", {"g.gst": GST[:100]}, ["launch", MM, "--gpu", "{d}/g.gst"], 2,
     ["g.gst: 100 bytes; a GST is exactly 256 bytes"]),
    ("GST size from a kernel's gpu", {"g.gst": GST[:100], "k.json": kernel(gpu="{d}/g.gst")}, ["launch", "{d}/k.json"],
     2, ["k.json: gpu:", "g.gst: 100 bytes"]),
    ("gst check ''", {}, ["gst", "check", ""], 2, ["no GST given"]),
    ("--gpu ''", {}, ["launch", MM, "--gpu", ""], 2, ["--gpu: no GST given"]),
    ("unknown key in a preset's field table", {"g.toml": PRESET.replace("[num_cus]\n", "[num_cus]\nunit = 'CU'\n")},
     ["gst", "check", "{d}/g.toml"], 2, ["num_cus.unit: unknown key (allowed: value, source)"]),
    ("check checks the gpu field", {"k.json": kernel(gpu="r9-nanoo")}, ["check", "{d}/k.json"], 2,
     ["k.json: gpu: r9-nanoo: no such file and no such preset"]),
    ("check with a good gpu field", {"k.json": kernel(gpu="mi100")}, ["check", "{d}/k.json"], 0, ["ok (k, 1 queues)"]),
]


def snapshot(folder):
    return {p.name: (p.read_bytes() if p.is_file() else None) for p in folder.iterdir()}


@pytest.mark.parametrize("files,argv,code,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_command_lines(tmp_path, files, argv, code, words):
    for name, content in files.items():
        if content is None:
            os.mkfifo(tmp_path / name)
        else:
            data = content.encode() if isinstance(content, str) else content
            (tmp_path / name).write_bytes(data.replace(b"{d}", str(tmp_path).encode()))
    before = snapshot(tmp_path)
    o = run_cli([a.replace("{d}", str(tmp_path)) for a in argv], timeout=30)
    assert o.kind in ("ok", "error") and o.code == code, o.trace or o.err
    assert not o.leaked_control()
    text = o.out if code == 0 else o.err
    for w in words:
        assert w in text, f"{w!r} not in {text!r}"
    if code == 2:
        assert o.out == "" and snapshot(tmp_path) == before


def test_a_100_kb_name_is_refused_in_linear_time(tmp_path):
    """Was 45 s (rich's highlighter regexes are quadratic); now the size limit answers at once
    and a 10 KB name that the old path printed is printed without highlighting."""
    k = tmp_path / "k.json"
    k.write_text(kernel(name="x" * 300_000))
    t0 = time.perf_counter()
    assert run_cli(["check", str(k)]).code == 2
    # the quadratic path took 45 s unloaded; the limit answers in milliseconds: 30 s tells them
    # apart even on a loaded 2-core machine (issue 28: no test fails for the machine's speed)
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize("argv", [
    ["launch", MM, "--json"], ["search", MM, "--json"],
    ["evaluate", MM, "--gpu", "r9-nano", "--json", "--no-ablation", "--no-portability", "--workers", "1"],
], ids=["launch", "search", "evaluate"])
def test_json_into_a_closed_pipe_ends_quietly(argv):
    """`quco-emu ... --json | head -c 10`: the reader leaves early; no BrokenPipeError."""
    cmd = [sys.executable, "-c", "import sys; from quco.cli.main import main; sys.exit(main(sys.argv[1:]))", *argv]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before the first byte
    try:
        done = subprocess.run(cmd, stdout=write, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 0 and b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr, done.stderr


def test_failed_trace_leaves_the_old_one(tmp_path, monkeypatch):
    """profile --trace on a full disk: a clear error, the previous trace intact, no temporary file."""
    trace = tmp_path / "t.json"
    trace.write_text("the previous trace")

    def disk_full(src, dst):
        raise OSError(28, "No space left on device", str(src))
    monkeypatch.setattr(os, "replace", disk_full)
    o = run_cli(["profile", MM, "--trace", str(trace)])
    assert o.code == 2 and "No space left on device" in o.err and str(trace) in o.err and o.out == ""
    assert trace.read_text() == "the previous trace" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


# 13: the Python API answers with kernel.json's field-naming messages, not struct errors
@pytest.mark.parametrize("call,message", [
    (lambda: Kernel("k", 1.0, queues=[(64, 0, 300)]), "queues[0].elem_size: 300 is not one of 1, 2, 4, 8"),
    (lambda: Kernel("k", 1.0, queues=[(-1, 0, 2)]), "queues[0].length: -1 is out of range; expected integer 1 to 4294967295"),
    (lambda: Kernel("k", 1.0, queues=[(64, 0, 2)], consumer_wavefronts=70_000),
     "consumer_wavefronts: 70000 is out of range; expected integer 1 to 64"),
    (lambda: Kernel("k", float("nan"), queues=[(64, 0, 2)]), "compute_intensity: NaN is not a finite number"),
    (lambda: Kernel("k", 1.0, queues=[(64, 0, 2)] * 17), "queues: 17 entries; expected array of 1 to 16"),
    (lambda: Kernel("k", 1.0, queues=[(64, 0, 2)], flags=1 << 20), "flags: 1048576: expected a combination"),
])
def test_kernel_objects_obey_the_file_rules(call, message):
    with pytest.raises(KernelError) as e:
        call()
    assert message in str(e.value)


def test_device_flow_obeys_the_file_rules(elf_path):
    dev = Device("r9-nano", elf_path)
    dev.init(1.0)
    for args, message in ((("streaming", 2**32, 2), "queues[0].length: 4294967296 is out of range"),
                          (("streaming", 64, 300), "queues[0].elem_size: 300 is not one of 1, 2, 4, 8"),
                          (("streaming", -5, 2), "queues[0].length: -5 is out of range")):
        with pytest.raises(KernelError, match=re.escape(message)):
            dev.register_queue(*args)
    with pytest.raises(KernelError, match=re.escape("partition.active_cus: 5000 is out of range")):
        dev.init(1.0, active_cus=5000)
    with pytest.raises(KernelError, match=re.escape("consumer_wavefronts: 0 is out of range")):
        dev.init(1.0, consumer_wavefronts=0)
    with pytest.raises(ValueError, match="clock_mhz 0"):
        Device("r9-nano", elf_path, clock_mhz=0)


@pytest.mark.parametrize("text,shown", [
    ("plain [/] text", "plain [/] text"),
    ("a\x1b[2Jb", "a\\x1b[2Jb"),
    ("\x9b31m", "\\x9b31m"),
    ("rtl\u202eoverride", "rtl\\u202eoverride"),
    ("tag\U000e0041", "tag\\U000e0041"),
    ("two\nlines\r", "two\\x0alines\\x0d"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    ("ünï 名", "ünï 名"),
])
def test_printable_escapes_control_and_format_characters(text, shown):
    assert printable(text) == shown
    assert printable("one\ntwo\x07", keep="\n") == "one\ntwo\\x07"


@pytest.mark.parametrize("text,words", [
    ("name = \n", "not valid TOML: Invalid value (at line 1, column 8)"),
    ("x = " + "[" * 3000 + "]" * 3000, "nested too deeply to be a GST preset (.toml)"),
    ("x = 1" + "0" * 5000, "not valid TOML: Exceeds the limit (4300 digits)"),  # Python's int limit
    ('name = "\\u001b"', 'name: "\\u001b" is not printable ASCII'),
])
def test_broken_toml_names_the_file(tmp_path, text, words):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(tables.GstFileError) as e:
        tables.load(path)
    assert str(e.value).startswith(f"{path}: ") and words in str(e.value)
