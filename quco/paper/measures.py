"""Our side of each claim, from the sources quco.paper.ours computes (plain dicts).

A measure is `fn(src, **args) -> value` plus the sources it needs (`needs(args)`): keys
such as ("kernel", "r9-nano", "matrix-matrix"), ("launch", "mi100"), ("workload",
"whisper-tiny"), ("dvfs", "mi100-decreasing"), ("portability",). `src[key]` is the source's
data; a source that failed raises SourceFailed, and the claim is "could not compute".
Values: a verdict.Pick, a number or list of numbers, or a list of verdict.Checks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import ours
from .verdict import Check, Pick

FIG6_CASES = ("NoATT/Non-Tuned", "NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned", "ATT/Fine-Tuned", "QuCo")
ORDER_BELOW_QUCO = ("NoATT/Fine-Tuned", "ATT/Non-Tuned", "ATT/Informed-Tuned")


class SourceFailed(Exception):
    """A source this measure reads could not be computed; the message says why."""


@dataclass(frozen=True)
class Measure:
    fn: Callable
    needs: Callable


MEASURES: dict[str, Measure] = {}


def _measure(needs):
    def register(fn):
        MEASURES[fn.__name__] = Measure(fn, needs)
        return fn
    return register


def compute(name: str, src: dict, args: dict):
    return MEASURES[name].fn(Sources(src), **args)


class Sources:
    """src[key], raising SourceFailed for a source that failed or was not computed."""

    def __init__(self, data: dict):
        self.data = data

    def __getitem__(self, key):
        if key not in self.data:
            raise SourceFailed(f"source {'/'.join(key)} was not computed")
        value = self.data[key]
        if isinstance(value, dict) and "error" in value:
            raise SourceFailed(f"{'/'.join(key)}: {value['error']}")
        return value


# ---------------------------------------------------------------- helpers
def pick_of(tile, slots, streaming, label) -> Pick:
    """The streaming queues' slots as one number when they agree (the paper gives one)."""
    mine = {s for s, st in zip(slots, streaming) if st} or set(slots)
    return Pick(tile, mine.pop() if len(mine) == 1 else None, label)


def _kernel_needs(a):
    stems = a.get("kernels") or ([a["kernel"]] if "kernel" in a else ours.stems(a["gpu"]))
    return [("kernel", a["gpu"], s) for s in stems]


def _cases(src, gpu, stem) -> dict:
    return {r["case"]: r for r in src[("kernel", gpu, stem)]["rows"]}


def _cycles(row):
    return row.get("cycles") if row else None


def _ratio(a, b):
    return a / b if a is not None and b else None


def _perf(row):
    """Performance normalised to the ideal, as Fig. 6 draws it."""
    return _ratio(row.get("ideal_cycles"), _cycles(row)) if row else None


def of_rules(key: tuple, rules: str = "") -> tuple:
    """The source of a rule set: the paper's (rules "", the firmware's default) or quco+'s twin
    (rules "plus": ours.PLUS appended, the same computation with FLAG_QUCO_PLUS in the record)."""
    if rules not in ("", ours.PLUS):
        raise ValueError(f"rules {rules!r}: expected none (the paper's rule set) or {ours.PLUS!r} (quco+)")
    return key + (ours.PLUS,) if rules else key


def find_layer(layers: list[dict], ref: str) -> dict:
    """"first", or the paper's "<prefix>-<n>": the n-th layer whose type starts with the
    prefix, in model order (FC-5: the fifth linear layer; Conv1d-2: the second convolution)."""
    if ref == "first":
        return layers[0]
    prefix, _, n = ref.rpartition("-")
    hits = [lay for lay in layers if (lay.get("type") or "").startswith(prefix)]
    if not n.isdigit() or not 1 <= int(n) <= len(hits):
        raise SourceFailed(f"no layer {ref}: {len(hits)} layers of type {prefix}*")
    return hits[int(n) - 1]


# ---------------------------------------------------------------- picks
@_measure(lambda a: [of_rules(("launch", a["gpu"]), a.get("rules", ""))])
def firmware_pick(src, gpu, kernel, rules=""):
    k = src[of_rules(("launch", gpu), rules)]["kernels"][kernel]
    if not k["ok"]:
        raise SourceFailed(f"the unit refused {kernel} on {gpu}: {k['message']}")
    return pick_of(k["tile"], k["slots"], k["streaming"], k["label"])


@_measure(_kernel_needs)
def model_pick(src, gpu, kernel, case):
    data = src[("kernel", gpu, kernel)]
    row = next(r for r in data["rows"] if r["case"] == case)
    if row["tile"] is None:
        return None
    slots = [int(s) for s in row["slots"].split("/")]
    return pick_of(row["tile"], slots, data["streaming"], row["config"])


@_measure(_kernel_needs)
def pick_gap(src, gpu, kernel, tile, slots):
    """The paper's pick run on our model: % over the model's best (None: it does not fit our LDS)."""
    data = src[("kernel", gpu, kernel)]
    fine = next(r for r in data["rows"] if r["case"] == "ATT/Fine-Tuned")
    cycles = data["by_pick"].get(f"{tile}/{slots}")
    if cycles is None:
        raise SourceFailed(f"{tile} / {slots} does not fit {gpu}'s LDS as the unit lays it out (metadata + queue blocks)")
    if not fine.get("cycles"):
        return None
    return 100.0 * (cycles / fine["cycles"] - 1.0)


@_measure(lambda a: [("launch", a["gpu"])])
def picks_differ(src, gpu, kernels, part):
    """Whether the firmware tells two kernels apart: their tiles (part "tile") or streaming slots."""
    a, b = (firmware_pick(src, gpu, k) for k in kernels)
    label = f"{kernels[0]} vs {kernels[1]}"
    return [Check(label, a.tile, "!=", b.tile) if part == "tile" else Check(label, a.slots, "!=", b.slots)]


@_measure(lambda a: [("launch", a["from"]), ("launch", a["to"])])
def tiles_doubled(src, **a):
    base, other = src[("launch", a["from"])]["kernels"], src[("launch", a["to"])]["kernels"]
    return sum(other[k]["tile"] == 2 * base[k]["tile"] for k in base if k in other)


# ---------------------------------------------------------------- Fig. 5, 6, 7, 10: kernels on the model
@_measure(_kernel_needs)
def fig6_order(src, gpu, kernel):
    by = _cases(src, gpu, kernel)
    quco = _perf(by.get("QuCo"))
    checks = [Check("Fine-Tuned >= QuCo", _perf(by.get("ATT/Fine-Tuned")), ">=", quco)]
    return checks + [Check(f"QuCo > {c}", quco, ">", _perf(by.get(c))) for c in ORDER_BELOW_QUCO]


@_measure(_kernel_needs)
def mean_gap(src, gpu):
    gaps = [_cases(src, gpu, s).get("QuCo", {}).get("vs_fine_pct") for s in ours.stems(gpu)]
    return None if any(g is None for g in gaps) else sum(gaps) / len(gaps)


@_measure(_kernel_needs)
def lowest_case(src, gpu, case, factor):
    checks = []
    for s in ours.stems(gpu):
        by = _cases(src, gpu, s)
        others = [_perf(by.get(c)) for c in FIG6_CASES if c != case]
        floor = None if any(o is None for o in others) else factor * min(others)
        checks.append(Check(by[case]["kernel"], _perf(by.get(case)), "<", floor))
    return checks


@_measure(_kernel_needs)
def case_perf(src, gpu, kernel, case):
    return _perf(_cases(src, gpu, kernel).get(case))


@_measure(_kernel_needs)
def best_case_perf(src, gpu, kernel):
    perfs = [_perf(_cases(src, gpu, kernel).get(c)) for c in FIG6_CASES]
    return None if any(p is None for p in perfs) else max(perfs)


@_measure(_kernel_needs)
def gap(src, gpu, kernel, case):
    return _cases(src, gpu, kernel).get(case, {}).get("vs_fine_pct")


@_measure(_kernel_needs)
def cycles_ratio(src, gpu, num, den, kernel=None, kernels=None):
    """cycles(num) / cycles(den): a slowdown of `num`, a speedup of `den`; the largest
    over `kernels`."""
    values = []
    for s in kernels or [kernel]:
        by = _cases(src, gpu, s)
        values.append(_ratio(_cycles(by.get(num)), _cycles(by.get(den))))
    return None if any(v is None for v in values) else max(values)


@_measure(_kernel_needs)
def faster(src, gpu, kernels, case, than):
    return [Check(_cases(src, gpu, s)[case]["kernel"], _cycles(_cases(src, gpu, s).get(case)), "<",
                  _cycles(_cases(src, gpu, s).get(than))) for s in kernels]


@_measure(_kernel_needs)
def dram_higher(src, gpu, case, over):
    checks = []
    for s in ours.stems(gpu):
        by = _cases(src, gpu, s)
        checks.append(Check(by[case]["kernel"], by[case].get("dram_gbps"), ">", by.get(over, {}).get("dram_gbps")))
    return checks


def _geomean(values):
    from ..harness.evaluate import geomean
    return None if any(v is None for v in values) else geomean(values)


@_measure(_kernel_needs)
def best_of(src, gpu, case, over, others):
    def speedup(c):
        return _geomean([_ratio(_cycles(_cases(src, gpu, s).get(over)), _cycles(_cases(src, gpu, s).get(c)))
                         for s in ours.stems(gpu)])
    mine = speedup(case)
    return [Check(f"{case} >= {o}", mine, ">=", speedup(o)) for o in others]


@_measure(_kernel_needs)
def slots_above(src, gpu, kernel, case, than):
    """Fig. 7: the ablated step gives more streaming slots than QuCo's own pick (the paper:
    "4, or even 8 slots instead of 2")."""
    data = src[("kernel", gpu, kernel)]
    by = _cases(src, gpu, kernel)

    def slots(c):
        row = by.get(c)
        if not row or row.get("tile") is None:
            return None
        return pick_of(row["tile"], [int(x) for x in row["slots"].split("/")], data["streaming"], row["config"]).slots
    return [Check(f"{data['name']}: {case} {by[case]['config']} vs {than} {by[than]['config']}", slots(case), ">",
                  slots(than))]


@_measure(_kernel_needs)
def speedups_at_least(src, gpu, kernels, num, den, bound):
    """cycles(num) / cycles(den) >= bound on each kernel (a speedup of `den` over `num`)."""
    checks = []
    for s in kernels:
        by = _cases(src, gpu, s)
        checks.append(Check(f"{by[den]['kernel']}: {num} / {den}", _ratio(_cycles(by.get(num)), _cycles(by.get(den))),
                            ">=", bound))
    return checks


@_measure(_kernel_needs)
def gaps_below(src, gpu, bound, case="QuCo"):
    """Each kernel's gap to ATT/Fine-Tuned (%) at most `bound`: a per-kernel bound, not the mean."""
    return [Check(by[case]["kernel"], by[case].get("vs_fine_pct"), "<=", bound)
            for by in (_cases(src, gpu, s) for s in ours.stems(gpu))]


@_measure(_kernel_needs)
def near_fine_split(src, gpu, case, strong, weak, bound):
    """Fig. 6: `case` strong (Fine-Tuned's cycles / its own >= bound) on `strong` kernels and
    suboptimal (below bound) on `weak` ones."""
    checks = []
    for kernels, op, word in ((strong, ">=", "strong"), (weak, "<", "suboptimal")):
        for s in kernels:
            by = _cases(src, gpu, s)
            checks.append(Check(f"{by[case]['kernel']} ({word})", _ratio(_cycles(by.get("ATT/Fine-Tuned")),
                                                                          _cycles(by.get(case))), op, bound))
    return checks


def _gain(src, gpu, case, over):
    return _geomean([_ratio(_cycles(_cases(src, gpu, s).get(over)), _cycles(_cases(src, gpu, s).get(case)))
                     for s in ours.stems(gpu)])


@_measure(lambda a: [k for g in [a["gpu"], *a["others"]] for k in _kernel_needs({"gpu": g})])
def gain_largest(src, gpu, others, case, over):
    """Fig. 10: `case`'s geomean speedup over `over` on `gpu` above that on each other GPU."""
    mine = _gain(src, gpu, case, over)
    return [Check(f"{gpu} vs {o}", mine, ">", _gain(src, o, case, over)) for o in others]


@_measure(_kernel_needs)
def space_size(src, gpu, kernel):
    """How many configurations our Fine-Tuned searches (one tile for all queues, slots per run
    of identical queues, those that fit)."""
    return len(src[("kernel", gpu, kernel)]["space"])


# ---------------------------------------------------------------- Fig. 1
@_measure(lambda a: [("portability",)])
def portability_max(src, kind, scope, source=None, targets=None):
    rows = [r for r in src[("portability",)] if r["kind"] == kind and r["scope"] == scope
            and r["source"] != r["target"] and (source is None or r["source"] == source)
            and (targets is None or r["target"] in targets)]
    values = [r["slowdown"] for r in rows if r["slowdown"] is not None]
    return max(values) if values else None


# ---------------------------------------------------------------- Fig. 8, 9: workloads
@_measure(lambda a: [of_rules(("workload", w), a.get("rules", "")) for w in a["workloads"]])
def workload_speedup(src, workloads, over, rules=""):
    values = [src[of_rules(("workload", w), rules)]["summary"][f"speedup_vs_{over}"] for w in workloads]
    return None if any(v is None for v in values) else max(values)


@_measure(lambda a: [of_rules(("workload", a["workload"]), a.get("rules", ""))])
def workload_layer_pick(src, workload, layer, case, rules=""):
    lay = find_layer(src[of_rules(("workload", workload), rules)]["layers"], layer)
    if lay[f"{case}_tile"] is None:
        return None
    return pick_of(lay[f"{case}_tile"], lay[f"{case}_slots"], lay["streaming"], lay[f"{case}_config"])


@_measure(lambda a: [("workload", a["workload"])])
def layer_slower(src, workload, layers, case):
    all_layers = src[("workload", workload)]["layers"]
    return [Check(f"{ref} ({lay['name']})", lay[f"{case}_ns"], ">", lay["quco_ns"])
            for ref, lay in ((ref, find_layer(all_layers, ref)) for ref in layers)]


@_measure(lambda a: [("workload", a["workload"])])
def layers_fastest(src, workload, layers, others):
    """Fig. 9: on each named layer QuCo at least as fast as each baseline (ours: the n-th layer
    of the type's prefix, as find_layer reads the paper's names and figures.fig9 draws them)."""
    all_layers = src[("workload", workload)]["layers"]
    return [Check(f"{ref} ({lay['name']}): {o} / QuCo", _ratio(lay[f"{o}_ns"], lay["quco_ns"]), ">=", 1.0)
            for ref, lay in ((ref, find_layer(all_layers, ref)) for ref in layers) for o in others]


def _speedups(src, workloads, case):
    """Each workload's whole-run speedup of `case` over Fine-Tuned."""
    return [_ratio(src[("workload", w)]["summary"]["fine_ns"], src[("workload", w)]["summary"][f"{case}_ns"])
            for w in workloads]


@_measure(lambda a: [("workload", w) for w in a["workloads"]])
def geomean_highest(src, workloads):
    """Fig. 8's Geomean column: QuCo's geomean speedup over Fine-Tuned at least Fine-Tuned's own
    (1.0) and Semi-Tuned's."""
    quco = _geomean(_speedups(src, workloads, "quco"))
    return [Check("QuCo vs ATT/Fine-Tuned", quco, ">=", 1.0),
            Check("QuCo vs ATT/Semi-Tuned", quco, ">=", _geomean(_speedups(src, workloads, "semi")))]


@_measure(lambda a: [("workload", w) for w in a["composite"] + a["models"]])
def gain_subtler(src, composite, models):
    """Fig. 8: QuCo's gain over Fine-Tuned smaller on the composite kernels than on the models."""
    return [Check("composite kernels vs full models (geomean speedup over Fine-Tuned)",
                  _geomean(_speedups(src, composite, "quco")), "<", _geomean(_speedups(src, models, "quco")))]


@_measure(lambda a: [("workload", w) for w in a["workloads"]])
def unique_configs(src, workloads):
    """Fig. 11: how many distinct configurations QuCo gives each workload's layers."""
    return [len({lay["quco_config"] for lay in src[("workload", w)]["layers"]}) for w in workloads]


# ---------------------------------------------------------------- Fig. 12: DVFS
@_measure(lambda a: [("dvfs", a["trace"])])
def dvfs_max(src, trace):
    return src[("dvfs", trace)]["summary"]["max_hw_speedup"]


@_measure(lambda a: [("dvfs", a["trace"])])
def dvfs_pick(src, trace, layer, variant):
    row = find_layer(src[("dvfs", trace)]["rows"], layer)
    told = f"told {row['clock_mhz']:g} MHz" if variant == "hw" else f"runs at {row['clock_mhz']:g} MHz, not told"
    return pick_of(row[f"{variant}_tile"], row[f"{variant}_slots"], row["streaming"],
                   f"{row[f'{variant}_config']} ({told})")


@_measure(lambda a: [("dvfs", a["trace"])])
def dvfs_benefit(src, trace, layers):
    rows = src[("dvfs", trace)]["rows"]
    return [Check(f"{ref} at {r['clock_mhz']:g} MHz", r["sw_ns"], ">", r["hw_ns"])
            for ref, r in ((ref, find_layer(rows, ref)) for ref in layers)]


@_measure(lambda a: [("dvfs", t) for t in a["traces"]])
def dvfs_first_same(src, traces):
    """Every layer before the clock first leaves its starting value, on each trace."""
    checks = []
    for t in traces:
        rows = src[("dvfs", t)]["rows"]
        for r in rows:
            if r["clock_mhz"] != rows[0]["clock_mhz"]:
                break
            checks.append(Check(f"{t}: {r['name']}", r["hw_config"], "==", r["sw_config"]))
    return checks


@_measure(lambda a: [("dvfs", t) for t in a["traces"]])
def dvfs_most_layers(src, traces, share):
    """QuCo-HW strictly faster than QuCo-SW on more than `share` of each trace's layers."""
    checks = []
    for t in traces:
        rows = src[("dvfs", t)]["rows"]
        checks.append(Check(f"{t}: share of layers HW faster", sum(r["hw_ns"] < r["sw_ns"] for r in rows) / len(rows),
                            ">", share))
    return checks


def hold_phase(rows: list[dict]) -> list[dict]:
    """The layers from where the clock reaches its last value and stays there."""
    start = len(rows)
    while start > 0 and rows[start - 1]["clock_mhz"] == rows[-1]["clock_mhz"]:
        start -= 1
    return rows[start:]


@_measure(lambda a: [("dvfs", a["trace"])])
def dvfs_hold_gains(src, trace):
    """Decrease-hold: in the hold phase HW faster on most layers and over the phase as a whole."""
    rows = hold_phase(src[("dvfs", trace)]["rows"])
    sw, hw = sum(r["sw_ns"] for r in rows), sum(r["hw_ns"] for r in rows)
    at = f"{len(rows)} layers at {rows[0]['clock_mhz']:g} MHz"
    return [Check(f"{at}: share HW faster", sum(r["hw_ns"] < r["sw_ns"] for r in rows) / len(rows), ">", 0.5),
            Check(f"{at}: SW time / HW time", _ratio(sw, hw), ">", 1.0)]


@_measure(lambda a: [("dvfs", a["trace"])])
def dvfs_edges_negligible(src, trace, within):
    """U-shaped: the layers before the clock first leaves its starting value and after it is back
    for good differ by at most `within` (a fraction) between HW and SW."""
    rows = src[("dvfs", trace)]["rows"]
    first = rows[0]["clock_mhz"]
    lo = next((i for i, r in enumerate(rows) if r["clock_mhz"] != first), len(rows))
    hi = max((i for i, r in enumerate(rows) if r["clock_mhz"] != first), default=-1) + 1
    edges = rows[:lo] + rows[hi:]
    worst = max((abs(r["hw_speedup"] - 1.0) for r in edges), default=None)
    return [Check(f"{len(edges)} layers at {first:g} MHz (before layer {lo + 1}, after layer {hi}): worst |HW/SW - 1|",
                  worst, "<=", within)]


# ---------------------------------------------------------------- Section VI: the unit's cost
@_measure(lambda a: [("launch", a["gpu"])])
def cold_instructions(src, gpu):
    return [k["instructions"] for k in src[("launch", gpu)]["kernels"].values()]


@_measure(lambda a: [("launch", a["gpu"])] + _kernel_needs({"gpu": a["gpu"]}))
def reconf_share(src, gpu, fraction):
    launches = src[("launch", gpu)]["kernels"]
    checks = []
    for s in ours.stems(gpu):
        quco = _cases(src, gpu, s).get("QuCo", {})
        kernel_ns = quco.get("ns")
        checks.append(Check(launches[s]["name"], launches[s]["reconf_ns"], "<",
                            fraction * kernel_ns if kernel_ns else None))
    return checks


@_measure(lambda a: [("firmware",)] + [("launch", g) for g in a["gpus"]])
def memories(src, gpus):
    """Section VI: 8 KiB ROM, 2 KiB data, a 256-byte GST, one image for every GPU. The data
    buffer holds .bss and the stack: its static part plus the deepest stack of every launch."""
    fw = src[("firmware",)]
    deepest = max(k["stack_bytes"] for g in gpus for k in src[("launch", g)]["kernels"].values())
    static = fw["data_static_bytes"]
    checks = [Check("ROM: code and constants (bytes)", fw["rom_bytes"], "<=", 8192),
              Check("data: .bss + deepest stack (bytes)", None if static is None else static + deepest, "<=", 2048),
              Check("GST region (bytes)", fw["gst_region"], "==", 256)]
    checks += [Check(f"GST {g} (bytes)", n, "<=", 256) for g, n in fw["gst_bytes"].items()]
    for g in gpus:
        launch = src[("launch", g)]
        checks.append(Check(f"{g}: the same image (sha256)", launch["firmware_sha256"][:12], "==", fw["sha256"][:12]))
        checks.append(Check(f"{g}: kernels configured", sum(k["ok"] for k in launch["kernels"].values()), "==",
                            len(launch["kernels"])))
    return checks


# ---------------------------------------------------------------- the real-hardware section
from . import hardware  # noqa: E402,F401  (registers its measures: hardware_value, hardware_att, ...)
