"""The paper's qualitative claims (QuCo Sec. V ablation, DVFS, multi-tenancy), each checked on
the firmware, which fuzz.compare holds to the reference model bit for bit."""
import dataclasses

import pytest

from conftest import EXAMPLES_DIR, ROOT
from quco.gst import abi
from quco.host import fuzz
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


@pytest.mark.xfail(strict=True, reason="not reproduced: QuCo's listing with the R9-calibrated constants picks "
                   "the same tile on the MI100 from 1500 down to 900 MHz for every Table III kernel and every "
                   "Whisper-Tiny layer type; where a lower clock changes a tile it grows "
                   "(docs/algorithm.md 'Where QuCo loses')")
def test_mi100_at_1300_mhz_a_layer_tile_goes_from_512_to_256(devices):
    """DVFS (Whisper-Tiny FC-5 on the MI100): at 1300 MHz the tile goes 512 -> 256. Our
    layer-type numbering is not the paper's, so every type and every Table III kernel counts."""
    kernels = [load_kernel(p) for p in sorted((EXAMPLES_DIR / "mi100").glob("*.json"))]
    kernels += list(whisper_layers().values())
    went_down = [k.name for k in kernels
                 if configure_kernel(devices, "mi100", k)[0] == 512
                 and configure_kernel(devices, "mi100", k, core_clock_mhz=1300)[0] == 256]
    assert went_down


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
