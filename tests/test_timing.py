"""The cycle model against hand-computed counts of small programs assembled by GNU as.

Each case is a basic block (or two) and the cycles the CV32E40P profile must give,
worked out from the rules in emulator/profiles/cv32e40p.toml."""
import pytest

from conftest import text_bytes
from quco.emulator import timing


@pytest.fixture(scope="module")
def assemble(gnu_as):
    """assemble(source) -> the bytes of its .text, linked at 0."""
    return lambda source: text_bytes(gnu_as(".globl _start\n_start:\n" + source))


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
    ("fdiv.s fa0,fa1,fa2\nfadd.s fa3,fa0,fa1", 20, "fdiv result after 19 cycles, then fadd 1"),
    ("fdiv.s fa0,fa1,fa2\naddi a0,a0,1", 2, "integer work overlaps an fdiv"),
    ("fdiv.s fa0,fa1,fa2\nfadd.s fa3,fa4,fa5", 20, "FPU busy: an independent FP op waits too"),
    ("fsqrt.s fa0,fa1\nfsw fa0,0(sp)", 20, "fsqrt like fdiv; the store uses the result"),
    ("fcvt.s.wu fa0,a0\nfeq.s a1,fa0,fa1", 2, "conversion and compare 1 each"),
    ("addi ra,ra,4\njalr zero,0(ra)", 4, "jalr 2 + 1 because it uses the previous result"),
    ("addi a0,a0,4\njalr zero,0(ra)", 3, "jalr 2 without the hazard"),
    ("jal ra,1f\n1:", 2, "jump 2"),
    ("beq a0,a1,1f\n1:", 1, "branch not taken 1 (taken adds 2 at the next block)"),
    ("csrs mstatus,t0", 4, "machine CSR 4"),
    ("fscsr zero", 1, "other CSR (fcsr) 1"),
    ("wfi", 1, "system 1"),
])
def test_rules(assemble, source, cycles, why):
    assert block_cycles(assemble(source)) == cycles, why


def test_taken_branch_costs_three(assemble):
    code = assemble("beq a0,a0,target\naddi a0,a0,1\ntarget:\naddi a1,a1,1")
    t = timer_for(code)
    branch_block = (0, 4)
    assert t.cost(branch_block, 8, 4) == 1 + 2, "taken: 3 in total for the branch"
    assert t.cost(branch_block, 4, 8) == 2, "fall-through: the branch cost 1 already"


def test_pending_fdiv_stalls_the_next_block(assemble):
    code = assemble("fdiv.s fa0,fa1,fa2\njal zero,next\nnext:\nfadd.s fa3,fa0,fa0")
    t = timer_for(code)
    first = t.block(0, 8)
    assert first.cycles == 3  # fdiv 1 + jal 2
    # fadd waits until cycle 19 after the fdiv issued: 16 cycles into the next block
    assert t.cost((0, 8), 8, 4) == 16 + 1


def test_ipc1_profile_counts_instructions(assemble):
    code = assemble("lw a0,0(sp)\naddi a1,a0,1\nfdiv.s fa0,fa1,fa2\nfadd.s fa3,fa0,fa0\ndivu a0,a1,a2")
    assert block_cycles(code, "ipc1") == 5


def test_user_profile_and_errors(tmp_path):
    p = tmp_path / "mine.toml"
    text = (timing.PROFILE_DIR / "ipc1.toml").read_text().replace("div = 1", "div = 7")
    p.write_text(text)
    assert timing.load_profile(p).issue["div"] == 7
    p.write_text(text.replace("div = 7", "div = -3"))
    with pytest.raises(timing.ProfileError, match=r"div = -3"):
        timing.load_profile(p)
    with pytest.raises(timing.ProfileError, match="no such"):
        timing.load_profile(tmp_path / "absent.toml")
