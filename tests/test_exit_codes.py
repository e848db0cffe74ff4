"""Every exit code of the README's table, one test per cause (issue #34: a refused launch exiting
4 instead of 3, and a workload layer the unit refuses exiting 2 instead of 3, both passed the
suite). quco-emu runs in-process (quco.cli.fuzz_files.run_cli): no traceback, the code, the
words of the message, nothing on stdout for an error."""
import json

import pytest

from conftest import EXAMPLES_DIR, MM_KERNEL
from quco.cli import launch as cli_launch
from quco.cli import main as cli_main
from quco.cli.fuzz_files import run_cli
from quco.gst import abi
from quco.host import reference

MM = str(MM_KERNEL)
MAILBOX = abi.MAILBOX.base
WORD = {f.name: abi.MAILBOX_LAYOUT.offset(f.name) for f in abi.MAILBOX_LAYOUT.fields}


@pytest.fixture
def files(tmp_path):
    """A kernel the unit refuses (its partition's 128 B of LDS hold no queue: LDS_NO_FIT), a
    workload whose only layer is that kernel, and a file that is not an ELF."""
    k = json.loads((EXAMPLES_DIR / "dot-product.json").read_text())
    k["partition"] = {"lds_bytes": 128}
    (tmp_path / "refused.json").write_text(json.dumps(k))
    (tmp_path / "w.json").write_text(json.dumps({"name": "w", "layers": [{"name": "bad", "kernel_file": "refused.json"}]}))
    (tmp_path / "not.elf").write_bytes(b"\x7fELF but not really")
    return tmp_path


def check(argv, code, words=(), stdout_empty=True):
    o = run_cli([str(a) for a in argv], timeout=60)
    assert o.kind != "traceback" and o.kind != "hang", o.trace
    assert o.code == code, (o.code, o.err)
    for w in words:
        assert w in o.err, o.err
    if stdout_empty:
        assert o.out == "", o.out
    return o


# ---------------------------------------------------------------- 0
def test_0_a_launch_that_configures(files):
    o = check(["launch", MM], 0, stdout_empty=False)
    assert "tile" in o.out


def test_0_a_reader_that_closes_the_pipe(monkeypatch):
    def gone(*a, **k):
        raise BrokenPipeError
    monkeypatch.setattr(cli_launch, "load_kernel", gone)
    check(["launch", MM], 0)


# ---------------------------------------------------------------- 1
def test_1_firmware_and_model_disagree(monkeypatch):
    real = reference.configure

    def off_by_one(gst, record, generation=1):  # the model answers a different slot count
        r = real(gst, record, generation)
        return reference.Result(r.status, r.detail, r.tile, r.slots, r.lds[:-1] + bytes([r.lds[-1] ^ 1]))
    monkeypatch.setattr(reference, "configure", off_by_one)
    o = check(["diff", MM, "--gpu", "r9-nano"], 1, stdout_empty=False)
    assert "NO" in o.out


# ---------------------------------------------------------------- 2
@pytest.mark.parametrize("argv,words", [
    (["launch", "/nonexistent/k.json"], ["/nonexistent/k.json"]),           # a kernel file
    (["launch", MM, "--gpu", "no-such-gpu"], ["no-such-gpu"]),              # a GST
    (["launch", MM, "--no-such-option"], ["--no-such-option"]),             # usage
    (["gdb", MM, "--port", "70000"], ["70000"]),                            # a port
    (["gdb", MM, "--port", "0", "--listen", "not-an-address"], ["not-an-address"]),  # an address
])
def test_2_bad_input(argv, words):
    check(argv, 2, words)


@pytest.mark.parametrize("argv", [["gst", "pack", "{bad}", "-o", "{out}"], ["gst", "show", "{bad}"],
                                  ["launch", MM, "--gpu", "{bad}"]], ids=["pack", "show", "launch"])
def test_2_a_bad_gst_file(files, argv):
    (files / "bad.toml").write_text("not toml [[[")
    check([a.format(bad=files / "bad.toml", out=files / "out.gst") for a in argv], 2, ["bad.toml"])
    assert not (files / "out.gst").exists()


# ---------------------------------------------------------------- 3
def test_3_a_launch_the_unit_refuses(files):
    check(["launch", files / "refused.json"], 3, ["no configuration fits the LDS"])


def test_3_a_launch_the_unit_refuses_under_profile(files):  # Device.launch(check=True): DeviceError
    check(["profile", files / "refused.json"], 3, ["no configuration fits the LDS"])


def test_3_a_workload_layer_the_unit_refuses(files):
    check(["run", files / "w.json", "--no-baselines"], 3, ["layer 0 (bad)", "no configuration fits the LDS"])


def test_3_a_gst_the_unit_refuses_at_boot(gnu_as):
    """A firmware that answers GST_FIELD (core_clock_mhz) at boot: the table passes the host's
    own checks, so only the unit refuses it."""
    refuses = gnu_as(f""".globl _start
_start:
li t0, 0x{MAILBOX:x}
li t1, {int(abi.Status.GST_FIELD)}
sw t1, {WORD["boot_status"]}(t0)
li t1, {abi.GST.offset("core_clock_mhz")}
sw t1, {WORD["detail"]}(t0)
1: wfi
j 1b""")
    check(["launch", MM, "--firmware", refuses], 3, ["rejected the GST at boot", "GST field out of range"])


# ---------------------------------------------------------------- 4, 5, 6
def test_4_an_emulator_fault(gnu_as):
    faulting = gnu_as(".globl _start\n_start:\nli t0, 0x1234\nsw t0, 0(zero)\nj _start")  # a store to ROM
    check(["launch", MM, "--firmware", faulting], 4, ["emulator fault in firmware"])


def test_5_a_missing_firmware(tmp_path):
    check(["launch", MM, "--firmware", tmp_path / "missing.elf"], 5, ["missing.elf"])


def test_5_an_unloadable_firmware(files):
    check(["launch", MM, "--firmware", files / "not.elf"], 5, ["not.elf"])


def test_6_a_firmware_that_breaks_the_protocol(gnu_as):
    silent = gnu_as(".globl _start\n_start:\nwfi\nj _start")  # never acknowledges a doorbell
    check(["launch", MM, "--firmware", silent], 6, ["firmware misbehaved"])


# ---------------------------------------------------------------- 130, 143
@pytest.mark.parametrize("raised,code,word", [(KeyboardInterrupt, 130, "interrupted"),
                                              (cli_main.Terminated, 143, "terminated")])
def test_130_and_143_interrupted_and_terminated(monkeypatch, raised, code, word):
    def stop(*a, **k):
        raise raised()
    monkeypatch.setattr(cli_launch, "load_kernel", stop)
    check(["launch", MM], code, [word])
