"""Fan-out of independent, pure evaluations, and the tidy tables they produce.

    rows = [row for rows in run(one_task, tasks, scheduler="tcp://host:8786") for row in rows]
    write_table(rows, "rows.csv")

`run` keeps task order whatever runs the tasks: this process (workers=1), a local
process pool, or a Dask cluster (its workers need this package installed). Every task
is a pure function of its arguments, so all three give the same rows.
"""
from __future__ import annotations

import contextlib
import csv
import math
import multiprocessing
import os
import re
import signal
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from .atomic import atomic_path, check_target, plan
from .userinput import printable

CONNECT_TIMEOUT_S = 3        # an unreachable scheduler fails in this time, not never
WORKER_WAIT_S = 60           # a scheduler without workers: wait this long for one to join
CHUNKS_PER_WORKER = 8        # chunks per worker: the last one left running is short
MAX_CHUNK = 64               # tasks of 1-50 ms: 64 of them amortise a round trip (~1 ms),
                             # and progress still moves every few seconds


class SweepError(Exception):
    """A sweep that cannot run (scheduler, output format) or a task that failed."""


# ---------------------------------------------------------------- running tasks
def _apply_chunk(fn, chunk: list) -> list:
    return [fn(t) for t in chunk]


def chunk_size(n_tasks: int, workers: int) -> int:
    return max(1, min(MAX_CHUNK, math.ceil(n_tasks / (workers * CHUNKS_PER_WORKER))))


def _chunks(tasks: list, size: int) -> list[list]:
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


def run(fn, tasks, scheduler=None, workers: int | None = None, progress=None,
        chunk: int | None = None) -> list:
    """[fn(t) for t in tasks], in task order. `fn` must be a picklable top-level function.

    scheduler: None (a local process pool of `workers`, default os.cpu_count(); workers=1
    runs here without a pool), "tcp://host:port" (a Dask scheduler), "local-dask" (a Dask
    LocalCluster of `workers` processes, default 2, for this call) or a dask Client.
    progress: optional callback(done, total). chunk: tasks per round trip (default from
    the task and worker counts; 1 suits tasks of a second or more)."""
    tasks = list(tasks)
    for name, v in (("workers", workers), ("chunk", chunk)):
        if v is not None and v < 1:
            raise ValueError(f"{name} must be at least 1, got {v}")
    report = progress or (lambda done, total: None)
    if scheduler is None:
        if (workers or os.cpu_count() or 1) == 1 or len(tasks) <= 1:
            out = []
            for t in tasks:
                out.append(fn(t))
                report(len(out), len(tasks))
            return out
        return _run_pool(fn, tasks, workers or os.cpu_count(), report, chunk)
    with _dask_client(scheduler, workers) as client:
        return _run_dask(client, fn, tasks, report, chunk)


def _start_fork_server() -> None:
    """Start multiprocessing's fork server with SIGINT blocked. The mask survives its exec and
    every worker forked from it inherits it, so Ctrl-C (which a terminal sends to the whole
    process group) stays pending in the workers and acts only here, where _run_pool ends them:
    no worker prints a KeyboardInterrupt traceback, not even one starting up (the server itself
    sets SIGINT to SIG_IGN, which drops its own pending one). Here a Ctrl-C in this moment stays
    pending and acts once the mask is restored.

    Never SIG_IGN in this process: a signal that arrived while it was ignored would be lost, and
    the CLI would wait for the whole sweep. Two ways that happened (one run in ten of
    tests/test_hostile_24.py's group Ctrl-C "while the pool starts"): CPython's
    resource_tracker.ensure_running() *unblocks* SIGINT and SIGTERM once it has spawned the
    tracker, so it is started first, outside the window; and an ignored SIGINT during the
    fork server's spawn."""
    from multiprocessing import forkserver, resource_tracker
    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    resource_tracker.ensure_running()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # blocked: kept pending here
    try:
        forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextlib.contextmanager
def _signals_deferred():
    """SIGINT and SIGTERM wait while the pool starts its workers, then act: a signal in the
    middle of a start (inside the executor's locks) would leave a worker this process does not
    know yet, to die later with a traceback of its own, or a lock that shutdown() then waits on.
    (Blocking the signals would not do: another thread, the executor's, would take them.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {sig: signal.signal(sig, lambda signum, frame: got.append(signum)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        if got:
            signal.raise_signal(got[0])  # now, through the handler it would have met


def _run_pool(fn, tasks: list, workers: int, report, chunk: int | None) -> list:
    chunks = _chunks(tasks, chunk or chunk_size(len(tasks), workers))
    results: list = [None] * len(chunks)
    done = 0
    # forkserver: forking a process that runs threads (a Dask client, a progress bar) can
    # deadlock the child; the pool's workers fork from a clean server process instead.
    ctx = multiprocessing.get_context("forkserver")
    _start_fork_server()
    pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=ctx)
    try:
        with _signals_deferred():  # the submits start the workers: each is known before a signal acts
            index = {pool.submit(_apply_chunk, fn, c): i for i, c in enumerate(chunks)}
        for fut in as_completed(index):
            results[index[fut]] = fut.result()
            done += len(chunks[index[fut]])
            report(done, len(tasks))
    except BaseException:
        # Ctrl-C, SIGTERM (cli/main.py raises it here) or a failed task: end the workers now
        # rather than let them finish their chunks; shutdown() then reaps them
        for proc in multiprocessing.active_children():  # also one started but not yet the pool's
            with contextlib.suppress(OSError):
                proc.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [r for chunk in results for r in chunk]


def check_scheduler(address: str) -> None:
    """A --scheduler a user typed: "local-dask" or PROTOCOL://HOST:PORT (tcp://10.0.0.5:8786)."""
    if address != "local-dask" and not re.fullmatch(r"[a-z]+://[^\s/]+:\d{1,5}", address):
        raise SweepError(f"--scheduler {printable(address)!r}: expected a Dask scheduler address "
                         "PROTOCOL://HOST:PORT (e.g. tcp://127.0.0.1:8786) or local-dask")


@contextlib.contextmanager
def _dask_client(scheduler, workers: int | None):
    """A Client for `scheduler`; one this call opened is closed afterwards."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        raise SweepError(f"a Dask scheduler needs dask[distributed]: pip install 'dask[distributed]' ({e})") from e
    if not isinstance(scheduler, str):
        yield scheduler  # the caller's Client: theirs to close
        return
    if scheduler == "local-dask":
        # ":0": any free port; the scheduler serves HTTP even without a dashboard, and
        # its default 8787 may be taken by another cluster
        with LocalCluster(processes=True, n_workers=workers or 2, threads_per_worker=1,
                          dashboard_address=":0") as cluster, \
                Client(cluster, set_as_default=False) as client:
            yield client
        return
    _handshake(scheduler)
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, ValueError, TypeError) as e:
        raise SweepError(f"cannot reach Dask scheduler {scheduler}: {e}") from e
    with client:
        yield client


def _handshake(scheduler: str) -> None:
    """Connect to `scheduler` and exchange Dask's handshake within CONNECT_TIMEOUT_S.
    distributed bounds the TCP connect but then waits for the peer's handshake for ever, so
    a port that accepts and never answers (another program, a stuck scheduler) would hang
    the Client; this answers it in bounded time first."""
    import asyncio

    from distributed.comm import connect

    async def shake():
        comm = await connect(scheduler, timeout=CONNECT_TIMEOUT_S)
        await comm.close()
    try:
        asyncio.run(asyncio.wait_for(shake(), CONNECT_TIMEOUT_S + 1))
    except (TimeoutError, asyncio.TimeoutError):
        raise SweepError(f"Dask scheduler {scheduler}: no answer within {CONNECT_TIMEOUT_S + 1} s (something "
                         "accepts the connection but does not speak Dask's protocol, or the scheduler is stuck)") from None
    except (OSError, ValueError, TypeError) as e:
        raise SweepError(f"cannot reach Dask scheduler {scheduler}: {e}") from None


def _run_dask(client, fn, tasks: list, report, chunk: int | None) -> list:
    from distributed import as_completed as dask_completed
    if not client.nthreads():  # tasks would wait forever
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError as e:
            raise SweepError(f"no Dask worker joined scheduler {client.scheduler.address} "
                             f"in {WORKER_WAIT_S} s") from e
    slots = sum(client.nthreads().values())
    chunks = _chunks(tasks, chunk or chunk_size(len(tasks), slots))
    if not chunks:
        return []
    futures = client.map(_apply_chunk, [fn] * len(chunks), chunks, pure=True)
    size = {f.key: len(c) for f, c in zip(futures, chunks)}
    done = 0
    try:
        for fut in dask_completed(futures, loop=client.loop):
            done += size[fut.key]
            report(done, len(tasks))
        results = client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise
    return [r for chunk in results for r in chunk]


# ---------------------------------------------------------------- writing tables
def columns(rows: list[dict]) -> list[str]:
    """Union of the rows' keys in first-seen order."""
    return list(dict.fromkeys(k for r in rows for k in r))


TABLE_FORMATS = (".csv", ".parquet")


def check_table_path(path) -> None:
    """Refuse, before a sweep runs, a table path write_table could not write: a suffix other
    than .csv or .parquet (a descriptor such as /dev/stdout takes CSV), Parquet without
    pyarrow, a target that is no file (util/atomic.py)."""
    if str(path) == "":
        raise SweepError("no table file given (an empty name); expected a .csv or .parquet file")
    descriptor = plan(path)[0] == "fd"  # /dev/stdout, /dev/fd/N: CSV, whatever the name
    path = Path(path)
    if path.suffix.lower() not in TABLE_FORMATS and not descriptor:
        raise SweepError(f"{printable(str(path))}: the table is written as CSV (.csv) or Parquet "
                         f"(.parquet); give a file name ending in one of them")
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise SweepError(f"{path}: writing Parquet needs pyarrow (pip install pyarrow); "
                             "or write a .csv file") from None
    check_target(path)


def write_table(rows: list[dict], path) -> Path:
    """A tidy table: Parquet when `path` ends in .parquet (needs pyarrow), else CSV (.csv or a
    descriptor such as /dev/stdout)."""
    path = Path(path)
    check_table_path(path)
    cols = columns(rows)
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        table = pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
        return path
    with atomic_path(path) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=cols)
            writer.writeheader()
            writer.writerows(rows)
    return path
