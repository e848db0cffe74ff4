"""A digest of the performance model's results over a fixed broad set, to check that a change
meant to make the model faster leaves every result bit-identical (issue #29 item 3).

    .venv/bin/python bench/model_digest.py --out before.json          # write the values
    .venv/bin/python bench/model_digest.py --compare before.json      # compare: digest, max change

The set: every preset x every bundled kernel (its own folder's where the preset has one) x
every configuration of the search space (the exhaustive space, or the descent's evaluations
where the space is too large) in ATT mode, plus the NoATT pool, Non-Tuned, Informed-Tuned and
the Ideal case; the H100 measurement file's rows through quco.perfmodel.hardware (the att
variant's points and the ATT-vs-plain-loads table); Dot-Product, Matrix-Vector and Elementwise
on the H100 at 256, 4,096 and 32,768 work-groups (every configuration). Each value is a
model's cycles, printed with repr (every bit). The events are not part of it (a faster model
schedules fewer). Each searched space is also searched by branch and bound for its fastest
and its ten fastest (space.search_space's `top`), which must rank them as the whole search does.
"""
import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from quco.gst import tables
from quco.kernel.format import load_kernel
from quco.paper.ours import kernel_dir
from quco.perfmodel import hardware, search, space
from quco.perfmodel.params import machine
from quco.perfmodel.work import Work
from quco.util import atomic

from _progress import Steps

GRID_KERNELS = ("Dot-Product", "Matrix-Vector", "Elementwise")
GRIDS = (256, 4096, 32768)


PRUNED = {"spaces": 0, "agree": 0, "evaluated": 0, "configurations": 0, "differ": []}


def _space(out: dict, tag: str, m, g, work) -> None:
    res = space.search_space(m, g, work)
    for r in res.ranked:
        out[f"{tag} att {r.config.tile}/{'/'.join(map(str, r.config.slots))}"] = r.outcome.cycles
    # the branch and bound (search_space's `top`) must rank the fastest as the whole search does
    for top in (1, 10):
        pruned = space.search_space(m, g, work, top=top)
        same = [(r.config, r.outcome.cycles) for r in pruned.ranked[:top]] == \
            [(r.config, r.outcome.cycles) for r in res.ranked[:top]]
        PRUNED["spaces"] += 1
        PRUNED["agree"] += same and pruned.searched == res.evaluations
        PRUNED["evaluated"] += pruned.evaluations
        PRUNED["configurations"] += pruned.searched
        if not same:
            PRUNED["differ"].append(f"{tag} top {top}")


def collect(quick: bool = False) -> dict:
    grids = GRIDS[:1] if quick else GRIDS
    paths = {gpu: sorted(kernel_dir(gpu).glob("*.json")) for gpu in tables.preset_names()}
    # progress on stderr: each preset x kernel, the measurement file, each grid
    with Steps("model_digest", "searching", sum(map(len, paths.values())) + 1 + len(GRID_KERNELS) * len(grids)) as steps:
        return _collect(grids, paths, steps)


def _collect(grids: tuple, paths: dict, steps: Steps) -> dict:
    out: dict = {}
    for gpu in tables.preset_names():
        g = tables.unpack(tables.load(gpu))
        for path in paths[gpu]:
            steps.step(f"{gpu} {path.stem}")
            k = load_kernel(path)
            m, work = machine(g, k.core_clock_mhz, k.active_cus, k.lds_bytes), Work.of(k)
            tag = f"{gpu} {path.stem}"
            _space(out, tag, m, g, work)
            for name, r in (("noatt-non", search.noatt(m, g, work, False)), ("noatt-fine", search.noatt(m, g, work, True)),
                            ("non-tuned", search.non_tuned(m, g, work)), ("informed", search.informed(m, g, work)),
                            ("ideal", search.ideal(g, work, k.core_clock_mhz, k.active_cus))):
                out[f"{tag} {name}"] = (r.config.tile, list(r.config.slots), r.outcome.cycles) if r else None
        search.evaluate.cache_clear()
    steps.step("the H100 measurement file's rows")
    gst = tables.load("h100-sxm")
    rows = hardware.read(hardware.DEFAULT_DATA)
    for r in hardware.compare(rows, gst):
        for p in r["points"]:
            out[f"hw {r['kernel']} {r['size']} {p.tile}/{p.slots}"] = p.model_us
    for r in hardware.att_vs_noatt(rows, gst):
        out[f"hw att/noatt {r['kernel']} {r['size']}"] = r["model"]
    g = tables.unpack(gst)
    m = machine(g)
    for name in GRID_KERNELS:
        for wgs in grids:
            steps.step(f"{name} at {wgs:,} work-groups")
            search.evaluate.cache_clear()
            _space(out, f"grid {name} {wgs}", m, g, Work.of(hardware.scaled_kernel(name, wgs)))
    search.evaluate.cache_clear()
    return out


def digest(values: dict) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()


def _bests(values: dict) -> dict:
    """Per searched space (the key's part before ' att '): (cycles, configuration) of its fastest."""
    out: dict = {}
    for k, v in values.items():
        tag, sep, cfg = k.partition(" att ")
        if sep and isinstance(v, (int, float)) and (tag not in out or v < out[tag][0]):
            out[tag] = (v, cfg)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="write the values here (JSON)")
    ap.add_argument("--compare", help="compare against values written before")
    ap.add_argument("--quick", action="store_true", help="grids of 256 work-groups only")
    args = ap.parse_args()
    t = time.process_time()
    values = collect(args.quick)
    print(f"{len(values):,} values, {time.process_time() - t:.1f} s CPU, sha256 {digest(values)}")
    print(f"pruned searches (top 1 and top 10) ranking their fastest as the whole search: {PRUNED['agree']} of "
          f"{PRUNED['spaces']}; they evaluate {PRUNED['evaluated']:,} of {PRUNED['configurations']:,} configurations"
          + (f"; differ: {PRUNED['differ'][:8]}" if PRUNED["differ"] else ""))
    if args.out:
        atomic.write_text(args.out, json.dumps(values, sort_keys=True, indent=0))
    if args.compare:
        old = json.loads(Path(args.compare).read_text())
        values = json.loads(json.dumps(values))  # tuples as the file has them (lists)
        if args.quick:
            old = {k: v for k, v in old.items() if k in values}
        print(f"before: {len(old):,} values, sha256 {digest(old)}")
        missing, extra = old.keys() - values.keys(), values.keys() - old.keys()
        changed = [k for k in old.keys() & values.keys() if old[k] != values[k]]
        worst, where, picks = 0.0, None, []
        for k in changed:
            a, b = old[k], values[k]
            if isinstance(a, list) and isinstance(b, list):  # a baseline: (tile, slots, cycles)
                if a[:2] != b[:2]:
                    picks.append(k)
                a, b = a[2], b[2]
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a != b:
                rel = abs(b / a - 1) if a else float("inf")
                if rel > worst:
                    worst, where = rel, k
        best_old, best_new = _bests(old), _bests(values)
        moved = sorted(t for t in best_old if best_old[t][1] != best_new.get(t, (0, None))[1])
        print(f"changed {len(changed):,}, missing {len(missing):,}, new {len(extra):,}; "
              f"max relative change of a time {worst:.3e}" + (f" at {where}: {old[where]} -> {values[where]}" if where else ""))
        print(f"baseline picks changed: {len(picks)} {sorted(picks)[:8]}")
        print(f"best of a searched space changed: {len(moved)} of {len(best_old)}")
        for t in moved:
            print(f"  {t}: {best_old[t][1]} ({best_old[t][0]:.6g}) -> {best_new[t][1]} ({best_new[t][0]:.6g}); the old best now "
                  f"{values.get(t + ' att ' + best_old[t][1])}")
        for k in sorted(changed)[:10]:
            print(f"  {k}: {old[k]} -> {values[k]}")
        return 0 if not (changed or missing or extra or PRUNED["differ"]) else 1
    return 1 if PRUNED["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
