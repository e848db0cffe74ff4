"""The per-CU limit on bytes in flight (issue #29: "a per-CU limit on transfers or bytes in
flight, with what happens past it"), against closed forms computed here from the machine's
figures, and the H100 rows that bound it from below.

Past the limit a request waits at the CU, in the order made, until earlier transfers are in
(cu_model.Model._admit): with k tiles' worth of room and a round trip RT, a long stream moves k tiles
every RT however many slots it has."""
from __future__ import annotations

import dataclasses

import pytest

from quco.gst import tables
from quco.perfmodel import fit, hardware, model_table
from quco.perfmodel.params import machine
from quco.perfmodel.sim import simulate
from quco.perfmodel.work import STREAMING, Config, Queue, Work

R9 = machine(tables.unpack(tables.load("r9-nano")))
H100 = machine(tables.unpack(tables.load("h100-sxm")))
TILE = 64                    # elements of 2 bytes: 128-byte tiles
RT = R9.lat_att + R9.lat_dram  # an ATT tile's round trip from DRAM, unloaded


def stream(length: int) -> Work:
    """One streaming queue, one work-group a CU (a grid of one wave), no compute."""
    return Work("s", (Queue(length, STREAMING, 2),), 0.0, 7, work_groups=R9.cus)


def dram_cycles(nbytes: float, request: float) -> float:
    """Cycles the CU's DRAM share takes for `nbytes` in requests of `request` contiguous bytes
    (memory.Pipes: the GPU's rate over the CUs, at the row overhead's efficiency)."""
    rate = R9.dram_bytes_per_cycle / R9.cus * request / (request + 16)
    return nbytes / rate


@pytest.mark.parametrize("k", [1, 2, 4])
def test_in_flight_bound_stream_moves_k_tiles_a_round_trip(k):
    """8 slots but room for k tiles: each tile past the k-th leaves when the tile k before it
    is in, so every k tiles take one round trip plus one tile's DRAM time. 512 tiles."""
    n = 512
    m = dataclasses.replace(R9, att_inflight=k * TILE * 2.0)
    o = simulate(m, stream(n * TILE), Config(TILE, (8,)))
    per_k = RT + dram_cycles(TILE * 2, TILE * 2)
    assert o.cycles == pytest.approx(n / k * per_k, rel=0.02)
    free = simulate(R9, stream(n * TILE), Config(TILE, (8,)))
    # without it the 8 slots keep more tiles in flight (releases take an LDS round trip)
    assert free.mean_in_flight > k + 2 and free.cycles < 0.7 * o.cycles


def test_a_limit_above_what_the_slots_request_changes_nothing():
    """Room for 8 tiles of a queue with 8 slots: the limit never binds, the run is the same."""
    w = stream(512 * TILE)
    assert (simulate(dataclasses.replace(R9, att_inflight=8 * TILE * 2.0), w, Config(TILE, (8,))).cycles
            == simulate(R9, w, Config(TILE, (8,))).cycles)


def test_a_tile_larger_than_the_limit_goes_in_parts():
    """1 KiB tiles, one slot, room for 256 bytes: each tile goes in 4 parts, one round trip
    each, so a tile costs 3 round trips more than with room for a whole tile (the parts' DRAM
    time adds up to the tile's)."""
    tile, n = 512, 64
    w = stream(n * tile)
    whole = simulate(dataclasses.replace(R9, att_inflight=1024.0), w, Config(tile, (1,)))
    parts = simulate(dataclasses.replace(R9, att_inflight=256.0), w, Config(tile, (1,)))
    assert parts.cycles - whole.cycles == pytest.approx(n * 3 * RT, rel=0.02)


@pytest.mark.parametrize("release", [0.0, 128.0])
def test_noatt_loads_wait_on_the_load_path_limit_only(release):
    """NoATT: the wavefronts' own loads pass the CU's vector memory path (load_inflight); a
    4 KiB step with room for 1 KiB goes in 4 parts, each admitted when the one before frees its
    entries: load_release cycles before its data is in (the L1 frees them when it responds, the
    CU's own part of the round trip holds none), so the 3 later parts cost 3 x (lat_dram -
    load_release) more. The ATT's limit does not touch them, nor the load path's the ATT."""
    tile, n = 2048, 16
    w = stream(n * tile)
    cfg = Config(tile, (1,))
    free = simulate(dataclasses.replace(R9, load_inflight=0.0), w, cfg, mode="noatt")  # (the preset's is 1 KiB)
    capped = simulate(dataclasses.replace(R9, load_inflight=1024.0, load_release=release), w, cfg, mode="noatt")
    assert capped.cycles - free.cycles == pytest.approx(n * 3 * (R9.lat_dram - release), rel=0.02)
    assert simulate(dataclasses.replace(R9, att_inflight=1024.0, load_inflight=0.0), w, cfg,
                    mode="noatt").cycles == free.cycles
    assert (simulate(dataclasses.replace(R9, load_inflight=1024.0), w, cfg).cycles
            == simulate(R9, w, cfg).cycles)


def test_the_load_release_is_noatt_only_and_needs_a_limit():
    """load_release shortens how long a NoATT load holds its entry; it moves nothing where
    nothing is limited (no load_inflight) and nothing on the ATT's path, limited or not."""
    w, cfg = stream(16 * 2048), Config(2048, (1,))
    base = dataclasses.replace(R9, load_inflight=0.0, load_release=0.0)
    assert (simulate(dataclasses.replace(base, load_release=128.0), w, cfg, mode="noatt").cycles
            == simulate(base, w, cfg, mode="noatt").cycles)
    att = dataclasses.replace(base, att_inflight=1024.0)
    assert (simulate(dataclasses.replace(att, load_release=128.0), w, Config(TILE, (8,))).cycles
            == simulate(att, w, Config(TILE, (8,))).cycles)


def test_presets_carry_their_limits():
    """The GPU's own description: MGPUSim's L1V (the versions the paper can have used) holds at
    most 16 transactions of a 64-byte line for a CU's own loads, each from the L1V to its
    response: the R9 Nano's L1 hit round trip (190) less the L1V's own hit time (62) is the
    part that holds none; no limit on the ATT (its path in the paper's simulator is not known)
    nor on the H100 (its measurements bound it from below only)."""
    assert (R9.load_inflight, R9.load_release, R9.att_inflight) == (16 * 64, 190 - 62, 0.0)
    assert (H100.load_inflight, H100.load_release, H100.att_inflight) == (0.0, 0.0, 0.0)


DATA = hardware.DEFAULT_DATA
BOUNDING = {("Elementwise", "big", 8192, 7), ("Sumvectors", "big", 8192, 5), ("Matrix-Vector", "big", 2048, 4)}


@pytest.mark.skipif(not DATA.exists(), reason="hardware data not present")
def test_h100_rows_rule_out_a_limit_below_48_kib_an_sm():
    """Rows the H100 ran at its copy ceiling with much in flight: the model without a limit is
    within 5% of each; a limit of 48 KiB an SM makes it more than 5% slower than measured on
    every one (fit.inflight_contradicted), one of 128 KiB on none."""
    gst = tables.load("h100-sxm")
    rows = [r for r in hardware.read(DATA) if r.variant == "att" and (r.kernel, r.size, r.tile, r.slots) in BOUNDING]
    pts = [p for res in hardware.compare(rows, gst) for p in res["points"]]
    assert len(pts) == len(BOUNDING)
    for p in pts:
        assert p.model_us == pytest.approx(p.measured_us, rel=0.05)
    assert len(fit.inflight_contradicted(H100, gst, rows, 48 * 1024)) == len(BOUNDING)
    assert fit.inflight_contradicted(H100, gst, rows, 128 * 1024) == []


@pytest.mark.parametrize("entry, words", [
    ({"att_inflight_lines": -1}, "[model].att_inflight_lines = -1: out of range 0..1048576"),
    ({"load_inflight_lines": 2.5}, "[model].load_inflight_lines: 2.5 is a float, not an integer"),
    ({"load_release_cycles": -1}, "[model].load_release_cycles = -1: out of range 0..65536"),
])
def test_a_bad_limit_names_the_field_and_its_range(entry, words):
    with pytest.raises(tables.GstFileError) as e:
        model_table.check(entry, "my-gpu.toml")
    assert str(e.value).startswith("my-gpu.toml: ") and words in str(e.value), str(e.value)
