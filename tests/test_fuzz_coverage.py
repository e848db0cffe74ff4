"""bench/fuzz_coverage.py: the firmware's C built for the host (gcov) answers what the emulated
firmware answers, byte for byte, so its branch counts say what the firmware ran; and the count
parser finds the branches a sample reached and the ones it did not."""
import random
import shutil

import pytest

from conftest import ALL_EXAMPLE_KERNELS, bench_module
from quco.gst import tables
from quco.host import fuzz
from quco.host.device import Device
from quco.kernel.format import load_kernel

pytestmark = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("gcov")), reason="needs gcc and gcov")


@pytest.fixture(scope="module")
def cov(tmp_path_factory):
    mod = bench_module("fuzz_coverage")
    folder = tmp_path_factory.mktemp("host-build")
    return mod, mod.build(folder), folder


def emulated(mod, elf_path, gst: bytes, records: list[bytes]):
    dev = Device(gst, elf_path)
    b = mod.Batch(gst, boot=(int(dev.boot_status), dev.boot_detail))
    for r in records:
        res = dev.launch(r)
        b.records.append(r)
        b.answers.append((int(res.status), res.detail, res.generation, int(res.cache_hit), res.lds if res.ok else b""))
    return b


def test_the_host_build_answers_as_the_emulator(cov, elf_path):
    """Every preset with every bundled kernel (twice: the second a cache hit), then random
    GSTs (a refused one answers every launch with its boot status) with shaped and near-valid
    records and relaunches."""
    mod, exe, folder = cov
    kernels = [load_kernel(p).record() for p in ALL_EXAMPLE_KERNELS]
    batches = [emulated(mod, elf_path, tables.load(g), kernels + kernels[:3]) for g in tables.preset_names()]
    rng = random.Random(34)
    for _ in range(12):
        raw = fuzz.gst(rng)
        recs = [fuzz.shaped(rng, raw, steer_p=0.3) if i % 2 else fuzz.record(rng, tables.unpack(raw)) for i in range(12)]
        batches.append(emulated(mod, elf_path, raw, recs + recs[-2:]))
    host = mod.run(exe, batches)
    assert mod.mismatches(batches, host) == []
    assert sum(len(b.records) for b in host) == sum(len(b.records) for b in batches) > 200
    assert any(a[3] for b in host for a in b.answers)  # cache hits were served
    found = mod.branches(folder)
    assert {b.file for b in found} == {f"quco/firmware/src/{p.name}" for p in mod.SOURCES}
    assert any(b.count for b in found) and any(not b.count for b in found)  # reached and not (boot's rarer refusals)


def test_a_planted_difference_is_a_mismatch(cov, elf_path):
    """The comparison is not vacuous: one answer changed by one bit is reported with its inputs."""
    mod, exe, _ = cov
    batch = emulated(mod, elf_path, tables.load("r9-nano"), [load_kernel(ALL_EXAMPLE_KERNELS[0]).record()])
    host = mod.run(exe, [batch])
    status, detail, gen, hit, lds = host[0].answers[0]
    host[0].answers[0] = (status, detail, gen, hit, lds[:-1] + bytes([lds[-1] ^ 1]))
    bad = mod.mismatches([batch], host)
    assert len(bad) == 1 and batch.records[0].hex() in bad[0]


def test_the_documented_unreachable_branches_exist(cov):
    """Each branch bench/fuzz.py excuses is still in the source, at the index it names."""
    mod, _, folder = cov
    keys = {b.key for b in mod.branches(folder)}
    assert set(mod.UNREACHABLE) <= keys
