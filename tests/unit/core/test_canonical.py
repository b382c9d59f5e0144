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
