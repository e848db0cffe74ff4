"""Hypothesis strategies for GSTs and launch records, valid and near-valid."""
from hypothesis import strategies as st

from quco.gst import abi, tables
from quco.host.device import pack_record

pow2 = lambda lo, hi: st.sampled_from([1 << k for k in range(lo, hi + 1)])  # noqa: E731


@st.composite
def gst_fields(draw):
    min_tile = draw(pow2(4, 9))
    return dict(
        magic=abi.GST_MAGIC, version=abi.GST_VERSION, size=abi.GST.size, name=b"hypothesis",
        core_clock_mhz=draw(st.integers(100, 3000)), num_cus=draw(st.integers(1, 304)),
        simd_muls_per_cycle=draw(st.sampled_from([16, 32, 64, 128, 256])),
        wavefront_pools=draw(st.integers(1, 8)), lat_att_cycles=draw(st.integers(0, 500)),
        lat_l1_cycles=draw(st.integers(0, 300)), lat_l2_cycles=draw(st.integers(0, 1000)),
        lat_dram_cycles=draw(st.integers(1, 2000)), dram_bw_mbps=draw(st.integers(1000, 8_000_000)),
        cache_line_bytes=draw(pow2(4, 8)), lds_bytes=256 * draw(st.integers(4, 1024)),
        barrier_limit=draw(st.integers(2, 256)), min_tile_elems=min_tile,
        max_tile_elems=draw(pow2(min_tile.bit_length() - 1, 14)), max_slots=draw(st.integers(1, 16)),
        max_queues=draw(st.integers(1, 16)))


def gst_bytes():
    return gst_fields().map(tables.pack)


@st.composite
def records(draw, gst: dict | None = None):
    """Launch records that are valid for `gst` (or near it when gst is None)."""
    num_cus = gst["num_cus"] if gst else 64
    lds = gst["lds_bytes"] if gst else 65536
    nq_max = min(16, gst["max_queues"]) if gst else 16
    n = draw(st.integers(1, nq_max))
    ci = draw(st.one_of(st.floats(0, 1e6, width=32, allow_nan=False),
                        st.sampled_from([0.0, 0.25, 1.0, 1 / 6, 3.99, 4.0, 4.01, 97.5])))
    header = dict(magic=abi.LAUNCH_MAGIC, flags=draw(st.integers(0, abi.FLAGS_ALL)), compute_intensity=ci,
                  consumer_wavefronts=draw(st.integers(1, 64)),
                  core_clock_mhz=draw(st.one_of(st.just(0), st.integers(1, 10_000))),
                  active_cus=draw(st.integers(0, num_cus)),
                  lds_bytes=draw(st.one_of(st.just(0), st.integers(0, lds // 128).map(lambda k: 128 * k))))
    queues = [dict(length=draw(st.one_of(st.integers(1, 100_000), st.integers(1, 2**32 - 1))),
                   type=draw(st.integers(0, 1)), elem_size=draw(st.sampled_from(abi.ELEM_SIZES)))
              for _ in range(n)]
    return pack_record(header, queues)
