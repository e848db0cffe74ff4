"""Pins for issue 28 part 5's surviving mutants, one test per class of silent wrong number,
each expected value worked out by hand in the comments (not taken from the code under test).
Each was planted by hand and seen to fail here (docs/testing.md, "Planted bugs"):

- the launch check at the ends of a field's ABI range (`core_clock_mhz` at 10,000 refused:
  an off-by-one no test reached), firmware and reference model alike;
- the per-function cycle split: a taken branch's refetch, or a stall carried in from the
  previous block, charged to another instruction than the one that pays it (the totals
  stay right, the per-function profile does not).
The workload classes are in tests/test_workloads.py and tests/test_onnx_import.py.
"""
import pytest

from conftest import MM_KERNEL
from quco.emulator import elf
from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host import profile, reference
from quco.host.device import Device
from quco.kernel.format import load_kernel
from quco.emulator.soc import Soc

H = abi.LAUNCH_HEADER
# the header fields whose range the ABI fixes (the others are bounded by the GST: below)
FIXED = ("consumer_wavefronts", "ci_class", "core_clock_mhz")


@pytest.fixture(scope="module")
def unit(elf_path):
    return Device("r9-nano", elf_path)


def with_field(record: bytes, **values) -> bytes:
    h = H.unpack(record)
    h.update(values)
    return H.pack(h) + record[H.size:]


def both(unit, record):
    """(status, detail) from the firmware and from the reference model: they must agree."""
    fw = unit.launch(record)
    model = reference.configure(unit.gst, record)
    assert (fw.status, fw.detail) == (model.status, model.detail)
    return model.status, model.detail


@pytest.mark.parametrize("name", FIXED)
def test_each_fixed_range_is_accepted_at_both_ends_and_refused_one_past(unit, name):
    """consumer_wavefronts 1..64, ci_class 0..3, core_clock_mhz 0..10,000 (0: the GST's clock;
    10,000: a DVFS clock of 10 GHz is odd but inside the ABI, so the unit configures it)."""
    rec = load_kernel(MM_KERNEL).record()
    f = H.field(name)
    assert (f.lo, f.hi) == {"consumer_wavefronts": (1, 64), "ci_class": (0, 3), "core_clock_mhz": (0, 10_000)}[name]
    for value in (f.lo, f.hi):
        assert both(unit, with_field(rec, **{name: value})) == (Status.OK, 0), (name, value)
    for value in (f.lo - 1, f.hi + 1):
        if value < 0:
            continue  # unsigned: there is no value below 0
        assert both(unit, with_field(rec, **{name: value})) == (Status.RECORD_FIELD, H.offset(name)), (name, value)


def test_the_gst_bounded_fields_at_the_gsts_own_values(unit):
    """active_cus up to the GST's CUs (64 on the R9 Nano), lds_bytes up to its LDS (64 KiB),
    in steps of the LDS alignment: at the value accepted, one step past refused."""
    rec = load_kernel(MM_KERNEL).record()
    g = abi.GST.unpack(unit.gst)
    assert (g["num_cus"], g["lds_bytes"]) == (64, 65536)  # the R9 Nano preset
    assert both(unit, with_field(rec, active_cus=64))[0] == Status.OK
    assert both(unit, with_field(rec, active_cus=65)) == (Status.RECORD_FIELD, H.offset("active_cus"))
    assert both(unit, with_field(rec, lds_bytes=65536))[0] == Status.OK
    assert both(unit, with_field(rec, lds_bytes=65536 + abi.LDS_ALIGN)) == (Status.RECORD_FIELD, H.offset("lds_bytes"))


# ---------------------------------------------------------------- the per-function cycle split
# Three functions by ELF symbol: a block that ends in _start with a taken branch or a jump,
# and a next block that starts in f2 and falls through into f3 (a block ends only at control
# flow, so it crosses the symbol boundary). cv32e40p-worst: FDIV/FSQRT a constant 19.
HEAD = ".globl _start\n.type _start,@function\n_start:\n"
TAIL = ("\n.size _start,.-_start\n.type f2,@function\nf2:\n{f2}\n.size f2,.-f2\n"
        ".type f3,@function\nf3:\n{f3}\nwfi\n.size f3,.-f3\n")


def per_function(gnu_as, body, f2, f3, profile_name):
    path = gnu_as(HEAD + body + TAIL.format(f2=f2, f3=f3))
    image = elf.load(path)
    soc = Soc(image, tables.load("r9-nano"), profile=profile_name, trace=True)
    step = soc.run()
    steps = profile.attribute(image, soc.timer, step.trace)
    rows = {r.name: r.cycles for r in profile.by_function(steps)}
    assert sum(rows.values()) == step.cycles
    return rows, step.cycles


def test_a_taken_branchs_refetch_is_charged_to_its_target(gnu_as):
    # _start: wake-up 4 (charged to the step's first instruction), li 1, bnez taken 1;
    # f2: addi 1 + the refetch 2 (branch_taken 3 - branch 1); f3: addi 1, wfi 1
    rows, total = per_function(gnu_as, "li a0,1\nbnez a0,f2\nnop", "addi a1,a1,1", "addi a2,a2,1",
                               "cv32e40p-worst")
    assert rows == {"_start": 4 + 1 + 1, "f2": 1 + 2, "f3": 1 + 1} and total == 11


def test_a_stall_carried_into_a_block_is_charged_to_the_instruction_that_waits(gnu_as):
    # _start: wake-up 4, li 1, csrs mstatus 4 (FPU on), fdiv issues at 5 (1; result at 5 + 19
    # = 24), jal 2: the block ends at 8 with fa0 16 cycles away.
    # f2: addi 1 (does not wait); f3: fadd waits for fa0 (16 - 1 = 15) and issues 1, wfi 1
    body = "li t0,0x2000\ncsrs mstatus,t0\nfdiv.s fa0,fa1,fa2\njal zero,f2"
    rows, total = per_function(gnu_as, body, "addi a1,a1,1", "fadd.s fa3,fa0,fa0", "cv32e40p-worst")
    assert rows == {"_start": 4 + 1 + 4 + 1 + 2, "f2": 1, "f3": 15 + 1 + 1} and total == 30
    # and when the waiting instruction is the block's first (f2): the stall stays with it
    rows, total = per_function(gnu_as, body, "fadd.s fa3,fa0,fa0", "addi a1,a1,1", "cv32e40p-worst")
    assert rows == {"_start": 12, "f2": 16 + 1, "f3": 1 + 1} and total == 31


def test_an_fdivs_operand_latency_is_charged_where_it_is_waited_for(gnu_as):
    # the default profile times an FDIV from its operands: 1/3 takes 19 (15 SRT rounds + 4,
    # tests/test_timing.py), not the schedule's 9. _start: wake-up 4, li 1, csrs 4, li 1,
    # fmv.w.x 1, li 1, fmv.w.x 1 (fa1 = 1.0, fa2 = 3.0), fdiv at 13 (1; result at 32), jal 2:
    # the block ends at 16 with fa0 16 cycles away. f2: addi 1; f3: fadd waits 15, issues 1, wfi 1.
    # The trace carries the latencies the block ran with, so the split sees the real wait; with
    # the schedule's 9 the wait would be 1 - 1 = 0 and the other 15 cycles lumped on f2's addi.
    body = ("li t0,0x2000\ncsrs mstatus,t0\nli a1,0x3f800000\nfmv.w.x fa1,a1\nli a2,0x40400000\nfmv.w.x fa2,a2\n"
            "fdiv.s fa0,fa1,fa2\njal zero,f2")
    rows, total = per_function(gnu_as, body, "addi a1,a1,1", "fadd.s fa3,fa0,fa0", "cv32e40p")
    assert rows == {"_start": 4 + 1 + 4 + 1 + 1 + 1 + 1 + 1 + 2, "f2": 1, "f3": 15 + 1 + 1} and total == 34
