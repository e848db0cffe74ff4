"""The launch protocol held against misbehaving firmware (issue #13 item 10).

Each firmware here is a few lines of GNU as that answers every launch with fixed mailbox
and LDS words. The words start from the reference model's answer for the 9-queue
Matrix-Matrix kernel on the R9 Nano, so the unchanged firmware is a correct one (the
control: the host believes it and decodes the model's configuration); each case changes
one word into something the ABI does not allow, and the host must report a misbehaving
firmware (FirmwareMisbehaved, exit code 6 from the CLI) instead of believing it.
"""
import pytest

from conftest import MM_KERNEL
from quco.emulator.faults import FirmwareMisbehaved
from quco.gst import abi, tables
from quco.gst.abi import Status
from quco.cli import main as cli
from quco.host import reference
from quco.host.device import Device
from quco.kernel.format import load_kernel

GST = tables.load("r9-nano")
G = tables.unpack(GST)
RECORD = load_kernel(MM_KERNEL).record()
MODEL = reference.configure(GST, RECORD, generation=1)
MB, LDS = abi.MAILBOX.base, abi.LDS.base


def mailbox_word(name):
    return MB + abi.MAILBOX_LAYOUT.offset(name)


def lds_word(name):
    return LDS + abi.LDS_HEADER.offset(name)


def queue_word(i, name):
    return LDS + abi.LDS_HEADER.size + i * abi.QUEUE_DESC.size + abi.QUEUE_DESC.offset(name)


def correct_answer() -> dict:
    """address -> 32-bit word: the model's configuration, then the mailbox (status last)."""
    words = {LDS + i: int.from_bytes(MODEL.lds[i:i + 4], "little") for i in range(0, len(MODEL.lds), 4)}
    words.update({mailbox_word("detail"): 0, mailbox_word("cache_hit"): 0, mailbox_word("generation"): 1,
                  mailbox_word("status"): 0})
    return words


def set_halfword(words, address, value):
    """Change the 16-bit field at address inside its word."""
    base, shift = address & ~3, 8 * (address & 3)
    words[base] = (words[base] & ~(0xFFFF << shift)) | (value << shift)


def firmware_source(answer: dict | None, ack: bool = True, boot_status: int | None = None) -> str:
    """A firmware that sleeps, and on each doorbell (optionally) clears it and stores `answer`."""
    lines = [".globl _start", "_start:", f"li s0, 0x{MB:x}"]
    if boot_status is not None:
        lines += [f"li t1, {boot_status}", f"sw t1, {abi.MAILBOX_LAYOUT.offset('boot_status')}(s0)"]
    lines += ["loop:", "wfi", "lw t0, 0(s0)", "beqz t0, loop"]
    if ack:
        lines.append("sw zero, 0(s0)")
    for address, value in (answer or {}).items():
        lines += [f"li t1, 0x{value & 0xFFFFFFFF:x}", f"li t2, 0x{address:x}", "sw t1, 0(t2)"]
    lines.append("j loop")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def firmware(gnu_as):
    return lambda answer, **kw: gnu_as(firmware_source(answer, **kw))


def test_a_correct_fake_firmware_is_believed(firmware):
    # the control: the same build path, answering exactly what the model answers
    res = Device(GST, firmware(correct_answer())).launch(RECORD)
    assert res.ok and res.generation == 1 and res.lds == MODEL.lds
    assert (res.tile, [q.slots for q in res.queues]) == (MODEL.tile, MODEL.slots)


def _changed(**changes):
    def make():
        words = correct_answer()
        for address, value in changes.items():
            words[int(address)] = value
        return words
    return make


def _queue_changed(i, name, value):
    def make():
        words = correct_answer()
        set_halfword(words, queue_word(i, name), value) if abi.QUEUE_DESC.field(name).size == 2 \
            else words.__setitem__(queue_word(i, name), value)
        return words
    return make


LIMIT_LDS = G["lds_bytes"]
MISBEHAVIOURS = {
    # name: (firmware answer, words the report must contain)
    "no-acknowledgement (wfi only)": (None, "doorbell was not acknowledged"),
    "status 99": (_changed(**{str(mailbox_word("status")): 99}), "mailbox status 99 is not one the ABI allows"),
    "a boot status after a good boot": (_changed(**{str(mailbox_word("status")): int(Status.GST_CHECKSUM)}),
                                        "mailbox status 3 is not one the ABI allows"),
    "cache_hit 2": (_changed(**{str(mailbox_word("cache_hit")): 2}), "cache_hit 2"),
    "generation not stepped": (_changed(**{str(mailbox_word("generation")): 0, str(lds_word("generation")): 0}),
                               "generation 0 after 0 with status OK (expected 1)"),
    "generation stepped twice": (_changed(**{str(mailbox_word("generation")): 2, str(lds_word("generation")): 2}),
                                 "generation 2 after 0 with status OK (expected 1)"),
    "a refusal that steps the generation": (
        _changed(**{str(mailbox_word("status")): int(Status.RECORD_FIELD)}),
        "generation 1 after 0 with status RECORD_FIELD (expected 0)"),
    "no LDS magic": (_changed(**{str(lds_word("magic")): 0}), "magic 0x00000000, not QCFG"),
    "LDS generation stale": (_changed(**{str(lds_word("generation")): 0}), "generation 0, not the mailbox's 1"),
    "1,000 queues": (_changed(**{str(lds_word("num_queues")): 1000}), "num_queues 1000; the launch record has 9"),
    "0x7fffffff queues": (_changed(**{str(lds_word("num_queues")): 0x7FFFFFFF}),
                          f"num_queues {0x7FFFFFFF}; the launch record has 9 (the ABI allows 1..16)"),
    "fewer queues than the record": (_changed(**{str(lds_word("num_queues")): 8}), "num_queues 8; the launch record has 9"),
    "meta_bytes wrong": (_changed(**{str(lds_word("meta_bytes")): 384}), "meta_bytes 384; 9 queues take 512"),
    "used_bytes past the LDS": (_changed(**{str(lds_word("used_bytes")): LIMIT_LDS + 128}),
                                f"used_bytes {LIMIT_LDS + 128} outside 512..{LIMIT_LDS}"),
    "tile not a power of two": (_changed(**{str(lds_word("tile_elems")): 500}), "tile_elems 500, not a power of two"),
    "barriers past the GST's limit": (_changed(**{str(lds_word("barriers_used")): G["barrier_limit"] + 1}),
                                      f"barriers_used {G['barrier_limit'] + 1} above"),
    "queue block past used_bytes": (_changed(**{str(queue_word(8, "offset")): 1 << 20}),
                                    "queue 8: block 1048576.."),
    "queue block inside the metadata": (_changed(**{str(queue_word(0, "offset")): 0}), "queue 0: block 0..4096 outside the queue area 512..37376"),
    "zero slots": (_queue_changed(3, "slots", 0), f"queue 3: slots 0 outside 1..{G['max_slots']}"),
    "slots past max_slots": (_queue_changed(3, "slots", G["max_slots"] + 1),
                             f"queue 3: slots {G['max_slots'] + 1} outside"),
    "barriers past barriers_used": (_queue_changed(8, "barrier_count", 9), "queue 8: barriers 64+9 past barriers_used 72"),
}


@pytest.mark.parametrize("case", MISBEHAVIOURS)
def test_misbehaving_firmware_is_reported(firmware, case):
    make, words = MISBEHAVIOURS[case]
    dev = Device(GST, firmware(make() if make else None, ack=make is not None))
    with pytest.raises(FirmwareMisbehaved) as info:
        dev.launch(RECORD)
    assert words in str(info.value)
    assert str(info.value).startswith("firmware misbehaved at launch 1: ")


def test_a_boot_status_outside_the_abi_is_reported(firmware):
    with pytest.raises(FirmwareMisbehaved, match=r"at boot: mailbox boot_status 99 is not one the ABI allows"):
        Device(GST, firmware(correct_answer(), boot_status=99))


def test_a_launch_status_at_boot_is_reported(firmware):
    with pytest.raises(FirmwareMisbehaved, match="boot_status 6 is not one"):
        Device(GST, firmware(correct_answer(), boot_status=int(Status.RECORD_FIELD)))


def test_after_a_refused_boot_every_launch_must_repeat_the_boot_status(firmware):
    # boot says GST_CHECKSUM; the launch then answers OK: not the protocol
    dev = Device(GST, firmware(correct_answer(), boot_status=int(Status.GST_CHECKSUM)))
    assert dev.boot_status == Status.GST_CHECKSUM
    with pytest.raises(FirmwareMisbehaved, match=r"status 0 is not one the ABI allows here \(3 GST_CHECKSUM\)"):
        dev.launch(RECORD)


@pytest.mark.parametrize("case", ["no-acknowledgement (wfi only)", "1,000 queues", "0x7fffffff queues", "status 99"])
def test_the_cli_exits_6_and_prints_no_configuration(firmware, capsys, case):
    make, words = MISBEHAVIOURS[case]
    path = firmware(make() if make else None, ack=make is not None)
    for extra in ([], ["--json"]):
        code = cli.main(["launch", str(MM_KERNEL), "--firmware", str(path), *extra])
        out, err = capsys.readouterr()
        assert code == cli.EXIT_FIRMWARE_MISBEHAVED == 6
        assert out == "" and "Traceback" not in err
        assert err.startswith("error: firmware misbehaved at launch 1: ") and words in err


# ---------------------------------------------------------------- issue 24 part 6: bugs the list above let through
def test_a_refusal_that_claims_a_cache_hit_is_reported(firmware):
    # a refused launch reuses nothing: cache_hit 1 with RECORD_FIELD (generation not stepped,
    # as a refusal must) breaks the protocol, even though 1 is a legal value after status OK
    words = correct_answer()
    words.update({mailbox_word("status"): int(Status.RECORD_FIELD), mailbox_word("generation"): 0,
                  mailbox_word("cache_hit"): 1})
    with pytest.raises(FirmwareMisbehaved, match=r"mailbox cache_hit 1 with status RECORD_FIELD \(expected 0\)"):
        Device(GST, firmware(words)).launch(RECORD)
    words[mailbox_word("cache_hit")] = 0  # the control: the same refusal without the claim
    res = Device(GST, firmware(words)).launch(RECORD)
    assert (res.status, res.cache_hit, res.generation) == (Status.RECORD_FIELD, False, 0)


def test_used_bytes_is_held_to_the_launchs_partition_not_the_whole_lds(firmware):
    # a launch on half the R9 Nano's LDS: a configuration that ends past the partition but
    # inside the GPU's LDS overwrites LDS the launch does not own
    partition = G["lds_bytes"] // 2
    record = bytearray(RECORD)
    at = abi.LAUNCH_HEADER.offset("lds_bytes")
    record[at:at + 4] = partition.to_bytes(4, "little")
    record = bytes(record)
    model = reference.configure(GST, record, generation=1)
    used = abi.LDS_HEADER.unpack(model.lds)["used_bytes"]
    assert model.status == Status.OK and used <= partition
    words = {LDS + i: int.from_bytes(model.lds[i:i + 4], "little") for i in range(0, len(model.lds), 4)}
    words.update({mailbox_word("detail"): 0, mailbox_word("cache_hit"): 0, mailbox_word("generation"): 1,
                  mailbox_word("status"): 0})
    assert Device(GST, firmware(words)).launch(record).used_bytes == used  # the control
    words[lds_word("used_bytes")] = partition + 128  # still within the GST's lds_bytes
    assert partition + 128 <= G["lds_bytes"]
    with pytest.raises(FirmwareMisbehaved, match=rf"used_bytes {partition + 128} outside \d+\.\.{partition} "):
        Device(GST, firmware(words)).launch(record)


def test_a_remembered_configuration_is_still_held_to_magic_generation_and_its_bytes():
    # check_config remembers (record, configuration) pairs that passed; the memory must not
    # let a different configuration, a stale generation or a bad magic through
    from quco.emulator import protocol
    verified = set()
    lds = MODEL.lds + bytes(protocol.CONFIG_MAX - len(MODEL.lds))
    assert protocol.check_config(lds, RECORD, G, 1, verified=verified) == MODEL.lds
    assert len(verified) == 1
    assert protocol.check_config(lds, RECORD, G, 1, verified=verified) == MODEL.lds  # remembered
    stale = lds[:4] + (0).to_bytes(4, "little") + lds[8:]
    with pytest.raises(FirmwareMisbehaved, match="generation 0, not the mailbox's 1"):
        protocol.check_config(stale, RECORD, G, 1, verified=verified)
    with pytest.raises(FirmwareMisbehaved, match="magic 0x00000000"):
        protocol.check_config(bytes(4) + lds[4:], RECORD, G, 1, verified=verified)
    at = abi.LDS_HEADER.size + 3 * abi.QUEUE_DESC.size + abi.QUEUE_DESC.offset("slots")
    no_slots = lds[:at] + bytes(2) + lds[at + 2:]
    with pytest.raises(FirmwareMisbehaved, match="queue 3: slots 0 outside"):
        protocol.check_config(no_slots, RECORD, G, 1, verified=verified)
    other = bytearray(RECORD)
    at = abi.LAUNCH_HEADER.offset("lds_bytes")
    other[at:at + 4] = (1024).to_bytes(4, "little")
    with pytest.raises(FirmwareMisbehaved, match="used_bytes .* outside 512..1024"):  # another record
        protocol.check_config(lds, bytes(other), G, 1, verified=verified)


# ---------------------------------------------------------------- the answer's fast path (issue 24 part 1)
def _buffers(words: dict) -> tuple[bytes, bytes]:
    """The mailbox and the LDS's configuration area holding `words` (address -> word)."""
    from quco.emulator import protocol
    mailbox, lds = bytearray(abi.MAILBOX_LAYOUT.size), bytearray(protocol.CONFIG_MAX)
    for address, value in words.items():
        area, base = (mailbox, MB) if address < LDS else (lds, LDS)
        area[address - base:address - base + 4] = (value & 0xFFFF_FFFF).to_bytes(4, "little")
    return bytes(mailbox), bytes(lds)


AFTER_REMEMBERED = {c: v for c, v in MISBEHAVIOURS.items() if v[0] is not None}
AFTER_REMEMBERED["the right answer, the doorbell still set"] = (_changed(**{str(mailbox_word("doorbell")): 1}),
                                                                "doorbell was not acknowledged (still 1")
AFTER_REMEMBERED["the mailbox's generation alone stepped twice"] = (
    _changed(**{str(mailbox_word("generation")): 2}), "mailbox generation 2 after 0 with status OK (expected 1)")


@pytest.mark.parametrize("case", AFTER_REMEMBERED)
def test_a_remembered_configuration_does_not_let_a_misbehaving_answer_through(case):
    # the fast path believes an answer whose (record, configuration) pair was checked before:
    # each misbehaviour must still be reported, with the full check's message, once the
    # correct answer has been remembered
    from quco.emulator import protocol
    boot, verified = protocol.Answer(Status.OK, 0), set()
    good = protocol.launch_answer(*_buffers(correct_answer()), RECORD, G, boot, 0, 1, verified)
    assert (good.status, good.generation, good.config) == (Status.OK, 1, MODEL.lds) and len(verified) == 1
    again = protocol.launch_answer(*_buffers(correct_answer()), RECORD, G, boot, 0, 1, verified)
    assert again == good  # the remembered pair, through the fast path
    make, words = AFTER_REMEMBERED[case]
    with pytest.raises(FirmwareMisbehaved) as info:
        protocol.launch_answer(*_buffers(make()), RECORD, G, boot, 0, 7, verified)
    assert words in str(info.value) and str(info.value).startswith("firmware misbehaved at launch 7: ")


def test_the_fast_path_answers_what_the_full_check_answers(tmp_path):
    # every bundled kernel, cold and cached, on each preset: the Soc's answer (fast path once
    # remembered) equals the full check of the same bytes with no memory
    from conftest import ROOT
    from quco.emulator import protocol
    from quco.emulator.soc import Soc
    from quco.emulator import elf
    from quco.host.device import firmware_path
    image = elf.load(firmware_path())
    for gpu in ("r9-nano", "mi100"):
        gst = tables.load(gpu)
        soc = Soc(image, gst, count=False)
        soc.boot()
        for path in sorted((ROOT / "quco" / "examples" / "kernels").glob("*.json")):
            record = load_kernel(path).record()
            for _ in range(3):  # a cold launch, then cache hits through the fast path
                before = soc.generation
                answer = soc.launch(record).answer
                mailbox, lds = soc.read(MB, abi.MAILBOX_LAYOUT.size), soc.read(LDS, protocol.CONFIG_MAX)
                full = protocol.launch_answer(mailbox, lds, record, tables.unpack(gst), soc.booted, before, 1, None)
                assert answer == full and answer.status == Status.OK
        assert soc._verified  # the fast path had pairs to use


def test_a_remembered_configuration_does_not_excuse_an_ok_after_a_refused_boot():
    from quco.emulator import protocol
    verified = set()
    protocol.launch_answer(*_buffers(correct_answer()), RECORD, G, protocol.Answer(Status.OK, 0), 0, 1, verified)
    refused = protocol.Answer(Status.GST_CHECKSUM, 0)
    with pytest.raises(FirmwareMisbehaved, match=r"status 0 is not one the ABI allows here \(3 GST_CHECKSUM\)"):
        protocol.launch_answer(*_buffers(correct_answer()), RECORD, G, refused, 0, 1, verified)
