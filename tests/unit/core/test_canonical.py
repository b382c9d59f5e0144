"""RFC 8785 canonical JSON: the fast record path is byte-identical to rfc8785; loads is strict."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

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

# JSON values as the service sees them: any string (incl. control chars, U+2028, astral), finite
# floats across the whole range, integers inside and just outside the safe range.
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)


def _reference(value):
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        return None


@settings(max_examples=600)
@given(_json)
def test_dumps_record_is_byte_identical_to_rfc8785_on_arbitrary_json(value):
    expected = _reference(value)
    if expected is None:
        with pytest.raises(CanonicalError):
            dumps_record(value)
    else:
        assert dumps_record(value) == expected


_record = st.fixed_dictionaries(
    {
        "id": st.from_regex(r"[A-Za-z0-9._:-]{1,40}", fullmatch=True),
        "title": _text,
        "summary": _text,
        "portable": st.booleans(),
        "codebaseFingerprint": st.none() | st.from_regex(r"cbf1_[0-9a-f]{40}", fullmatch=True),
        "xpAwarded": st.integers(0, 1000) | st.floats(0, 1e20, allow_nan=False),
        "similarity": st.floats(-1, 1),
        "tags": st.lists(_text, max_size=5),
    }
)


@settings(max_examples=400)
@given(_record)
def test_dumps_record_is_byte_identical_to_rfc8785_on_records(record):
    assert dumps_record(record) == rfc8785.dumps(record)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e21, b"1e+21"),
        (1e-7, b"1e-7"),
        (-0.0, b"0"),
        (5.0, b"5"),
        (1e-6, b"0.000001"),
        (1.5e16, b"15000000000000000"),
        (2.5, b"2.5"),
        (MAX_SAFE_INTEGER, b"9007199254740991"),
    ],
)
def test_number_forms_follow_ecmascript(value, expected):
    assert dumps(value) == expected
    assert dumps_record(value) == expected
    assert dumps_record({"n": value}) == b'{"n":' + expected + b"}"


def test_keys_sort_by_utf16_code_units_astral_before_private_use():
    value = {"\ue000": 1, "\U0001f600": 2, "b": 3, "a": 4, "\u00e9": 5}
    expected = rfc8785.dumps(value)
    assert dumps_record(value) == expected
    # U+1F600 is the surrogate pair D83D DE00, which sorts before U+E000 in UTF-16.
    assert expected.index("\U0001f600".encode()) < expected.index("\ue000".encode())


def test_string_escapes_match_rfc8785():
    text = "".join(chr(i) for i in range(0x20)) + '"\\/\x7f\u2028\u2029\ufeff\U0001f680'
    out = dumps_record({"s": text})
    assert out == rfc8785.dumps({"s": text})
    assert b"\\u001f" in out and b"\\b" in out and b"\\n" in out
    assert "\u2028".encode() in out  # written literally, not escaped


def test_unsafe_integer_is_refused_like_rfc8785():
    with pytest.raises(CanonicalError):
        dumps_record({"n": 2**53})


@pytest.mark.parametrize(
    ("document", "path", "fragment"),
    [
        (b'{"records":[{"id":"a","id":"b"}]}', "$.records[0].id", "duplicate"),
        (b'{"a":[1,{"x":"\\ud800"}]}', "$.a[1].x", "surrogate"),
        (b'{"a":{"b":NaN}}', "$.a.b", "NaN"),
        (b'{"a":[9007199254740992]}', "$.a[0]", "2^53"),
        (b'{"a":[-9007199254740992]}', "$.a[0]", "2^53"),
        (b'{"a":"\xff"}', "$", "UTF-8"),
    ],
)
def test_strict_loads_refuses_and_names_the_path(document, path, fragment):
    with pytest.raises(CanonicalError) as info:
        loads(document)
    assert info.value.path == path
    assert fragment in info.value.message


def test_loads_accepts_the_safe_integer_bounds():
    assert loads(b"[9007199254740991,-9007199254740991]") == [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]


_roundtrip = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300)
@given(_roundtrip)
def test_loads_of_dumps_round_trips(value):
    assert loads(dumps_record(value)) == value
    assert json.loads(dumps_record(value)) == value


# RFC 8785 Appendix B: IEEE-754 bit patterns and their canonical text (NaN and Infinity are errors).
APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def _double(bits: str) -> float:
    import struct

    return struct.unpack(">d", bytes.fromhex(bits))[0]


@pytest.mark.parametrize(("bits", "text"), APPENDIX_B)
def test_appendix_b_numbers_canonicalise_and_read_back(bits, text):
    value = _double(bits)
    assert dumps_record(value) == text.encode() == dumps(value)
    # acx canon's reader: every Appendix B text reads back as the same double and re-canonicalises.
    back = loads(text, ieee_numbers=True)
    assert back == value and dumps_record(back) == text.encode()


@pytest.mark.parametrize(("bits", "text"), APPENDIX_B)
def test_record_parser_takes_appendix_b_numbers_or_names_the_path(bits, text):
    """Records refuse an integer literal beyond 2^53-1 (it would not hash as written); all else reads."""
    unsafe_integer = text.lstrip("-").isdigit() and abs(int(text)) > MAX_SAFE_INTEGER
    if unsafe_integer:
        with pytest.raises(CanonicalError) as info:
            loads('{"records":[{"xpAwarded":' + text + "}]}")
        assert info.value.path == "$.records[0].xpAwarded" and "2^53" in info.value.message
    else:
        assert loads('{"n":' + text + "}") == {"n": _double(bits)}


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("9007199254740993", b"9007199254740992"),  # rounds to the nearest double, as RFC 8785 does
        ("[1e16, 10000000000000000]", b"[10000000000000000,10000000000000000]"),
        ("-295147905179352830000", b"-295147905179352830000"),
        ("123456789012345678901234567890", b"1.2345678901234568e+29"),
    ],
)
def test_ieee_numbers_round_integers_beyond_2_53(document, expected):
    assert dumps_record(loads(document, ieee_numbers=True)) == expected


def test_huge_integer_literals_are_refused_cleanly_not_crashing():
    digits = "9" * 5000  # beyond Python's int-from-str limit
    with pytest.raises(CanonicalError) as info:
        loads("[" + digits + "]")
    assert info.value.path == "$[0]"
    with pytest.raises(CanonicalError, match="infinity"):
        loads("[" + digits + "]", ieee_numbers=True)


@settings(max_examples=400)
@given(_json)  # its integers reach 2^60, beyond 2^53
def test_canon_of_canon_is_canon(value):
    """What ``acx canon`` does: read with IEEE numbers, write RFC 8785; its output reads back unchanged."""
    once = dumps_record(loads(json.dumps(value), ieee_numbers=True))
    assert dumps_record(loads(once, ieee_numbers=True)) == once


# The fast canonical writer on lists: every number it rewrites inside a list (an integral float, a
# negative zero, one inside a nested list or object) is written as RFC 8785 writes it.


def test_integral_floats_inside_a_list_are_written_as_integers() -> None:
    # RFC 8785 writes 1.0 as 1 and -0.0 as 0 wherever the number sits; a record's scores list is hashed
    # through the fast path, so it must write the same bytes as the reference writer.
    value = {"scores": [1.0, -0.0, 2.5], "nested": [[3.0], {"x": 4.0}]}
    expected = b'{"nested":[[3],{"x":4}],"scores":[1,0,2.5]}'
    assert rfc8785.dumps(value) == expected
    assert dumps_record(value) == expected
    assert dumps_record([1.0, 2.5]) == b"[1,2.5]"


# Strict parsing refusals with their JSON paths, and the fast canonical path at its number edges.
#
# Each refused document is one that two parsers would read differently (so it would hash differently);
# each fast-path value is one where orjson and RFC 8785 could disagree if a bound moved.


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
