"""The paper's qualitative claims (QuCo Sec. V ablation, DVFS, multi-tenancy), each checked on
the firmware, which fuzz.compare holds to the reference model bit for bit."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES_DIR, ROOT
from quco.gst import abi, tables
from quco.host import explain, fuzz
from quco.host.kernel import load_kernel

MATRIX = ["matrix-vector", "matrix-matrix", "matrix-matrix-reduction", "batched-matrix-matrix"]


def configure(devices, gpu, stem, where=EXAMPLES_DIR, **changes):
    """(tile, streaming slots, stationary slots) the firmware picks, checked against the model."""
    k = dataclasses.replace(load_kernel(where / f"{stem}.json"), **changes)
    res = fuzz.compare(devices(gpu), k.record())
    assert res.ok, res.message
    stream = {q.slots for q in res.queues if q.type == "streaming"}
    stat = {q.slots for q in res.queues if q.type == "stationary"}
    assert len(stream) <= 1 and len(stat) <= 1
    return res.tile, min(stream, default=0), min(stat, default=0)


@pytest.mark.parametrize("stem", MATRIX)
def test_cu_aware_off_raises_the_matrix_kernels_slots(devices, stem):
    """Ablation: without CU-aware scaling the matrix kernels over-allocate, 4 or 8 slots
    instead of 2. On the R9 Nano the CU step takes Little's 8 slots to 2; without it 8 do not
    fit and the CI fallback gives 4 where four slots of the tile fit (the 512-element tiles of
    the high-CI kernels), so Matrix-Vector's 1024-element tile stays at 2."""
    on = configure(devices, "r9-nano", stem)
    off = configure(devices, "r9-nano", stem, flags=abi.FLAG_NO_CU_AWARE)
    assert on[1] == 2 and off[0] == on[0]
    if on[0] == 512:
        assert off[1] in (4, 8)
    else:
        assert off[1] >= on[1] and 8 * 4 * on[0] * 2 >= 65536  # four slots of 1024 fp16 leave no room


def test_ci_scaling_off_grows_the_mm_reduction_tile(devices):
    """Ablation: without CI scaling MM+Reduction runs 1024 (or 2048) instead of 512."""
    on = configure(devices, "r9-nano", "matrix-matrix-reduction")
    off = configure(devices, "r9-nano", "matrix-matrix-reduction", flags=abi.FLAG_NO_CI_SCALING)
    assert on[0] == 512 and off[0] in (1024, 2048)


WHISPER_TYPES = ROOT / "examples" / "workloads" / "whisper-tiny-types.json"


def whisper_layers():
    """Whisper-Tiny's unique layer types (the paper's DVFS workload), as kernels."""
    from quco.workloads.format import load
    return {layer.name: layer.kernel for layer in load(WHISPER_TYPES).layers}


def configure_kernel(devices, gpu, kernel, **changes):
    res = fuzz.compare(devices(gpu), dataclasses.replace(kernel, **changes).record())
    assert res.ok, res.message
    return res.tile, res.queues[0].slots


@pytest.mark.parametrize("stem", sorted(p.stem for p in (EXAMPLES_DIR / "mi100").glob("*.json")))
def test_dvfs_reaches_the_unit_and_firmware_agrees_at_every_clock(devices, stem):
    """DVFS: at every clock of the paper's MI100 traces the firmware (which scans live off
    the nominal clock) and the model agree; a lower clock never gives a smaller tile (the
    listing's direction: memory costs fewer core cycles, see docs/algorithm.md)."""
    clocks = (1500, 1300, 1000, 950, 900)
    tiles = [configure(devices, "mi100", stem, where=EXAMPLES_DIR / "mi100", core_clock_mhz=c)[0] for c in clocks]
    assert tiles == sorted(tiles)


def test_a_lower_clock_moves_a_whisper_layer_to_a_larger_tile(devices):
    """Where DVFS does change a pick with the listing, the tile grows: Whisper-Tiny's first
    convolution on the R9 Nano (nominal 1000 MHz) goes 512 -> 1024 at 870 MHz: the DRAM latency in
    cycles falls with the clock (the ATT and L2 latencies do not), memTime's latency goes from
    850 to 791 cycles, the merit peak from 1024 to 2048, halved for the high CI class. The
    opposite of the paper's 512 -> 256."""
    conv = whisper_layers()["Conv1d-1"]
    assert configure_kernel(devices, "r9-nano", conv)[0] == 512
    assert configure_kernel(devices, "r9-nano", conv, core_clock_mhz=870)[0] == 1024


WHISPER = ROOT / "examples" / "workloads" / "whisper-tiny.json"


def paper_fc(n: int):
    """The paper's FC-n of its DVFS study: the n-th linear layer of Whisper-Tiny in model order
    (FC-5 and FC-11, both named as benefiting, are then the first two encoder fc1 layers)."""
    from quco.workloads.format import load
    return [layer for layer in load(WHISPER).layers if layer.type.startswith("FC")][n - 1]


def test_the_papers_fc5_gets_the_papers_tile_at_the_default_clock(devices):
    """At 1500 MHz the paper's FC-5 (encoder.layers[0].fc1: 1500 x 384 -> 1536, high CI) runs a
    512-element tile, as in the paper's DVFS study; the merit peak is 1024, halved for high CI."""
    fc5 = paper_fc(5)
    assert fc5.name == "encoder.layers[0].fc1" and paper_fc(11).name == "encoder.layers[1].fc1"
    assert configure_kernel(devices, "mi100", fc5.kernel)[0] == 512


@pytest.mark.xfail(strict=True, reason="not reproduced: with QuCo's listing the tile scan's best is the smallest "
                   "tile or one of at least SIMD x Wfs = 448 elements, and on the MI100 it stays at 1024 (512 after "
                   "the CI step) from 1500 down to 900 MHz under every reading of the clock we tried "
                   "(bench/dvfs_readings.py; docs/algorithm.md 'Where QuCo loses')")
def test_mi100_at_1300_mhz_the_papers_fc5_tile_goes_from_512_to_256(devices):
    """DVFS (QuCo Sec. V, decreasing trace): at FC-5, 1300 MHz, the tile goes 512 -> 256."""
    assert configure_kernel(devices, "mi100", paper_fc(5).kernel, core_clock_mhz=1300)[0] == 256


@settings(max_examples=60, deadline=None)
@given(lat=st.tuples(st.integers(0, 2000), st.integers(0, 2000), st.integers(1, 2000)), bw_mbps=st.integers(10_000, 20_000_000),
       simd=st.sampled_from([16, 32, 64, 128]), wfs=st.integers(1, 32), elem=st.sampled_from([1, 2, 4, 8]),
       clock=st.sampled_from([0, 500, 900, 1300, 2000]))
def test_the_tile_scan_never_peaks_between_the_smallest_tile_and_simd_x_wfs(lat, bw_mbps, simd, wfs, elem, clock):
    """Why no clock can move a tile from 512 to 256 with Wfs = 7 (docs/algorithm.md): below
    T = SIMD x Wfs one scheduling round covers the tile, procTime = T / (SIMD x Wfs) with no
    overlap, and with the shipped cost weights (0) weighted merit = lat / ((SIMD x Wfs) x
    (lat + k x T)), which falls with T. So the scan's best is the smallest tile or a tile of
    at least SIMD x Wfs, whatever the latencies, bandwidth and clock."""
    g = tables.unpack(tables.load("mi100"))
    g.update(lat_att_cycles=lat[0], lat_l2_cycles=lat[1], lat_dram_cycles=lat[2], dram_bw_mbps=bw_mbps,
             simd_muls_per_cycle=simd)
    k = load_kernel(EXAMPLES_DIR / "mi100" / "matrix-matrix.json")
    k = dataclasses.replace(k, consumer_wavefronts=wfs, core_clock_mhz=clock,
                            queues=[(n, t, elem) for n, t, _ in k.queues])
    steps = explain.trace(tables.pack(g), k.record())[3]
    best = next(s for s in steps if s["step"] == "ci")["best"]
    assert best == g["min_tile_elems"] or best >= simd * wfs


def test_fewer_cus_give_deeper_queues(devices):
    """Multi-tenancy: a partition with fewer active CUs has less DRAM contention, so the CU
    step takes fewer slots away: 64 CUs -> 2, 32 -> 4 (one halving), 16 -> Little's 8, which
    does not fit and falls back to the high-CI 4."""
    assert [configure(devices, "r9-nano", "matrix-matrix", active_cus=c)[1] for c in (64, 32, 16)] == [2, 4, 4]
    assert [configure(devices, "r9-nano", "elementwise-k", active_cus=c)[1] for c in (64, 32, 16)] == [2, 4, 8]


@pytest.mark.parametrize("stem", ["elementwise", "matrix-matrix", "matrix-vector"])
def test_less_lds_gives_smaller_tiles_that_fit_the_partition(devices, stem):
    """Multi-tenancy: a quarter of the LDS: the tile shrinks until every streaming queue can
    still be double-buffered, and the configuration stays inside the partition."""
    full = configure(devices, "r9-nano", stem)
    k = dataclasses.replace(load_kernel(EXAMPLES_DIR / f"{stem}.json"), lds_bytes=16384)
    res = fuzz.compare(devices("r9-nano"), k.record())
    assert res.ok and res.tile < full[0] and res.used_bytes <= 16384
    assert all(q.slots >= 2 for q in res.queues if q.type == "streaming")
