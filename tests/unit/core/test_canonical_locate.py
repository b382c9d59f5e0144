"""Where a refusal is named: the JSON path of a duplicate key or a bad number after objects and arrays
that closed cleanly before it, and the root for a parse error at the first character.

A client fixing a rejected upload goes to the path the error names, so it must be the offending value
itself, not an earlier sibling that merely shares a key name or sits next to a closed array.
"""

from __future__ import annotations

import pytest

from acx.core.canonical import CanonicalError, loads, path_at


def _refused_at(text: str) -> str:
    with pytest.raises(CanonicalError) as info:
        loads(text)
    return info.value.path


def test_a_duplicate_key_is_named_in_the_object_that_repeats_it() -> None:
    # "k" appears once in $.x (legal) and twice in $.y: the refusal names $.y.k
    text = '{"x": {"k": 1}, "y": {"k": 2, "k": 3}}'
    assert _refused_at(text) == "$.y.k"


def test_a_duplicate_key_is_named_after_a_sibling_record_with_the_same_keys() -> None:
    text = '{"records": [{"id": "a", "title": "t"}, {"id": "b", "id": "c"}]}'
    with pytest.raises(CanonicalError, match="duplicate object key") as info:
        loads(text)
    assert info.value.path == "$.records[1].id"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[[], 9007199254740993]", "$[1]"),
        ('{"a": [], "b": 9007199254740993}', "$.b"),
        ("[[1], 9007199254740993]", "$[1]"),
        ('{"a": [1, 2], "b": NaN}', "$.b"),
        ('{"tags": ["x", "y"], "n": [[1, 2], [3], 1e999]}', "$.n[2]"),
    ],
)
def test_a_bad_number_after_a_closed_array_is_named_at_itself(text: str, path: str) -> None:
    assert _refused_at(text) == path


def test_offset_zero_names_the_root_even_when_the_document_breaks_deeper() -> None:
    text = '{"records": [{"id": '
    assert path_at(text, len(text)) == "$.records[0].id"
    assert path_at(text, 0) == "$"
    assert path_at("[[1, 2], [3", 0) == "$"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('"\ud800"', "$"),
        ('{"a": ["ok", "x\udfff"]}', "$.a[1]"),
        ('{"k\ud83d": 1}', '$["k\\ud83d"]'),  # the path escapes it
        ('["\\u00e9", "\ud800"]', "$[1]"),  # another escape beside it changes nothing
    ],
)
def test_a_str_holding_surrogate_characters_is_refused_like_an_escaped_one(text: str, path: str) -> None:
    """JSON text is Unicode scalar values: a str caller (dsse.parse_envelope, the CLI) can pass surrogate
    code points as characters, which bytes never can (UTF-8 decoding refuses them)."""
    with pytest.raises(CanonicalError, match="lone surrogate") as err:
        loads(text)
    assert err.value.path == path


def test_a_valid_non_ascii_str_still_parses() -> None:
    assert loads('{"é": "\U0001f600"}') == {"é": "\U0001f600"}
