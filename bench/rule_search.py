"""Which rules give QuCo's own picks (Table III) on the R9 Nano and the MI100? (issue #23)

Issue #23's search, kept as it was run: its stage 2 plans with the latencies read as ns (the
reading issue #30 replaced by Table II's core cycles, docs/algorithm.md) and the length bound
and slot cap of issue #23 (two whole tiles; floor(length / tile)), which coincide with issue
#30's for the power-of-two lengths of the bundled kernels. The shipped model is checked
against this emulation on the R9 Nano, where the readings agree (1 GHz); issue #30's rule
checks are in bench/picks_carry.py.

    .venv/bin/python bench/rule_search.py     # about 40 s

The paper's listings leave open how several of the inputs it names act (queue lengths, element
sizes, CI, active CUs, the GST's clock, latencies and bandwidth). This script enumerates the
alternatives for each open choice and counts, for every combination, how many of the 16 picks
(tile and streaming slots, both GPUs' bundled Table III kernels) it gives.

1. The tile scan (Algorithm 2): latencies in core cycles or as times (the GST's figures read as
   cycles of a 1 GHz reference, i.e. ns) x bandwidth (one CU's share or the whole GPU's) x
   memTime per queue or per kernel x the two cost weights (COST_A x cycles per byte, COST_B /
   cache line). Which give the vector kernels' tiles (2 x the peak: 1024 on the R9 Nano, 2048
   on the MI100), and for which weight windows.
2. With those peaks, every combination of: the CI step on the scan's best or after the length
   and LDS bounds, the length bound (none, a tile within the queue, two
   tiles, four tiles), the LDS bound (room for 1, 2 or 4 slots, or for the slots Little's law
   asks), Little's law (per queue, per kernel, off) and its scale, the CU step (none; one halving
   per doubling beyond REF; x REF / CUs, with or without a floor of two slots), the CI fallback,
   slots capped by the tiles a queue holds or not, the metadata counted in the LDS or not.
3. For every pick the best physically valid rule set misses: the most picks any rule set gives
   with it, and whether any gives it together with all the picks the best one gives.

The search emulates the planner in float64 (rankings only; ties are far from float32's
rounding); at the end the shipped rule set's emulation is checked against the reference model
(quco/host/reference.py, which the firmware matches bit for bit) on all 16 picks.
"""
from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from rich.table import Table

from quco.gst import abi, tables
from quco.host import reference
from quco.kernel.format import load_kernel

from _console import Console
from _progress import Steps

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("elementwise-k", "elementwise", "sumvectors", "dot-product", "matrix-vector", "matrix-matrix",
           "matrix-matrix-reduction", "batched-matrix-matrix")
TABLE_III = {  # shared/paper-data/quco-results.md: QuCo's tile / slots
    "r9-nano": ((2048, 2), (2048, 4), (2048, 4), (2048, 4), (512, 4), (512, 4), (512, 2), (512, 2)),
    "mi100": ((4096, 4), (4096, 4), (4096, 4), (4096, 4), (1024, 2), (1024, 2), (512, 2), (512, 2)),
}
WEIGHTS = (0, 0.005, 0.01, 0.0135, 0.0175, 0.02, 0.05, 0.1, 0.15, 0.2, 0.5, 1, 2, 5, 10, 20, 50)
SHIPPED = dict(ci="scan", meta=True, lenb=2, bound="little", little="kernel", scale=1 / 16, cu=("scale", 32, True),
               fb=(8, 4), cap=True)


def pow2_floor(v: int) -> int:
    return 1 << (max(int(v), 1).bit_length() - 1)


def round_pow2(r: float, top: int = 8) -> int:
    """QuCo's roundToPowerOfTwo as the model has it: nearest, ties up, within 1..top."""
    if r < 1:
        return 1
    p = pow2_floor(min(r, top))
    return 2 * p if p < top and r >= 1.5 * p else p


class Case:
    """One GPU x kernel: what every rule needs, derived once."""

    def __init__(self, gpu: str, name: str):
        self.gpu, self.name, self.want = gpu, name, TABLE_III[gpu][KERNELS.index(name)]
        self.g = tables.unpack(tables.load(gpu))
        path = ROOT / "quco" / "examples" / "kernels" / ("" if gpu == "r9-nano" else gpu) / f"{name}.json"
        self.kernel = load_kernel(path)
        q = self.kernel.queues
        self.stream = [(n, e) for n, t, e in q if t == abi.QUEUE_STREAMING]
        self.stat = [(n, e) for n, t, e in q if t == abi.QUEUE_STATIONARY]
        self.low, self.high = self.kernel.ci_class == "low", self.kernel.ci_class == "high"
        self.e = max(e for _, e in self.stream)
        self.min_len = min(n for n, _, _ in q)
        wfs = self.kernel.consumer_wavefronts
        self.sched, self.overlap = self.g["simd_muls_per_cycle"] * wfs, min(wfs - 1, self.g["wavefront_pools"])
        self.meta = abi.meta_bytes(len(q))

    def lat(self, reading: str) -> float:
        total = self.g["lat_att_cycles"] + self.g["lat_l2_cycles"] + self.g["lat_dram_cycles"]
        return total * (self.g["core_clock_mhz"] / 1000 if reading == "time" else 1)

    def cpb(self, bw: str) -> float:
        return self.g["core_clock_mhz"] * (self.g["num_cus"] if bw == "cu" else 1) / self.g["dram_bw_mbps"]

    def proc(self, t: int) -> float:
        bs = t / self.sched
        return bs + max(bs - 1, 0) * self.overlap

    def slope(self, e: int, cpb: float) -> float:
        return e * cpb + 2 * e / self.g["cache_line_bytes"]

    def peak(self, reading: str, bw: str, scan: str, a: float, b: float) -> int:
        lat, cpb = self.lat(reading), self.cpb(bw)
        e = sum(e for _, e in self.stream) if scan == "kernel" else self.e
        best, best_t = -1.0, 0
        for k in range(8):
            t = 64 << k
            w = self.proc(t) * (lat / t + a * cpb + b / self.g["cache_line_bytes"]) / (lat + t * self.slope(e, cpb))
            if w > best:
                best, best_t = w, t
        return best_t

    def plan(self, peak: int, r: dict) -> tuple[int, int]:
        """Tile and streaming slots under rule set r (latencies as times, one CU's bandwidth)."""
        lat, cpb, top = self.lat("time"), self.cpb("cu"), self.g["max_slots"]
        def ci_step(t):
            return min(t * 2, 8192) if self.low else max(t // 2, 64) if self.high else t

        t = ci_step(peak) if r["ci"] == "scan" else peak
        if r["lenb"]:
            while t > 64 and r["lenb"] * t > self.min_len:
                t //= 2
        if r["ci"] == "bounds":
            t = ci_step(t)
        avail = self.g["lds_bytes"] - (self.meta if r["meta"] else 0)

        def size(t, s):
            return (sum(abi.lds_align(s * t * e) for _, e in self.stream)
                    + sum(abi.lds_align(t * e) for _, e in self.stat))

        def cu(n):
            kind, ref, floor = r["cu"]
            cus = self.g["num_cus"]
            if kind == "shift":
                return max(n >> (max(cus // ref, 1).bit_length() - 1), 1)
            if kind == "scale":
                s = min(round_pow2(n * ref / cus, top), n)
                return max(s, min(n, 2)) if floor else s
            return n

        def little(t):
            if r["little"] == "off":
                return cu(top)
            e = sum(e for _, e in self.stream) if r["little"] == "kernel" else self.e
            return cu(round_pow2((lat + t * self.slope(e, cpb)) / self.proc(t) * r["scale"], top))

        def cap(t, n):
            return min(n, pow2_floor(self.min_len // t)) if r["cap"] else n

        def barriers_ok(n):
            return 2 * (n * len(self.stream) + len(self.stat)) <= self.g["barrier_limit"]

        def bound(t):  # Little's slots, no more than the barrier limit gives
            n = little(t) if r["bound"] == "little" else r["bound"]
            while n > 1 and not barriers_ok(n):
                n //= 2
            return n

        while t > 64 and size(t, bound(t)) > avail:
            t //= 2
        n = cap(t, little(t))
        if size(t, n) <= avail and barriers_ok(n):
            return t, n
        n = r["fb"][0] if self.low else r["fb"][1]
        while n > 1 and (size(t, cap(t, n)) > avail or not barriers_ok(cap(t, n))):
            n //= 2
        return t, cap(t, n)


def slot_rules():
    littles = [("off", 1.0)] + [(kind, 2.0 ** -k) for kind in ("queue", "kernel") for k in range(7)]
    cus = ([("none", 0, False)] + [("shift", ref, False) for ref in (8, 16, 24, 32, 48, 64)]
           + [("scale", ref, floor) for ref in (16, 24, 32, 48, 64) for floor in (False, True)])
    for ci, meta, lenb, bound, (little, scale), cu, fb, cap in itertools.product(
            ("scan", "bounds"), (True, False), (0, 1, 2, 4), (1, 2, 4, "little"), littles, cus, ((8, 4), (8, 2), (4, 2)),
            (True, False)):
        yield dict(ci=ci, meta=meta, lenb=lenb, bound=bound, little=little, scale=scale, cu=cu, fb=fb, cap=cap)


def label(c: Case) -> str:
    return f"{'R9' if c.gpu == 'r9-nano' else 'MI100'} {c.name}"


def main() -> int:
    con = Console(width=120)  # on a terminal; piped, whole
    cases = [Case(gpu, name) for gpu in TABLE_III for name in KERNELS]
    vec = [i for i, c in enumerate(cases) if not c.stat]

    # 1. the tile scan
    t1 = Table(title="1. tile scan: readings and cost weights that give the vector kernels' tiles "
                     "(R9 Nano peak 1024, MI100 2048)")
    for col in ("latencies", "bandwidth", "memTime", "weight pairs (of %d)" % len(WEIGHTS) ** 2, "COST_A alone",
                "COST_B alone"):
        t1.add_column(col)
    for reading, bw, scan in itertools.product(("cycles", "time"), ("cu", "gpu"), ("queue", "kernel")):
        ok = [(a, b) for a, b in itertools.product(WEIGHTS, WEIGHTS)
              if all(cases[i].peak(reading, bw, scan, a, b) * 2 == cases[i].want[0] for i in vec)]
        a_only = [a for a, b in ok if b == 0]
        b_only = [b for a, b in ok if a == 0]
        t1.add_row(reading if reading == "cycles" else "times (cycles of 1 GHz)", "one CU's share" if bw == "cu"
                   else "whole GPU", f"per {scan}", str(len(ok)),
                   f"{min(a_only)}..{max(a_only)}" if a_only else "-", f"{min(b_only)}..{max(b_only)}" if b_only else "-")
    con.print(t1)
    peaks = [c.peak("time", "cu", "queue", abi.const("COST_A"), abi.const("COST_B")) for c in cases]

    # 2. everything else
    hits = []
    # progress on stderr, every 1,024 rule sets; stdout as without it
    with Steps("rule_search", "rule sets", sum(1 for _ in slot_rules())) as progress:
        for r in slot_rules():
            got = tuple(c.plan(p, r) == c.want for c, p in zip(cases, peaks))
            hits.append((sum(got), got, r))
            if len(hits) % 1024 == 0 or len(hits) == progress.total:
                progress.update(len(hits))
    valid = [h for h in hits if h[2]["meta"]]
    best = max(h[0] for h in valid)
    t2 = Table(title=f"2. {len(hits):,} rule sets: the most picks (of 16) each family member reaches")
    t2.add_column("metadata in the LDS")
    t2.add_column("best")
    t2.add_column("rule sets at the best")
    for meta in (True, False):
        sub = [h for h in hits if h[2]["meta"] == meta]
        top = max(h[0] for h in sub)
        t2.add_row("counted (the paper: a metadata region in the LDS)" if meta else "not counted (overflows the LDS)",
                   str(top), str(sum(h[0] == top for h in sub)))
    con.print(t2)
    overrun = max((h for h in hits if not h[2]["meta"]), key=lambda h: h[0])
    con.print(f"with the metadata not counted, e.g. {overrun[2]}: misses "
              + ", ".join(label(c) for c, ok in zip(cases, overrun[1]) if not ok))
    shipped = next(h for h in hits if h[2] == SHIPPED)
    con.print(f"shipped rule set: {shipped[0]}/16 (the most with the metadata counted: {best})")
    per_choice = Table(title="the best count with each choice fixed (metadata counted)")
    per_choice.add_column("choice")
    per_choice.add_column("value")
    per_choice.add_column("best", justify="right")
    for key in ("ci", "lenb", "bound", "little", "cu", "fb", "cap"):
        top = Counter()
        for n, _, r in valid:
            top[str(r[key])] = max(top[str(r[key])], n)
        for value, n in sorted(top.items()):
            per_choice.add_row(key, value, str(n))
    con.print(per_choice)

    # 3. the misses
    t3 = Table(title="3. each pick the shipped rule set misses")
    for col in ("pick", "QuCo", "ours", "most picks with it", "with all of ours?", "ours it loses (best such rule)"):
        t3.add_column(col)
    ours = {i for i, ok in enumerate(shipped[1]) if ok}
    for i, c in enumerate(cases):
        if shipped[1][i]:
            continue
        with_it = [h for h in valid if h[1][i]]
        together = any(all(h[1][j] for j in ours) for h in with_it)
        top = max(with_it, key=lambda h: h[0], default=None)
        lost = ", ".join(label(cases[j]) for j in sorted(ours) if top and not top[1][j]) if top else "no rule gives it"
        t3.add_row(label(c), "%d / %d" % c.want, "%d / %d" % c.plan(peaks[i], SHIPPED),
                   str(max((h[0] for h in with_it), default=0)), "yes" if together else "no", lost)
    con.print(t3)
    for i in vec:
        c = cases[i]
        if len(c.stream) == 2 and c.gpu == "mi100":
            need = sum(abi.lds_align(c.want[1] * c.want[0] * e) for _, e in c.stream)
            con.print(f"{label(c)}: {c.want[1]} slots x {c.want[0]} x {len(c.stream)} queues x {c.e} B = {need:,} B "
                      f"of {c.g['lds_bytes']:,}, and the metadata takes {c.meta} B")

    # the emulation of the shipped rule set is the model's arithmetic (on the R9 Nano: 1 GHz, where
    # the latencies read as ns and as core cycles agree)
    for c, p in zip(cases, peaks):
        if c.gpu != "r9-nano":
            continue
        res = reference.configure(tables.load(c.gpu), c.kernel.record())
        slots = {s for s, q in zip(res.slots, c.kernel.queues) if q[1] == abi.QUEUE_STREAMING}
        assert (res.tile, slots) == (c.plan(p, SHIPPED)[0], {c.plan(p, SHIPPED)[1]}), label(c)
    con.print("the shipped rule set's emulation agrees with the reference model on the R9 Nano's 8 picks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
