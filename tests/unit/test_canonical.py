"""RFC 8785 canonical JSON: the fast record path is byte-identical to rfc8785; loads is strict."""

from __future__ import annotations

import json

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core.canonical import MAX_SAFE_INTEGER, CanonicalError, dumps, dumps_record, loads

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
