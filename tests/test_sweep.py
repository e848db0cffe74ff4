"""quco.util.parallel and quco.harness.sweep: the same rows, in task order, in process, on a process pool and on
Dask; atomic tables; GST variants checked as the unit checks them."""
import csv
import operator
import os
import sys
import time

import pytest
from distributed import Client, LocalCluster

from quco.gst import tables
from quco.kernel.format import Kernel
from quco.harness import sweep
from quco.harness.sweep import gst_variants, sweep_task
from quco.util import parallel
from quco.util.parallel import SweepError, run, write_table

STREAM, STATION = 0, 1
# Small kernels so an exhaustive search takes a fraction of a second.
SMALL_DOT = Kernel("small-dot", 0.5, consumer_wavefronts=8, queues=[(2048, STREAM, 2)] * 2, work_groups=64, output_bytes=2)
SMALL_MM = Kernel("small-mm", 30.0, consumer_wavefronts=8, queues=[(1024, STREAM, 2)] * 4 + [(1024, STATION, 2)],
                  work_groups=128, output_bytes=512)
BANDWIDTHS = [256000, 512000]
ROW_KEYS = ["gpu", "kernel", "dram_bw_mbps", "quco_status", "quco_config", "quco_cycles",
            "best_config", "best_cycles", "gap_pct", "ideal_cycles"]


@pytest.fixture(scope="module")
def r9():
    return tables.unpack(tables.load("r9-nano"))


@pytest.fixture(scope="module")
def tasks(r9):
    return sweep.make_tasks(r9, {"dram_bw_mbps": BANDWIDTHS}, [SMALL_DOT, SMALL_MM])


@pytest.fixture(scope="module")
def serial_rows(tasks):
    return run(sweep_task, tasks, workers=1)


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as c:
        yield c


def test_rows_follow_the_tasks(tasks, serial_rows):
    assert [(t.overrides["dram_bw_mbps"], t.work.name) for t in tasks] == [
        (256000, "small-dot"), (256000, "small-mm"), (512000, "small-dot"), (512000, "small-mm")]
    for task, rows in zip(tasks, serial_rows):
        (row,) = rows
        assert list(row) == ROW_KEYS
        assert (row["gpu"], row["kernel"], row["dram_bw_mbps"]) == (
            "R9 Nano", task.work.name, task.overrides["dram_bw_mbps"])
        assert row["quco_status"] == "configured"
        # QuCo's pick lies in the exhaustive space (tiles 64..8192, slots 1..8 on the R9 Nano)
        assert row["best_cycles"] <= row["quco_cycles"]
        assert row["gap_pct"] == pytest.approx(100 * (row["quco_cycles"] / row["best_cycles"] - 1))


def test_less_bandwidth_slows_the_memory_bound_kernel(serial_rows):
    dot = [rows[0] for rows in serial_rows if rows[0]["kernel"] == "small-dot"]
    half, full = sorted(dot, key=lambda r: r["dram_bw_mbps"])
    assert half["best_cycles"] > full["best_cycles"]
    assert half["ideal_cycles"] > full["ideal_cycles"]


def test_quco_that_cannot_configure_gives_an_empty_row(r9):
    # 16 queues: metadata 768 B + 16 x one 64-element fp16 slot = 2,816 B > 2,048 B of LDS
    wide = Kernel("wide", 1.0, consumer_wavefronts=8, queues=[(4096, STREAM, 2)] * 16, work_groups=64)
    (task,) = sweep.make_tasks(r9, {"lds_bytes": [2048]}, [wide])
    (row,) = sweep_task(task)
    assert row["quco_status"] == "no configuration fits the LDS"
    assert row["quco_config"] is row["quco_cycles"] is row["gap_pct"] is None
    assert row["best_config"] is row["best_cycles"] is None  # nothing fits the search either
    assert row["ideal_cycles"] > 0                          # the ideal has unlimited LDS


def test_process_pool_gives_the_same_rows(tasks, serial_rows):
    assert run(sweep_task, tasks, workers=2) == serial_rows


def test_dask_client_and_address_give_the_same_rows(tasks, serial_rows, cluster):
    with Client(cluster, set_as_default=False) as client:
        assert run(sweep_task, tasks, scheduler=client) == serial_rows
        assert client.status == "running"  # the caller's client stays open
    assert run(sweep_task, tasks, scheduler=cluster.scheduler_address) == serial_rows


def slow_start(i: int) -> int:
    """-i, slowly for the first tasks, so the first chunk finishes last."""
    time.sleep(0.02 if i < 20 else 0)
    return -i


@pytest.mark.parametrize("how", ["in-process", "pool", "pool-chunk-1", "dask", "local-dask"])
def test_results_keep_task_order_and_progress_counts_up(how, cluster):
    n = 200  # chunks of 13 (2 workers x 8 chunks each)
    calls = []
    kw = {"in-process": dict(workers=1), "pool": dict(workers=2), "pool-chunk-1": dict(workers=2, chunk=1),
          "local-dask": dict(scheduler="local-dask"),
          "dask": dict(scheduler=cluster.scheduler_address)}[how]
    assert run(slow_start, range(n), progress=lambda d, t: calls.append((d, t)), **kw) == [-i for i in range(n)]
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == n and {t for _, t in calls} == {n}


def test_workers_and_chunk_must_be_positive():
    for kw in (dict(workers=0), dict(chunk=0)):
        with pytest.raises(ValueError, match=f"{next(iter(kw))} must be at least 1"):
            run(operator.neg, [1, 2], **kw)


def test_a_failing_task_raises_its_error():
    with pytest.raises(TypeError):
        run(operator.neg, [1, 2, "three", 4], workers=2)


def test_unreachable_scheduler_fails_fast(monkeypatch):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 0.5)  # the CLI's own bound is tested in test_hostile_24.py
    import distributed  # noqa: F401 -- loaded before the clock starts: its import is seconds on a loaded machine
    t0 = time.monotonic()
    with pytest.raises(SweepError, match="cannot reach Dask scheduler tcp://127.0.0.1:1"):
        run(operator.neg, [1, 2], scheduler="tcp://127.0.0.1:1")
    # the bound is the point: far below distributed's own connect timeout (30 s), generous for load
    assert time.monotonic() - t0 < parallel.CONNECT_TIMEOUT_S + 20


def test_a_scheduler_without_workers_fails_after_the_wait(monkeypatch):
    monkeypatch.setattr(parallel, "WORKER_WAIT_S", 1)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty:
        with pytest.raises(SweepError, match=f"no Dask worker joined scheduler {empty.scheduler_address} in 1 s"):
            run(operator.neg, [1, 2], scheduler=empty.scheduler_address)


# ---------------------------------------------------------------- tables
ROWS = [{"gpu": "R9 Nano", "kernel": "a", "cycles": 1.5},
        {"gpu": "MI100", "kernel": "b", "cycles": 2, "gap_pct": None, "note": "x,y"}]


def test_csv_round_trips_with_the_union_of_columns(tmp_path):
    path = write_table(ROWS, tmp_path / "t.csv")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == ["gpu", "kernel", "cycles", "gap_pct", "note"]
        assert list(reader) == [
            {"gpu": "R9 Nano", "kernel": "a", "cycles": "1.5", "gap_pct": "", "note": ""},
            {"gpu": "MI100", "kernel": "b", "cycles": "2", "gap_pct": "", "note": "x,y"}]


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_failed_write_leaves_the_old_file_intact(tmp_path):
    old = write_table(ROWS, tmp_path / "t.csv").read_bytes()
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(OSError, match="dir.csv: is a folder"):
        write_table(ROWS, tmp_path / "dir.csv")

    class Unprintable:
        def __str__(self):
            raise RuntimeError("no text")
    with pytest.raises(RuntimeError):  # fails half-way through the rows
        write_table(ROWS + [{"gpu": Unprintable()}], tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_bytes() == old
    assert _leftovers(tmp_path) == []


def test_parquet_without_pyarrow_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    with pytest.raises(SweepError, match=r"pip install pyarrow.*\.csv"):
        write_table(ROWS, tmp_path / "t.parquet")
    assert os.listdir(tmp_path) == []


def test_parquet_round_trips(tmp_path):
    import pyarrow.parquet as pq  # in the test extra: make test runs this
    path = write_table(ROWS, tmp_path / "t.parquet")
    assert pq.read_table(path).to_pylist() == [
        {"gpu": "R9 Nano", "kernel": "a", "cycles": 1.5, "gap_pct": None, "note": None},
        {"gpu": "MI100", "kernel": "b", "cycles": 2.0, "gap_pct": None, "note": "x,y"}]


# ---------------------------------------------------------------- GST variants
def test_variants_are_the_cartesian_product_in_order(r9):
    vary = {"dram_bw_mbps": [256000, 512000], "lat_dram_cycles": [300, 450], "lds_bytes": [32768, 65536]}
    out = gst_variants(r9, vary)
    assert [o for o, _ in out][:3] == [
        {"dram_bw_mbps": 256000, "lat_dram_cycles": 300, "lds_bytes": 32768},
        {"dram_bw_mbps": 256000, "lat_dram_cycles": 300, "lds_bytes": 65536},
        {"dram_bw_mbps": 256000, "lat_dram_cycles": 450, "lds_bytes": 32768}]
    assert len(out) == 8
    for overrides, g in out:
        assert {k: g[k] for k in overrides} == overrides
        assert {k: v for k, v in g.items() if k not in overrides} == {k: v for k, v in r9.items() if k not in overrides}


@pytest.mark.parametrize("vary, words", [
    ({"dram_bandwidth": [1]}, ["dram_bandwidth", "unknown", "dram_bw_mbps"]),
    ({"lds_bytes": [65536, 300000]}, ["lds_bytes", "300000", "1024..262144"]),
    ({"lds_bytes": [1100]}, ["lds_bytes", "1100", "multiple of 256"]),
    ({"cache_line_bytes": [96]}, ["cache_line_bytes", "96", "power of two"]),
    ({"max_tile_elems": [32]}, ["max_tile_elems", "32", "at least min_tile_elems = 64"]),
    ({"num_cus": [8.5]}, ["num_cus", "8.5", "integer"]),
])
def test_bad_variants_name_the_field_value_and_range(r9, vary, words):
    with pytest.raises(ValueError) as e:
        gst_variants(r9, vary)
    for w in words:
        assert w in str(e.value)
