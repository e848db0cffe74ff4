"""quco-emu run and import: whole workloads (quco.workloads) from the command line.

    quco-emu run examples/workloads/whisper-tiny.json --gpu mi100 [--json] [--plot DIR] [--trace FILE]
    quco-emu run examples/workloads/whisper-tiny.json --gpu mi100 --dvfs mi100-u-shaped
    quco-emu run a.json@60:32768 b.json@60:32768 --gpu mi100     # two tenants, their CUs and LDS
    quco-emu import model.onnx -o workload.json

cli/main.py registers these commands and maps errors to exit codes.
"""
from __future__ import annotations

import json
import os

from rich.table import Table
from rich.text import Text

from .common import EXIT_MISMATCH, UserError, checked_gst, checked_profile, clock_mhz, err, out
from .perf import spaces_doc, model_bound, planned, space_summary
from ..gst import abi
from ..util.userinput import printable, whole_number
from ..util import atomic
from ..util.atomic import write_text
from ..host.device import QUCO_CLOCK_MHZ
from ..perfmodel.model_table import described
from ..perfmodel.params import machine
from ..perfmodel.work import Work
from ..workloads import baselines, dvfs, format, runner

PER_LAYER_MAX = 60   # longer workloads print one row per layer type unless --layers


def _tenant(spec: str) -> runner.Tenant:
    """WORKLOAD or WORKLOAD@CUS[:LDS]. A file of that whole name (`a@b.json`) is the workload
    itself: only what is not a file is split at its last '@'."""
    whole = "@" not in spec or os.path.isfile(spec)
    path, at, share = (spec, "", "") if whole else spec.rpartition("@")
    cus = lds = 0
    if at:
        parts = share.split(":")
        shown = printable(spec if len(spec) <= 200 else spec[:100] + "..." + spec[-20:])
        try:
            if len(parts) > 2:
                raise ValueError("more than one ':'")
            cus = whole_number(parts[0], 0, abi.GST.field("num_cus").hi, "CUS")
            lds = whole_number(parts[1], 0, abi.GST.field("lds_bytes").hi, "LDS_BYTES") if len(parts) == 2 else 0
        except ValueError as e:
            raise UserError(f"tenant {shown!r}: {e}; expected WORKLOAD@CUS or WORKLOAD@CUS:LDS_BYTES") from None
        step = abi.LAUNCH_HEADER.field("lds_bytes").multiple  # a partition's LDS (gst/abi.py)
        if lds % step:
            raise UserError(f"tenant {shown!r}: LDS_BYTES {lds} is not a multiple of {step}")
    return runner.Tenant(format.load(path), cus, lds)


BAR_FROM = 50         # layers: from here a terminal shows a progress bar (each layer is a launch on the
                      # emulated unit and a model run, 1-3 ms, more at a new shape: Whisper's 827 take seconds)
PROGRESS_FROM = 1_000  # without a terminal, a run this long says so in one line first (100,000 take minutes)


def _with_status(what: str, job):
    """job() under a spinner naming what runs (the baselines' searches: seconds of silence
    otherwise), on a terminal only."""
    if not err.is_terminal:
        return job()
    with err.status(what):
        return job()


def _with_progress(args, tenants, job):
    """job(report) with a progress bar (elapsed, remaining) on a terminal; without a terminal,
    one line saying what a long run will do."""
    total = sum(len(t.workload.layers) for t in tenants)
    if not err.is_terminal:
        if total >= PROGRESS_FROM:
            err.print(f"running {total:,} layers (each a launch on the unit and a model run; this takes a while)")
        return job(None)
    if total < BAR_FROM:
        return job(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
    with Progress("layers", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "left", TimeRemainingColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("layers", total=total)
        return job(lambda done, _total: bar.update(task, completed=done))


def _trace(spec: str) -> dvfs.Trace:
    """--dvfs: a trace file or a bundled trace's name; a problem names --dvfs."""
    try:
        return dvfs.load_trace(spec)
    except format.WorkloadError as e:
        raise format.WorkloadError([f"--dvfs: {p}" for p in e.problems]) from None


def _trace_fits(trace: dvfs.Trace, gst: bytes, gpu: str, via: str, layers: int) -> None:
    """A trace made for another GPU is refused (its clocks are that GPU's DVFS states); one
    with more clocks than the workload has layers is run with a warning naming what is unused."""
    if trace.gpu and checked_gst(trace.gpu, f"{trace.path}: gpu") != gst:
        raise UserError(f"{trace.path}: gpu: the trace is made for {printable(trace.gpu)}, but the run is on "
                        f"{printable(gpu)} ({via or 'the default'}); its clocks are that GPU's. Run it with "
                        f"--gpu {printable(trace.gpu)}, or copy the trace and set its gpu")
    if len(trace.clocks_mhz) > layers:
        err.print(f"warning: {trace.path}: clocks_mhz has {len(trace.clocks_mhz):,} clocks for {layers:,} layers; "
                  f"clocks {layers:,}.. are not used")


def _ns(v) -> str:
    return "n/a" if v is None else f"{v / 1000:,.2f}"


def cmd_run(args) -> int:
    atomic.check_target(args.trace)  # before any work: an output it cannot write is exit 2 now
    atomic.check_folder(args.plot)
    checked_profile(args.profile)
    tenants = [_tenant(s) for s in args.workloads]
    trace = _trace(args.dvfs) if args.dvfs is not None else None  # --dvfs "" is refused
    w = tenants[0].workload
    gpu, via = ((args.gpu, "--gpu") if args.gpu is not None else (w.gpu, f"{printable(w.path)}: gpu") if w.gpu else
                (trace.gpu, f"{trace.path}: gpu") if trace and trace.gpu else ("r9-nano", ""))
    gst = checked_gst(gpu, via)  # a table the unit refuses is bad input: exit 2
    if trace:
        _trace_fits(trace, gst, gpu, via, len(w.layers))
    g = described(gpu, gst)  # with the file's own [model] table (a bad one: exit 2 now)
    plans = []
    for t in tenants:  # a layer the model would take hours on: refused before the first launch
        seen = set()
        for lay in t.workload.layers:
            if lay.type not in seen:
                seen.add(lay.type)
                where = f"{printable(t.workload.path)}: layer {lay.index} ({printable(lay.name)}, {lay.where})"
                model_bound(lay.kernel, g, where)
                if not args.no_baselines:  # ATT/Fine-Tuned searches each layer shape: its space, said now
                    plans.append(planned(machine(g, lay.kernel.core_clock_mhz, t.active_cus, t.lds_bytes),
                                         Work.of(lay.kernel), where, g))
    if plans and err.is_terminal:  # said before the run on a terminal; after the totals (or in the JSON) always
        err.print(f"ATT/Fine-Tuned baselines: {space_summary(plans)}")
    if trace and len(tenants) > 1:
        raise UserError("--dvfs runs one workload; give one WORKLOAD")
    options = dict(firmware=args.firmware, profile=args.profile, clock_mhz=args.clock)
    try:
        session = runner.Session(gpu, **options)
        if trace:
            tenants[0].clocks = trace.clocks(len(tenants[0].workload.layers))
        steps = _with_progress(args, tenants, lambda report: runner.run(session, tenants, report))
        summary = (_with_status("ATT/Fine-Tuned and Semi-Tuned baselines: searching each layer shape",
                                lambda: baselines.compare(steps, session)) if not args.no_baselines else {})
        # the run above is QuCo-HW's: the trace's clocks went into the launch records
        compared = (_with_status(f"DVFS: QuCo-SW over the trace{' and Fine-Tuned at each clock' if not args.no_baselines else ''}",
                                 lambda: dvfs.compare(gpu, tenants[0].workload, trace,
                                                      clock_aware_best=not args.no_baselines,
                                                      active_cus=tenants[0].active_cus, lds_bytes=tenants[0].lds_bytes,
                                                      hw_run=(session, steps), **options)) if trace else None)
    except runner.ModelMismatch as e:
        raise UserError(str(e), EXIT_MISMATCH) from None
    except runner.UnitError as e:
        raise UserError(str(e), 3) from None
    totals = {tid: {**runner.totals([s for s in steps if s.tenant == tid]), "skipped_layers": len(t.workload.skipped)}
              for tid, t in enumerate(tenants)}
    types = baselines.by_type(steps)
    written = []
    if args.trace is not None:
        from ..workloads.trace import chrome_trace
        write_text(args.trace, json.dumps(chrome_trace(steps, tenants, gpu)))
    if args.plot is not None:
        from ..workloads import plots
        if summary:
            for tid, t in enumerate(tenants):
                written += plots.fig9([r for r in types if r["tenant"] == tid], t.workload.name, args.plot)
        if compared:
            written += plots.dvfs(compared, args.plot)
    if args.json:
        doc = {"gpu": gpu, "tenants": [{"workload": t.workload.name, "file": t.workload.path,
                                        "active_cus": t.active_cus, "lds_bytes": t.lds_bytes,
                                        "totals": totals[i], "baselines": summary.get(i)}
                                       for i, t in enumerate(tenants)],
               "layers": [s.as_dict() for s in steps], "types": types,
               "derivations": {f"{s.tenant}:{s.layer.type}": s.layer.derivation for s in steps}}
        if compared:
            doc["dvfs"] = {"rows": compared["rows"], "summary": compared["summary"]}
        if plans:
            doc["baseline_search"] = spaces_doc(plans)
        print(json.dumps(doc, indent=2))
        return 0
    for tid, t in enumerate(tenants):
        mine = [s for s in steps if s.tenant == tid]
        if args.explain:
            _explain(out, mine)
        if args.layers or len(mine) <= PER_LAYER_MAX:
            out.print(_layer_table(t, gpu, mine, bool(summary)))
        else:
            out.print(_type_table(t, gpu, [r for r in types if r["tenant"] == tid], bool(summary)))
        _totals(out, t, totals[tid], summary.get(tid), len(tenants) > 1)
    if compared:
        table, lines = _dvfs_table(compared, args.layers)
        out.print(table)
        for line in lines:
            out.print(Text(line))
    if args.trace is not None:
        out.print(Text(f"wrote {printable(args.trace)} (open in https://ui.perfetto.dev)"))
    if plans:
        out.print(Text(f"ATT/Fine-Tuned baselines: {space_summary(plans)}"))
    if written:
        out.print(Text(f"wrote {len(written)} figures to {printable(args.plot)}"))
    return 0


def _explain(out, steps) -> None:
    seen = set()
    for s in steps:
        if s.layer.type not in seen:
            seen.add(s.layer.type)
            out.print(Text(f"{s.layer.type}:", style="bold"))
            for line in s.layer.derivation:
                out.print(Text(f"  {line}"))


def _layer_table(t, gpu, steps, with_baselines: bool) -> Table:
    tab = Table(title=Text(f"{t.label} on {gpu}: {len(steps)} layers"),
                caption="times in us on the model; reconf: the unit's cost; exposed: GPU idle waiting for it")
    cols = ["#", "layer", "MHz", "QuCo config", "cache", "instr", "reconf us", "run us", "exposed us"]
    cols += ["Fine-Tuned", "QuCo/Fine"] if with_baselines else []
    for c in cols:
        # a long layer name (an imported module path) folds onto more lines instead of losing its tail
        tab.add_column(c, justify="left" if c in ("layer", "QuCo config", "Fine-Tuned") else "right",
                       overflow="fold" if c == "layer" else "ellipsis")
    for s in steps:
        row = [str(s.layer.index), Text(s.layer.name), f"{s.clock_mhz:g}", s.label, "hit" if s.cache_hit else "miss",
               f"{s.instructions:,}", _ns(s.reconf_ns), _ns(s.run_ns),
               "hidden" if s.hidden else _ns(s.exposed_ns)]
        if with_baselines:
            q = s.extra["quco_vs_fine"]
            row += [str(s.extra["fine_config"]), f"{q:.3f}" if q else "n/a"]
        tab.add_row(*row)
    return tab


def _type_table(t, gpu, types, with_baselines: bool) -> Table:
    caption = "times: sum over the type's layers, us on the model; speedup > 1: QuCo faster"
    if len(types) > PER_LAYER_MAX:  # every layer its own type (named, no "type"): the longest, in order
        top = set(map(id, sorted(types, key=lambda r: -r["quco_ns"])[:PER_LAYER_MAX]))
        caption += (f"; the {PER_LAYER_MAX} types with the most QuCo time of {len(types):,} (--json lists every "
                    "one, --layers every layer)")
        types = [r for r in types if id(r) in top]
    tab = Table(title=Text(f"{t.label} on {gpu}: per layer type (--layers for every layer)"), caption=caption)
    cols = ["type", "layers", "QuCo config", "QuCo us"]
    cols += ["Semi-Tuned", "Fine-Tuned", "vs Semi", "vs Fine"] if with_baselines else []
    for c in cols:
        tab.add_column(c, justify="left" if c in ("type", "QuCo config", "Semi-Tuned", "Fine-Tuned") else "right")
    for r in types:
        row = [Text(r["type"]), str(r["count"]), r["quco_config"], _ns(r["quco_ns"])]
        if with_baselines:
            row += [str(r["semi_config"]), str(r["fine_config"]),
                    f"{r['quco_vs_semi']:.3f}" if r["quco_vs_semi"] else "n/a",
                    f"{r['quco_vs_fine']:.3f}" if r["quco_vs_fine"] else "n/a"]
        tab.add_row(*row)
    return tab


def _totals(out, t, tot, summ, shared: bool) -> None:
    """Short lines, the headline number first on each."""
    lines = [f"{t.workload.name}: {tot['makespan_ns'] / 1000:,.1f} us on the model, {tot['layers']} layers",
             f"  layers {tot['run_ns'] / 1000:,.1f} us + exposed reconfiguration {tot['exposed_ns'] / 1000:,.2f} us "
             f"({100 * tot['exposed_fraction']:.2f}%)",
             f"  reconfiguration {tot['reconf_ns'] / 1000:,.1f} us in all: {tot['reconf_instructions']:,} instructions, "
             f"{tot['reconf_cycles']:,} cycles",
             f"  reconfiguration hidden behind the previous layer for {tot['hidden_layers']} of {tot['layers'] - 1}",
             f"  cache hits {100 * tot['cache_hit_rate']:.1f}% ({tot['cache_hits']} of {tot['layers']} launches)"]
    if shared:
        lines.append(f"  the unit's queueing delay {tot['queueing_ns'] / 1000:,.2f} us in total, "
                     f"{tot['max_queueing_ns'] / 1000:,.2f} us at most")
    for line in lines:
        out.print(Text(line))
    if t.workload.skipped:
        out.print(Text(f"{t.workload.name} is a partial import: {len(t.workload.skipped)} MatMul/Gemm/Conv nodes of "
                       "the model are not in it (skipped_layers in the file); every figure here leaves them out",
                       style="bold"))
    if summ:
        for line in (
                f"QuCo's speedup over ATT/Fine-Tuned {_x(summ['speedup_vs_fine'])}: QuCo {summ['quco_ns'] / 1000:,.1f} us, "
                f"Fine-Tuned {_ns(summ['fine_ns'])} us",
                f"QuCo's speedup over ATT/Semi-Tuned {_x(summ['speedup_vs_semi'])}: Semi-Tuned {_ns(summ['semi_ns'])} us",
                "  (QuCo's time includes its exposed reconfiguration; the baselines are set before the run)",
                f"  per layer (geomean of run times) {_x(summ['geomean_layer_vs_fine'])} over Fine-Tuned, "
                f"{_x(summ['geomean_layer_vs_semi'])} over Semi-Tuned",
                f"  worst layer against Fine-Tuned: {summ['worst_layer_vs_fine']}"):
            out.print(Text(line))


def _x(v) -> str:
    return "n/a" if v is None else f"{v:.3f}x"


def _dvfs_table(c: dict, every_layer: bool) -> tuple[Table, list[str]]:
    """One row per layer while the trace's clock changes (every layer with --layers or when
    the workload is short), and the summary as short lines, the headline number first."""
    s, rows = c["summary"], c["rows"]
    shown = rows if every_layer or len(rows) <= PER_LAYER_MAX else rows[:s["trace_layers"]]
    rest = rows[len(shown):]
    lines = [f"DVFS: QuCo-HW's speedup over QuCo-SW {s['hw_speedup_total']:.3f}x over the whole run "
             f"(HW {s['hw_ns'] / 1000:,.1f} us, SW {s['sw_ns'] / 1000:,.1f} us)",
             f"  per layer {s['min_hw_speedup']:.3f}x ({s['min_at']}) to {s['max_hw_speedup']:.3f}x ({s['max_at']}); "
             f"configurations differ on {s['layers_config_differs']} layers"]
    if rest:
        lines.append(f"  layers {rest[0]['index']}-{rest[-1]['index']} hold {rest[0]['clock_mhz']:g} MHz (not shown; "
                     f"--layers shows them): configurations differ on {sum(not r['same_config'] for r in rest)}")
    oracle = "max_clock_aware_gain" in s
    if oracle:
        lines += [f"knowing the clock at all is worth {s['clock_aware_gain_total']:.3f}x over the run, up to "
                  f"{s['max_clock_aware_gain']:.3f}x ({s['max_clock_aware_at']})",
                  "  (Fine-Tuned for the layer's clock over Fine-Tuned for the GST's, both at the layer's clock)"]
    tab = Table(title=Text(f"DVFS trace {s['trace']}: QuCo-HW (reads the clock) vs QuCo-SW (assumes the GST clock)"),
                pad_edge=False, caption="HW/SW: QuCo-HW's speedup over QuCo-SW (SW us / HW us)"
                        + ("; FT@clock: Fine-Tuned for the layer's clock, gain: its speedup over Fine-Tuned "
                           "for the GST's clock" if oracle else ""))
    cols = ["#", "layer", "MHz", "HW config", "SW config", "HW us", "SW us", "HW/SW"]
    cols += ["FT@clock", "gain"] if oracle else []
    for col in cols:
        # the layer's name folds onto more lines rather than losing its tail; configurations stay whole
        tab.add_column(col, justify="left" if "config" in col or col in ("layer", "FT@clock") else "right",
                       overflow="fold" if col == "layer" else "ellipsis",
                       no_wrap=col != "layer", min_width=12 if col == "layer" else None)
    for r in shown:
        cells = [str(r["index"]), Text(r["name"]), f"{r['clock_mhz']:g}", r["hw_config"], r["sw_config"],
                 _ns(r["hw_ns"]), _ns(r["sw_ns"]), f"{r['hw_speedup']:.3f}"]
        if oracle:
            cells += [r["fine_config"] or "n/a", "n/a" if r["clock_aware_gain"] is None else f"{r['clock_aware_gain']:.3f}"]
        tab.add_row(*cells)
    return tab, lines


def cmd_import(args) -> int:
    from ..util.userinput import printable
    from ..workloads import onnx_import
    if not args.output:
        raise UserError("-o/--output: empty; expected the workload JSON file to write")
    if args.name is not None and not args.name.strip():
        raise UserError("--name: empty; expected the workload's name (or leave --name out: the graph's or the file's)")
    if os.path.exists(args.output) and os.path.exists(args.model) and os.path.samefile(args.output, args.model):
        raise UserError(f"-o/--output: {printable(args.output)} is the input model {printable(args.model)}; writing the "
                        "workload there would overwrite the .onnx: expected another file (e.g. model.json)")
    doc, unsupported = onnx_import.convert(args.model, name=args.name, elem_size=args.elem_size,
                                           attention=args.attention, allow_partial=args.allow_partial)
    text = json.dumps(doc, indent=1) + "\n"
    format.parse(json.loads(text), args.model)     # what we write must load; problems name the model
    try:
        write_text(args.output, text)
    except OSError as e:
        raise UserError(e.strerror if args.output in (e.strerror or "") else f"{args.output}: cannot write: {e.strerror}") from None
    src = printable(args.model)
    out.print(Text(f"wrote {printable(args.output)}: {len(doc['layers'])} layers ({len(doc['layer_types'])} types) "
                   f"from {src}, \"{doc['name']}\""))
    left = [u for u in unsupported if u["op_type"] in onnx_import.LAYER_OPS]
    if left:
        out.print(Text(f"left out: {len(left)} attention products (activation x activation MatMuls), as the paper's "
                       "layer counts; --attention include imports them"))
    kinds: dict = {}
    for u in unsupported:
        if u["op_type"] not in onnx_import.LAYER_OPS:
            kinds[u["op_type"]] = kinds.get(u["op_type"], 0) + 1
    if kinds:
        out.print(Text(f"not layers ({sum(kinds.values())} nodes, listed under \"unsupported\" in the file): " +
                       "; ".join(f"{k} x{v}" for k, v in kinds.items())))
    if doc.get("skipped_layers"):
        out.print(Text(f"partial import (--allow-partial): {len(doc['skipped_layers'])} MatMul/Gemm/Conv nodes are not "
                       "in the workload (listed under \"skipped_layers\"; quco-emu run repeats it)", style="bold"))
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("run", help="run a workload (a model layer by layer) through the unit and the model")
    p.add_argument("workloads", nargs="+", metavar="WORKLOAD[@CUS[:LDS]]",
                   help="workload JSON; two or more share the GPU, each on its CUs and LDS bytes per CU")
    p.add_argument("--gpu", help="GST preset or file (default: the workload's, else r9-nano)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="DIR", help="write figures (per layer type; DVFS) as PNG and SVG here")
    p.add_argument("--trace", metavar="FILE", help="layers and reconfigurations on one timeline (Chrome/Perfetto)")
    p.add_argument("--dvfs", metavar="TRACE", help="a frequency trace file, or a bundled one: mi100-decreasing, "
                   "mi100-u-shaped, mi100-decrease-hold; compares QuCo-HW with QuCo-SW")
    p.add_argument("--layers", action="store_true", help="one row per layer even for long workloads")
    p.add_argument("--explain", action="store_true", help="how each layer type's queues and CI were derived")
    p.add_argument("--no-baselines", action="store_true", help="skip ATT/Semi-Tuned and ATT/Fine-Tuned")
    p.add_argument("--firmware")
    p.add_argument("--profile", default="cv32e40p", help="timing profile for reconfiguration cycles (default cv32e40p)")
    p.add_argument("--clock", type=clock_mhz, default=QUCO_CLOCK_MHZ, help="QuCo clock in MHz (default 700)")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("import", help="an ONNX model's MatMul, Gemm and Conv nodes as a workload file")
    p.add_argument("model")
    p.add_argument("-o", "--output", required=True, help="workload JSON to write")
    p.add_argument("--name", help="workload name (default: the graph's, or the file's when the exporter named it "
                   "main_graph)")
    p.add_argument("--elem-size", type=int, choices=(1, 2, 4, 8), help="bytes per element (default: the tensors')")
    p.add_argument("--attention", choices=("exclude", "include"), default="exclude",
                   help="attention's own products (activation x activation MatMuls): left out by default, as the "
                   "paper's layer counts (AlbertV2 74, T5-Small 96)")
    p.add_argument("--allow-partial", action="store_true",
                   help="write the layers that import when some MatMul/Gemm/Conv nodes cannot (else exit 2); "
                   "the file lists the others under skipped_layers")
    p.set_defaults(func=cmd_import)
