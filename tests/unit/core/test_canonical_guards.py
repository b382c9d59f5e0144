"""Strict parsing refusals with their JSON paths, and the fast canonical path at its number edges.

Each refused document is one that two parsers would read differently (so it would hash differently);
each fast-path value is one where orjson and RFC 8785 could disagree if a bound moved.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import rfc8785

from acx.core.canonical import (
    MAX_SAFE_INTEGER,
    CanonicalError,
    child_path,
    dumps,
    dumps_record,
    find_lone_surrogate,
    loads,
    path_at,
    sha256_hex,
)


@pytest.mark.parametrize(
    ("text", "message", "path"),
    [
        ('{"a":{"b":1,"b":2}}', "duplicate object key", "$.a.b"),
        ('{"a":1,"x":[{"k":1,"k":1}]}', "duplicate object key", "$.x[0].k"),
        ('{"a":[1,NaN]}', "non-finite number NaN", "$.a[1]"),
        ('{"a":Infinity}', "non-finite number Infinity", "$.a"),
        ("[-Infinity]", "non-finite number -Infinity", "$[0]"),
        (f'{{"n":[0,{MAX_SAFE_INTEGER + 1}]}}', "integer outside", "$.n[1]"),
        (f'{{"n":{-MAX_SAFE_INTEGER - 1}}}', "integer outside", "$.n"),
        ('{"f":1e400}', "number overflows to infinity", "$.f"),
        ('{"f":-1e400}', "number overflows to infinity", "$.f"),
        ('{"s":"\\ud800"}', "lone surrogate in string", "$.s"),
        ('{"s":["ok","\\udfff x"]}', "lone surrogate in string", "$.s[1]"),
        ('{"\\ud800":1}', "lone surrogate in string", '$["\\ud800"]'),
        ('{"a":[1,2,}', "invalid JSON", "$.a[2]"),
    ],
)
def test_a_document_parsers_disagree_on_is_refused_with_its_path(text: str, message: str, path: str) -> None:
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert message in caught.value.message
    assert caught.value.path == path
    with pytest.raises(CanonicalError):
        loads(text.encode())


def test_invalid_utf8_names_the_byte_offset() -> None:
    with pytest.raises(CanonicalError, match="invalid UTF-8 at byte offset 6"):
        loads(b'{"a":"\xff"}')
    with pytest.raises(CanonicalError, match="invalid UTF-8 at byte offset 2"):
        loads(bytearray(b'["\xc3"]'))


def test_deep_nesting_is_refused_not_crashed() -> None:
    with pytest.raises(CanonicalError, match="nesting too deep"):
        loads("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (f"[{MAX_SAFE_INTEGER},{-MAX_SAFE_INTEGER}]", [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('"\\uD83D\\uDE00"', "\U0001f600"),
        ('{"a":1,"b":{"a":2}}', {"a": 1, "b": {"a": 2}}),
        ("1e308", 1e308),
        ('"\\u00e9"', "é"),
    ],
)
def test_documents_every_parser_reads_alike_are_accepted(text: str, value: Any) -> None:
    assert loads(text) == value
    assert loads(memoryview(text.encode())) == value


def test_find_lone_surrogate_names_the_first_path() -> None:
    assert find_lone_surrogate({"a": ["x", {"b": "\ud800"}]}) == "$.a[1].b"
    assert find_lone_surrogate({"ok": "\U0001f600", "k\udc00": 1}) == '$["k\\udc00"]'
    assert find_lone_surrogate(["fine", 1, None]) is None


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("id", "$.id"),
        ("_x1", "$._x1"),
        ("1a", '$["1a"]'),
        ("a-b", '$["a-b"]'),
        ("é", '$["\\u00e9"]'),
        ("", '$[""]'),
    ],
)
def test_child_path_dots_only_ascii_identifiers(key: str, path: str) -> None:
    assert child_path("$", key) == path


def test_path_at_names_the_value_being_parsed() -> None:
    text = '{"records":[{"id":"a"},{"id":"b","x":]}'
    assert path_at(text, text.index("]}")) == "$.records[1].x"
    assert path_at("[1,2", 4) == "$[1]"


EDGE_VALUES: list[Any] = [
    1e-5,
    9.999999e-6,
    1e15,
    999999999999999.9,
    1e15 - 1,
    123456789012345.6,
    -0.0,
    0.0,
    2.0**53,
    float(MAX_SAFE_INTEGER),
    -float(MAX_SAFE_INTEGER),
    0.1,
    -0.1,
    -1e-5,
    1e21,
    1e-7,
    5e-324,
    MAX_SAFE_INTEGER,
    -MAX_SAFE_INTEGER,
    [1.5, [2.0, {"k": -0.0}], {"z": 1e16}],
    {"é": 1, "e": 2},
    {"\ue000": 1, "\U0001f600": 2},
    {"a": '\x00\x1f\x7f\u2028\u2029"\\/'},
    {"b": [True, False, None], "a": {"y": [], "x": {}}},
]


@pytest.mark.parametrize("value", EDGE_VALUES, ids=repr)
def test_the_fast_path_writes_exactly_the_rfc8785_bytes(value: Any) -> None:
    assert dumps_record(value) == rfc8785.dumps(value) == dumps(value)
    assert sha256_hex(value) == hashlib.sha256(rfc8785.dumps(value)).hexdigest()


@pytest.mark.parametrize("value", [2**53, -(2**53), [1, 2**60], {"a": {"b": 2**53}}])
def test_integers_outside_the_safe_range_are_refused_on_both_paths(value: Any) -> None:
    with pytest.raises(CanonicalError):
        dumps(value)
    with pytest.raises(CanonicalError):
        dumps_record(value)


def test_content_hash_known_answer() -> None:
    record = {"b": 1, "a": [True, None, "x"], "c": {"é": 1.5}}
    expected = b'{"a":[true,null,"x"],"b":1,"c":{"\xc3\xa9":1.5}}'
    assert dumps_record(record) == expected
    assert sha256_hex(record) == hashlib.sha256(expected).hexdigest()
    assert dumps_record(record) is not None and record == {"b": 1, "a": [True, None, "x"], "c": {"é": 1.5}}


def test_a_non_string_key_or_a_foreign_type_takes_the_strict_path() -> None:
    with pytest.raises(CanonicalError):
        dumps_record({1: "a"})
    with pytest.raises(CanonicalError):
        dumps_record({"a": object()})
    assert dumps_record(("a", 1)) == rfc8785.dumps(["a", 1])


def test_a_refusal_too_deep_to_locate_is_named_at_the_root() -> None:
    """json reads 500 levels, the path scanner (about three frames a level) does not: the refusal
    still says what is wrong, at ``$``, never a missing path."""
    with pytest.raises(CanonicalError) as caught:
        loads("[" * 500 + "NaN" + "]" * 500)
    assert caught.value.path == "$"
    assert "NaN" in caught.value.message


def test_paths_are_found_through_whitespace() -> None:
    """Pretty-printed JSON (spaces, tabs, newlines between tokens) is located like compact JSON."""
    with pytest.raises(CanonicalError) as caught:
        loads('{\n\t"a" : [ 1 ,\r\n 2 , ]\n}')
    assert caught.value.path == "$.a[2]"
    with pytest.raises(CanonicalError) as caught:
        loads('{ "a" : { "n" : [ 0 , NaN ] } }')
    assert caught.value.path == "$.a.n[1]"
