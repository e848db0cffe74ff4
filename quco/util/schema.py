"""JSON Schema checks whose messages name the field, the value and what is allowed.

    checker = Checker(schema_dict)
    checker.problems(doc)  # ['queues[2].elem_size: 3 is not one of 1, 2, 4, 8', ...]

Used for kernel.json (kernel/kernel.schema.json), timing profiles (emulator/profile.schema.json),
workloads (workloads/workload.schema.json) and DVFS traces; `field_path`, `value_text`,
`kind_of` and `not_an_object` give the same words to checks a schema cannot make.
Two rules are stricter than JSON Schema's: an "integer" is a whole number written without
a decimal point (8.0 and 1e300 are refused: the draft accepts them), and NaN / Infinity
(Python's json reads them) are refused anywhere.
"""
from __future__ import annotations

import difflib
import json
import math
import re

from jsonschema import Draft202012Validator, validators

from .userinput import escaped, printable

# names shown in reports: no control or format characters (escape sequences, bidi overrides)
_CONTROL_CHARS = "\\u0000-\\u001f\\u007f-\\u009f\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\ufeff"
CONTROL = f"[{_CONTROL_CHARS}]"  # one character a name may not hold
PRINTABLE = f"^[^{_CONTROL_CHARS}]*$"
MAX_PROBLEMS = 20  # a hostile file can break thousands of rules; the first ones say enough


def _is_integer(checker, v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


StrictValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))


# ---------------------------------------------------------------- how values are shown
def key(k) -> str:
    """A field name a user wrote, shown short and without control characters."""
    text = printable(str(k))
    return text if len(text) <= 40 else text[:37] + "..."


def field_path(path) -> str:
    """A JSON path as a user reads it: ["queues", 2, "elem_size"] -> queues[2].elem_size."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{key(p)}" if out else key(p))
    return out


def value_text(v) -> str:
    """A value a user wrote, as JSON, short and without control characters."""
    try:
        text = json.dumps(v, ensure_ascii=False, default=str)  # TOML has dates
    except (ValueError, RecursionError):
        text = repr(v)
    text = printable(text)
    return text if len(text) <= 60 else text[:57] + "..."


def num(v) -> str:
    """A schema bound without a needless decimal point: 64.0 -> 64."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def allowed(sub: dict) -> str:
    """What a (sub)schema accepts, in words: `integer 1 to 64`, `one of 1, 2, 4, 8`."""
    if "anyOf" in sub:
        return " or ".join(allowed(s) for s in sub["anyOf"])
    if "enum" in sub:
        return "one of " + ", ".join(json.dumps(v) for v in sub["enum"])
    t = sub.get("type", "value")
    if t == "array":
        return f"array of {sub.get('minItems', 0)} to {sub.get('maxItems', 'any number of')} entries"
    if t == "string":
        size = f"{sub.get('minLength', 0)} to {sub['maxLength']} characters" if "maxLength" in sub else ""
        kind = "printable string" if "pattern" in sub else "string"
        return f"{kind} of {size}" if size else f"non-empty {kind}" if sub.get("minLength") else kind
    if t == "boolean":
        return "true or false"
    if t == "object":
        return "object with " + ", ".join(sub["required"]) if sub.get("required") else "object"
    if t in ("integer", "number"):
        lo, hi = sub.get("minimum"), sub.get("maximum")
        text = t if lo is None else (f"{t} >= {num(lo)}" if hi is None else f"{t} {num(lo)} to {num(hi)}")
        return text + (f", multiple of {num(sub['multipleOf'])}" if "multipleOf" in sub else "")
    return t


def kind_of(v, expected: str) -> str:
    """What a value is, in words, next to the `expected` type: "a string", "not a whole number"."""
    if isinstance(v, bool):
        return "a boolean"
    if v is None:
        return "null"
    if isinstance(v, float) and expected == "integer":
        return "written with a decimal point" if v.is_integer() else "not a whole number"
    return {str: "a string", list: "an array", dict: "an object"}.get(type(v), "a number")


def not_an_object(doc, where: str) -> str:
    """The message for a document (from `where`) whose top level is not an object."""
    return f"{where}: the top level is {kind_of(doc, 'object')}; expected an object"


def path_order(problem: tuple[list, str]) -> list:
    """Sort key for (path, message) problems: document order, list indexes before field names."""
    return [(isinstance(p, str), p) for p in problem[0]]


def nodes(doc, path=()):
    """(path, value) of every node of a decoded document, the root first."""
    yield path, doc
    if isinstance(doc, dict):
        for k, x in doc.items():
            yield from nodes(x, (*path, k))
    elif isinstance(doc, list):
        for i, x in enumerate(doc):
            yield from nodes(x, (*path, i))


def _non_finite(doc):
    """Paths of NaN / Infinity anywhere in the document (Python's json accepts them)."""
    return [(list(p), v) for p, v in nodes(doc) if isinstance(v, float) and not math.isfinite(v)]


class Checker:
    """A schema and the words for what breaks it."""

    def __init__(self, schema: dict):
        StrictValidator.check_schema(schema)
        self.schema = schema
        self.validator = StrictValidator(schema)
        self._parts: dict[tuple, object] = {}

    def resolve(self, sub: dict) -> dict:
        ref = sub.get("$ref", "")
        return self.schema["$defs"][ref.rsplit("/", 1)[1]] if ref.startswith("#/$defs/") else sub

    def at(self, path) -> dict:
        """The subschema that rules the value at `path`."""
        sub = self.schema
        for p in path:
            sub = self.resolve(sub)
            sub = sub.get("items", {}) if isinstance(p, int) else sub.get("properties", {}).get(p, {})
        return self.resolve(sub)

    def _part(self, at: tuple):
        """A validator for the subschema at path `at` (a field given on its own)."""
        if at not in self._parts:
            self._parts[at] = StrictValidator({**self.at(at), "$defs": self.schema.get("$defs", {})})
        return self._parts[at]

    def problems(self, doc, at: tuple = ()) -> list[tuple[list, str]]:
        """(path, message) for every rule the document breaks, in document order; with `at`,
        `doc` is the value of that one field (e.g. ("queues", 3) for one queue)."""
        found = []
        bad = [(list(at) + p, v) for p, v in _non_finite(doc)]
        for p, v in bad:
            found.append((p, f"{field_path(p)}: {value_text(v)} is not a finite number; "
                             f"expected {allowed(self.at(p))}"))
        for err in (self._part(tuple(at)) if at else self.validator).iter_errors(doc):
            if all(list(at) + list(err.absolute_path) != p for p, _ in bad):
                found.extend(self._messages(err, list(at)))
            if len(found) > 10 * MAX_PROBLEMS:
                break
        return sorted(found, key=path_order)

    def _messages(self, err, at: list) -> list[tuple[list, str]]:
        path, v, kind, sub = at + list(err.absolute_path), err.instance, err.validator, err.schema
        where, ok = field_path(path), allowed(sub)
        if kind == "required":
            missing = [k for k in sub["required"] if k not in v]
            return [(path + [k], f"{field_path(path + [k])}: missing (required "
                                 f"{allowed(self.resolve(sub['properties'][k]))})") for k in missing]
        if kind == "additionalProperties":
            known = list(sub.get("properties", {}))
            out = []
            for k in (k for k in v if k not in known):
                hint = difflib.get_close_matches(k, known, n=1) if len(k) <= 100 else []
                msg = f"{field_path(path + [k])}: unknown field (allowed: {', '.join(known)})"
                out.append((path + [k], msg + (f"; did you mean {json.dumps(hint[0])}?" if hint else "")))
            return out
        if kind == "type":
            return [(path, f"{where}: {value_text(v)} is {kind_of(v, sub.get('type'))}; expected {ok}")]
        if kind == "anyOf":  # a number or a name (compute_intensity): say which rule it broke
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return [(path, f"{where}: {value_text(v)} is out of range; expected {ok}")]
            if isinstance(v, str):
                return [(path, f"{where}: {value_text(v)} is not an allowed name; expected {ok}")]
            return [(path, f"{where}: {value_text(v)} is {kind_of(v, 'number')}; expected {ok}")]
        if kind == "enum":
            return [(path, f"{where}: {value_text(v)} is not {ok}")]
        if kind in ("minimum", "maximum"):
            return [(path, f"{where}: {value_text(v)} is out of range; expected {ok}")]
        if kind == "multipleOf":
            return [(path, f"{where}: {value_text(v)} is not a multiple of {num(sub['multipleOf'])}; expected {ok}")]
        if kind in ("minItems", "maxItems"):
            return [(path, f"{where}: {len(v)} entries; expected {ok}")]
        if kind == "minLength":
            return [(path, f"{where}: {value_text(v)} is empty; expected {ok}")]
        if kind == "maxLength":
            return [(path, f"{where}: {len(v):,} characters; expected {ok}")]
        if kind == "pattern" and sub["pattern"] == PRINTABLE:  # the character named by its code:
            bad = re.search(CONTROL, v).group()  # U+2065 (unassigned) would show as nothing
            return [(path, f"{where}: {value_text(v)} contains the control character {escaped(bad)}; "
                           f"expected {ok}")]
        return [(path, f"{where or '(top level)'}: {printable(err.message)}")]


def report(problems: list[str]) -> list[str]:
    """At most MAX_PROBLEMS messages, then how many more there were."""
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return problems[:MAX_PROBLEMS] + [f"... and more problems (the first {MAX_PROBLEMS} are shown)"]
