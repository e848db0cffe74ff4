"""Static instruction-set check of the firmware ROM.

The QuCo core is RV32IMF (plus Zicsr and the machine-mode system instructions), but the
emulator's Unicorn CPU also executes RV32A/D/C: a stray `fadd.d` or a compressed
instruction in the firmware would run in the emulator and trap on the real unit. So every
function of firmware/build/quco.elf (the sized code symbols, plus crt0's `_start`, which has
no size) is disassembled with capstone and each mnemonic checked against the explicit
allow-list of quco.emulator.isa (which the Soc also applies to every block it runs); an
instruction capstone cannot decode and any 16-bit (compressed) parcel fail too. Self-tests run the same scanner on GNU-as programs, so the check demonstrably fails on
RV32A/D/C code and accepts every RV32IMF + Zicsr instruction capstone may print.
"""
import pytest
from elftools.elf.elffile import ELFFile

from quco.emulator import elf, isa


# ---------------------------------------------------------------- the scanner
def code_ranges(path) -> tuple[list[tuple[int, int, str]], dict]:
    """(start, size, name) of every sized function, plus the unsized reset code at the entry
    point (up to the next function), and {address: bytes} of the loaded segments."""
    image = elf.load(path)
    funcs = [s for s in image.symbols if s[1]]
    if not any(start == image.entry for start, _, _ in funcs):
        name = next((n for a, _, n in image.symbols if a == image.entry), "entry")
        end = min((start for start, _, _ in funcs if start > image.entry), default=None)
        assert end is not None, "no function after the entry point"
        funcs.append((image.entry, end - image.entry, name))
    return sorted(funcs), dict(image.segments)


def fetch(segments: dict, address: int, n: int) -> bytes:
    for base, data in segments.items():
        if base <= address and address + n <= base + len(data):
            return data[address - base:address - base + n]
    raise AssertionError(f"0x{address:08x} is not in a loaded segment")


def scan(path) -> tuple[list[str], int]:
    """Problems as 'function+offset (address): what', and how many instructions were checked."""
    funcs, segments = code_ranges(path)
    problems, checked = [], 0
    for start, size, name in funcs:
        found, n = isa.scan(fetch(segments, start, size), start)
        problems += [f"{name}+0x{at - start:x} (0x{at:08x}): {what}" for at, what in found]
        checked += n
    return problems, checked


def compressed_words(path) -> list[str]:
    """Every 4-byte word of every function whose low two bits are not 0b11."""
    funcs, segments = code_ranges(path)
    bad = []
    for start, size, name in funcs:
        if size % 4:
            bad.append(f"{name}: size {size} is not a multiple of 4")
        for addr in range(start, start + size - size % 4, 4):
            word = int.from_bytes(fetch(segments, addr, 4), "little")
            if word & 0b11 != 0b11:
                bad.append(f"{name}+0x{addr - start:x} (0x{addr:08x}): word 0x{word:08x}")
    return bad


# ---------------------------------------------------------------- the firmware
def test_firmware_functions_are_rv32imf(elf_path):
    funcs, _ = code_ranges(elf_path)
    names = {name for _, _, name in funcs}
    problems, checked = scan(elf_path)
    assert not problems, "non-RV32IMF instructions in the ROM:\n" + "\n".join(problems)
    # the scan really covered the firmware: crt0 and main, hundreds of instructions
    assert {"_start", "main"} <= names
    assert checked == sum(size for _, size, _ in funcs) // 4 and checked > 500


def test_firmware_has_no_compressed_words(elf_path):
    bad = compressed_words(elf_path)
    assert not bad, "16-bit instructions in the ROM:\n" + "\n".join(bad)


def test_firmware_elf_header_says_rv32_single_float_no_rvc(elf_path):
    with open(elf_path, "rb") as f:
        header = ELFFile(f)
        flags = header["e_flags"]
        assert (header.elfclass, header["e_machine"]) == (32, "EM_RISCV")
    assert flags & 0x1 == 0, "EF_RISCV_RVC set: compressed code was linked in"
    assert flags & 0x6 == 0x2, f"float ABI is not ilp32f (e_flags 0x{flags:x})"


# ---------------------------------------------------------------- self-tests of the scanner
@pytest.fixture(scope="module")
def assemble(gnu_as):
    return lambda source, march: gnu_as(source, march=march)


def function(name: str, body: str) -> str:
    return f".globl {name}\n.type {name}, @function\n{name}:\n{body}\n.size {name}, .-{name}\n"


FOREIGN = (".option norvc\n"
           + function("_start", "fadd.s fa0, fa1, fa2\nret")
           + function("mixed", "addi a0, a0, 1\n"
                               "fadd.d fa0, fa1, fa2\n"      # RV32D
                               "amoadd.w a0, a1, (a2)\n"     # RV32A
                               ".option rvc\nc.addi a0, 1\nc.nop\n.option norvc\n"  # RV32C
                               ".word 0xffffffff\n"          # no instruction at all
                               "ret"))


def test_scanner_reports_foreign_instructions(assemble):
    path = assemble(FOREIGN, "rv32imafdc")
    problems, checked = scan(path)
    assert problems == [
        "mixed+0x4 (0x0000000c): fadd.d fa0, fa1, fa2 is not RV32IMF",
        "mixed+0x8 (0x00000010): amoadd.w a0, a1, (a2) is not RV32IMF",
        "mixed+0xc (0x00000014): compressed instruction c.addi a0, 1",
        "mixed+0xe (0x00000016): compressed instruction c.nop",
        "mixed+0x10 (0x00000018): cannot decode 0xffffffff",
    ]
    assert checked == 2 + 5  # _start: fadd.s, ret; mixed: addi, fadd.d, amoadd.w, .word, ret


def test_word_check_reports_compressed_parcels(assemble):
    path = assemble(FOREIGN, "rv32imafdc")
    assert compressed_words(path) == ["mixed+0xc (0x00000014): word 0x00010505"]


RV32IMF_ZICSR = """
lui a0, 1; auipc a0, 1; jal ra, 1f; 1: jalr ra, 0(a0); jal zero, 2f; 2: jalr zero, 0(ra)
jalr zero, 4(a0); jalr a1, 0(a0); jr a0
beq a0, a1, 3f; bne a0, a1, 3f; blt a0, a1, 3f; bge a0, a1, 3f; bltu a0, a1, 3f; bgeu a0, a1, 3f
beqz a0, 3f; bnez a0, 3f; bgtz a0, 3f; blez a0, 3f; bltz a0, 3f; bgez a0, 3f; 3:
lb a0, 0(a1); lh a0, 0(a1); lw a0, 0(a1); lbu a0, 0(a1); lhu a0, 0(a1); sb a0, 0(a1); sh a0, 0(a1); sw a0, 0(a1)
addi a0, a1, 1; li a0, 5; mv a0, a1; nop; slti a0, a1, 1; sltiu a0, a1, 5; seqz a0, a1
xori a0, a1, 1; not a0, a1; ori a0, a1, 1; andi a0, a1, 1; slli a0, a1, 1; srli a0, a1, 1; srai a0, a1, 1
add a0, a1, a2; sub a0, a1, a2; neg a0, a2; sll a0, a1, a2; slt a0, a1, a2; sltu a0, a1, a2; snez a0, a2
sltz a0, a1; sgtz a0, a1; xor a0, a1, a2; srl a0, a1, a2; sra a0, a1, a2; or a0, a1, a2; and a0, a1, a2
fence; fence rw, rw; ecall; ebreak; wfi; mret
mul a0, a1, a2; mulh a0, a1, a2; mulhsu a0, a1, a2; mulhu a0, a1, a2
div a0, a1, a2; divu a0, a1, a2; rem a0, a1, a2; remu a0, a1, a2
flw fa0, 0(a1); fsw fa0, 0(a1)
fmadd.s fa0, fa1, fa2, fa3; fmsub.s fa0, fa1, fa2, fa3; fnmsub.s fa0, fa1, fa2, fa3; fnmadd.s fa0, fa1, fa2, fa3
fadd.s fa0, fa1, fa2; fsub.s fa0, fa1, fa2; fmul.s fa0, fa1, fa2; fdiv.s fa0, fa1, fa2; fsqrt.s fa0, fa1
fadd.s fa0, fa1, fa2, rtz; fsgnj.s fa0, fa1, fa2; fsgnjn.s fa0, fa1, fa2; fsgnjx.s fa0, fa1, fa2
fmv.s fa0, fa1; fneg.s fa0, fa1; fabs.s fa0, fa1; fmin.s fa0, fa1, fa2; fmax.s fa0, fa1, fa2
fcvt.w.s a0, fa1; fcvt.wu.s a0, fa1, rtz; fmv.x.w a0, fa1; feq.s a0, fa1, fa2; flt.s a0, fa1, fa2
fle.s a0, fa1, fa2; fclass.s a0, fa1; fcvt.s.w fa0, a1; fcvt.s.wu fa0, a1; fmv.w.x fa0, a1
csrrw a0, mstatus, a1; csrrs a0, mstatus, a1; csrrc a0, mstatus, a1
csrrwi a0, mstatus, 1; csrrsi a0, mstatus, 1; csrrci a0, mstatus, 1
csrr a0, mstatus; csrw mstatus, a0; csrs mstatus, a0; csrc mstatus, a0; csrwi mstatus, 1; csrsi mstatus, 1
csrci mstatus, 1; frcsr a0; fscsr a0, a1; fscsr a1; frrm a0; fsrm a1; frflags a0; fsflags a1
fsrmi 1; fsflagsi 1; rdcycle a0; rdtime a0; rdinstret a0; rdcycleh a0; rdtimeh a0; rdinstreth a0
"""


def test_scanner_accepts_every_rv32imf_zicsr_instruction(assemble):
    path = assemble(function("_start", RV32IMF_ZICSR), "rv32imf_zicsr")
    problems, checked = scan(path)
    assert problems == []
    # one 4-byte instruction per statement: nothing was skipped or merged
    statements = [s for line in RV32IMF_ZICSR.splitlines() for s in line.split(";")]
    assert checked == len([s for s in statements if s.strip().split(":")[-1].strip()])
