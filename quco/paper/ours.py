"""Our side of the paper: the only module that calls the firmware, the performance model and
the workload runner. Every source is a plain, picklable dict, computed by one task:

    ("launch", gpu)          the firmware (quco.host.device) on the GPU's Table III kernels: picks,
                             retired instructions and cost of each cold launch
    ("kernel", gpu, stem)    quco.harness.evaluate.kernel_rows: Fig. 6 cases, Fig. 7 ablation
    ("workload", name)       quco.workloads runner + baselines (Fig. 8, 9) on the file's GPU
    ("dvfs", trace)          quco.workloads.dvfs.compare on Whisper-Tiny (Fig. 12)
    ("portability",)         quco.harness.evaluate.portability over the three GPUs' Fine-Tuned
                             picks (Fig. 1); made from the kernel sources, after them
    ("firmware",)            the firmware image itself: ROM and data bytes it takes, its digest, the
                             GST presets' sizes (Section VI)
    ("hardware",)            the real-hardware section: the H100 measurements (HARDWARE_DATA, in
                             quco.perfmodel.hardware's format) against the model on HARDWARE_GPU, per
                             kernel x size (hardware.compare()'s rows: the measured cost of QuCo's firmware
                             pick and of the model's best, the rank correlation), every measured point
                             with its modelled time (the figure, the chances), and the best plain-load
                             time over the best TMA time (ATT vs NoATT, measured; the model's beside it)
    ("hardware", "heldout")  the same rows from the model refitted without the kernel's family
                             (quco.perfmodel.fit.leave_one_out): the model's evidence on this data

quco+'s twins (the scorecard's `plus-*` rows; quco+ is our second rule set, not the paper's:
FLAG_QUCO_PLUS in every launch record, docs/algorithm.md): a key with PLUS appended is the same
computation with the flag. ("launch", gpu, PLUS) is a task of its own (a few launches);
("workload", name, PLUS) and ("hardware", PLUS) are computed in the task of the paper's set's
source, where the model's evaluations they need (Fine-Tuned per layer, every measured point) are
cached, and split off after it (compute()).

`compute(keys, ...)` fans the tasks out with quco.util.parallel.run (a process pool, or
Dask with a scheduler). A task that fails returns {"error": message} instead of raising:
the claims that need it say "could not compute", the others are still judged.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import time
from pathlib import Path

from ..examples import KERNELS, WORKLOADS
from ..gst import tables
from ..gst import abi
from ..host.device import QUCO_CLOCK_MHZ, Device, firmware_path
from ..kernel.format import load_kernel
from ..perfmodel.work import STREAMING, Config

GPUS = ("r9-nano", "mi100", "radeon-530")     # Table III's three; Fig. 1 and 10 use them all
DVFS_GPU, DVFS_WORKLOAD = "mi100", "whisper-tiny"   # QuCo Sec. V: Whisper-Tiny on the MI100
PROFILE = "cv32e40p"                           # the unit's timing profile (docs/cost-model.md)


def kernel_dir(gpu: str):
    """Table III's kernels at `gpu`'s sizes: examples/kernels/<gpu>/, the R9 Nano's at the top."""
    own = KERNELS / gpu
    return own if own.is_dir() else KERNELS


# Table III's order, which the paper's figures keep; other bundled kernels follow by name
TABLE_III = ("elementwise-k", "elementwise", "sumvectors", "dot-product", "matrix-vector", "matrix-matrix",
             "matrix-matrix-reduction", "batched-matrix-matrix")


def stems(gpu: str) -> list[str]:
    found = {p.stem for p in kernel_dir(gpu).glob("*.json")}
    return [s for s in TABLE_III if s in found] + sorted(found - set(TABLE_III))


def kernel(gpu: str, stem: str):
    return load_kernel(kernel_dir(gpu) / f"{stem}.json")


@functools.lru_cache(maxsize=None)
def workload_gpu(name: str) -> str:
    """The GPU a bundled workload names (its "gpu" field), else the R9 Nano: read, not expanded."""
    with open(WORKLOADS / f"{name}.json", encoding="utf-8") as f:
        return json.load(f).get("gpu") or "r9-nano"


def gpus_of(key: tuple) -> set[str]:
    """The GPUs a source runs on (for `--gpu`)."""
    kind = key[0]
    if kind in ("launch", "kernel"):
        return {key[1]}
    if kind == "workload":
        return {workload_gpu(key[1])}
    if kind == "dvfs":
        return {DVFS_GPU}
    if kind == "hardware":
        return {HARDWARE_GPU}   # the measured GPU's preset: `--gpu h100-sxm` selects the section alone
    return set(GPUS)


# ---------------------------------------------------------------- one task per source
def source(task) -> dict:
    """Top-level and picklable: what parallel.run calls in a worker. (key, firmware) or (key,
    firmware, plus): with plus, the result carries quco+'s twin under PLUS (compute() splits it off)."""
    key, firmware, *plus = task
    start = time.process_time()
    try:
        out = _SOURCES[key[0]](*key[1:], firmware=firmware, **({"plus": True} if any(plus) else {}))
    except Exception as e:   # reported on the claims that need it, never hidden
        out = {"error": f"{type(e).__name__}: {e}"}
    # the CPU time it took, and the worker's CPU before it (its start-up, on its first task):
    # bench/paper.py shows where the time goes; never in a row or a file
    out[SECONDS] = time.process_time() - start
    out[WORKER] = (os.getpid(), start)
    return out


SECONDS, WORKER = "_cpu_seconds", "_worker"
PLUS = "plus"          # the last part of a quco+ twin's key
RIDES = ("workload", "hardware")   # kinds whose twin is computed in the paper's set's task


def _twin(fn) -> dict:
    """quco+'s part of a source; its failure is its own (the paper's set's part is still judged)."""
    try:
        return fn()
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def _plus(kernel):
    """The kernel with quco+ chosen in its launch record."""
    return dataclasses.replace(kernel, flags=kernel.flags | abi.FLAG_QUCO_PLUS)


def _streaming(queues) -> list[bool]:
    return [t == STREAMING for _, t, _ in queues]


def _launch(gpu: str, rules: str = "", firmware=None) -> dict:
    """rules PLUS: quco+'s picks (the flag in the record), else the paper's set's."""
    if rules not in ("", PLUS):
        raise ValueError(f"launch source rules {rules!r}: expected none or {PLUS!r}")
    gst, out = tables.load(gpu), {}
    for stem in stems(gpu):
        k = kernel(gpu, stem)
        k = _plus(k) if rules == PLUS else k
        # a freshly booted unit per kernel: a cold launch (two kernels with the same queues and CI
        # class, as Elementwise and Sumvectors, send the same record: the second would hit the cache)
        dev = Device(gst, firmware, profile=PROFILE, clock_mhz=QUCO_CLOCK_MHZ)
        res = dev.launch(k)
        slots = [q.slots for q in res.queues]
        out[stem] = {"name": k.name, "ok": res.ok, "message": res.message, "tile": res.tile, "slots": slots,
                     "streaming": _streaming(k.queues), "cache_hit": res.cache_hit,
                     "label": _label(k, res.tile, slots) if res.ok else None,
                     "instructions": res.instructions, "reconf_cycles": res.cost.cycles, "reconf_ns": res.cost.ns,
                     "stack_bytes": dev.stack_high_water()}
    return {"gpu": gpu, "kernels": out, "firmware_sha256": _digest(firmware_path(firmware))}


def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _firmware(firmware=None) -> dict:
    """Section VI's memories against the image: what the ELF puts in ROM, the data buffer's static
    part (.data + .bss, up to __bss_end), and the GST each preset packs."""
    from ..emulator import elf
    path = firmware_path(firmware)
    image = elf.load(path)
    bss_end = image.addresses.get("__bss_end")
    return {"rom_bytes": image.text_bytes, "rom_size": abi.ROM.size, "data_size": abi.DATA.size,
            "data_static_bytes": None if bss_end is None else bss_end - abi.DATA.base,
            "gst_region": abi.GST_REGION.size, "gst_bytes": {g: len(tables.load(g)) for g in GPUS},
            "sha256": _digest(path)}


HARDWARE_GPU = "h100-sxm"     # the preset of the GPU the measurements were taken on
HARDWARE_DATA = None          # None: quco.perfmodel.hardware.DEFAULT_DATA (examples/hardware/, shipped)


def _hardware(part: str = "measured", firmware=None, plus: bool = False) -> dict:
    """The H100 rows (hardware.compare()'s, computed here so that the firmware is the scorecard's and
    the points are kept) or, for part "heldout", leave-one-kernel-family-out. A file that cannot be
    read raises hardware.HardwareDataError naming file, line and field: the claims say so.
    plus (part "measured"): also quco+'s rows under PLUS, its firmware pick read off the same points."""
    from ..perfmodel import hardware, precision
    from ..perfmodel.params import machine
    path = HARDWARE_DATA or hardware.DEFAULT_DATA
    measured = hardware.read(path)
    gst = tables.load(HARDWARE_GPU)
    head = {"gpu": HARDWARE_GPU, "data": str(path)}
    if part == "heldout":
        from ..perfmodel import fit
        rows = fit.leave_one_out(machine(tables.unpack(gst)), gst, measured)
        return {**head, "rows": [_plain_row(r, head) for r in rows], "measured": _measured_points(measured)}
    if part != "measured":
        raise ValueError(f"hardware source {part!r}: expected measured or heldout")
    from ..harness.evaluate import firmware_config
    results = hardware.compare(measured, gst, lambda g, k: firmware_config(g, k, firmware=firmware))
    model_att = {(r["kernel"], r["size"]): r["model"] for r in hardware.att_vs_noatt(measured, gst)}
    out = {**head, "rows": [_plain_row(r, head) for r in results],
           "points": {f"{r['kernel']}/{r['size']}": [[p.tile, p.slots, p.measured_us, p.model_us] for p in r["points"]]
                      for r in results},
           "measured": _measured_points(measured), "att": _att_vs_loads(measured, model_att),
           # the file's own noise (twin kernels): what a target must clear to mean something
           "noise": [{"size": n.size, "pairs": n.pairs, "sigma_pct": n.sigma_pct, "glitches": len(n.glitches)}
                     for n in precision.twin_noise(measured)]}
    if plus:   # the same rows, QuCo's pick quco+'s (the kernel compare() scaled to the row's grid)
        def twin():
            return {**head, "measured": out["measured"], "rows": [_plain_row(
                r | hardware.summarise(r["points"], firmware_config(
                    gst, _plus(hardware.scaled_kernel(r["kernel"], r["work_groups"])), firmware=firmware)), head)
                for r in results]}
        out[PLUS] = _twin(twin)
    return out


def _plain_row(r: dict, head: dict) -> dict:
    """hardware.compare()'s row: without the points, numbers as plain floats (JSON, CSV)."""
    return {k: (float(v) if isinstance(v, float) else v) for k, v in r.items() if k != "points"} | head


def _measured_points(measured) -> dict:
    """{"kernel/size": [measured us, ...]} of the TMA configurations that ran (the chances)."""
    out = {}
    for m in measured:
        if m.variant == "att" and m.fits and m.tile and m.slots:
            out.setdefault(f"{m.kernel}/{m.size}", []).append(m.time_us)
    return out


def _att_vs_loads(measured, model_att: dict) -> list[dict]:
    """Per kernel x size with both TMA ("att") and plain-load ("pointer") rows, measured: the best
    plain-load time over the best TMA time (`any`: the loads at any depth, 1 slot synchronous and
    more pipelined by the compiler's cp.async; `sync`: 1 slot only, the paper's NoATT) and the
    model's NoATT/Fine-Tuned over ATT/Fine-Tuned where the kernel is compared (hardware.att_vs_noatt).
    Above 1: ATT ahead."""
    best: dict = {}
    for m in measured:
        if m.fits and m.time_us and m.variant in ("att", "pointer"):
            b = best.setdefault((m.kernel, m.size), {})
            b[m.variant] = min(b.get(m.variant, m.time_us), m.time_us)
            if m.variant == "pointer" and m.slots == 1:
                b["sync"] = min(b.get("sync", m.time_us), m.time_us)
    return [{"kernel": k, "size": s, "any": b["pointer"] / b["att"], "sync": b["sync"] / b["att"] if "sync" in b else None,
             "model": model_att.get((k, s))} for (k, s), b in best.items() if "att" in b and "pointer" in b]


def _label(k, tile, slots) -> str:
    from ..perfmodel.work import Work
    return Config(tile, tuple(slots)).label(Work.of(k))


def _kernel(gpu: str, stem: str, firmware=None) -> dict:
    from ..harness import evaluate
    k = kernel(gpu, stem)
    gst = tables.load(gpu)
    rows = evaluate.kernel_rows(gpu, gst, k, firmware, ablations=True)
    by_pick, space = _space(k, gst)
    return {"gpu": gpu, "stem": stem, "name": k.name, "streaming": _streaming(k.queues), "rows": rows,
            "by_pick": by_pick, "space": space}


def _space(k, gst: bytes) -> tuple[dict, list]:
    """The exhaustive search Fine-Tuned makes (one tile for every queue, slots per run of identical
    queues), as (by_pick, space):
    by_pick {"tile/slots": cycles}: the best configuration with that tile and that many slots on
      every streaming queue (the stationary queues' at their best: the paper gives one count);
    space [[tile, streaming slots (None when they differ), cycles], ...]: every point, best first,
      for the chance that a random configuration passes a claim (measures.CHANCES).
    kernel_rows searched for the best alone (branch and bound); what it evaluated is cached."""
    from ..perfmodel import search
    from ..perfmodel.params import machine
    from ..perfmodel.work import Work
    g, work = tables.unpack(gst), Work.of(k)
    by_pick, space = {}, []
    for r in search.exhaustive(machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), g, work):   # best first
        streaming = {s for q, s in zip(work.queues, r.config.slots) if q.type == STREAMING}
        one = streaming.pop() if len(streaming) == 1 else None
        if one is not None:
            by_pick.setdefault(f"{r.config.tile}/{one}", r.outcome.cycles)
        space.append([r.config.tile, one, r.outcome.cycles])
    return by_pick, space


def _workload(name: str, firmware=None, plus: bool = False) -> dict:
    """plus: also quco+'s run under PLUS, in this process: its Fine-Tuned is this run's, cached."""
    from ..workloads import format
    w = format.load(WORKLOADS / f"{name}.json")
    out = _run_workload(name, w, firmware)
    if plus:
        out[PLUS] = _twin(lambda: _run_workload(name, dataclasses.replace(
            w, layers=[dataclasses.replace(lay, kernel=_plus(lay.kernel)) for lay in w.layers]), firmware))
    return out


def _run_workload(name: str, w, firmware) -> dict:
    from ..workloads import baselines, runner
    gpu = w.gpu or "r9-nano"
    session = runner.Session(gpu, firmware, profile=PROFILE)
    steps = runner.run(session, [runner.Tenant(w)])
    summary = baselines.compare(steps, session)[0]
    g_items = baselines.gst_key(session.g)
    layers = []
    for s in steps:
        m = session.machine(int(s.clock_mhz), s.active_cus, s.lds_bytes)
        fine = baselines.fine_tuned(m, g_items, s.work)   # cached: compare() searched it already
        layers.append({"index": s.layer.index, "name": s.layer.name, "type": s.layer.type,
                       "streaming": [q.type == STREAMING for q in s.work.queues],
                       "quco_tile": s.config.tile, "quco_slots": list(s.config.slots), "quco_config": s.label,
                       "quco_ns": s.run_ns, "fine_tile": fine[0].tile if fine else None,
                       "fine_slots": list(fine[0].slots) if fine else None, "fine_config": s.extra["fine_config"],
                       "fine_ns": s.extra["fine_ns"], "semi_config": s.extra["semi_config"],
                       "semi_ns": s.extra["semi_ns"]})
    return {"name": name, "title": w.name, "gpu": gpu, "summary": summary, "totals": runner.totals(steps),
            "layers": layers, "types": baselines.by_type(steps)}


def _dvfs(trace: str, firmware=None) -> dict:
    from ..workloads import dvfs, format
    w = format.load(WORKLOADS / f"{DVFS_WORKLOAD}.json")
    # clock_aware_best off: no claim reads the oracle's columns, and it doubles the time
    result = dvfs.compare(DVFS_GPU, w, dvfs.load_trace(trace), clock_aware_best=False, firmware=firmware,
                          profile=PROFILE)
    rows = []
    for r, hw, sw in zip(result["rows"], result["steps"]["hw"], result["steps"]["sw"]):
        rows.append({**r, "streaming": [q.type == STREAMING for q in hw.work.queues],
                     "hw_tile": hw.config.tile, "hw_slots": list(hw.config.slots),
                     "sw_tile": sw.config.tile, "sw_slots": list(sw.config.slots)})
    return {"trace": trace, "gpu": DVFS_GPU, "workload": w.name, "rows": rows, "summary": result["summary"]}


_SOURCES = {"launch": _launch, "kernel": _kernel, "workload": _workload, "dvfs": _dvfs, "firmware": _firmware,
            "hardware": _hardware}


def portability(kernel_sources: dict) -> list[dict]:
    """Fig. 1 from the kernel sources of every GPU (evaluate.portability's inputs: each
    (gpu, kernel)'s Fine-Tuned configuration and cycles, and its machine and work)."""
    from ..harness import evaluate
    from ..perfmodel.params import machine
    from ..perfmodel.work import Work
    best, models = {}, {}
    order = [("kernel", g, s) for g in GPUS for s in stems(g)]   # the panels in the paper's order
    for (_, gpu, stem), data in sorted(kernel_sources.items(), key=lambda kv: order.index(kv[0])):
        fine = next((r for r in data.get("rows", []) if r["case"] == "ATT/Fine-Tuned" and r["cycles"]), None)
        if fine is None:
            continue
        k = kernel(gpu, stem)
        best[(gpu, k.name)] = (Config(fine["tile"], tuple(int(s) for s in fine["slots"].split("/"))), fine["cycles"])
        g = tables.unpack(tables.load(gpu))
        models[(gpu, k.name)] = (machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k))
    return evaluate.portability(best, models)


# ---------------------------------------------------------------- the whole fan-out
# the long tasks first: the pool then ends on short ones (CPU seconds measured by bench/paper.py: the
# two hardware sources about 10 s each, DVFS 4 s, a workload 2-4 s)
_COST = {"hardware": 0, "dvfs": 1, "workload": 2, "kernel": 3, "launch": 4, "firmware": 5}


def _order(key: tuple) -> tuple:
    """Longest first, so that two workers end together (bench/paper.py: the Radeon 530's 9-queue
    kernels take 4-10 s, a vector kernel 1-1.5 s): among kernel sources, the GPU with the fewest CUs
    first (more work-groups per CU: a longer simulation of each configuration), then the kernels
    with more queues (a larger space to search)."""
    if key[0] != "kernel":
        return (_COST[key[0]], 0, 0, key)
    cus = tables.unpack(tables.load(key[1]))["num_cus"]
    return (_COST["kernel"], cus, -len(kernel(key[1], key[2]).queues), key)


def compute(keys, firmware=None, workers=None, scheduler=None, progress=None) -> dict:
    """{key: source} for `keys` (portability last, from the kernel sources it needs; a twin that
    rides on its paper's set's source, RIDES, from that source's task)."""
    from ..util import parallel
    keys = list(dict.fromkeys(keys))
    twins = [k for k in keys if k[0] in RIDES and k[-1] == PLUS]
    tasks = [k for k in keys if k[0] != "portability" and k not in twins]
    tasks += [k[:-1] for k in twins if k[:-1] not in tasks]
    if ("portability",) in keys:
        tasks += [("kernel", g, s) for g in GPUS for s in stems(g) if ("kernel", g, s) not in tasks]
    tasks.sort(key=_order)
    results = parallel.run(source, [(k, firmware, k + (PLUS,) in twins) for k in tasks], scheduler=scheduler,
                           workers=workers, chunk=1, progress=progress)
    out = dict(zip(tasks, results))
    for k in twins:   # the paper's set's source keeps its own keys only
        base = out[k[:-1]]
        out[k] = base if "error" in base else base.pop(PLUS)
    if ("portability",) in keys:
        try:
            out[("portability",)] = portability({k: v for k, v in out.items() if k[0] == "kernel"})
        except Exception as e:
            out[("portability",)] = {"error": f"{type(e).__name__}: {e}"}
    return out
