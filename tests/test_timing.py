"""The cycle model against hand-computed counts of small programs assembled by GNU as.

Each case is a basic block (or two) and the cycles the CV32E40P profile must give,
worked out from the rules in emulator/profiles/cv32e40p.toml (and, where they differ,
cv32e40p-worst.toml); the divider's cycles from the divisor, and the FDIV/FSQRT latency
from the operands (cv32e40p-fdsu.toml, emulator/fdsu.py) against hand-worked SRT rounds
and the exactness of the quotient. The `cv32e40p` profile charges FDIV/FSQRT from the
operands since issue 28; the cases worked out with the constant 9 (`result.fp_div`) run
under `fdiv9`, the same profile with `fdiv_by_operands = false`."""
import math
import struct
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import text_bytes
from quco.emulator import fdsu, timing


@pytest.fixture(scope="module")
def assemble(gnu_as):
    """assemble(source) -> the bytes of its .text, linked at 0."""
    return lambda source: text_bytes(gnu_as(".globl _start\n_start:\n" + source))


@pytest.fixture(scope="module")
def fdiv9(tmp_path_factory):
    """cv32e40p with FDIV/FSQRT at the constant result.fp_div (9): the default before issue 28."""
    path = tmp_path_factory.mktemp("profiles") / "cv32e40p-fdiv9.toml"
    text = (timing.PROFILE_DIR / "cv32e40p.toml").read_text()
    assert text.count("fdiv_by_operands = true") == 1
    path.write_text(text.replace("fdiv_by_operands = true", "fdiv_by_operands = false"))
    return str(path)


def timer_for(code: bytes, profile="cv32e40p") -> timing.Timer:
    return timing.Timer(timing.load_profile(profile), lambda a, n: code[a:a + n])


def block_cycles(code: bytes, profile="cv32e40p") -> int:
    return timer_for(code, profile).block(0, len(code)).cycles


@pytest.mark.parametrize("source,cycles,why", [
    ("addi a0,a0,1\naddi a1,a1,1\nadd a2,a0,a1", 3, "ALU 1 each, forwarding: no stall"),
    ("lw a0,0(sp)\naddi a1,a0,1", 3, "load 1 + load-use stall 1 + ALU 1"),
    ("lw a0,0(sp)\naddi a1,a2,1", 2, "no dependency: no stall"),
    ("sw a0,0(sp)\nsw a1,4(sp)", 2, "stores 1 each"),
    ("mul a0,a1,a2\nadd a3,a0,a0", 2, "mul 1, forwarded"),
    ("mulh a0,a1,a2", 5, "mulh 5"),
    ("divu a0,a1,a2", 35, "div charged at the documented maximum 35"),
    ("rem a0,a1,a2", 35, "rem like div"),
    ("fadd.s fa0,fa1,fa2\nfmul.s fa3,fa0,fa0", 2, "FPU_ADDMUL_LAT = 0: 1 cycle, no stall"),
    ("fdiv.s fa0,fa1,fa2\nfadd.s fa3,fa0,fa1", 10, "fdiv result after 9 cycles (RTL-typical), then fadd 1"),
    ("fdiv.s fa0,fa1,fa2\naddi a0,a0,1", 2, "integer work overlaps an fdiv"),
    ("fdiv.s fa0,fa1,fa2\nfadd.s fa3,fa4,fa5", 10, "FPU busy: an independent FP op waits too"),
    ("fsqrt.s fa0,fa1\nfsw fa0,0(sp)", 10, "fsqrt like fdiv; the store uses the result"),
    ("fdiv.s fa0,fa1,fa2\nflw fa3,0(sp)", 2, "an flw that does not depend on the divide passes it"),
    ("fdiv.s fa0,fa1,fa2\nfsw fa4,0(sp)", 2, "so does an independent fsw"),
    ("fdiv.s fa0,fa1,fa2\nflw fa3,0(sp)\nfadd.s fa3,fa3,fa3", 10, "the FP op after it still waits"),
    ("fcvt.s.wu fa0,a0\nfeq.s a1,fa0,fa1", 2, "conversion and compare 1 each"),
    ("addi ra,ra,4\njalr zero,0(ra)", 4, "jalr 2 + 1 because it uses the previous result"),
    ("addi a0,a0,4\njalr zero,0(ra)", 3, "jalr 2 without the hazard"),
    ("jal ra,1f\n1:", 2, "jump 2"),
    ("beq a0,a1,1f\n1:", 1, "branch not taken 1 (taken adds 2 at the next block)"),
    ("csrs mstatus,t0", 4, "machine CSR 4"),
    ("fscsr zero", 4, "a write to fcsr stalls the next instruction 3 cycles (RTL)"),
    ("fsrmi 1", 4, "so does one to frm"),
    ("fsflags zero", 4, "and to fflags (csrrw writes even from x0)"),
    ("frcsr a0", 1, "reading fcsr: other CSR 1"),
    ("frflags a0", 1, "csrrs with x0 reads only"),
    ("wfi", 1, "system 1"),
])
def test_rules(assemble, source, cycles, why):
    assert block_cycles(assemble(source)) == cycles, why


@pytest.mark.parametrize("source,cycles,why", [
    ("fdiv.s fa0,fa1,fa2\nfadd.s fa3,fa0,fa1", 20, "fdiv at the documented maximum 19, then fadd 1"),
    ("fdiv.s fa0,fa1,fa2\nflw fa3,0(sp)", 20, "flw/fsw wait for the FPU too"),
    ("fdiv.s fa0,fa1,fa2\naddi a0,a0,1", 2, "integer work still overlaps"),
    ("fscsr zero", 4, "the fcsr write stall is measured, not a range: the same"),
])
def test_worst_case_profile(assemble, source, cycles, why):
    assert block_cycles(assemble(source), "cv32e40p-worst") == cycles, why


def test_taken_branch_costs_three(assemble):
    code = assemble("beq a0,a0,target\naddi a0,a0,1\ntarget:\naddi a1,a1,1")
    t = timer_for(code)
    branch_block = (0, 4)
    assert t.cost(branch_block, 8, 4) == 1 + 2, "taken: 3 in total for the branch"
    assert t.cost(branch_block, 4, 8) == 2, "fall-through: the branch cost 1 already"


def test_pending_fdiv_stalls_the_next_block(assemble):
    code = assemble("fdiv.s fa0,fa1,fa2\njal zero,next\nnext:\nfadd.s fa3,fa0,fa0")
    for profile, latency in (("cv32e40p", 9), ("cv32e40p-worst", 19)):
        t = timer_for(code, profile)
        first = t.block(0, 8)
        assert first.cycles == 3  # fdiv 1 + jal 2
        # fadd waits until `latency` cycles after the fdiv issued, 3 of them in the first block
        assert t.cost((0, 8), 8, 4) == latency - 3 + 1


def test_ipc1_profile_counts_instructions(assemble):
    code = assemble("lw a0,0(sp)\naddi a1,a0,1\nfdiv.s fa0,fa1,fa2\nfadd.s fa3,fa0,fa0\ndivu a0,a1,a2")
    assert block_cycles(code, "ipc1") == 5


def test_wake_up_cycles_start_each_step(gnu_as):
    # boot from reset, then a launch from the doorbell interrupt: the profile's [wake]
    # cycles come before the first instruction (5 and 3 cycles to its retirement on the RTL)
    from quco.emulator import elf
    from quco.emulator.soc import Soc
    from quco.gst import tables
    image = elf.load(gnu_as(".globl _start\n_start:\naddi a0,a0,1\nwfi\naddi a0,a0,1\naddi a0,a0,1\nwfi"))
    for profile, wake in (("cv32e40p", (4, 2)), ("ipc1", (0, 0))):
        soc = Soc(image, tables.load("r9-nano"), profile=profile)
        assert [soc.run().cycles, soc.run().cycles] == [wake[0] + 2, wake[1] + 3], profile
        traced = Soc(image, tables.load("r9-nano"), profile=profile, trace=True)
        steps = [traced.run(), traced.run()]
        assert [sum(c for *_, c in s.trace) for s in steps] == [s.cycles for s in steps] == [wake[0] + 2, wake[1] + 3]


def test_profile_without_the_newer_keys_keeps_its_meaning(tmp_path):
    # a profile written before csr_fp_write, [wake] and fp_load_store_wait existed
    p = tmp_path / "old.toml"
    p.write_text((timing.PROFILE_DIR / "ipc1.toml").read_text().replace("csr = 1", "csr = 2"))
    prof = timing.load_profile(p)
    assert (prof.issue["csr_fp_write"], prof.wake_reset, prof.wake_interrupt, prof.fp_memory_waits) == (2, 0, 0, True)


def test_user_profile_and_errors(tmp_path):
    p = tmp_path / "mine.toml"
    text = (timing.PROFILE_DIR / "ipc1.toml").read_text().replace("div = 1", "div = 7")
    p.write_text(text)
    assert timing.load_profile(p).issue["div"] == 7
    p.write_text(text.replace("div = 7", "div = -3"))
    with pytest.raises(timing.ProfileError, match=r"mine.toml: issue.div: -3 is out of range; expected integer 0 to 1000"):
        timing.load_profile(p)
    p.write_text(text + "\n[wake]\nnap = 3\n")
    with pytest.raises(timing.ProfileError, match=r"mine.toml: wake.nap: unknown field \(allowed: reset, interrupt\)"):
        timing.load_profile(p)
    with pytest.raises(timing.ProfileError, match="no such"):
        timing.load_profile(tmp_path / "absent.toml")


# ---------------------------------------------------------------- the divider follows its divisor (issue 24 part 7)
DIVU, DIV, REMU, REM = (0x02000033 | f3 << 12 | 12 << 20 | 11 << 15 | 10 << 7 for f3 in (5, 4, 7, 6))


@pytest.mark.parametrize("word,divisor,cycles", [
    (DIVU, 0, 35),               # the manual: 35 when the divisor is 0
    (DIVU, 0x8000_0000, 3),      # the manual: 3 with no leading zero bit
    (DIVU, 1, 34),               # 31 leading zeros
    (DIVU, 1000, 25),            # 22 leading zeros: the firmware's divide at boot, 25 on the RTL too
    (REMU, 0xFFFF_FFFF, 3),
    (DIV, 1000, 25),             # a signed divide by a non-negative divisor: the same count
    (REM, 0, 35),
    (DIV, 0xFFFF_FFFF, 33),      # -1: the RTL counts the leading zeros of 1 (31), less one
    (REM, 0xFFFF_FC18, 24),      # -1000: 22 - 1
    (DIV, 0x8000_0000, 66),      # -2^31: 0 - 1 wraps the RTL's 6-bit counter to 63
    (DIVU, 0xFFFF_FC18, 3),      # the same bits, unsigned: no leading zero
])
def test_divider_cycles_from_the_divisor(word, divisor, cycles):
    assert timing.is_div(word)
    assert timing.div_cycles(35, word, divisor) == cycles


def run_cycles(gnu_as, source, profile, debug=False):
    """Cycles of one step of a tiny firmware (from reset to its wfi), as the Soc counts
    them, traced, and under the debugger."""
    from quco.emulator import elf
    from quco.emulator.debug import DebugSoc
    from quco.emulator.soc import Soc
    from quco.gst import tables
    image, gst = elf.load(gnu_as(".globl _start\n_start:\n" + source + "\nwfi")), tables.load("r9-nano")
    plain = Soc(image, gst, profile=profile).run().cycles
    traced = Soc(image, gst, profile=profile, trace=True).run()
    assert sum(c for *_, c in traced.trace) == traced.cycles == plain
    stop = DebugSoc(image, gst, profile=profile).resume()
    assert stop.kind == "sleep" and stop.step.cycles == plain
    return plain - timing.load_profile(profile).wake_reset


@pytest.mark.parametrize("divisor,cycles", [(1, 1 + 34 + 1), (0x8000_0000, 1 + 3 + 1), (0, 1 + 35 + 1)])
def test_a_divide_costs_what_its_divisor_says(gnu_as, divisor, cycles):
    source = f"li a2,{divisor}\ndivu a0,a1,a2"  # li: one instruction for each of these values
    assert run_cycles(gnu_as, source, "cv32e40p") == cycles
    assert run_cycles(gnu_as, source, "cv32e40p-worst") == 1 + 35 + 1, "the worst-case profile keeps 35"


def test_a_short_divide_exposes_an_fdiv_in_flight(gnu_as, fdiv9):
    # fdiv issues at 0 (result at 9); a 3-cycle divide ends at 5, so the fadd waits for the
    # fdiv until 9; a 34-cycle divide hides it. Not additive: the difference is 26, not 31.
    def source(divisor):  # the FPU on first (lui 1, csrs mstatus 4)
        return f"li t0,0x2000\ncsrs mstatus,t0\nli a2,{divisor}\nfdiv.s fa0,fa1,fa2\ndivu a0,a1,a2\nfadd.s fa3,fa0,fa0"
    short, long = (run_cycles(gnu_as, source(d), fdiv9) - 5 for d in (0x8000_0000, 1))
    assert short == 1 + 9 + 1 + 1     # li, fdiv (at 1, result at 10), divu 2..5, fadd at 10, wfi
    assert long == 1 + 1 + 34 + 1 + 1  # li, fdiv, divu 2..36, fadd, wfi


def test_divides_in_a_loop_follow_each_divisor(gnu_as):
    # the same block runs with a different divisor each time round (32 halvings from
    # 2^31 down to 1, then 0): 3 + 0, 3 + 1, ..., 3 + 31, then 35
    source = "li a2,0x80000000\nloop:\ndivu a0,a1,a2\nsrli a2,a2,1\nbnez a2,loop\ndivu a0,a1,a2"
    loop = sum(3 + k + 1 + 1 for k in range(32)) + 2 * 31  # divide, srli, bnez; taken 31 times
    assert run_cycles(gnu_as, source, "cv32e40p") == 1 + loop + 35 + 1


@pytest.mark.firmware
def test_a_profile_where_instructions_take_no_time_is_refused_by_the_library(tmp_path):
    """Not only the CLI: Device refuses it too (a 0-cycle class would report fewer cycles than
    instructions, impossible on a single-issue core)."""
    from quco.host.device import Device
    text = (timing.PROFILE_DIR / "ipc1.toml").read_text()
    free = tmp_path / "free.toml"
    free.write_text(text.replace("store = 1", "store = 0"))
    with pytest.raises(timing.ProfileError, match=r"free\.toml: issue\.store: 0 cycles; expected at least 1 cycle"):
        Device("r9-nano", profile=str(free))
    everything = tmp_path / "all.toml"
    everything.write_text("[issue]\n" + "".join(f"{c} = 0\n" for c in timing.CLASSES))
    with pytest.raises(timing.ProfileError, match=r"issue\.alu: 0 cycles \(and \d+ more classes\)"):
        timing.load_profile(everything)
    assert timing.load_profile(timing.PROFILE_DIR / "ipc1.toml").issue["store"] == 1


# ---------------------------------------------------------------- FDIV/FSQRT from the operands (emulator/fdsu.py)
FDIV, FSQRT = 0x18C5_F553, 0x5805_F553  # fdiv.s fa0,fa1,fa2 and fsqrt.s fa0,fa1
INF, NAN = float("inf"), float("nan")


def f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


# Hand-computed from the E906 FDSU as CV32E40P vendors it (pa_fdsu_ctrl.v, pa_fdsu_srt_single.v):
# the result is ready `rounds + 2 (RND, PACK) + 2` cycles after issue, 1 + 2 for a special case.
@pytest.mark.parametrize("word,a,b,cycles,why", [
    # 1.0/2.0: remainder 1/8 (2^26 at the RTL's scale), divisor 1/2 (top bits 1000: bounds -7, -25);
    # estimate 16: 16-7 >= 0, 16-25 < 0, digit 1; 4 x 2^26 - 2^28 = 0, so round 2 is the last
    (FDIV, 1.0, 2.0, 2 + 2 + 2, "exact, equal significands: 2 rounds"),
    (FDIV, 3.0, 1.5, 2 + 2 + 2, "the same significands (1.5/1.5)"),
    (FDIV, 1.0, 3.0, 15 + 2 + 2, "1/3 has no finite binary expansion: the remainder never reaches 0"),
    (FDIV, 64000.0, 512000.0, 6, "the firmware's boot divide (R9 Nano): significands equal"),
    (FDIV, 1.0, 192.0, 19, "1/(64 x 3): inexact, the full 15 rounds"),
    (FDIV, 0.0, 3.0, 1 + 2, "zero dividend: no SRT (pa_fdsu_special.v)"),
    (FDIV, 1.0, 0.0, 1 + 2, "divide by zero: infinity, no SRT"),
    (FDIV, INF, 2.0, 1 + 2, "infinite operand"),
    (FDIV, NAN, 2.0, 1 + 2, "NaN operand"),
    (FDIV, 2.0 ** -100, 2.0 ** -130, 1 + 2 + 2 + 2, "subnormal divisor: one WFI2 cycle to normalise it"),
    (FDIV, 2.0 ** 100, 2.0 ** -100, 1 + 2 + 2, "exponent overflow (200 > 128): one round"),
    (FDIV, 2.0 ** -100, 2.0 ** 100, 1 + 2 + 2, "total underflow (-200 < -150): one round"),
    # sqrt(4): significand 1.0, biased exponent 129 (odd): remainder 2^25; first round K 1010
    # (bounds -8, -31) on the estimate 16: digit 1; 2^27 - 2^27 = 0, round 2 is the last
    (FSQRT, 4.0, 0.0, 2 + 2 + 2, "exact root"),
    (FSQRT, 2.0, 0.0, 15 + 2 + 2, "sqrt(2) is irrational: 15 rounds"),
    (FSQRT, -1.0, 0.0, 1 + 2, "negative: NaN, no SRT"),
    (FSQRT, 0.0, 0.0, 1 + 2, "zero"),
    (FSQRT, INF, 0.0, 1 + 2, "infinity"),
])
def test_fdiv_cycles_from_the_operands(word, a, b, cycles, why):
    assert fdsu.is_fdiv_or_fsqrt(word)
    assert fdsu.cycles(word, f32(a), f32(b)) == cycles, why


def quotient_bits(q: Fraction) -> int | None:
    """Significant bits of q when it is a dyadic rational (exact in binary), else None."""
    if q.denominator & (q.denominator - 1):
        return None
    n = q.numerator
    return (n // (n & -n)).bit_length()


normal = st.builds(lambda e, f: e << 23 | f, st.integers(100, 154), st.integers(0, (1 << 23) - 1))


@settings(max_examples=400, deadline=None)
@given(normal, normal, st.integers(1, 1 << 16), st.booleans())
def test_a_fast_divide_is_exact_and_a_short_exact_one_is_fast(a, b, small, make_exact):
    # the SRT stops early only on a zero remainder, i.e. an exact quotient; and a quotient
    # of few significant bits leaves a zero remainder within a few rounds
    if make_exact:  # a = b x small, when that is a binary32 number
        a = f32(float(Fraction(struct.unpack("<f", struct.pack("<I", b))[0]) * small))
    qa, qb = (Fraction(struct.unpack("<f", struct.pack("<I", w))[0]) for w in (a, b))
    bits, c = quotient_bits(qa / qb), fdsu.cycles(FDIV, a, b)
    if c < fdsu.FULL:
        assert bits is not None
    if bits is not None and bits <= 16:
        assert c < fdsu.FULL


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 1 << 12), st.integers(-40, 40), normal, st.booleans())
def test_a_fast_root_is_exact_and_a_short_exact_one_is_fast(root, scale, other, make_square):
    a = f32(float(root * root) * 2.0 ** (2 * scale)) if make_square else other
    x = Fraction(struct.unpack("<f", struct.pack("<I", a))[0])
    r = Fraction(math.sqrt(x))
    c = fdsu.cycles(FSQRT, a)
    if c < fdsu.FULL:
        assert r * r == x
    if r * r == x and quotient_bits(r) <= 12:
        assert c < fdsu.FULL


def fdiv_program(word: int, a: float, b: float) -> str:
    """The FPU on, the operands' bit patterns in fa1/fa2, the divide, its result used at once."""
    insn = "fdiv.s fa0,fa1,fa2" if word == FDIV else "fsqrt.s fa0,fa1"
    return (f"li t0,0x2000\ncsrs mstatus,t0\nli a1,{f32(a)}\nfmv.w.x fa1,a1\nli a2,{f32(b)}\nfmv.w.x fa2,a2\n"
            f"{insn}\nfadd.s fa3,fa0,fa0")


@pytest.mark.parametrize("word,a,b", [(FDIV, 1.0, 2.0), (FDIV, 1.0, 3.0), (FDIV, 0.0, 3.0), (FSQRT, 4.0, 0.0),
                                      (FDIV, 2.0 ** -100, 2.0 ** -130)])
def test_the_soc_charges_an_fdiv_from_its_operands(gnu_as, fdiv9, word, a, b):
    # the same program under the constant (9) and under the operand rule: only the divide's
    # latency differs, and the fadd waits for all of it (plain, traced and under the debugger)
    source = fdiv_program(word, a, b)
    latency = fdsu.cycles(word, f32(a), f32(b))
    assert run_cycles(gnu_as, source, "cv32e40p") - run_cycles(gnu_as, source, fdiv9) == latency - 9
    assert run_cycles(gnu_as, source, "cv32e40p-fdsu") == run_cycles(gnu_as, source, "cv32e40p")


def test_fdivs_in_a_loop_follow_each_operand(gnu_as, fdiv9):
    # one block, run with 1/1, 1/2, 1/3, ... 1/8: exact quotients fast, 1/3, 1/5, 1/6, 1/7 not
    source = ("li t0,0x2000\ncsrs mstatus,t0\nli s1,1\nli s2,9\nfcvt.s.w fa1,s1\nloop:\nfcvt.s.w fa2,s1\n"
              "fdiv.s fa0,fa1,fa2\nfadd.s fa3,fa0,fa0\naddi s1,s1,1\nbne s1,s2,loop")
    lat = [fdsu.cycles(FDIV, f32(1.0), f32(float(d))) for d in range(1, 9)]
    assert lat == [6, 6, 19, 6, 19, 19, 19, 6]
    assert run_cycles(gnu_as, source, "cv32e40p") - run_cycles(gnu_as, source, fdiv9) == sum(lat) - 8 * 9


@pytest.mark.firmware
def test_the_operand_hooks_sit_on_the_divide_sites_only(elf_path, fdiv9):
    from quco.emulator import disasm, elf
    from quco.emulator.soc import Soc
    from quco.gst import tables
    image = elf.load(elf_path)
    mnemonics = {a: m for base, data in image.segments for a, m, _ in disasm.listing(data, base)}
    wanted = {"fdiv.s", "fsqrt.s", "div", "divu", "rem", "remu"}
    fdsu_soc = Soc(image, tables.load("r9-nano"), profile="cv32e40p")
    assert set(fdsu_soc._operand_timed) == {a for a, m in mnemonics.items() if m in wanted}
    assert {mnemonics[a] for a in fdsu_soc._operand_timed} >= {"fdiv.s", "divu"}
    plain = Soc(image, tables.load("r9-nano"), profile=fdiv9)  # FDIV at its constant: divides only
    assert {mnemonics[a] for a in plain._operand_timed} <= {"div", "divu", "rem", "remu"}
    # determinism: the same boot, launch and relaunch twice give the same counts
    from quco.host.device import Device
    from quco.kernel.format import load_kernel
    from conftest import EXAMPLES_DIR
    kernel = load_kernel(EXAMPLES_DIR / "matrix-matrix.json")

    def counts():
        d = Device("r9-nano", elf_path, profile="cv32e40p")
        return [d.boot_cost.cycles] + [d.launch(kernel).cost.cycles for _ in range(2)]
    assert counts() == counts()


def test_the_operand_key_is_checked(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text((timing.PROFILE_DIR / "cv32e40p.toml").read_text().replace(
        "fdiv_by_operands = true", 'fdiv_by_operands = "yes"'))
    with pytest.raises(timing.ProfileError, match=r'mine.toml: hazard.fdiv_by_operands: "yes" is a string; expected true or false'):
        timing.load_profile(p)
    assert timing.load_profile("cv32e40p").fdiv_by_operands  # the operand rule is the default (issue 28)
    assert not timing.load_profile("cv32e40p-worst").fdiv_by_operands  # the manual's bound, 19, for every one
