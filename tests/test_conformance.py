"""Where Unicorn 2.1.4 and the modelled core (CV32E40P, RV32IMF) part ways, and what the Soc
does about it: fmin.s/fmax.s with a NaN operand, misaligned loads and stores.

Expectations come from the RISC-V F extension (2.2 on: IEEE 754-2019 minimumNumber /
maximumNumber) and the CV32E40P manual ("Load/Store: 2 cycles for a non-word-aligned word
transfer and a halfword transfer crossing a word boundary"; the LSU never raises a
misaligned exception), not from the emulator."""
import pytest

from unicorn.riscv_const import UC_RISCV_REG_A0, UC_RISCV_REG_F0

from quco.emulator import elf, quirks
from quco.emulator.soc import Soc
from quco.gst import abi, tables

GST = tables.load("r9-nano")
SNAN, QNAN, CANON = 0x7F80_0001, 0x7FC0_1234, 0x7FC0_0000
ONE, TWO, PZERO, NZERO, NINF = 0x3F80_0000, 0x4000_0000, 0x0000_0000, 0x8000_0000, 0xFF80_0000
NV = 0x10  # fflags: invalid operation

# (op, a, b, result, fflags): RISC-V's rule, one line each
MINMAX = [
    ("fmin.s", SNAN, ONE, ONE, NV),        # Unicorn alone gives the canonical NaN here
    ("fmin.s", ONE, SNAN, ONE, NV),
    ("fmax.s", SNAN, TWO, TWO, NV),
    ("fmax.s", NINF, SNAN, NINF, NV),
    ("fmin.s", QNAN, ONE, ONE, 0),         # a quiet NaN: the other operand, no flag
    ("fmax.s", TWO, QNAN, TWO, 0),
    ("fmin.s", SNAN, QNAN, CANON, NV),     # both NaN: canonical NaN
    ("fmax.s", QNAN, QNAN, CANON, 0),
    ("fmin.s", PZERO, NZERO, NZERO, 0),    # -0 < +0
    ("fmax.s", NZERO, PZERO, PZERO, 0),
    ("fmin.s", ONE, TWO, ONE, 0),
    ("fmax.s", ONE, TWO, TWO, 0),
]


@pytest.fixture(scope="module")
def build(gnu_as):
    return lambda source: elf.load(gnu_as(".globl _start\n_start:\nli t0, 0x2000\ncsrs mstatus, t0\n" + source))


def minmax_program(cases, rd_is_rs1=False):
    """Each case leaves its result and fflags in DATA, 8 bytes per case."""
    lines = [f"li s0, 0x{abi.DATA.base:x}"]
    for i, (op, a, b, _, _) in enumerate(cases):
        dest = "fa0" if rd_is_rs1 else "fa2"
        lines += [f"li t1, 0x{a:x}", "fmv.w.x fa0, t1", f"li t1, 0x{b:x}", "fmv.w.x fa1, t1", "fsflags zero",
                  f"{op} {dest}, fa0, fa1", f"fsw {dest}, {8 * i}(s0)", "frflags t2", f"sw t2, {8 * i + 4}(s0)"]
    return "\n".join(lines + ["wfi"])


def results(soc, n):
    raw = soc.read(abi.DATA.base, 8 * n)
    return [(int.from_bytes(raw[8 * i:8 * i + 4], "little"), int.from_bytes(raw[8 * i + 4:8 * i + 8], "little"))
            for i in range(n)]


@pytest.mark.parametrize("rd_is_rs1", [False, True], ids=["rd-apart", "rd-is-rs1"])
@pytest.mark.parametrize("count", [True, False], ids=["counted", "uncounted"])
def test_fmin_fmax_follow_risc_v_with_nan_operands(build, rd_is_rs1, count):
    soc = Soc(build(minmax_program(MINMAX, rd_is_rs1)), GST, count=count)
    soc.run()
    assert results(soc, len(MINMAX)) == [(r, f) for *_, r, f in MINMAX]


def test_unicorn_alone_returns_the_canonical_nan_for_a_signalling_operand(build):
    # pins the quirk the Soc corrects: without its hooks, fmin(sNaN, 1.0) is the canonical NaN
    soc = Soc(build(minmax_program(MINMAX[:1])), GST)
    for handle in list(soc.uc._callbacks):  # noqa: SLF001 - removes every hook, the fix-up's too
        soc.uc.hook_del(handle)
    soc.uc.emu_start(0, 0xFFFF_FFF0, count=1000)
    assert results(soc, 1) == [(CANON, NV)]


def test_fmin_as_the_last_instruction_of_a_step_is_corrected_too(build):
    # the budget stops the step right after the fmin, before the next instruction's hook
    image = build(f"li t1, 0x{SNAN:x}\nfmv.w.x fa0, t1\nli t1, 0x{ONE:x}\nfmv.w.x fa1, t1\n"
                  "fmin.s fa2, fa0, fa1\nwfi")
    soc = Soc(image, GST, budget=2 + 6)  # li t0 + csrs, then lui/addi/fmv twice, fmin
    with pytest.raises(Exception, match="did not sleep"):
        soc.run()
    assert soc.uc.reg_read(UC_RISCV_REG_F0 + 12) & 0xFFFF_FFFF == ONE


def test_the_firmware_uses_no_fmin_or_fmax(elf_path):
    # the fix-up exists for programs that do; the firmware does not depend on it
    image = elf.load(elf_path)
    assert not any(
        quirks.is_minmax(int.from_bytes(data[o:o + 4], "little"))
        for _, data in image.segments for o in range(0, len(data) - 3, 4))


# ---------------------------------------------------------------- misaligned accesses
BASE = abi.DATA.base + 0x100
MISALIGNED = f"""
    li   s0, 0x{BASE:x}
    li   t1, 0x44332211
    sw   t1, 0(s0)
    li   t1, 0x88776655
    sw   t1, 4(s0)
    sw   zero, 8(s0)
    lw   a0, 1(s0)       # word across a word boundary: split, +1
    lh   a1, 3(s0)       # halfword across a word boundary: split, +1
    lhu  a2, 1(s0)       # halfword inside one word: one transaction
    li   t1, 0xaabbccdd
    sw   t1, 6(s0)       # word across: split, +1
    lw   a3, 4(s0)
    lw   a4, 8(s0)
    wfi
"""
ALIGNED = MISALIGNED.replace("lw   a0, 1(s0)", "lw   a0, 0(s0)").replace("lh   a1, 3(s0)", "lh   a1, 2(s0)") \
    .replace("sw   t1, 6(s0)", "sw   t1, 8(s0)")


@pytest.mark.parametrize("mode", ["timed", "traced"])
def test_misaligned_accesses_are_carried_out_and_cost_a_cycle_when_split(build, mode):
    def run(source):
        image = build(source)
        soc = Soc(image, GST, profile="cv32e40p", trace=mode == "traced")
        step = soc.run()
        return soc, step

    soc, step = run(MISALIGNED)
    data = soc.read(BASE, 12)
    assert data == bytes.fromhex("1122 3344 5566 ddcc bbaa 0000".replace(" ", ""))
    a0, a1, a2, a3, a4 = (soc.uc.reg_read(UC_RISCV_REG_A0 + i) for i in range(5))
    assert (a0, a1, a2) == (0x55443322, 0x5544, 0x3322)      # little-endian bytes from memory
    assert (a3, a4) == (0xCCDD6655, 0x0000AABB)
    _, aligned = run(ALIGNED)
    assert step.instructions == aligned.instructions
    assert step.cycles - aligned.cycles == 3
    if mode == "traced":
        assert sum(c for *_, c in step.trace) == step.cycles


def test_ipc1_profile_charges_nothing_for_a_split_access(build):
    cycles = []
    for source in (MISALIGNED, ALIGNED):
        soc = Soc(build(source), GST, profile="ipc1")
        cycles.append(soc.run().cycles)
    assert cycles[0] == cycles[1]
