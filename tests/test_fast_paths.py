"""The emulator's fast paths against a straightforward slow computation (issue 24 part 1).

The fast Soc counts with one cached edge per pair of blocks, block variants for divide
latencies, a hook on divides (and FDIVs) only and a split-access hook; the protocol check reads each
layout with a compiled struct. Here the same runs are recorded the slow way: a Python hook
on every instruction (its address, and a divide's divisor), on every block start and on
every memory access, on an uncounted Soc that has none of the fast hooks. The cycles are
then worked out from that record block by block, with nothing cached: each block's
executed instructions decoded again, its divides' latencies from the recorded divisors
(and its FDIVs' from their recorded operands, under cv32e40p-fdsu),
the previous block's results in flight, the taken-branch refetch and one split penalty per
access that crosses a word. Instruction and cycle counts, answers and LDS bytes must be
identical, for the firmware on several GPUs and kernels and for a program made to exercise
misaligned accesses, divides in loops and an FDIV in flight; with the C hooks
(emulator/fastcount.py) and with the Python hooks alike.
"""
import functools
import math

import pytest
from unicorn import UC_HOOK_BLOCK, UC_HOOK_CODE, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE
from unicorn.riscv_const import UC_RISCV_REG_F0, UC_RISCV_REG_X0

from conftest import EXAMPLES_DIR
from quco.emulator import elf, fastcount, fdsu, soc, timing
from quco.gst import abi, tables
from quco.host.device import Device
from quco.kernel.format import load_kernel

# the uncounted mode's only stop is host time (2 s by default, for steps of microseconds): in a
# test, generous, so that a loaded machine never stops a correct step; only a hang meets it
UNCOUNTED_WALL_S = 300
PROFILES = ("cv32e40p", "cv32e40p-worst", "cv32e40p-fdsu", "ipc1")
decode = functools.lru_cache(maxsize=None)(timing.decode)  # read only: one Insn per word is fine


def need_c_hooks():
    """The C hooks are optional to a pip install and brought by every make target (the
    Makefile installs gcc): where the compiler pip builds with is here, they must be built
    (a failure); where it is not, the C cases skip (tests/test_install.py decides alike)."""
    fastcount.load.cache_clear()
    if fastcount.load() is None:
        if fastcount.build_compiler():
            pytest.fail(f"a C compiler is here ({fastcount.build_compiler()}) but emulator/_fastcount.c is not "
                        "built: reinstall (pip install -e .)")
        pytest.skip("no C compiler: the C hooks cannot be built on this machine (make installs gcc)")


@pytest.fixture(params=["C hooks", "Python hooks"])
def hooks(request, monkeypatch):
    """Run the test with the C hooks, then with the Python hooks (QUCO_PYTHON_HOOKS=1)."""
    fastcount.load.cache_clear()
    if request.param == "Python hooks":
        monkeypatch.setenv("QUCO_PYTHON_HOOKS", "1")
    else:
        need_c_hooks()
    yield request.param
    fastcount.load.cache_clear()


class Recorder:
    """An uncounted Soc with slow hooks that record every block start, instruction and
    split access of each step."""

    def __init__(self, image, gst):
        # no wall-clock stop (a Python hook per instruction makes a boot take a second, many
        # under load): runaway code is stopped by counting the recorded instructions instead
        self.soc = soc.Soc(image, gst, count=False, wall_budget=math.inf)
        self.events = []
        uc = self.soc.uc
        uc.hook_add(UC_HOOK_BLOCK, lambda uc, a, s, d: self.events.append(("block", a)))
        uc.hook_add(UC_HOOK_CODE, self._on_insn)
        uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_access)

    def _on_insn(self, uc, address, size, _):
        word = int.from_bytes(uc.mem_read(address, 4), "little")
        rs1, rs2 = (word >> 15) & 31, (word >> 20) & 31
        if timing.is_div(word):  # the divisor
            operands = (uc.reg_read(UC_RISCV_REG_X0 + rs2) & 0xFFFF_FFFF,)
        elif fdsu.is_fdiv_or_fsqrt(word):  # both FP sources as binary32
            operands = tuple(uc.reg_read(UC_RISCV_REG_F0 + r) & 0xFFFF_FFFF for r in (rs1, rs2))
        else:
            operands = None
        self.events.append(("insn", word, operands))
        if len(self.events) > 4 * soc.DEFAULT_BUDGET:  # instructions, blocks and accesses of one step
            uc.emu_stop()

    def _on_access(self, uc, access, address, size, value, _):
        if (size == 4 and address % 4) or (size == 2 and address % 4 == 3):
            self.events.append(("split",))

    def step(self, run):
        self.events = []
        answer = run()
        return answer, self.events


def slow_count(events, profile: timing.Profile, first_step: bool) -> tuple[int, int]:
    """(instructions, cycles) of one recorded step under `profile`, from scratch."""
    blocks = []  # [address, [(word, divisor)], splits]
    for e in events:
        if e[0] == "block":
            blocks.append([e[1], [], 0])
        elif e[0] == "insn":
            blocks[-1][1].append(e[1:])
        else:
            blocks[-1][2] += 1
    sched = timing.Timer(profile, None)._schedule  # the model's in-order scoreboard, uncached
    cycles = profile.wake_reset if first_step else profile.wake_interrupt
    prev = None  # (address, instructions, latencies) of the previous block
    for address, executed, splits in blocks:
        insns = [decode(w) for w, _ in executed]
        lat = tuple(timing.div_cycles(profile.issue["div"], w, ops[0]) if timing.is_div(w) else fdsu.cycles(w, *ops)
                    for w, ops in executed if ops is not None and timing.operand_timed(profile, w))
        ready, fpu = {}, 0
        if prev is not None:
            _, ready, fpu = sched(prev[1], {}, 0, lat=prev[2])  # what the previous block left in flight
        cycles += sched(insns, ready, fpu, lat=lat)[0] + splits * profile.split_access
        if prev is not None and prev[1] and prev[1][-1].kind == "branch" and address != prev[0] + 4 * len(prev[1]):
            cycles += profile.issue["branch_taken"] - profile.issue["branch"]
        prev = (address, insns, lat)
    return sum(len(b[1]) for b in blocks), cycles


def slow_decode(lds: bytes) -> list[dict]:
    """The queues of a configuration, field by field through the ABI's names."""
    n = abi.LDS_HEADER.unpack(lds)["num_queues"]
    out = []
    for i in range(n):
        d = abi.QUEUE_DESC.unpack(lds, abi.LDS_HEADER.size + i * abi.QUEUE_DESC.size)
        a = abi.ATT_DESC.unpack(lds, abi.LDS_HEADER.size + n * abi.QUEUE_DESC.size + i * abi.ATT_DESC.size)
        out.append(dict(index=i, type="stationary" if d["type"] == abi.QUEUE_STATIONARY else "streaming",
                        elem_size=d["elem_size"], length=a["global_length"], tile=a["box_elems"], slots=d["slots"],
                        offset=d["offset"], slot_bytes=d["slot_bytes"], barrier_base=d["barrier_base"],
                        barrier_count=d["barrier_count"]))
    return out


def no_cache(record: bytes) -> bytes:
    at = abi.LAUNCH_HEADER.offset("flags")
    return record[:at] + abi.FLAG_NO_CACHE.to_bytes(4, "little") + record[at + 4:]


# The slow side of a test below is the same for the C and the Python hooks: the Recorder's Soc
# is uncounted (it installs neither kind) and its record and counts depend only on the image,
# the GST, the records and the profile. Worked out once per test and GPU, shared by the two
# hook kinds (the slow computation is most of these tests' time).
@functools.lru_cache(maxsize=None)
def slow_steps(elf_path, gpu: str):
    """(records, [(answer, events) of the boot and of each launch]) on the slow Recorder."""
    image, gst = elf.load(elf_path), tables.load(gpu)
    kernels = [load_kernel(EXAMPLES_DIR / f"{k}.json") for k in ("matrix-matrix", "matrix-vector", "dot-product")]
    records = [r for k in kernels for r in (k.record(), k.record(), no_cache(k.record()))]  # cold, cached, uncached
    slow = Recorder(image, gst)
    return records, [slow.step(slow.soc.boot)] + [slow.step(lambda r=r: slow.soc.launch(r)) for r in records]


@functools.lru_cache(maxsize=None)
def slow_counts(elf_path, gpu: str, profile: str) -> list[tuple[int, int]]:
    """slow_count of each step of slow_steps(elf_path, gpu) under `profile`."""
    prof = timing.load_profile(profile)
    return [slow_count(events, prof, i == 0) for i, (_, events) in enumerate(slow_steps(elf_path, gpu)[1])]


@pytest.mark.parametrize("gpu", ["r9-nano", "mi100"])  # the calibration GPUs
def test_firmware_counts_equal_the_slow_computation(elf_path, gpu, hooks):
    image, gst = elf.load(elf_path), tables.load(gpu)
    records, steps = slow_steps(elf_path, gpu)
    uncounted = soc.Soc(image, gst, count=False, wall_budget=UNCOUNTED_WALL_S)
    uncounted.boot()
    for profile in PROFILES:
        prof = timing.load_profile(profile)
        fast, dev = soc.Soc(image, gst, profile=profile), Device(gst, elf_path, profile=profile)
        assert (fast._fast is not None) == (hooks == "C hooks")
        runs = [(fast.boot(), dev.boot_cost)] + [(fast.launch(r), dev.launch(r)) for r in records]
        for i, ((fast_step, dev_run), (slow_step, _), expected) in enumerate(
                zip(runs, steps, slow_counts(elf_path, gpu, profile))):
            assert (fast_step.instructions, fast_step.cycles) == expected, (profile, i)
            assert fast_step.answer == slow_step.answer, (profile, i)
            cost = dev_run if i == 0 else dev_run.cost
            assert (cost.instructions, cost.cycles) == expected, (profile, i)
            if i:
                assert (dev_run.status, dev_run.lds, dev_run.cache_hit) == (
                    slow_step.answer.status, slow_step.answer.config, slow_step.answer.cache_hit)
                assert [vars(q) for q in dev_run.queues] == slow_decode(dev_run.lds)
        if hooks == "C hooks" and prof.fdiv_by_operands:
            # the C code hook's memo of the operand-timed instructions was filled (hooks.Hooks.
            # _on_operand_timed_c) and answered the uncached relaunches, which repeat the cold
            # launches' FDIVs: the counts above are exact with it
            assert fast._fast.memo, profile
    metered = soc.Soc(image, gst, profile="cv32e40p", count_memory=True)  # with the access-counting hooks too
    expected = slow_counts(elf_path, gpu, "cv32e40p")
    assert (metered.boot().cycles, metered.launch(records[0]).cycles) == (expected[0][1], expected[1][1])
    counted = soc.Soc(image, gst)  # instruction counts only
    assert counted.boot().instructions == expected[0][0]
    for r, (n, _) in zip(records, expected[1:]):
        assert counted.launch(r).instructions == n
    for r, (slow_step, _) in zip(records, steps[1:]):  # the uncounted mode answers alike
        assert uncounted.launch(r).answer == slow_step.answer


EXERCISE = """
li t0,0x2000
csrs mstatus,t0          # the FPU on
li s0,0x10000100         # in DATA
li a2,0x80000000
li s1,21
loop:
lw a0,1(s0)              # a word across a word boundary
sh a0,3(s0)              # a halfword across one
lh a1,2(s0)              # one that is not
lbu a3,3(s0)
divu a3,a0,a2            # divisor 2^31 .. 2^11: 3 .. 23 cycles
srli a2,a2,1
fcvt.s.w fa0,s1
fdiv.s fa1,fa0,fa0
fdiv.s fa5,fa1,fa0       # 1/21 .. 1/1: exact (fast) only for powers of two (cv32e40p-fdsu)
andi t1,s1,1
beqz t1,even
sw a0,6(s0)              # only on odd rounds
lh a1,6(s0)              # not split (a halfword at 2 mod 4)
even:
fadd.s fa2,fa1,fa1       # waits for the fdiv
addi s1,s1,-1
bnez s1,loop
rem a4,a0,s1             # by zero: 35
li a2,0x80000000
fdiv.s fa3,fa1,fa1
divu a3,a0,a2            # 3 cycles: the fdiv is still in flight at the block's end
j next
next:
fadd.s fa4,fa3,fa3       # so this waits for it (not after a 35-cycle divide)
wfi
li s1,5
again:
div a5,a0,s1             # signed, by 5..1
lw a6,2(s0)
addi s1,s1,-1
bnez s1,again
sub t2,zero,a0
div a5,a0,t2
wfi
"""


def test_a_program_of_split_accesses_and_divides_counts_alike(gnu_as, hooks):
    image, gst = elf.load(gnu_as(".globl _start\n_start:\n" + EXERCISE)), tables.load("r9-nano")
    slow = Recorder(image, gst)
    steps = [slow.step(slow.soc.run), slow.step(slow.soc.run)]
    assert sum(e == ("split",) for e in steps[0][1]) == 21 * 2 + 11  # the program does split
    for profile in PROFILES:
        prof = timing.load_profile(profile)
        for trace in (False, True):
            fast = soc.Soc(image, gst, profile=profile, trace=trace)
            assert (fast._fast is not None) == (hooks == "C hooks" and not trace)
            for i, (_, events) in enumerate(steps):
                step = fast.run()
                assert (step.instructions, step.cycles) == slow_count(events, prof, i == 0), (profile, trace, i)
                if trace:
                    assert sum(c for *_, c in step.trace) == step.cycles


REPEATS = """
li t0,0x2000
csrs mstatus,t0          # the FPU on
again:
li s1,3
li a0,1000
li a2,7
li t1,21
fcvt.s.w fa0,t1
fcvt.s.w fa4,a2
loop:
fdiv.s fa1,fa0,fa4       # 21/7: exact, 3 is short (cv32e40p)
fdiv.s fa2,fa0,fa1       # then 21/3, in the same block
divu a3,a0,a2            # and a divide: three operand-timed in one block, the same operands each round
fadd.s fa3,fa2,fa2
addi s1,s1,-1
bnez s1,loop
wfi
j again
"""


def test_repeated_operand_timed_blocks_count_alike(gnu_as, hooks):
    # the C hook's memo answers a block execution's first operand-timed instruction from the
    # second round on, and Python the other two with its latency: the counts stay those of the
    # slow computation, round after round and step after step
    image, gst = elf.load(gnu_as(".globl _start\n_start:\n" + REPEATS)), tables.load("r9-nano")
    slow = Recorder(image, gst)
    steps = [slow.step(slow.soc.run)[1] for _ in range(3)]
    for profile in PROFILES:
        prof = timing.load_profile(profile)
        fast = soc.Soc(image, gst, profile=profile)
        for i, events in enumerate(steps):
            step = fast.run()
            assert (step.instructions, step.cycles) == slow_count(events, prof, i == 0), (profile, i)
        if hooks == "C hooks" and prof.fdiv_by_operands:
            assert fast._fast.memo  # it answered the later rounds


def test_a_library_of_another_layout_is_not_used(monkeypatch):
    # a .so built from another version of _fastcount.c would read the counter struct wrong:
    # the loader compares the library's layout word with its own and falls back instead
    need_c_hooks()
    try:
        fastcount.load.cache_clear()
        monkeypatch.setattr(fastcount, "VERSION", fastcount.VERSION + 1)
        assert fastcount.load() is None
    finally:
        fastcount.load.cache_clear()


def test_the_c_tables_grow_without_changing_a_count(elf_path, monkeypatch):
    # tables that start at 2 edges and 4 slots grow many times during a boot and launches
    need_c_hooks()
    image, gst = elf.load(elf_path), tables.load("r9-nano")
    records = [load_kernel(EXAMPLES_DIR / f"{k}.json").record() for k in ("matrix-matrix", "dot-product")]

    def counts():
        s = soc.Soc(image, gst, profile="cv32e40p")
        steps = [s.boot()] + [s.launch(r) for r in records * 2]
        return [(st.instructions, st.cycles, st.blocks) for st in steps], s._fast
    normal, _ = counts()
    monkeypatch.setattr(fastcount, "FIRST_EDGES", 2)
    monkeypatch.setattr(fastcount, "FIRST_SLOTS", 4)
    small, counter = counts()
    assert small == normal and counter.edges > 64 and counter.c.mask + 1 >= 2 * len(counter.pairs)


def test_the_host_sees_the_memory_the_core_sees(elf_path):
    # mailbox, LDS, DATA and GST run on memory the Soc owns and reads by slicing: every byte
    # the host writes is what Unicorn reads, and the other way round, on the region's whole
    # mapping; an access that leaves the mapping is Unicorn's error, as before
    from unicorn import UcError
    s = soc.Soc(elf.load(elf_path), tables.load("r9-nano"), count=False)
    for r in (abi.DATA, abi.GST_REGION, abi.MAILBOX, abi.LDS):
        size = soc.pages(s.lds_bytes if r is abi.LDS else r.size)
        pattern = bytes((r.base >> 28) * 17 + i * 7 & 0xFF for i in range(size))
        s.write(r.base, pattern)
        assert bytes(s.uc.mem_read(r.base, size)) == pattern
        s.uc.mem_write(r.base + size - 8, b"UNICORN!")
        assert s.read(r.base + size - 8, 8) == b"UNICORN!" and s.read(r.base, 4) == pattern[:4]
        with pytest.raises(UcError):
            s.read(r.base + size - 4, 8)  # 4 bytes past the mapping
        with pytest.raises(UcError):
            s.write(r.base + size - 4, bytes(8))
    # the firmware's own stores land in the Soc's memory: the LDS magic and the mailbox's
    # generation after a launch
    s = soc.Soc(elf.load(elf_path), tables.load("r9-nano"), count=False)
    s.boot()
    s.launch(load_kernel(EXAMPLES_DIR / "matrix-matrix.json").record())
    assert s.read(abi.LDS.base, 4) == bytes(s.uc.mem_read(abi.LDS.base, 4)) == abi.LDS_MAGIC.to_bytes(4, "little")
    at = abi.MAILBOX.base + abi.MAILBOX_LAYOUT.offset("generation")
    assert s.read(at, 4) == bytes(s.uc.mem_read(at, 4)) == (1).to_bytes(4, "little")


def _budget_outcome(s, record):
    """(instructions, None) of a launch that slept, or (None, fault pc) of one stopped by the budget."""
    from quco.emulator.faults import BudgetExceeded
    try:
        return s.launch(record).instructions, None
    except BudgetExceeded as e:
        return None, e.pc


@pytest.mark.parametrize("profile", [None, "cv32e40p"])
def test_the_budget_is_exact_on_warm_blocks(elf_path, hooks, profile):
    # The C block hook keeps the budget by stopping before a block that could pass it and
    # running the rest under Unicorn's instruction limit; the limit only counts blocks
    # translated while it is set. Launch the same uncached record again and again on one Soc,
    # its blocks translated already: at the cold launch's own count it sleeps with that count,
    # one or a few instructions less stop it at the same instruction as Unicorn's limit from
    # the start does (the Python hooks), and a generous budget afterwards counts alike.
    record = bytearray(load_kernel(EXAMPLES_DIR / "matrix-matrix.json").record())
    at = abi.LAUNCH_HEADER.offset("flags")
    record[at:at + 4] = abi.FLAG_NO_CACHE.to_bytes(4, "little")
    record = bytes(record)
    s = soc.Soc(elf.load(elf_path), tables.load("r9-nano"), profile=profile)
    s.boot()
    n = s.launch(record).instructions
    outcomes = []
    stops = (n - 1, n - 7, n // 2)
    for budget in (n, *stops, n + 1, 10 * n):
        s.budget = budget
        outcomes.append(_budget_outcome(s, record))
        if outcomes[-1][0] is None:  # the stopped launch left the unit mid-launch: a fresh one
            s = soc.Soc(elf.load(elf_path), tables.load("r9-nano"), profile=profile)
            s.boot()
            s.launch(record)  # warm again
    assert [o[0] for o in outcomes] == [n, None, None, None, n, n]
    # the stopping instruction, from a Soc that counts every instruction from its start
    assert [o[1] for o in outcomes[1:4]] == [slow_stop(elf_path, record, budget) for budget in stops]


@functools.lru_cache(maxsize=None)
def slow_stop(elf_path, record: bytes, budget: int) -> int:
    """The pc where Unicorn's instruction limit alone stops `record` after `budget`
    instructions, on an uncounted Recorder (no counting hooks: the same for either hook kind
    and any profile, so worked out once per budget)."""
    ref = Recorder(elf.load(elf_path), tables.load("r9-nano"))
    ref.soc.boot()
    ref.events.clear()
    ref.soc.ring(record)
    ref.soc.uc.ctl_flush_tb()  # every block translated under the limit
    ref.soc.uc.emu_start(ref.soc.pc, soc.STOP_ADDRESS, count=budget)
    assert sum(e[0] == "insn" for e in ref.events) == budget
    return ref.soc._read_pc()
