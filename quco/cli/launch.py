"""quco-emu launch, profile, check, diff, examples and explain: one kernel on the emulated unit
(or the reference model), and the bundled examples. cli/main.py registers these commands and
maps errors to exit codes.
"""
from __future__ import annotations

import json

from rich.table import Table
from rich.text import Text

from .. import examples
from . import perf
from .common import (EXIT_MISMATCH, EXIT_STATUS, UserError, checked_gst, checked_profile, clock_mhz, err,
                     out, target, write_output)
from ..gst import abi, tables
from ..util.userinput import printable
from ..host import explain, profile, reference
from ..util import atomic
from ..host.device import QUCO_CLOCK_MHZ, Device, LaunchResult, result_from
from ..kernel.format import load_kernel
from ..perfmodel.model_table import described


def _device(gpu: str, gst: bytes, firmware, **options) -> Device:
    dev = Device(gst, firmware, **options)
    if dev.boot_status != abi.Status.OK:  # a table the model accepts: the unit itself refuses it
        raise UserError(f"{gpu}: the unit rejected the GST at boot: {dev.boot_message}", EXIT_STATUS)
    return dev


def queue_table(res: LaunchResult, title: str, names: list[str] | None = None) -> Table:
    t = Table(title=title)
    for col in ("#", "queue", "type", "elem", "length", "tile", "slots", "LDS offset", "bytes", "barriers"):
        t.add_column(col, justify="left" if col in ("queue", "type") else "right", no_wrap=True)
    for q in res.queues:
        name = names[q.index] if names and q.index < len(names) and names[q.index] else ""
        t.add_row(str(q.index), name, q.type, f"{q.elem_size} B", f"{q.length:,}", str(q.tile), str(q.slots),
                  f"{q.offset:,}", f"{q.block_bytes:,}",
                  f"{q.barrier_base}-{q.barrier_base + q.barrier_count - 1}")
    return t


def cmd_launch(args) -> int:
    atomic.check_target(args.model_trace)  # before any work: a target it cannot write is exit 2 now
    checked_profile(args.profile)
    kernel = load_kernel(args.kernel)
    gpu, gst = target(args, kernel)
    if args.model or args.model_trace is not None:
        perf.model_bound(kernel, described(gpu, gst), printable(str(args.kernel)))  # a bad [model]: exit 2 now
    if args.reference:
        r = reference.configure(gst, kernel.record())
        res = result_from(r.status, r.detail, r.lds, generation=1)
        boot = None
    else:
        profile = args.profile if args.profile is not None else ("cv32e40p" if args.cycles else None)
        dev = _device(gpu, gst, args.firmware, profile=profile, clock_mhz=args.clock, count_memory=args.cycles)
        res = dev.launch(kernel)
        boot = dev.boot_step.instructions
    model = perf.model_launch(kernel, gpu, res, args.model_trace) if (args.model or args.model_trace) and res.ok else None
    if args.json:
        doc = {"kernel": kernel.name, "gpu": gpu, "engine": "reference" if args.reference else "firmware",
               "boot_instructions": boot, **res.as_dict()}
        if model is not None:
            doc["model"] = model
        print(json.dumps(doc, indent=2))
    elif res.ok:
        engine = "reference model" if args.reference else "firmware"
        out.print(queue_table(res, f"{kernel.name} on {gpu}: tile {res.tile} elements ({engine})",
                              kernel.queue_names))
        out.print(f"LDS: metadata {res.meta_bytes} B, queues end at {res.used_bytes:,} B; "
                  f"barriers {res.barriers_used}; generation {res.generation}")
        if boot is not None:
            out.print(f"retired instructions: launch {res.instructions:,} (boot {boot:,}, once)"
                      f"{'; cache hit' if res.cache_hit else ''}")
        if res.cost and res.cost.cycles is not None:
            c = res.cost
            energy = f", {c.energy_nj:.2f} nJ" if c.energy_nj is not None else ""
            out.print(f"modelled ({dev.profile.name}): {c.cycles:,} cycles = {c.ns:,.0f} ns at "
                      f"{args.clock:g} MHz{energy} (boot {dev.boot_cost.cycles:,} cycles)")
        if model is not None:
            peak = tables.unpack(gst)["dram_bw_mbps"] / 1000
            wgs = model['occupancy']
            line = (f"kernel on the model: {model['cycles']:,.0f} GPU cycles = {model['ns'] / 1000:,.1f} us at "
                    f"{model['clock_mhz']:g} MHz; {wgs} work-group{'' if wgs == 1 else 's'} per CU at once; "
                    f"DRAM traffic {model['dram_gbps']:,.1f} GB/s over the whole GPU "
                    f"({100 * model['dram_gbps'] / peak:.1f}% of the GST's {peak:,.0f} GB/s), "
                    f"{100 * model['l2_hit']:.0f}% of the queues' bytes from the L2; "
                    f"compute {100 * model['compute_util']:.0f}% of the CU's peak")
            if res.cost and res.cost.ns is not None:
                line += f"; reconfiguration = {100 * res.cost.ns / model['ns']:.3f}% of the kernel"
            out.print(line, markup=False, highlight=False)
            if args.model_trace:
                out.print(f"wrote {printable(args.model_trace)} (open in https://ui.perfetto.dev)", markup=False)
    if not res.ok:
        err.print(f"error: {kernel.name} on {gpu}: {res.message}")
        return EXIT_STATUS
    return 0


def cmd_profile(args) -> int:
    atomic.check_target(args.trace)
    checked_profile(args.profile)
    kernel = load_kernel(args.kernel)
    gpu, gst = target(args, kernel)
    dev = _device(gpu, gst, args.firmware, profile=args.profile, clock_mhz=args.clock, trace=True)
    res = dev.launch(kernel, check=True)
    if args.cached:
        res = dev.launch(kernel, check=True)
    step = "cached relaunch" if args.cached else "cold launch"
    steps = profile.attribute(dev.image, dev.timer, res.cost.trace)
    rows = profile.by_function(steps)
    if args.trace is not None:  # written first: a trace that cannot be written leaves no half report
        write_output(args.trace, json.dumps(profile.chrome_trace(steps, args.clock, f"QuCo {kernel.name} {step}")))
    total = max(res.cost.cycles, 1)
    t = Table(title=f"{kernel.name} on {gpu}: {step}, {res.cost.cycles:,} cycles "
                    f"({dev.profile.name}), {res.instructions:,} instructions",
              caption="self: while the function is innermost (inlined helpers count apart); "
                      "total: while it is on the stack")
    for col in ("function", "entries", "instructions", "self cycles", "% self", "total cycles", "% total"):
        t.add_column(col, justify="left" if col == "function" else "right")
    for r in rows:
        t.add_row(r.name, str(r.entries), f"{r.instructions:,}", f"{r.cycles:,}",
                  f"{100 * r.cycles / total:.1f}", f"{r.total_cycles:,}", f"{100 * r.total_cycles / total:.1f}")
    out.print(t)
    if args.trace is not None:
        out.print(f"wrote {printable(args.trace)} (open in https://ui.perfetto.dev)")
    return 0


def cmd_check(args) -> int:
    kernel = load_kernel(args.kernel)
    if kernel.gpu:  # the GPU the kernel names must exist and be a table the unit accepts
        target(args, kernel)
    out.print(f"{printable(args.kernel)}: ok ({kernel.name}, {len(kernel.queues)} queues)")
    return 0


def cmd_diff(args) -> int:
    gpus = tables.preset_names() if args.gpu in (None, "all") else [args.gpu]
    kernels = [load_kernel(p) for p in (args.kernels or sorted(examples.KERNELS.glob("*.json")))]
    # one booted unit per GPU launches the kernels in turn, so a launch may first evict an earlier
    # kernel's entry from the relaunch cache: its count is above `quco-emu launch`'s (a first launch)
    t = Table(title="firmware vs reference model",
              caption="instructions: each kernel launched after the ones above it on one booted unit, so "
                      "it may evict a cached configuration first (launch counts a first launch after boot: "
                      "Matrix-Matrix 1,230 here, 1,171 there)")
    for col in ("gpu", "kernel", "status", "tile", "slots", "instructions", "agree"):
        t.add_column(col)
    bad = 0
    for gpu in gpus:
        dev = _device(gpu, checked_gst(gpu, "--gpu" if args.gpu else ""), args.firmware)
        for k in kernels:
            fw = dev.launch(k)
            ref = reference.configure(dev.gst, k.record(), fw.generation if fw.ok else 1)
            same = fw.status == ref.status and fw.detail == ref.detail and fw.lds == ref.lds
            bad += not same
            t.add_row(gpu, k.name, fw.status.name, str(fw.tile), "/".join(str(q.slots) for q in fw.queues),
                      f"{fw.instructions:,}", "yes" if same else Text("NO", style="red"))
    out.print(t)
    return EXIT_MISMATCH if bad else 0


def cmd_examples(args) -> int:
    bundled = examples.kernel_files() | examples.workload_files()
    unknown = [n for n in args.names if n not in bundled]
    if unknown:
        raise UserError(f"no bundled example {unknown[0]!r}; there are: {', '.join(bundled)}")
    for name in args.names or bundled:
        print(bundled[name])
    return 0


def cmd_explain(args) -> int:
    kernel = load_kernel(args.kernel)
    gpu, gst = target(args, kernel)
    return explain.render(out, err, gst, kernel, gpu)




def add_parsers(sub) -> None:
    p = sub.add_parser("launch", help="configure a kernel.json on the emulated unit")
    p.add_argument("kernel")
    p.add_argument("--gpu", help=f"GST preset ({', '.join(tables.preset_names())}) or a .toml/.gst file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--firmware", help="firmware ELF (default $QUCO_FIRMWARE, else the installed quco.elf)")
    p.add_argument("--reference", action="store_true", help="use the Python reference model, no emulator")
    p.add_argument("--cycles", action="store_true",
                   help="model cycles, latency and energy (default profile cv32e40p)")
    p.add_argument("--profile", help="timing profile: cv32e40p, cv32e40p-worst, cv32e40p-fdsu, ipc1 or a TOML file (implies cycles)")
    p.add_argument("--clock", type=clock_mhz, default=QUCO_CLOCK_MHZ, help="QuCo clock in MHz (default 700)")
    p.add_argument("--model", action="store_true",
                   help="add the kernel's modelled run time with this configuration (quco.perfmodel)")
    p.add_argument("--model-trace", metavar="FILE", help="with --model: one CU's timeline as a Chrome trace")
    p.set_defaults(func=cmd_launch)
    p = sub.add_parser("profile", help="cycles and instructions per firmware function for one launch")
    p.add_argument("kernel")
    p.add_argument("--gpu")
    p.add_argument("--firmware")
    p.add_argument("--profile", default="cv32e40p", help="timing profile (default cv32e40p)")
    p.add_argument("--clock", type=clock_mhz, default=QUCO_CLOCK_MHZ)
    p.add_argument("--cached", action="store_true", help="profile an identical relaunch instead")
    p.add_argument("--trace", help="write a Chrome trace JSON (Perfetto) to this file")
    p.set_defaults(func=cmd_profile)
    p = sub.add_parser("check", help="validate a kernel.json without running it")
    p.add_argument("kernel")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("diff", help="compare firmware and reference model on kernels x GPUs")
    p.add_argument("kernels", nargs="*", help="kernel.json files (default the bundled examples/kernels/*.json)")
    p.add_argument("--gpu", help="one preset or file, or 'all' (default)")
    p.add_argument("--firmware")
    p.set_defaults(func=cmd_diff)
    p = sub.add_parser("examples", help="print the paths of the bundled kernel and workload files (all, or those named)")
    p.add_argument("names", nargs="*", help="e.g. matrix-matrix, mi100/matrix-matrix")
    p.set_defaults(func=cmd_examples)
    p = sub.add_parser("explain", help="each step of the pick with its intermediate values (reference model)")
    p.add_argument("kernel")
    p.add_argument("--gpu")
    p.set_defaults(func=cmd_explain)
