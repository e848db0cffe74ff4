"""The paper's claims as data: paper/claims.toml, loaded and checked.

    claims = load()                    # every claim, in the file's order
    claims = load(path, measures=...)  # another file; `measures`: the names a claim may use

A claim says where the paper makes it, the paper's value, how ours is judged (`kind`,
with its bounds and a tolerance) and why the tolerance is what it is, and which measure of
quco.paper.measures computes ours. docs/paper.md explains every field.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..gst import schema

CLAIMS_FILE = Path(__file__).with_name("claims.toml")
ID = re.compile(r"[a-z0-9][a-z0-9.-]*")  # `--claims a,b` splits on commas
KINDS = ("pick", "range", "all", "any", "no_verdict")
_NUMBER = {"type": "number"}
_INTS = {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}}
_TEXT = {"type": "string", "minLength": 1, "pattern": schema.PRINTABLE}

SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["claim"],
    "properties": {
        "reasons": {"type": "object", "additionalProperties": _TEXT},
        "claim": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["id", "source", "statement", "paper", "kind", "reason", "measure"],
            "properties": {
                "id": {"type": "string", "minLength": 1, "maxLength": 80},
                "source": _TEXT, "statement": _TEXT, "paper": _TEXT, "reason": _TEXT, "note": _TEXT,
                "kind": {"enum": list(KINDS)},
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
        reason = c["reason"]
        if reason.startswith("@"):
            if reason[1:] not in reasons:
                problems.append(f"{at}: reason: {reason!r} names no entry of [reasons] "
                                f"(there are: {', '.join(reasons) or 'none'})")
            reason = reasons.get(reason[1:], reason)
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
        wrong = [f for f in ("tiles", "slots") if f in c and kind != "pick"]
        wrong += [f for f in ("lo", "hi") if f in c and kind != "range"]
        if wrong:
            problems.append(f"{at}: {', '.join(wrong)}: only for kind "
                            f"{'pick' if wrong[0] in ('tiles', 'slots') else 'range'}, this claim is {kind!r}")
        out.append(Claim(c["id"], c["source"], c["statement"], c["paper"], kind, c["measure"], reason,
                         c.get("args", {}), _tuple(c.get("tiles")), _tuple(c.get("slots")),
                         c.get("lo"), c.get("hi"), float(c.get("tolerance", 0.0)), c.get("unit", ""),
                         c.get("note", "")))
    if problems:
        raise ClaimsError("\n".join(schema.report(problems)))
    return out


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
        raise ClaimsError(f"unknown claim id {unknown[0]!r}; `quco-emu paper --list` prints the ids")
    return [c for c in claims if c.id in set(ids)]
