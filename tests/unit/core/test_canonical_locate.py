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


# Where a refusal is named after a lone surrogate hidden among valid pairs that touch every surrogate
# block, after strings that end in (or hold) an escape, and after an empty object.


def test_a_lone_surrogate_among_pairs_from_every_surrogate_block_is_still_refused() -> None:
    """The escapes \\ud8.. to \\udf.. all occur in valid pairs here; the one unpaired high surrogate
    must still be found (a parser that joins it with nothing would hash it differently)."""
    pairs = ["\\ud800\\udc00", "\\ud900\\udd00", "\\uda00\\ude00", "\\udb00\\udf00"]
    text = "[" + ",".join(f'"{p}"' for p in pairs) + ',"\\ud800"]'
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.message == "lone surrogate in string"
    assert caught.value.path == "$[4]"
    with pytest.raises(CanonicalError) as caught:
        loads(text.upper().replace("\\U", "\\u"))  # upper-case hex digits: the same escapes
    assert caught.value.path == "$[4]"
    assert loads("[" + ",".join(f'"{p}"' for p in pairs) + "]") == [
        "\U00010000",
        "\U00050100",
        "\U00090200",
        "\U000d0300",
    ]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a\\n":1,"b":NaN}', "$.b"),  # a key ending in a short escape
        ('{"a\\\\":1,"b":NaN}', "$.b"),  # a key ending in an escaped backslash
        ('{"q\\"":1,"b":[1,Infinity]}', "$.b[1]"),  # a key ending in an escaped quote
        ('["x\\t",NaN]', "$[1]"),  # a value ending in an escape
        ('{"a\\"b":1,"c":NaN}', "$.c"),  # an escaped quote inside a key
        ('["say \\"hi\\" now",NaN]', "$[1]"),
    ],
)
def test_a_refusal_after_a_string_with_escapes_is_named_at_itself(text: str, path: str) -> None:
    assert _refused_at(text) == path


def test_a_duplicate_key_holding_an_escaped_quote_is_named_with_its_text() -> None:
    with pytest.raises(CanonicalError) as caught:
        loads('{"m":{"q\\"x":1,"q\\"x":2}}')
    assert caught.value.message == "duplicate object key"
    assert caught.value.path == '$.m["q\\"x"]'


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[{},NaN]", "$[1]"),
        ('{"a":{},"b":NaN}', "$.b"),
        ('{"a":{ },"b":[{},{"c":Infinity}]}', "$.b[1].c"),
    ],
)
def test_a_refusal_after_an_empty_object_is_named_at_itself(text: str, path: str) -> None:
    assert _refused_at(text) == path


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a":1,"b":2,"b":3}', "$.b"),
        ('{"x":[{"id":1,"k":1,"n":2,"k":3}]}', "$.x[0].k"),
    ],
)
def test_a_duplicate_after_distinct_keys_is_named_at_the_repeated_key(text: str, path: str) -> None:
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.message == "duplicate object key"
    assert caught.value.path == path


# Where a refusal is named in a truncated document whose last token is the refused number, and after
# an empty or escape-led string.


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": NaN', "$.a"),
        ('{"a": [1, 1e999', "$.a[1]"),
        ('["x", 12345678901234567890', "$[1]"),
        ('{"a": {"b": -Infinity', "$.a.b"),
    ],
)
def test_a_refused_number_at_the_very_end_of_a_truncated_document_is_named(text: str, path: str) -> None:
    """The number hook refuses before the parser sees the missing brackets: the path is the number's,
    although the text ends right after it."""
    assert _refused_at(text) == path


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"": 1, "a": NaN}', "$.a"),
        ('["", NaN]', "$[1]"),
        ('{"e": "", "f": [1e999]}', "$.f[0]"),
        ('{"\\"q": 1, "b": Infinity}', "$.b"),
        ('{"k": "\\\\", "b": 1e400}', "$.b"),
    ],
)
def test_a_refusal_after_an_empty_or_escape_led_string_is_named(text: str, path: str) -> None:
    """An empty string (key or value) or one that starts with an escape is read whole: the refusal
    after it names the refused value, not the root."""
    assert _refused_at(text) == path
