"""The paper's claims as data: paper/claims.toml, loaded and checked.

    claims = load()                    # every claim, in the file's order
    claims = load(path, measures=...)  # another file; `measures`: the names a claim may use

The file's [plus] table names paper claims that get a quco+ twin (`plus-<id>`): the same claim,
judged the same way, its measure told `rules = "plus"` (FLAG_QUCO_PLUS in every launch record:
quco+, our second rule set, not the paper's), with the table's source and weight.

A claim says where the paper makes it, the paper's value, how ours is judged (`kind`,
with its bounds and a tolerance) and why the tolerance is what it is, and which measure of
quco.paper.measures computes ours. docs/paper.md explains every field.
"""
from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..util import schema

CLAIMS_FILE = Path(__file__).with_name("claims.toml")
ID = re.compile(r"[a-z0-9][a-z0-9.-]*")  # `--claims a,b` splits on commas
KINDS = ("pick", "range", "all", "any", "no_verdict")
# a claim's evidential weight, declared with its reason (`weight_reason`); "weak" is never declared:
# scorecard.row gives it to an "evidence" row whose chance (a random configuration of the searched
# space passing it) is at least WEAK_CHANCE
WEIGHTS = ("evidence", "fitted", "derived", "model", "extension")
WEAK, WEAK_CHANCE = "weak", 0.25
BETTER = ("higher", "lower", "none")   # which side of a range is QuCo's favour (verdict.way)
_NUMBER = {"type": "number"}
_INTS = {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}}
_TEXT = {"type": "string", "minLength": 1, "pattern": schema.PRINTABLE}

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["claim"],
    "properties": {
        "reasons": {"type": "object", "additionalProperties": _TEXT},
        # quco+'s twins (twins()): the paper claims they copy, their section and their weight
        "plus": {"type": "object", "additionalProperties": False,
                 "required": ["source", "weight", "weight_reason", "note", "claims"],
                 "properties": {"source": _TEXT, "weight": {"enum": list(WEIGHTS)}, "weight_reason": _TEXT,
                                "note": _TEXT, "claims": {"type": "array", "minItems": 1, "items": _TEXT}}},
        "claim": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["id", "source", "statement", "paper", "kind", "reason", "measure", "weight",
                         "weight_reason"],
            "properties": {
                "id": {"type": "string", "minLength": 1, "maxLength": 80},
                "source": _TEXT, "statement": _TEXT, "paper": _TEXT, "reason": _TEXT, "note": _TEXT,
                "kind": {"enum": list(KINDS)},
                "weight": {"enum": list(WEIGHTS)}, "weight_reason": _TEXT, "quote": _TEXT,
                "better": {"enum": list(BETTER)},
                "measure": {"type": "string", "minLength": 1},
                "args": {"type": "object"},
                "tiles": _INTS, "slots": _INTS,
                "lo": _NUMBER, "hi": _NUMBER,
                "tolerance": {"type": "number", "minimum": 0},
                "unit": {"type": "string", "pattern": schema.PRINTABLE},
            }}}}}


class ClaimsError(Exception):
    """A claims file that cannot be used; the message names the file, claim and field."""


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    statement: str
    paper: str
    kind: str
    measure: str
    reason: str
    args: dict = field(default_factory=dict)
    tiles: tuple | None = None     # pick: the tiles that count as the paper's (None: any)
    slots: tuple | None = None     # pick: the streaming slots that count (None: any)
    lo: float | None = None        # range: lower bound (None: open)
    hi: float | None = None        # range: upper bound (None: open)
    tolerance: float = 0.0         # range: absolute; all / any: a fraction of the right-hand side
    unit: str = ""
    note: str = ""
    weight: str = "evidence"       # declared: evidence | fitted | derived | model (WEIGHTS)
    weight_reason: str = ""
    quote: str = ""                # the paper's words, verbatim (tests/test_paper_quotes.py checks them)
    better: str | None = None      # range: the side of a miss that favours QuCo (higher | lower | none);
                                   # all / any: "none" when a failed comparison favours neither side


def parse(doc: dict, where: str, measures=None) -> list[Claim]:
    """Claims from a decoded document; `where` names it in messages. With `measures`,
    a claim naming a measure not in it is refused."""
    problems = [f"{where}: {m}" for _, m in schema.Checker(SCHEMA).problems(doc)]
    if problems:
        raise ClaimsError("\n".join(schema.report(problems)))
    reasons = doc.get("reasons", {})
    out, seen = [], set()
    for i, c in enumerate(doc["claim"]):
        at = f"{where}: claim[{i}] ({c['id']})"
        if not ID.fullmatch(c["id"]):
            problems.append(f"{at}: id: {c['id']!r} has characters other than a-z, 0-9, '.' and '-'")
        if c["id"] in seen:
            problems.append(f"{at}: id: {c['id']!r} is used twice; ids are unique")
        seen.add(c["id"])
        reason, weight_reason = (_resolve(c[f], f, reasons, at, problems) for f in ("reason", "weight_reason"))
        if measures is not None and c["measure"] not in measures:
            problems.append(f"{at}: measure: {c['measure']!r} is not one of: {', '.join(sorted(measures))}")
        kind = c["kind"]
        if kind == "pick" and "tiles" not in c and "slots" not in c:
            problems.append(f"{at}: a pick gives tiles, slots or both")
        if kind == "range":
            if "lo" not in c and "hi" not in c:
                problems.append(f"{at}: a range gives lo, hi or both")
            elif "lo" in c and "hi" in c and c["lo"] > c["hi"]:
                problems.append(f"{at}: lo {c['lo']} is above hi {c['hi']}")
        if kind == "range" and "better" not in c:
            problems.append(f"{at}: a range says which side of a miss favours QuCo: better = "
                            f"{' | '.join(BETTER)}")
        wrong = [f for f in ("tiles", "slots") if f in c and kind != "pick"]
        wrong += [f for f in ("lo", "hi") if f in c and kind != "range"]
        if wrong:
            problems.append(f"{at}: {', '.join(wrong)}: only for kind "
                            f"{'pick' if wrong[0] in ('tiles', 'slots') else 'range'}, this claim is {kind!r}")
        out.append(Claim(c["id"], c["source"], c["statement"], c["paper"], kind, c["measure"], reason,
                         c.get("args", {}), _tuple(c.get("tiles")), _tuple(c.get("slots")),
                         c.get("lo"), c.get("hi"), float(c.get("tolerance", 0.0)), c.get("unit", ""),
                         c.get("note", ""), c["weight"], weight_reason, c.get("quote", ""),
                         c.get("better")))
    if problems:
        raise ClaimsError("\n".join(schema.report(problems)))
    return out + twins(out, doc.get("plus"), reasons, where)


PLUS_PREFIX = "plus-"


def twins(claims: list[Claim], plus: dict | None, reasons: dict, where: str) -> list[Claim]:
    """quco+'s twin of each claim the [plus] table names, in the table's order: id `plus-<id>`, the
    table's source and weight, the statement marked, the measure's args with rules = "plus"; the
    paper's value, kind, bounds, tolerance and quote unchanged (it is the paper's claim, put to the
    other rule set)."""
    if not plus:
        return []
    by_id, problems, out = {c.id: c for c in claims}, [], []
    at = f"{where}: plus"
    weight_reason = _resolve(plus["weight_reason"], "weight_reason", reasons, at, problems)
    for cid in plus["claims"]:
        c = by_id.get(cid)
        if c is None:
            problems.append(f"{at}: claims: {cid!r} is no claim of the file")
        elif PLUS_PREFIX + cid in by_id:
            problems.append(f"{at}: claims: {cid!r}: its twin's id {PLUS_PREFIX + cid!r} is a claim of the file")
        elif "rules" in c.args:
            problems.append(f"{at}: claims: {cid!r} already names its rules")
        else:
            out.append(replace(c, id=PLUS_PREFIX + c.id, source=plus["source"],
                               statement=f"quco+ (not the paper's rules): {c.statement}",
                               args={**c.args, "rules": "plus"}, weight=plus["weight"], weight_reason=weight_reason,
                               note=f"The twin of {c.id}: {plus['note']}" + (f" {c.note}" if c.note else "")))
    if len({c.id for c in out}) < len(out):
        problems.append(f"{at}: claims: a claim is named twice")
    if problems:
        raise ClaimsError("\n".join(schema.report(problems)))
    return out


def _resolve(text: str, name: str, reasons: dict, at: str, problems: list) -> str:
    """A reason as written, or the [reasons] entry "@name" names."""
    if not text.startswith("@"):
        return text
    if text[1:] not in reasons:
        problems.append(f"{at}: {name}: {text!r} names no entry of [reasons] "
                        f"(there are: {', '.join(reasons) or 'none'})")
    return reasons.get(text[1:], text)


def _tuple(v):
    return tuple(v) if v is not None else None


def load(path=CLAIMS_FILE, measures=None) -> list[Claim]:
    path = Path(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ClaimsError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ClaimsError(f"{path}: not valid TOML: {e}") from None
    return parse(doc, str(path), measures)


def select(claims: list[Claim], ids=None) -> list[Claim]:
    """The claims named in `ids` (in the file's order), all when `ids` is None; an unknown
    id raises ClaimsError naming it."""
    if ids is None:
        return list(claims)
    known = {c.id for c in claims}
    unknown = [i for i in ids if i not in known]
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(known), n=3, cutoff=0.6)
        raise ClaimsError(f"--claims: unknown claim id {unknown[0]!r}"
                          + (f" (did you mean {', '.join(close)}?)" if close else "")
                          + f"; the {len(known)} valid ids (`quco-emu paper --list` shows each with its statement): "
                          + ", ".join(c.id for c in claims))
    return [c for c in claims if c.id in set(ids)]
