"""Typed faults of the emulated SoC, provoked by tiny GNU-as programs.

Each program is assembled and linked into a real ELF (.text at ROM 0x0, .data/.bss at DATA
0x10000000), loaded with quco.emulator.elf.load and run by Soc.run(). A fault must be the
exact class from quco.emulator.faults and carry the PC of the faulting instruction (the
label `fault` in the program, read from the ELF), its symbol, its disassembly and, for a
memory fault, the accessed address: that is what turns a firmware bug into a crash report.
"""
import os
import re

import pytest

from conftest import MM_KERNEL
from quco.emulator import elf, faults
from quco.emulator.faults import (BudgetExceeded, ElfError, ExecuteProtected, IllegalInstruction, OutOfBounds,
                                  Trap, UnmappedAccess, WriteProtected)
from quco.emulator.soc import Soc
from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.host.device import Device
from quco.kernel.format import load_kernel

MM = MM_KERNEL
LDS_BYTES = 64 * 1024  # whole pages: nothing to guard past the LDS
GST = tables.pack({**tables.unpack(tables.load("r9-nano")), "lds_bytes": LDS_BYTES})


@pytest.fixture(scope="module")
def build(gnu_as):
    """build(source) -> path of an ELF whose code starts at the global label _start (0x0)."""
    return lambda source, **kw: gnu_as(".globl _start\n_start:\n" + source, **kw)


def fault_of(build, source, cls, budget=1_000, gst=GST, **kw):
    """Run the program; it must raise exactly `cls`. Returns (fault, image)."""
    image = elf.load(build(source, **kw))
    with pytest.raises(faults.EmulatorError) as info:
        Soc(image, gst, budget=budget).run()
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    return info.value, image


def assert_at_label(e, image, insn, address=None, label="fault"):
    """The fault names the instruction at `label`: pc, symbol, disassembly, address."""
    assert (hex(e.pc), e.symbol) == (hex(image.addresses[label]), f"{label}+0x0")
    assert e.insn == insn
    assert e.address == address


# ---------------------------------------------------------------- write protection
def test_store_to_rom_names_the_function_and_address(build):
    src = """
        li   t0, 0x100
        call poke
        wfi
    .type poke, @function
    poke:
        addi t1, zero, 1
        sw   t1, 0(t0)          # ROM is read/execute only
        ret
    .size poke, .-poke
    """
    e, image = fault_of(build, src, WriteProtected)
    assert e.pc == image.addresses["poke"] + 4
    assert (e.symbol, e.insn, e.address) == ("poke+0x4", "sw t1, 0(t0)", 0x100)
    assert e.message == "store of 4 B to ROM"
    assert str(e) == ("write to read-only memory: store of 4 B to ROM address=0x00000100 "
                      f"at pc=0x{e.pc:08x} <poke+0x4>: sw t1, 0(t0)")


def test_store_to_gst_is_write_protected(build):
    e, image = fault_of(build, "li t0, 0x20000000\nfault: sh t1, 8(t0)\nwfi", WriteProtected)
    assert_at_label(e, image, "sh t1, 8(t0)", address=0x2000_0008)
    assert e.message == "store of 2 B to GST"


# ---------------------------------------------------------------- region ends
DATA_END = f"past DATA (2048 B at 0x{abi.DATA.base:08x})"


@pytest.mark.parametrize("address,access,message", [
    (0x1000_0800, "lw t1, 0(t0)", f"read of 4 B {DATA_END}"),    # DATA is mapped as a whole 4 KiB
    (0x1000_0800, "sw t1, 0(t0)", f"write of 4 B {DATA_END}"),   # page: the Soc guards the tail,
    (0x1000_0FFF, "sb t1, 0(t0)", f"write of 1 B {DATA_END}"),   # up to the page's last byte
    (0x2000_0100, "lw t1, 0(t0)", f"read of 4 B past GST (256 B at 0x{abi.GST_REGION.base:08x})"),
])
def test_access_past_the_end_of_a_region_is_out_of_bounds(build, address, access, message):
    e, image = fault_of(build, f"li t0, 0x{address:x}\nfault: {access}\nwfi", OutOfBounds)
    assert_at_label(e, image, access, address=address)
    assert e.message == message


def test_access_past_an_lds_size_that_is_not_whole_pages_is_out_of_bounds(build):
    lds = LDS_BYTES - 256  # a valid size (multiple of 256) that ends inside a page
    gst = tables.pack({**tables.unpack(GST), "lds_bytes": lds})
    address = abi.LDS.base + lds
    e, image = fault_of(build, f"li t0, 0x{address:x}\nsw t1, -4(t0)\nfault: sw t1, 0(t0)\nwfi",
                        OutOfBounds, gst=gst)
    assert_at_label(e, image, "sw t1, 0(t0)", address=address)
    assert e.message == f"write of 4 B past LDS ({lds} B at 0x{abi.LDS.base:08x})"


def test_access_past_a_whole_page_lds_is_out_of_bounds_too(build):
    # The LDS is mapped exactly lds_bytes long; with whole pages there is no guarded tail and
    # the first byte past it is unmapped, but still inside the LDS window: same report.
    address = abi.LDS.base + LDS_BYTES
    e, image = fault_of(build, f"li t0, 0x{address:x}\nsw t1, -4(t0)\nfault: lw t1, 0(t0)\nwfi",
                        OutOfBounds)
    assert_at_label(e, image, "lw t1, 0(t0)", address=address)
    assert e.message == f"read of 4 B past LDS ({LDS_BYTES} B at 0x{abi.LDS.base:08x})"


def test_store_past_the_gst_is_out_of_bounds(build):
    e, image = fault_of(build, "li t0, 0x20000100\nfault: sw t1, 0(t0)\nwfi", OutOfBounds)
    assert_at_label(e, image, "sw t1, 0(t0)", address=0x2000_0100)
    assert e.message == f"write of 4 B past GST (256 B at 0x{abi.GST_REGION.base:08x})"


def test_misaligned_access_straddling_the_end_of_data_is_out_of_bounds(build):
    e, image = fault_of(build, "li t0, 0x100007fe\nfault: sw t1, 0(t0)\nwfi", OutOfBounds)
    assert (e.pc, e.symbol, e.insn) == (image.addresses["fault"], "fault+0x0", "sw t1, 0(t0)")
    assert e.address in (0x1000_07FE, 0x1000_0800)


# ---------------------------------------------------------------- unmapped addresses
@pytest.mark.parametrize("access,message", [
    ("lw t1, 0(t0)", "load of 4 B outside every region"),
    ("sw t1, 0(t0)", "store of 4 B outside every region"),
])
def test_load_or_store_to_an_unmapped_address(build, access, message):
    e, image = fault_of(build, f"li t0, 0x50000000\nfault: {access}\nwfi", UnmappedAccess)
    assert_at_label(e, image, access, address=0x5000_0000)
    assert e.message == message


def test_jump_to_an_unmapped_address_faults_at_the_target(build):
    # The fetch faults, so the PC is the target itself (as mepc would be on hardware).
    e, _ = fault_of(build, "li t0, 0x50000000\nfault: jr t0\nwfi", UnmappedAccess)
    assert (e.pc, e.address, e.symbol, e.insn) == (0x5000_0000, 0x5000_0000, "??", "<unmapped>")
    assert e.message == "instruction fetch outside every region"


@pytest.mark.parametrize("target,region", [
    (abi.DATA.base + 0x100, "DATA"),             # mapped read/write: in the region, not executable
    (abi.DATA.base + abi.DATA.size, "DATA"),     # the guarded tail of DATA's page
    (abi.GST_REGION.base, "GST"),
    (abi.MAILBOX.base, "MAILBOX"),
    (abi.LDS.base, "LDS"),
    (abi.LDS.base + LDS_BYTES, "LDS"),           # the LDS window past the GST's LDS: unmapped
])
def test_jump_into_a_data_region_is_an_execute_permission_fault(build, target, region):
    # Unicorn reports these as fetch-protection or unmapped fetches; the address lies in a
    # region of the memory map, so the report names the region and the missing permission
    e, _ = fault_of(build, f"li t0, 0x{target:x}\nfault: jr t0\nwfi", ExecuteProtected)
    assert (e.pc, e.address) == (target, target)
    assert e.message == f"instruction fetch from {region}: only ROM is executable"
    assert str(e).startswith("instruction fetch from non-executable memory: ")


# ---------------------------------------------------------------- traps
# name: (program, class, message prefix, disassembly of the faulting instruction)
TRAPS = {
    "zero-word": ("nop\nfault: .word 0\nwfi", IllegalInstruction, "illegal instruction", ".word 0x00000000"),
    # caught by the Soc's own instruction-set check before Unicorn decodes it
    "ones-word": ("nop\nfault: .word 0xffffffff\nwfi", IllegalInstruction,
                  "cannot decode 0xffffffff (the core is RV32IMF)", ".word 0xffffffff"),
    # mstatus.FS is Off at reset (crt0 turns it on), and Unicorn does trap an F instruction then
    "fp-while-fs-off": ("nop\nfault: fadd.s fa0, fa1, fa2\nwfi", IllegalInstruction, "illegal instruction",
                        "fadd.s fa0, fa1, fa2"),
    "ecall": ("nop\nfault: ecall\nwfi", Trap, "ecall from ", "ecall"),
}


@pytest.mark.parametrize("case", TRAPS)
def test_trap_kind(build, case):
    src, cls, message, _ = TRAPS[case]
    e, _ = fault_of(build, src, cls)
    assert e.message.startswith(message) and e.address is None


@pytest.mark.parametrize("case", TRAPS)
def test_trap_names_the_faulting_instruction(build, case):
    src, cls, _, insn = TRAPS[case]
    e, image = fault_of(build, src, cls)
    assert_at_label(e, image, insn)


def test_fp_instruction_runs_once_mstatus_fs_is_on(build):
    # the control for "fp-while-fs-off": the same fadd.s is fine after crt0's csrs
    image = elf.load(build("li t0, 0x2000\ncsrs mstatus, t0\nfadd.s fa0, fa1, fa2\nwfi"))
    assert Soc(image, GST).run().instructions == 4


def test_ecall_names_machine_mode(build):
    e, _ = fault_of(build, "li t0, 0x2000\ncsrs mstatus, t0\nfault: ecall\nwfi", Trap)
    assert e.message == "ecall from M-mode"


def test_ebreak_is_a_breakpoint_trap(build):
    e, image = fault_of(build, "nop\nfault: ebreak\nwfi", Trap)
    assert_at_label(e, image, "ebreak")
    assert e.message == "breakpoint"


@pytest.mark.parametrize("encoding,message", [
    (".word 0x02c5f553", "fadd.d fa0, fa1, fa2 is not RV32IMF"),  # RV32D
    (".half 0x0505\n.half 0x0001", "compressed instruction c.addi a0, 1"),  # RV32C, then c.nop
    (".word 0x0000100f", "fence.i is Zifencei, not RV32IMF + Zicsr: the unit's code runs from ROM, which no "
                         "store can change, so there is no instruction stream to synchronise"),
], ids=["fadd.d", "c.addi", "fence.i"])
def test_non_rv32imf_instruction_is_illegal(build, encoding, message):
    # Unicorn's CPU would run these: the Soc checks each block before it counts it
    e, image = fault_of(build, f"li t0, 0x2000\ncsrs mstatus, t0\nfault: {encoding}\nwfi", IllegalInstruction)
    assert (e.pc, e.symbol, e.address) == (image.addresses["fault"], "fault+0x0", None)
    assert e.message == f"{message} (the core is RV32IMF)"


# ---------------------------------------------------------------- the budget
def test_infinite_loop_exceeds_the_budget(build):
    e, image = fault_of(build, "nop\nfault: j fault\nwfi", BudgetExceeded, budget=50)
    assert_at_label(e, image, "j 0")  # capstone prints the jump's offset
    assert e.message == "did not sleep within 50 instructions"


def test_budget_counts_exactly(build):
    # five instructions in two blocks: a budget of 5 is enough, 4 stops at the wfi
    image = elf.load(build("nop\nnop\nj 1f\n1: nop\nfault: wfi"))
    assert Soc(image, GST, budget=5).run().instructions == 5
    with pytest.raises(BudgetExceeded) as info:
        Soc(image, GST, budget=4).run()
    assert_at_label(info.value, image, "wfi")


# ---------------------------------------------------------------- a clean program
def test_well_behaved_program_runs_and_counts(build):
    src = f"""
        lui  t0, 0x10000        # DATA
        addi t1, zero, 0x5a
        sw   t1, 0x7fc(t0)      # last word of DATA
        lui  t2, 0x20000        # GST
        lw   t3, 0(t2)          # magic
        lw   t4, 0xfc(t2)       # last word of the GST
        lui  t5, 0x40000        # LDS
        j    1f                 # 8 instructions in the first block
    1:  sw   t3, 0(t5)
        lui  t6, 0x{(abi.LDS.base + LDS_BYTES) >> 12:x}
        sw   t1, -4(t6)         # last word of the LDS
    sleep:
        wfi                     # 4 in the second
    """
    image = elf.load(build(src))
    soc = Soc(image, GST, count_memory=True)
    step = soc.run()
    assert (step.instructions, step.blocks) == (12, 2)
    assert step.reads == {"ROM": 12, "DATA": 0, "GST": 2}  # 12 fetches, 2 GST loads
    assert step.writes == {"ROM": 0, "DATA": 1, "GST": 0}
    assert soc.pc == image.addresses["sleep"] + 4
    assert soc.read(abi.DATA.base + 0x7FC, 4) == (0x5A).to_bytes(4, "little")
    lds = soc.lds()
    assert (len(lds), lds[:4], lds[-4:]) == (LDS_BYTES, b"QGST", (0x5A).to_bytes(4, "little"))


def test_count_stops_at_a_wfi_inside_a_block(build):
    image = elf.load(build("addi a0, a0, 1\nfirst: wfi\naddi a0, a0, 1\naddi a0, a0, 1\nwfi"))
    soc = Soc(image, GST)
    assert (soc.run().instructions, soc.pc) == (2, image.addresses["first"] + 4)
    assert soc.run().instructions == 3


# ---------------------------------------------------------------- loading
def test_elf_linked_outside_rom_and_data(build):
    path = build("wfi", text=0x5000_0000)
    with pytest.raises(ElfError) as info:
        elf.load(path)
    # the segment ends after the wfi at 0x50000000 (ld may put the ELF headers in front of it)
    assert re.fullmatch(re.escape(f"{path}: segment load range ") + r"0x[0-9a-f]{8}\.\.0x50000004"
                        + re.escape(" is outside ROM (0x00000000, 8192 B) and DATA (0x10000000, 2048 B)"),
                        str(info.value)), str(info.value)


def test_elf_whose_bss_overflows_data(build):
    path = build("wfi\n.bss\n.space 4096")  # runs at DATA, but 4 KiB > 2 KiB
    with pytest.raises(ElfError, match=r"segment run range 0x10000000\.\.0x10001000 is outside ROM"):
        elf.load(path)


def test_elf_of_another_class(build):
    path = build("wfi", march="rv64imf", mabi="lp64f", emulation="elf64lriscv")
    with pytest.raises(ElfError) as info:
        elf.load(path)
    assert str(info.value) == f"{path}: not a 32-bit RISC-V ELF (EM_RISCV, ELF64)"


def test_file_that_is_not_elf(tmp_path):
    path = tmp_path / "firmware.elf"
    path.write_text("this is not an ELF file\n")
    with pytest.raises(ElfError) as info:
        elf.load(path)
    assert str(info.value).startswith(f"{path}: not a valid ELF file: ")


def test_missing_file(tmp_path):
    with pytest.raises(ElfError) as info:
        elf.load(tmp_path / "absent.elf")
    assert str(info.value) == (f"firmware: {tmp_path / 'absent.elf'}: cannot read: "
                               "No such file or directory (run make firmware, or name an image with "
                               "--firmware or $QUCO_FIRMWARE)")


@pytest.mark.parametrize("path", ["/dev/zero", "fifo", "folder"])
def test_a_firmware_that_is_not_a_regular_file_is_refused_at_once(tmp_path, path):
    """/dev/zero would be read until memory runs out and a FIFO would block: neither is opened."""
    if path == "fifo":
        os.mkfifo(tmp_path / "fifo")
    if path == "folder":
        (tmp_path / "folder").mkdir()
    with pytest.raises(ElfError) as info:
        elf.load(path if path.startswith("/") else tmp_path / path)
    assert "expected a firmware ELF image" in str(info.value)


# ---------------------------------------------------------------- recovery
SW_ZERO_TO_ROM = (0x0000_2023).to_bytes(4, "little")  # sw zero, 0(zero)


def test_device_recovers_from_faults_by_reset(elf_path):
    kernel = load_kernel(MM)
    fresh = Device("r9-nano", elf_path).launch(kernel)
    assert fresh.status == Status.OK

    dev = Device("r9-nano", elf_path)
    # 1. a store to ROM at the very instruction the launch resumes at
    resume = dev.soc.pc
    dev.soc.uc.mem_write(resume, SW_ZERO_TO_ROM)
    with pytest.raises(WriteProtected) as info:
        dev.launch(kernel)
    e = info.value
    assert (e.pc, e.address, e.insn) == (resume, 0, "sw zero, 0(zero)")
    assert e.symbol == dev.image.symbolize(resume) and e.symbol != "??"

    # 2. after a reset the ROM is intact again; now a runaway: a budget too small to finish
    dev.reset()
    dev.soc.budget = 100
    with pytest.raises(BudgetExceeded, match="did not sleep within 100 instructions"):
        dev.launch(kernel)

    # 3. reset: the device behaves exactly like a fresh one
    dev.reset()
    res = dev.launch(kernel)
    assert (res.status, res.generation, res.cache_hit) == (Status.OK, 1, False)
    assert res.lds == fresh.lds and res.instructions == fresh.instructions
    assert (res.tile, [q.slots for q in res.queues]) == (fresh.tile, [q.slots for q in fresh.queues])


def test_uncounted_mode_stops_runaway_code_by_wall_clock(build):
    # count=False has no per-instruction limit (it costs a third of that mode's time): a
    # watchdog thread stops the step after wall_budget seconds instead
    image = elf.load(build("nop\nfault: j fault\nwfi"))
    soc = Soc(image, GST, count=False, wall_budget=0.2)
    with pytest.raises(BudgetExceeded) as info:
        soc.run()
    assert info.value.message == "did not sleep within 0.2 s (uncounted mode)"
    assert info.value.symbol == "fault+0x0"


def test_uncounted_mode_runs_the_firmware_like_the_counted_one(elf_path):
    from quco.emulator.soc import Soc as RawSoc
    image, gst = elf.load(elf_path), tables.load("r9-nano")
    record = load_kernel(MM).record()
    socs = [RawSoc(image, gst, count=c) for c in (True, False)]
    answers = []
    for soc in socs:
        soc.boot()
        answers.append(soc.launch(record).answer)
    assert socs[0].lds(1024) == socs[1].lds(1024) and answers[0] == answers[1]
    assert answers[1].status == Status.OK and answers[1].generation == 1
