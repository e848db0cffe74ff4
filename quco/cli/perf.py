"""quco-emu search and evaluate, and launch --model: the performance model (quco.perfmodel)
from the command line. cli/main.py registers these commands and maps errors to exit codes.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from . import common
from ..examples import KERNELS as EXAMPLES
from ..gst import tables
from ..util.userinput import printable
from ..util import atomic
from ..kernel.format import load_kernel
from ..harness import evaluate as ev
from ..perfmodel import search, space
from ..perfmodel.model_table import described
from ..perfmodel.params import machine
from ..perfmodel.residency import occupancy
from ..perfmodel.sim import pass_period
from ..perfmodel.work import Config, Queue, Work, barriers, fits, meta_bytes, queue_bytes


def config_doc(work: Work, cfg: Config, cycles: float, best: float) -> dict:
    return {"tile": cfg.tile, "label": cfg.label(work),
            "queues": [{"tile": cfg.tile, "slots": s, "type": "stationary" if q.type else "streaming"}
                       for q, s in zip(work.queues, cfg.slots)],
            "cycles": cycles, "gap_pct": 100.0 * (cycles / best - 1.0)}


# The SimPy model schedules events for every tile a work-group walks (perfmodel/cu_model.py), so its
# time grows with the tiles of a pass and with the passes it simulates. Measured on the
# 2-core reference machine under load (exhaustive search; evaluate adds the baselines and the
# Ideal case): one queue of 262,144 elements (4,096 tiles of 64) 2 s / 3 s; 1,048,576 (16,384
# tiles) 8 s / 61 s; 4,194,304 (65,536 tiles) 15-48 s / over a minute. Beyond these bounds a
# command would run for minutes to hours (a 2^32-1 queue: about 14 hours), so it is refused at
# once, saying why. The bundled kernels walk at most 1,024 tiles a pass, the bundled workloads'
# layers 96.
MAX_MODEL_TILES = 4_096        # tiles of one pass, at the GST's smallest tile
# The model simulates a few periods of a loop nest of many passes and extrapolates the rest
# (sim.simulate), the Ideal case too where one work-group is resident; with several, each
# one's producer queues every tile of every pass at once and the time is not linear in the
# passes (sim.simulate), so evaluate's Ideal simulates every pass of those: Matrix-Matrix's
# 128 passes of 64 tiles (8,192 steps) take about a second; 256 passes (16,384) 4 s.
MAX_MODEL_STEPS = 65_536       # tiles x the passes the model simulates (search, launch, run)
MAX_IDEAL_STEPS = 16_384       # tiles x every pass (evaluate's Ideal case)


def model_bound(kernel, g: dict, where: str, every_pass: bool = False) -> None:
    """Refuse, before any work, a kernel the performance model cannot run on GPU `g` (a
    work-group larger than a CU holds) or would take more than seconds on (see above);
    `every_pass`: the command simulates every pass (evaluate's Ideal case)."""
    waves = machine(g).max_waves
    if kernel.consumer_wavefronts + 1 > waves:
        raise common.UserError(
            f"{where}: consumer_wavefronts: {kernel.consumer_wavefronts} (+1 producer = "
            f"{kernel.consumer_wavefronts + 1} wavefronts per work-group) is more than a CU of this GPU holds at once "
            f"({waves}: wavefront_pools {g['wavefront_pools']} x {waves // g['wavefront_pools']}); the performance "
            f"model cannot place one work-group. Expected at most {waves - 1} for the model (the unit itself "
            f"configures it: quco-emu launch without --model)")
    moves = kernel.movement or [(1, 0, 0)] * len(kernel.queues)
    work = Work(kernel.name, tuple(Queue(n, t, e, p, f, s) for (n, t, e), (p, f, s) in zip(kernel.queues, moves)),
                1.0, kernel.consumer_wavefronts, kernel.work_groups, phases=kernel.phases, split_k=kernel.split_k)
    tile = (search.tiles(g) or [search.TILE_RANGE[0]])[0]
    n = sum(work.tiles(first, tile) for first, _ in work.runs())
    longest = max(q.length for q in work.queues)
    if n > MAX_MODEL_TILES:
        raise common.UserError(
            f"{where}: the performance model walks every tile of a work-group: {n:,} tiles of {tile} elements "
            f"a pass (queue lengths up to {longest:,}); it takes at most {MAX_MODEL_TILES:,} "
            f"(seconds for search, which tries every tile size), so this kernel would run for "
            f"{n / MAX_MODEL_TILES:,.0f} times as long. Shorten the queues (the unit itself configures any length: "
            f"quco-emu launch without --model)")
    # simulate()'s two runs: at most the producer's run-ahead (8 slots) + 1 + a period each, and
    # a window of WINDOW_STEPS steps rounded up to whole periods
    simulated = work.passes if every_pass else min(work.passes, 3 * pass_period(work) + 66)
    limit = MAX_IDEAL_STEPS if every_pass else MAX_MODEL_STEPS
    if n * simulated > limit:
        why = ("evaluate's Ideal case simulates every pass" if every_pass else
               f"the loop nest repeats only every {pass_period(work):,} passes (passes, fresh_passes, grid.phases), "
               "and the model simulates whole periods")
        raise common.UserError(
            f"{where}: the performance model would walk {n * simulated:,} tiles of {tile} elements ({n:,} a pass x "
            f"{simulated:,} passes: {why}); it takes at most {limit:,}. Fewer passes, a shorter period or shorter "
            f"queues (the unit itself configures the kernel: quco-emu launch without --model)")


def nothing_fits(kernel, m, where: str, gpu: str) -> common.UserError:
    """The error when no configuration of the searched space fits one work-group on a CU:
    what the smallest one needs against what the CU (or the kernel's partition) has."""
    work = Work(kernel.name, tuple(Queue(n, t, e) for n, t, e in kernel.queues), 1.0, kernel.consumer_wavefronts)
    small = Config(search.TILE_RANGE[0], (1,) * len(work.queues))
    need = meta_bytes(len(work.queues)) + queue_bytes(work, small)
    lds = "partition.lds_bytes" if kernel.lds_bytes else f"{printable(gpu)}'s lds_bytes"
    return common.UserError(
        f"{where}: no tile x slots configuration fits one work-group on a CU of {printable(gpu)}: the smallest "
        f"({small.tile} elements, 1 slot per queue, {len(work.queues)} queues) needs {need:,} bytes of LDS and "
        f"{barriers(small)} barriers; the CU has {m.lds_bytes:,} bytes ({lds}) and {m.barrier_limit} barriers")


MAX_CONFIG_TEXT = 200  # --config: a tile and at most 16 slot counts fit in far fewer characters
_DIGITS = re.compile(r"[0-9]{1,9}", re.ASCII)  # int() also reads "５１２" and "٥١٢"; the unit takes 0-9


def parse_config(text: str, work: Work, g: dict) -> Config:
    """--config TILE/SLOTS, held to the searched space: a tile among the GST's powers of two
    (search.tiles), 1 to min(8, max_slots) slots per queue. Raises UserError naming the rule."""
    shown = printable(text if len(text) <= 40 else text[:37] + "...")
    tile, sep, slots = text.replace(" ", "").partition("/")
    parts = slots.split("+")
    if len(text) > MAX_CONFIG_TEXT or not sep or not all(_DIGITS.fullmatch(p) for p in [tile, *parts]):
        raise common.UserError(f"--config: {shown!r}: expected TILE/SLOTS in digits 0-9, e.g. 512/2 or 512/2+4 "
                               "(slots per run of identical queues, in queue order)")
    try:
        cfg = Config.parse(work, text.replace(" ", ""))
    except ValueError as e:
        raise common.UserError(f"--config: {printable(str(e))}") from None
    allowed, top = search.tiles(g), min(search.SLOT_RANGE[1], g["max_slots"])
    if cfg.tile not in allowed:
        raise common.UserError(
            f"--config: {shown!r}: tile {cfg.tile} is not one of {', '.join(map(str, allowed))} (powers of two from "
            f"the GST's min_tile_elems {g['min_tile_elems']} to max_tile_elems {g['max_tile_elems']}, within "
            f"{search.TILE_RANGE[0]}..{search.TILE_RANGE[1]}: the space search ranks)")
    bad = [s for s in cfg.slots if not search.SLOT_RANGE[0] <= s <= top]
    if bad:
        raise common.UserError(f"--config: {shown!r}: {bad[0]} slots is out of range; expected {search.SLOT_RANGE[0]} "
                               f"to {top} slots per queue (the GST's max_slots {g['max_slots']}, at most "
                               f"{search.SLOT_RANGE[1]}: the space search ranks)")
    return cfg


def model_of(kernel, gpu: str, gst: bytes | None = None):
    g = described(gpu, gst if gst is not None else tables.load(gpu))  # with the file's own [model] table
    return g, machine(g, kernel.core_clock_mhz, kernel.active_cus, kernel.lds_bytes), Work.of(kernel)


def cmd_search(args) -> int:
    out, fail = common.out, common.UserError
    kernel = load_kernel(args.kernel)
    gpu, gst = common.target(args, kernel)
    where = printable(str(args.kernel))
    model_bound(kernel, tables.unpack(gst), where)
    g, m, work = model_of(kernel, gpu, gst)
    if args.top < 0:
        raise fail(f"--top: {args.top} is out of range; expected 0 (every configuration) or more")
    asked = parse_config(args.config, work, g) if args.config is not None else None
    try:
        plan = planned(m, work, printable(str(args.kernel)), g)
    except fail as e:
        if asked is None:
            raise
        return _config_alone(args, kernel, gpu, m, work, asked, str(e))
    if not args.json and common.err.is_terminal:  # before the search: what it faces and how it walks it
        common.err.print(f"{kernel.name} on {gpu}: {plan.describe()}")
    # what must be ranked exactly: the `--top` fastest, QuCo's pick and the named configuration
    # (the search may skip configurations its lower bound proves slower than all of them)
    from ..host import reference  # QuCo's pick: the reference model, bit for bit the firmware's (`quco-emu diff`)
    quco_res = reference.configure(gst, kernel.record())
    pick, named_cfg = _quco_config(quco_res, m, work), asked if asked and _fits(m, work, asked) else None
    within = max([search.evaluate(m, work, c).cycles for c in (pick, named_cfg) if c is not None], default=0.0)
    res = space.search_space(m, g, work, top=args.top, within=within)
    ranked = res.ranked
    if not ranked:
        raise nothing_fits(kernel, m, where, gpu)
    best = ranked[0].outcome.cycles

    def doc(r, rank):
        return dict(config_doc(work, r.config, r.outcome.cycles, best), rank=rank, occupancy=r.outcome.occupancy,
                    dram_gbps=r.outcome.dram_gbps, l2_hit=r.outcome.l2_hit, compute_util=r.outcome.compute_util)
    top = [doc(r, i + 1) for i, r in enumerate(ranked[:args.top or len(ranked)])]
    named = _named(m, work, ranked, asked, doc, fail, res.searched) if asked else None
    quco, quco_note = _quco_pick(quco_res, m, work, ranked, doc, plan.method, res.searched)
    among = res.searched + (1 if named and not named.pop("in_space") else 0)
    if named:
        named["of"] = among  # its rank among the searched configurations (plus itself when outside them)
    if args.json:
        print(json.dumps({"kernel": kernel.name, "gpu": gpu, "evaluated": res.evaluations,
                          "skipped_by_bound": res.skipped, "space": _space_doc(plan),
                          "best": doc(ranked[0], 1), "top": top, "quco": quco, **({"config": named} if asked else {})},
                         indent=2))
        return 0
    searched = "every configuration that fits" if plan.method == space.EXHAUSTIVE else "coordinate descent"
    t = Table(title=Text(f"{kernel.name} on {gpu}: {res.searched} configurations on the model ({searched})"),
              caption="slots: per run of identical queues, in queue order")
    for col in ("#", "tile / slots", "cycles", "gap", "WGs/CU", "DRAM GB/s", "L2 hits", "compute"):
        t.add_column(col, justify="right")
    for r in top + ([named] if named and named["rank"] > len(top) else []):
        t.add_row(str(r["rank"]), r["label"], f"{r['cycles']:,.0f}", f"{r['gap_pct']:+.2f}%", str(r["occupancy"]),
                  f"{r['dram_gbps']:,.1f}", f"{100 * r['l2_hit']:.0f}%", f"{100 * r['compute_util']:.0f}%",
                  style="bold" if named and r["rank"] == named["rank"] else None)
    out.print(t)
    if named:
        out.print(Text(f"{printable(args.config)[:40]}: {named['label']}, {named['cycles']:,.0f} cycles, {named['gap_pct']:+.2f}% "
                       f"over the best, rank {named['rank']} of {among}"
                       + ("" if among == res.searched else " (outside the searched space: slots that differ within a run "
                          "of identical queues; ranked among it)")))
    out.print(Text(quco_note))
    out.print(Text(plan.describe()))
    if res.skipped:
        out.print(Text(f"evaluated {res.evaluations:,}; {res.skipped:,} skipped: their lower bound on the cycles is "
                       "slower than the configurations shown and QuCo's pick (docs/perf-model.md, Speed)"))
    return 0


def _config_alone(args, kernel, gpu, m, work, cfg, why: str) -> int:
    """--config on a space past the search's bound: that configuration alone, unranked."""
    if not fits(work, cfg, m.lds_bytes, m.barrier_limit) or occupancy(m, work, cfg) < 1:
        raise common.UserError(f"--config: {cfg.label(work)} does not fit one work-group on a CU of this GPU "
                               f"(LDS {m.lds_bytes:,} bytes, {m.barrier_limit} barriers)")
    o = search.evaluate(m, work, cfg)
    row = {"tile": cfg.tile, "label": cfg.label(work), "cycles": o.cycles, "rank": None, "occupancy": o.occupancy,
           "dram_gbps": o.dram_gbps, "l2_hit": o.l2_hit, "compute_util": o.compute_util}
    note = f"not searched: {why.split(': ', 1)[1]}"
    if args.json:
        print(json.dumps({"kernel": kernel.name, "gpu": gpu, "evaluated": 1, "searched": False, "why": note,
                          "config": row}, indent=2))
        return 0
    common.err.print(note)
    common.out.print(Text(f"{kernel.name} on {gpu}: {args.config}: {row['label']}, {o.cycles:,.0f} cycles, "
                          f"{plural(o.occupancy, 'work-group')} per CU (not ranked: the space was not searched)"))
    return 0


def plural(n: int, noun: str, nouns: str = "") -> str:
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def space_summary(plans: list) -> str:
    """One line for many searches (evaluate's kernels, run's layer shapes): sizes and methods."""
    fit = [p.fitting for p in plans]
    methods = {m: sum(p.method == m for p in plans) for m in (space.EXHAUSTIVE, space.DESCENT)}
    span = f"{min(fit):,}" if min(fit) == max(fit) else f"{min(fit):,}-{max(fit):,}"
    return (f"{plural(len(plans), 'search', 'searches')}, {span} configurations that fit each "
            f"(of {max(p.size for p in plans):,} at most); " +
            ", ".join(f"{m} on {n}" for m, n in methods.items() if n) +
            f"; at most {sum(p.max_evaluations for p in plans):,} evaluations")


def planned(m, work: Work, where: str, g: dict) -> "space.Plan":
    """The space a search faces and its method; one no method covers in the bound is exit 2."""
    p = space.plan(m, g, work)
    try:
        space.check(p, where)
    except space.SpaceTooLarge as e:
        raise common.UserError(str(e)) from None
    return p


def spaces_doc(plans: list) -> dict:
    """evaluate's and run's searches in their JSON: how many by which method, the largest space."""
    return {"searches": len(plans), "methods": {m: sum(p.method == m for p in plans)
                                                for m in (space.EXHAUSTIVE, space.DESCENT)},
            "largest": _space_doc(max(plans, key=lambda p: p.size)) if plans else None,
            "max_evaluations": sum(p.max_evaluations for p in plans)}


def _space_doc(p) -> dict:
    return {"size": p.size, "fitting": p.fitting, "method": p.method, "max_evaluations": p.max_evaluations}


def _fits(m, work, cfg) -> bool:
    return fits(work, cfg, m.lds_bytes, m.barrier_limit) and occupancy(m, work, cfg) >= 1


def _quco_config(r, m, work):
    """QuCo's pick (`r`, the reference model's result) where the model can run it; else None."""
    cfg = Config(r.tile, tuple(r.slots)) if r.status == 0 else None
    return cfg if cfg is not None and _fits(m, work, cfg) else None


def _quco_pick(r, m, work, ranked, doc, method: str, searched: int) -> tuple[dict | None, str]:
    """Where QuCo's own pick (`r`, the reference model's result) ranks among the searched
    configurations. `ranked` holds every searched configuration faster than it (the others
    were skipped as slower), `searched` counts them all."""
    from ..host.device import describe
    if r.status != 0:
        return None, f"QuCo: the unit refuses this launch ({describe(r.status, r.detail)}); nothing to rank"
    cfg = Config(r.tile, tuple(r.slots))
    if not _fits(m, work, cfg):
        return None, f"QuCo: {cfg.label(work)}, which the model says does not fit one work-group on a CU"
    q = search.Ranked(cfg, search.evaluate(m, work, cfg))
    row = doc(q, 1 + sum(1 for x in ranked if x.outcome.cycles < q.outcome.cycles))
    among = "" if method == space.EXHAUSTIVE else " evaluated"
    return row, (f"QuCo's pick: {row['label']}, rank {row['rank']} of the {searched}{among} configurations, "
                 f"{row['cycles']:,.0f} cycles, {row['gap_pct']:+.2f}% over the best")


def _named(m, work, ranked, cfg, doc, fail, searched: int) -> dict:
    """The row of a configuration named on the command line, ranked among the space (`ranked`
    holds every searched configuration faster than it; `searched` counts them all)."""
    if not _fits(m, work, cfg):
        raise fail(f"--config: {cfg.label(work)} does not fit one work-group on a CU of this GPU "
                   f"(LDS {m.lds_bytes:,} bytes, {m.barrier_limit} barriers)")
    r = search.Ranked(cfg, search.evaluate(m, work, cfg))
    rank = 1 + sum(1 for x in ranked if x.outcome.cycles < r.outcome.cycles)  # at most its own place
    return {**doc(r, rank), "in_space": any(x.config == cfg for x in ranked) or (
        len(ranked) < searched and cfg in search.candidates(work, m, [cfg.tile], range(1, 1 + max(cfg.slots))))}


# ---------------------------------------------------------------- evaluate
def _kernel_task(task):
    gpu, gst, kernel, firmware, ablations, model = task
    return ev.kernel_rows(gpu, gst, kernel, firmware, ablations, model)


def _run(tasks, args, fn):
    from ..util import parallel  # imports dask lazily: only a sweep needs it
    # on stderr: `evaluate > rows.txt` holds the tables alone and `| head -1` gets the first line at once
    with Progress(console=common.err, transient=True, disable=args.json or not common.err.is_terminal) as bar:
        job = bar.add_task("model", total=len(tasks))
        return parallel.run(fn, tasks, scheduler=args.scheduler, workers=args.workers, chunk=1,
                         progress=lambda done, total: bar.update(job, completed=done))


def cmd_evaluate(args) -> int:
    out = common.out
    from ..util import parallel
    if args.out is not None:  # before the sweep: a table it cannot write is refused now, not after
        parallel.check_table_path(args.out)
    atomic.check_folder(args.plot)
    common.check_sweep_options(args)
    gpus = args.gpu or tables.preset_names()
    gsts = {gpu: common.checked_gst(gpu, "--gpu" if args.gpu else "") for gpu in gpus}
    fields = {gpu: described(gpu, gsts[gpu]) for gpu in gpus}  # a bad [model] table: exit 2 before the sweep
    given = [load_kernel(p) for p in args.kernels]
    for gpu in gpus:  # a partition a GPU cannot give: exit 2 before the sweep
        for path, k in zip(args.kernels, given):
            common.checked_partition(k, gsts[gpu], gpu, printable(str(path)))
            model_bound(k, tables.unpack(gsts[gpu]), printable(str(path)), every_pass=True)
    kernels_of = {gpu: given or bundled_kernels(gpu) for gpu in gpus}
    paths = dict(zip((id(k) for k in given), args.kernels))
    plans = []  # the spaces ATT/Fine-Tuned searches, said before the sweep; one past the bound is exit 2 now
    for gpu in gpus:
        for k in kernels_of[gpu]:
            g, m, work = model_of(k, gpu, gsts[gpu])
            plans.append(planned(m, work, printable(str(paths.get(id(k), k.name))), g))
    searched = f"ATT/Fine-Tuned: {space_summary(plans)}"
    if common.err.is_terminal:  # said before the sweep on a terminal; with the tables (or in the JSON) always
        common.err.print(searched)
    # each task carries its GPU's [model] table: a worker process reads no file and registers nothing
    tasks = [(gpu, gsts[gpu], k, args.firmware, not args.no_ablation, fields[gpu].get("model"))
             for gpu in gpus for k in kernels_of[gpu]]
    rows = [row for chunk in _run(tasks, args, _kernel_task) for row in chunk]
    best, models = {}, {}
    for gpu in gpus:
        g = fields[gpu]
        for k in kernels_of[gpu]:
            models[(gpu, k.name)] = (machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k))
    for r in rows:
        if r["case"] == "ATT/Fine-Tuned" and r["cycles"]:
            best[(r["gpu"], r["kernel"])] = (_config(r), r["cycles"])
    port = ev.portability(best, models) if not args.no_portability else []
    summary = {"quco_gap_pct_geomean": ev.gap_summary(rows),
               "ablation_gap_pct_geomean": {case: ev.gap_summary(rows, case) for case, _ in ev.ABLATIONS[1:]}}
    if args.out is not None:
        parallel.write_table(rows, args.out)
    if args.plot is not None:
        from ..perfmodel import plots
        Path(args.plot).mkdir(parents=True, exist_ok=True)
        written = plots.fig6([r for r in rows if r["case"] in plots.FIG6_CASES], args.plot)
        if not args.no_ablation:
            written += plots.fig7([r for r in rows if r["case"] in plots.FIG7_CASES], args.plot)
        written += plots.fig1(port, args.plot) if port else []
    if args.json:
        print(json.dumps({"rows": rows, "summary": {**summary, "fine_tuned_search": spaces_doc(plans)},
                          "portability": port}, indent=2))
        return 0
    for gpu in gpus:
        out.print(_cases_table(gpu, [r for r in rows if r["gpu"] == gpu], summary))
        if not args.no_ablation:
            out.print(_ablation_table(gpu, [r for r in rows if r["gpu"] == gpu]))
    if port:
        worst = max((p for p in port if p["slowdown"]), key=lambda p: p["slowdown"], default=None)
        if worst:
            out.print(Text(f"portability: worst slowdown {worst['slowdown']:.2f}x ({worst['kind']}: "
                           f"{worst['source']} -> {worst['target']}, {worst['scope']})"))
    out.print(Text(searched))
    if args.out is not None:
        out.print(Text(f"wrote {printable(args.out)} ({len(rows)} rows)"))
    if args.plot is not None:
        out.print(Text(f"wrote {len(written)} figures to {printable(args.plot)}"))
    return 0


def bundled_kernels(gpu: str) -> list:
    """Table III's kernels at the paper's sizes for `gpu` (examples/kernels/<gpu>/), else
    the R9 Nano's set (examples/kernels/*.json)."""
    own = EXAMPLES / gpu
    return [load_kernel(p) for p in sorted((own if own.is_dir() else EXAMPLES).glob("*.json"))]


def _config(row: dict) -> Config:
    return Config(row["tile"], tuple(int(s) for s in row["slots"].split("/")))


def _cases_table(gpu: str, rows: list[dict], summary: dict) -> Table:
    cases = [c for c in ev.CASES if c != "Ideal"]
    gap = summary["quco_gap_pct_geomean"].get(gpu)
    t = Table(title=Text(f"{gpu}: performance normalised to the ideal (1.00 = ideal; Fig. 6)"),
              caption=f"QuCo vs ATT/Fine-Tuned, geometric mean: {gap:+.2f}%" if gap is not None else None)
    t.add_column("kernel")
    for c in cases:
        t.add_column(c.replace("/", "/\n"), justify="right")
    t.add_column("QuCo config", justify="right")
    t.add_column("QuCo gap", justify="right")
    for k in dict.fromkeys(r["kernel"] for r in rows):
        by = {r["case"]: r for r in rows if r["kernel"] == k}
        cells = [f"{by[c]['ideal_cycles'] / by[c]['cycles']:.2f}" if c in by and by[c]["cycles"] else "n/a"
                 for c in cases]
        q = by.get("QuCo", {})
        t.add_row(Text(k), *cells, Text(str(q.get("config"))),
                  f"{q['vs_fine_pct']:+.1f}%" if q.get("vs_fine_pct") is not None else "n/a")
    return t


def _ablation_table(gpu: str, rows: list[dict]) -> Table:
    """The quantity Fig. 7 draws: each step's extra cycles over the full QuCo."""
    from ..perfmodel.plots import ablation_pct  # plots imports matplotlib: only when a table is printed
    pct = ablation_pct(rows)
    steps = [case for case, _ in ev.ABLATIONS]
    t = Table(title=Text(f"{gpu}: ablation, cycles over the full QuCo (Fig. 7)"),
              caption="each step switches off one more heuristic; +x%: that many more cycles than QuCo")
    t.add_column("kernel")
    t.add_column("QuCo config", justify="right")
    for s in steps[1:]:
        t.add_column(s, justify="right")
    for k in dict.fromkeys(r["kernel"] for r in rows):
        by = {r["case"]: r for r in rows if r["kernel"] == k}
        q = by.get(steps[0], {})
        t.add_row(Text(k), Text(str(q.get("config") or "n/a")),
                  *(Text(f"{pct[(gpu, k, s)]:+.2f}% ({by[s]['config']})") if (gpu, k, s) in pct else Text("n/a")
                    for s in steps[1:]))
    return t


# ---------------------------------------------------------------- launch --model
def model_launch(kernel, gpu: str, res, trace_path=None) -> dict:
    """The modelled run time of `kernel` with the configuration the unit just wrote."""
    from ..perfmodel.sim import simulate
    from ..perfmodel.trace import chrome_trace
    g, m, work = model_of(kernel, gpu)
    cfg = Config(res.tile, tuple(q.slots for q in res.queues))
    if not fits(work, cfg, m.lds_bytes, m.barrier_limit) or occupancy(m, work, cfg) < 1:
        raise common.UserError(f"{printable(kernel.name)} on {printable(gpu)}: the unit's configuration {cfg.label(work)} "
                               f"does not fit one work-group on a CU of the performance model (LDS {m.lds_bytes:,} "
                               f"bytes, {m.barrier_limit} barriers, {m.max_waves} wavefronts): the unit's fit rule and "
                               "the model's disagree", common.EXIT_MISMATCH)
    o = simulate(m, work, cfg, trace=bool(trace_path))
    if trace_path:
        doc = chrome_trace(o.trace, m.clock_mhz, f"{kernel.name} on {gpu}: {cfg.label(work)}")
        from ..util.atomic import write_text
        write_text(trace_path, json.dumps(doc))
    return {"config": cfg.label(work), **o.as_dict(), "clock_mhz": m.clock_mhz}


def add_parsers(sub) -> None:
    p = sub.add_parser("search", help="tile x slots search on the performance model (exhaustive where the space "
                       "allows, else coordinate descent; it says which)")
    p.add_argument("kernel")
    p.add_argument("--gpu", help="GST preset or file")
    p.add_argument("--json", action="store_true")
    p.add_argument("--top", type=int, default=10, metavar="N", help="show the N fastest (0: every configuration searched)")
    p.add_argument("--config", metavar="TILE/SLOTS",
                   help="also evaluate this configuration and rank it, e.g. 512/2 (every queue) or 512/2+4 "
                        "(slots per run of identical queues)")
    p.set_defaults(func=cmd_search)
    p = sub.add_parser("evaluate", help="the paper's cases, ablations and portability on the model")
    p.add_argument("kernels", nargs="*",
                   help="kernel.json files (default: the bundled Table III set of each GPU, else the R9 Nano's)")
    p.add_argument("--gpu", action="append", help="GST preset or file; repeat for several (default: every preset)")
    p.add_argument("--firmware")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="DIR", help="write PNG and SVG figures (Fig. 6, 7, 1 analogues) here")
    p.add_argument("--out", metavar="FILE", help="tidy table of every row: .csv or .parquet")
    common.add_sweep_options(p)
    p.add_argument("--no-ablation", action="store_true", help="skip the ablation steps")
    p.add_argument("--no-portability", action="store_true", help="skip the portability matrices")
    p.set_defaults(func=cmd_evaluate)
