"""What the performance model knows about the hardware: the GST's figures, the partition's,
and the few constants the GST does not carry, each declared once with its source.

docs/perf-model.md explains how each enters the model. The GST's latencies are core
cycles at the GST's nominal clock (core_clock_mhz), as the firmware reads them and as QuCo's
Table II gives them ("cycles, CU round trip"; docs/algorithm.md). Under a DVFS clock the
part of a DRAM round trip beyond an L2 hit stays a fixed time (so its cycle count scales
with the clock), while the L2, ATT and LDS run on the core clock (so their cycle counts do
not). DRAM bandwidth is fixed in bytes per second, so a lower clock gives more bytes per cycle.
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass

from ..gst import tables

# name: (value, unit, source). Assumptions say so; none is fitted to QuCo's picks.
CONSTANTS = {
    "FLOPS_PER_MUL": (2, "FLOPs", "a SIMD lane's fused multiply-add counts as two FLOPs "
                      "(GCN: 64 FMA lanes per CU = 128 FLOPs per cycle)"),
    "LDS_LATENCY": (64, "cycles", "assumption: an LDS round trip, which is what a barrier wake-up "
                    "and a slot release cost; GCN-class LDS latencies are tens of cycles, no "
                    "public figure for ATT barriers"),
    "FABRIC_BYTES_PER_CYCLE": (64, "bytes", "GCN L1/LDS fill path: 64 bytes per clock per CU "
                               "(AMD GCN documentation); the ATT moves one cache line per cycle at most"),
    "L2_SLICE_BYTES_PER_CYCLE": (64, "bytes", "GCN: each L2 channel (slice) returns 64 bytes per clock "
                                 "(AMD Graphics Cores Next Architecture whitepaper, 2012); CDNA 1 keeps the "
                                 "GCN L2 organisation"),
    "DRAM_ROW_OVERHEAD_BYTES": (16, "bytes", "assumption, fitted (docs/perf-model.md, bench/calibrate_model.py "
                                "--fit): the transfer time one descriptor loses to opening its DRAM rows, in "
                                "bytes at peak bandwidth; a descriptor of s contiguous bytes streams at "
                                "s / (s + this) of the peak. HBM opens a 2 KiB row per activation and moves "
                                "32-byte bursts (JEDEC JESD235); bank parallelism hides most of an activation"),
    "NOATT_BYTES_PER_INSTR": (1024, "bytes", "NoATT stages a tile with a global load and an LDS write per "
                              "1 KiB: a dwordx4 load or ds_write_b128 moves 16 bytes per lane x 64 lanes "
                              "(GCN3 ISA manual, buffer_load_dwordx4 / ds_write_b128)"),
}

# The GPU's own description, read from its preset's [model] table (gst/presets/*.toml, each
# value with its source). A GST whose name no preset carries gets these, GCN's (the R9 Nano's
# L2), an assumption that docs/perf-model.md states.
GPU_FIELDS = {
    "waves_per_pool": 10, "wave_instr_cycles": 4, "l2_slices": 16, "l2_slice_bytes": 256 << 10,
    "att_issue_cycles": 4, "att_box_rows": 1, "step_instr": 0, "queue_instr": 2, "store_instr": 0,
    "dram_sustained": 1.0, "launch_ns": 0, "lds_reserved_per_wg": 0, "barrier_bytes": 0,
    "dep_instr_cycles": 4, "dram_stream_cost": 0.0,
    "code_on_pools": 1, "stage_instr": 0, "wg_turnover_ns": 0,
    "att_inflight_lines": 0, "load_inflight_lines": 0, "load_release_cycles": 0, "dram_queueing": 0,
}


@functools.lru_cache(maxsize=None)
def _descriptions() -> dict:
    """{GST name: {field: value}} from every preset's [model] table."""
    out = {}
    for path in sorted(tables.PRESET_DIR.glob("*.toml")):
        doc = tomllib.loads(path.read_text())
        model = doc.get("model", {})
        unknown = set(model) - set(GPU_FIELDS)
        if unknown:
            raise ValueError(f"{path}: [model]: unknown field(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(GPU_FIELDS)})")
        out[doc["name"]] = {k: v["value"] for k, v in model.items()}
    return out


def description(name: str) -> dict:
    """The model's description of the GPU called `name` (its preset's [model] over GPU_FIELDS)."""
    return {**GPU_FIELDS, **_descriptions().get(name, {})}


def const(name: str):
    return CONSTANTS[name][0]


@dataclass(frozen=True)
class Machine:
    """One partition of one GPU as the model sees it. Built by `machine()`."""
    clock_mhz: float
    cus: int                 # CUs of the partition
    lds_bytes: int           # LDS per CU of the partition
    simd_muls: int           # multiply(-add)s per cycle per CU
    pools: int               # wavefront pools (SIMDs) per CU
    lat_att: float           # ATT descriptor latency, cycles
    lat_l2: float            # L2 round trip, cycles
    lat_dram: float          # DRAM round trip, cycles at this clock
    dram_bytes_per_cycle: float  # whole GPU
    cache_line: int
    barrier_limit: int
    l2_bytes: int = 4 << 20            # L2 capacity, whole GPU
    l2_bytes_per_cycle: float = 1024.0  # L2 bandwidth, whole GPU
    # the GPU's own description (its preset's [model]; GPU_FIELDS)
    waves_per_pool: int = 10           # wavefronts a pool (SIMD, sub-partition) keeps resident
    wave_instr: float = 4.0            # cycles a pool takes to issue one wavefront instruction
    dep_instr: float = 4.0             # cycles from one instruction of a wavefront to the next that
                                       # depends on it (a chain's latency per instruction)
    att_issue: float = 4.0             # cycles the ATT unit is busy per descriptor
    att_box_rows: int = 1              # identical queues one descriptor moves (a 2-D box)
    step_instr: float = 0.0            # consumer instructions per wavefront and step
    queue_instr: float = 2.0           #   and per descriptor the step waits for (wait + arrive)
    store_instr: float = 0.0           #   and per step that writes results
    launch: float = 0.0                # cycles of kernel launch before the first work-group
    lds_reserved: int = 0              # LDS bytes each resident work-group costs beyond its queues
    code_on_pools: int = 1             # 1: the barrier code takes the pools' issue slots from compute
    dram_stream_cost: float = 0.0      # DRAM rate lost per concurrent sequential stream (1/(1+c x n))
    barrier_bytes: int = 0             # > 0: barriers live in the LDS (this many bytes each), no
                                       # per-CU count limits them; 0: barrier_limit per CU
    stage_instr: float = 0.0           # instructions per wavefront a work-group runs once per pipeline
                                       # stage (its deepest queue's slots): setting the stage up and down
    turnover: float = 0.0              # cycles from a work-group's end to the next one's start on its
                                       # slot (retire and launch), at the kernel's clock
    att_inflight: float = 0.0          # > 0: bytes the CU's ATT may have requested and not yet received
                                       # (its outstanding cache-line requests x the line); past it the
                                       # unit waits until earlier bytes are in (cu_model.Model._admit)
    load_inflight: float = 0.0         #   the same for the wavefronts' own loads (NoATT), which go
                                       #   through the CU's vector memory path (L1, its MSHRs)
    dram_queue_service: float = 0.0    # cycles S, the DRAM's service time: its queueing delay under
                                       # load is S x u / (1 - u) at utilisation u
                                       # (memory.loaded_delay, memory.queue_delay)
    dram_queue_mode: int = 0           # 0: an ideal DRAM (no delay); 1: u from the configuration's bytes
                                       # in flight (a closed loop, once); 2: from the simulated utilisation;
                                       # 3: the DRAM share runs at the closed loop's u (no delay added);
                                       # 4: the same u by exact MVA (memory.mva_utilisation)
    load_release: float = 0.0          # cycles of a load's round trip outside the L1 (the CU's issue
                                       #   pipeline, the return): its entry is free that long before
                                       #   the data is at the CU (the L1 frees it when it responds)

    @property
    def flops_per_cycle(self) -> float:
        return const("FLOPS_PER_MUL") * self.simd_muls

    @property
    def max_waves(self) -> int:
        return self.pools * self.waves_per_pool


def gst_name(g: dict) -> str:
    """The GST's name field as text."""
    return g["name"].rstrip(b"\0").decode("utf-8", "replace") if isinstance(g["name"], bytes) else str(g["name"])


def machine(g: dict, core_clock_mhz: int = 0, active_cus: int = 0, lds_bytes: int = 0,
            unlimited_lds: bool = False) -> Machine:
    """The machine for GST fields `g` (quco.gst.tables.unpack) and a partition (0 = all).
    The GST's latencies are core cycles at its core_clock_mhz; the Machine's are core cycles
    at the partition's clock."""
    nominal = g["core_clock_mhz"]
    name = gst_name(g)
    # the GST file's own [model] table when it came with one (perfmodel/model_table.py), else its preset's by name
    d = {**GPU_FIELDS, **dict(g["model"])} if "model" in g else description(name)
    slices, slice_bytes = d["l2_slices"], d["l2_slice_bytes"]
    clock = core_clock_mhz or nominal
    big = 1 << 40
    # Table II's latencies are CU round trips to each level: the part of a DRAM round trip beyond
    # an L2 hit is DRAM time, fixed in ns, so its cycle count scales with the clock
    lat_dram = g["lat_l2_cycles"] + max(g["lat_dram_cycles"] - g["lat_l2_cycles"], 0) * clock / nominal
    return Machine(
        clock_mhz=float(clock), cus=active_cus or g["num_cus"],
        lds_bytes=big if unlimited_lds else (lds_bytes or g["lds_bytes"]),
        simd_muls=g["simd_muls_per_cycle"], pools=g["wavefront_pools"],
        # ATT and L2: core cycles at the nominal clock, kept under DVFS (they run on the core clock).
        lat_att=float(g["lat_att_cycles"]), lat_l2=float(g["lat_l2_cycles"]),
        lat_dram=lat_dram,
        # sustained, not the specification's peak (a measured copy ceiling where there is one)
        dram_bytes_per_cycle=g["dram_bw_mbps"] * d["dram_sustained"] / clock,
        cache_line=g["cache_line_bytes"],
        barrier_limit=big if unlimited_lds else g["barrier_limit"],
        l2_bytes=slices * slice_bytes, l2_bytes_per_cycle=float(slices * const("L2_SLICE_BYTES_PER_CYCLE")),
        waves_per_pool=d["waves_per_pool"], wave_instr=float(d["wave_instr_cycles"]),
        att_issue=float(d["att_issue_cycles"]), att_box_rows=d["att_box_rows"],
        step_instr=float(d["step_instr"]), queue_instr=float(d["queue_instr"]), store_instr=float(d["store_instr"]),
        launch=d["launch_ns"] * clock / 1000.0, lds_reserved=d["lds_reserved_per_wg"],
        barrier_bytes=d["barrier_bytes"], dep_instr=float(d["dep_instr_cycles"]),
        dram_stream_cost=float(d["dram_stream_cost"]), code_on_pools=int(d["code_on_pools"]),
        stage_instr=float(d["stage_instr"]), turnover=d["wg_turnover_ns"] * clock / 1000.0,
        att_inflight=float(d["att_inflight_lines"] * g["cache_line_bytes"]),
        load_inflight=float(d["load_inflight_lines"] * g["cache_line_bytes"]),
        # latency under load: an M/M/1 station whose idle residence is the DRAM's part of the round
        # trip (beyond an L2 hit), S = lat_dram - lat_l2 (memory.loaded_delay); evaluated, not shipped
        dram_queue_service=max(lat_dram - g["lat_l2_cycles"], 0.0), dram_queue_mode=int(d["dram_queueing"]),
        load_release=float(d["load_release_cycles"]))


def dram_efficiency(nbytes: float) -> float:
    """Fraction of peak DRAM bandwidth a descriptor of `nbytes` contiguous bytes streams at."""
    return nbytes / (nbytes + const("DRAM_ROW_OVERHEAD_BYTES"))
