"""What the performance model knows about the hardware: the GST's figures, the partition's,
and the few constants the GST does not carry, each declared once with its source.

docs/perf-model.md explains how each enters the model. The GST's latencies are times,
counted in cycles of the 1,000 MHz reference LAT_REF_MHZ (ns), as the firmware reads them;
the model turns them into core cycles at the GST's nominal clock. Under a DVFS clock the
part of a DRAM round trip beyond an L2 hit stays a fixed time (so its cycle count scales
with the clock), while the L2, ATT and LDS run on the core clock (so their cycle counts do
not). DRAM bandwidth is fixed in bytes per second, so a lower clock gives more bytes per cycle.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..gst import abi

# name: (value, unit, source). Assumptions say so; none is fitted to QuCo's picks.
CONSTANTS = {
    "FLOPS_PER_MUL": (2, "FLOPs", "a SIMD lane's fused multiply-add counts as two FLOPs "
                      "(GCN: 64 FMA lanes per CU = 128 FLOPs per cycle)"),
    "WAVES_PER_POOL": (10, "wavefronts", "GCN/CDNA: each SIMD keeps 10 wavefronts in flight, 40 per CU "
                       "(AMD GCN architecture; CLRX GCN timings occupancy table)"),
    "WAVE_INSTR_CYCLES": (4, "cycles", "GCN issues one instruction of a wavefront every 4 cycles "
                          "(16-lane SIMD, 64-item wavefront; CLRX GCN timings)"),
    "LDS_LATENCY": (64, "cycles", "assumption: an LDS round trip, which is what a barrier wake-up "
                    "and a slot release cost; GCN-class LDS latencies are tens of cycles, no "
                    "public figure for ATT barriers"),
    "ATT_DESC_CYCLES": (4, "cycles", "assumption: the ATT unit accepts one descriptor per "
                        "wavefront instruction issue (WAVE_INSTR_CYCLES)"),
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

# L2 per GPU (the GST has no L2 fields): (slices, bytes per slice), keyed by the GST's name.
L2_BY_GPU = {
    "R9 Nano": ((16, 256 << 10), "QuCo Table II: L2 16 x 256 KB 16-way (MGPUSim's R9 Nano)"),
    "MI100": ((32, 256 << 10), "QuCo Table II: L2 32 x 256 KB 16-way"),
    "Radeon 530": ((8, 256 << 10), "QuCo Table II: L2 8 x 256 KB 16-way"),
    "MI300X": ((128, 256 << 10), "AMD CDNA 3 whitepaper: 4 MB L2 per XCD (16 channels), 8 XCDs"),
    "H100 SXM": ((80, 640 << 10), "NVIDIA H100 whitepaper: 50 MB L2; slice count an assumption"),
}
L2_DEFAULT = ((16, 256 << 10), "assumption for a GST not listed: the R9 Nano's L2")


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

    @property
    def flops_per_cycle(self) -> float:
        return const("FLOPS_PER_MUL") * self.simd_muls

    @property
    def max_waves(self) -> int:
        return self.pools * const("WAVES_PER_POOL")


def machine(g: dict, core_clock_mhz: int = 0, active_cus: int = 0, lds_bytes: int = 0,
            unlimited_lds: bool = False) -> Machine:
    """The machine for GST fields `g` (quco.gst.tables.unpack) and a partition (0 = all).
    The GST's latencies are ns (cycles of LAT_REF_MHZ); the Machine's are core cycles."""
    nominal = g["core_clock_mhz"]
    ref = abi.const("LAT_REF_MHZ")
    name = g["name"].rstrip(b"\0").decode("utf-8", "replace") if isinstance(g["name"], bytes) else str(g["name"])
    (slices, slice_bytes), _ = L2_BY_GPU.get(name, L2_DEFAULT)
    clock = core_clock_mhz or nominal
    big = 1 << 40
    return Machine(
        clock_mhz=float(clock), cus=active_cus or g["num_cus"],
        lds_bytes=big if unlimited_lds else (lds_bytes or g["lds_bytes"]),
        simd_muls=g["simd_muls_per_cycle"], pools=g["wavefront_pools"],
        # ATT and L2: core cycles at the nominal clock, kept under DVFS (they run on the core clock).
        lat_att=g["lat_att_cycles"] * nominal / ref, lat_l2=g["lat_l2_cycles"] * nominal / ref,
        # Table II's latencies are CU round trips to each level: the part of a DRAM round
        # trip beyond an L2 hit is DRAM time, fixed in ns, so it scales with the clock.
        lat_dram=g["lat_l2_cycles"] * nominal / ref + max(g["lat_dram_cycles"] - g["lat_l2_cycles"], 0) * clock / ref,
        dram_bytes_per_cycle=g["dram_bw_mbps"] / clock,
        cache_line=g["cache_line_bytes"],
        barrier_limit=big if unlimited_lds else g["barrier_limit"],
        l2_bytes=slices * slice_bytes, l2_bytes_per_cycle=float(slices * const("L2_SLICE_BYTES_PER_CYCLE")))


def dram_efficiency(nbytes: float) -> float:
    """Fraction of peak DRAM bandwidth a descriptor of `nbytes` contiguous bytes streams at."""
    return nbytes / (nbytes + const("DRAM_ROW_OVERHEAD_BYTES"))
