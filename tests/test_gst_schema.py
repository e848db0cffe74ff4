"""util/schema.py's words for a broken document, on a small schema of its own that uses every
rule the project's schemas use ($defs references, enums, bounds, lengths, the printable
pattern, anyOf, additionalProperties). Each expected message is written out by hand from
the rule it names. The checker is built inside the tests: a module-level one would be built
before mutmut's mutants are switched on (issue #24 part 6)."""
import datetime
import json

import pytest
from jsonschema.exceptions import SchemaError

from quco.util import schema
from quco.kernel import format as kernel
from quco.workloads import format as workload_format
from quco.util.schema import MAX_PROBLEMS, PRINTABLE, Checker, allowed, key, kind_of, num, report, value_text

SCHEMA = {
    "type": "object",
    "required": ["name", "queues"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 8, "pattern": PRINTABLE},
        "queues": {"type": "array", "minItems": 1, "maxItems": 16, "items": {"$ref": "#/$defs/queue"}},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "intensity": {"anyOf": [{"type": "number", "minimum": 0.5}, {"enum": ["low", "high"]}]},
        "meta": {"type": "object"},
        "sealed": {"type": "object", "additionalProperties": False},
        "any": {},
    },
    "$defs": {
        "queue": {"type": "object", "required": ["elem_size"], "additionalProperties": False,
                  "properties": {"elem_size": {"enum": [1, 2, 4, 8]}, "count": {"$ref": "#/$defs/count"},
                                 "step": {"type": "integer", "minimum": 0, "multipleOf": 4}}},
        "count": {"type": "integer", "minimum": 1, "maximum": 64.0},
    },
}
NAN = float("nan")


def messages(doc, at=()):
    return [m for _, m in Checker(SCHEMA).problems(doc, at)]


def test_short_text_is_kept_and_long_text_cut_at_the_stated_width():
    assert key("k" * 40) == "k" * 40 and key("k" * 41) == "k" * 37 + "..."
    assert value_text("v" * 58) == '"' + "v" * 58 + '"'  # 60 characters with the quotes
    assert value_text("v" * 59) == '"' + "v" * 56 + "..."


def test_values_are_shown_as_json_literally():
    assert value_text("é") == '"é"'  # not \u00e9
    assert value_text(datetime.date(2024, 1, 2)) == '"2024-01-02"'  # TOML dates
    loop = []
    loop.append(loop)
    assert value_text(loop) == "[[...]]"  # json refuses a cycle: repr shows it


def test_bounds_are_written_without_a_needless_decimal_point():
    assert (num(64.0), num(0.5), num(3)) == ("64", "0.5", "3")


@pytest.mark.parametrize("sub,words", [
    ({}, "value"),
    ({"type": "array"}, "array of 0 to any number of entries"),
    ({"type": "array", "minItems": 1, "maxItems": 16}, "array of 1 to 16 entries"),
    ({"type": "string"}, "string"),
    ({"type": "string", "minLength": 1}, "non-empty string"),
    ({"type": "string", "maxLength": 8}, "string of 0 to 8 characters"),
    ({"type": "string", "minLength": 1, "maxLength": 8, "pattern": PRINTABLE}, "printable string of 1 to 8 characters"),
    ({"type": "number"}, "number"),
    ({"type": "integer", "minimum": 0}, "integer >= 0"),
    ({"type": "integer", "minimum": 1, "maximum": 64.0}, "integer 1 to 64"),
    ({"type": "integer", "minimum": 0, "multipleOf": 4}, "integer >= 0, multiple of 4"),
])
def test_allowed_says_what_a_rule_accepts(sub, words):
    assert allowed(sub) == words


def test_kind_of_names_what_a_value_is():
    assert [kind_of(v, "integer") for v in (None, {}, [], "x", True, 2.0, 2.5)] == [
        "null", "an object", "an array", "a string", "a boolean", "written with a decimal point",
        "not a whole number"]


def test_one_message_per_broken_rule_naming_field_value_and_what_is_allowed():
    doc = {"name": "", "queues": [{"elem_size": 3, "count": 65, "step": 6, "extra": 1}, {}],
           "intensity": 0.25, "sealed": {"x": 1}, "bogus": True}
    assert messages(doc) == [
        'bogus: unknown field (allowed: name, queues, ids, intensity, meta, sealed, any)',
        'intensity: 0.25 is out of range; expected number >= 0.5 or one of "low", "high"',
        'name: "" is empty; expected printable string of 1 to 8 characters',
        "queues[0].count: 65 is out of range; expected integer 1 to 64",
        "queues[0].elem_size: 3 is not one of 1, 2, 4, 8",
        'queues[0].extra: unknown field (allowed: elem_size, count, step)',
        "queues[0].step: 6 is not a multiple of 4; expected integer >= 0, multiple of 4",
        "queues[1].elem_size: missing (required one of 1, 2, 4, 8)",
        "sealed.x: unknown field (allowed: )",
    ]


def test_problems_come_in_document_order_list_indexes_numerically():
    doc = {"name": "q", "queues": [{"elem_size": 1}] * 2 + [{"elem_size": 3}] + [{"elem_size": 1}] * 7
           + [{"elem_size": 5}]}
    assert messages(doc) == ["queues[2].elem_size: 3 is not one of 1, 2, 4, 8",
                             "queues[10].elem_size: 5 is not one of 1, 2, 4, 8"]


def test_two_rules_broken_by_one_value_keep_the_schema_order():
    assert messages({"name": "\x1b" * 9, "queues": [{"elem_size": 1}]}) == [
        "name: 9 characters; expected printable string of 1 to 8 characters",
        'name: "' + "\\u001b" * 9 + '" contains the control character \\x1b; '
        "expected printable string of 1 to 8 characters"]


def test_non_finite_numbers_are_found_at_any_depth_with_the_rule_of_their_place():
    doc = {"name": "q", "queues": [{"elem_size": 1, "count": NAN}], "ids": [1, float("inf")],
           "meta": {"x": NAN}, "any": [NAN], "bogus": NAN}
    assert messages(doc) == [
        "any[0]: NaN is not a finite number; expected value",
        "bogus: NaN is not a finite number; expected value",
        "bogus: unknown field (allowed: name, queues, ids, intensity, meta, sealed, any)",
        "ids[1]: Infinity is not a finite number; expected integer",
        "meta.x: NaN is not a finite number; expected value",
        "queues[0].count: NaN is not a finite number; expected integer 1 to 64",
    ]


def test_one_field_checked_on_its_own_by_its_path():
    checker = Checker(SCHEMA)
    for _ in range(2):  # the second time from the cached part
        assert checker.problems({"elem_size": 3, "count": 0}, at=("queues", 0)) == [
            (["queues", 0, "count"], "queues[0].count: 0 is out of range; expected integer 1 to 64"),
            (["queues", 0, "elem_size"], "queues[0].elem_size: 3 is not one of 1, 2, 4, 8")]
    assert checker.problems({"elem_size": 2}, at=("queues", 3)) == []


def test_rules_without_words_of_their_own_keep_jsonschemas_message_and_the_place():
    top = Checker({"type": "array", "uniqueItems": True}).problems([1, 1])
    inner = Checker({"type": "object", "properties": {"ids": {"uniqueItems": True}}}).problems({"ids": [1, 1]})
    assert top == [([], "(top level): [1, 1] has non-unique elements")]
    assert inner == [(["ids"], "ids: [1, 1] has non-unique elements")]


def test_a_broken_schema_is_refused_when_the_checker_is_built():
    with pytest.raises(SchemaError, match="'one' is not of type 'number'"):
        Checker({"type": "integer", "minimum": "one"})


def test_collection_stops_just_past_ten_times_what_is_shown():
    found = Checker(SCHEMA).problems({"name": "q", "queues": [{"elem_size": 1}], "ids": ["x"] * 300})
    assert len(found) == 10 * MAX_PROBLEMS + 1
    assert found[0][1] == 'ids[0]: "x" is a string; expected integer'


def test_report_shows_at_most_max_problems_then_says_more_were_found():
    lines = [f"p{i}" for i in range(MAX_PROBLEMS + 1)]
    assert report(lines[:MAX_PROBLEMS]) == lines[:MAX_PROBLEMS]
    assert report(lines) == lines[:MAX_PROBLEMS] + [
        f"... and more problems (the first {MAX_PROBLEMS} are shown)"]
    assert schema.not_an_object([], "in.json") == "in.json: the top level is an array; expected an object"


@pytest.mark.parametrize("name,shown,char", [
    ("a\x1bb", '"a\\u001bb"', "\\x1b"),
    ("a\u2028b", '"a\\u2028b"', "\\u2028"),  # a line separator: printable() escapes it too
    ("a\u2065b", '"a\u2065b"', "\\u2065"),  # unassigned, invisible: named by its code
])
def test_a_control_character_in_a_name_is_named_by_its_code(name, shown, char):
    """The message once named nothing for U+2028 and U+2065 (issue #24 part 6): the rule
    refuses them, printable() kept them as they were."""
    assert messages({"name": name, "queues": [{"elem_size": 1}]}) == [
        f"name: {shown} contains the control character {char}; expected printable string of 1 to 8 characters"]


def test_another_pattern_keeps_jsonschemas_message():
    checker = Checker({"type": "object", "properties": {"tag": {"type": "string", "pattern": "^a"}}})
    assert checker.problems({"tag": "b"}) == [(["tag"], "tag: 'b' does not match '^a'")]


def test_the_project_schemas_use_the_one_printable_pattern():
    """The pattern message names a control character only for PRINTABLE: the JSON schemas
    spell it out, so they must spell it the same."""
    patterns = [node for path in (kernel.SCHEMA_PATH, workload_format.SCHEMA_PATH)
                for p, node in schema.nodes(json.loads(path.read_text())) if p and p[-1] == "pattern"]
    assert len(patterns) == 7 and set(patterns) == {PRINTABLE}
