"""Canonical behaviours the fifth mutation run found unguarded: a lone surrogate hidden among valid
pairs that touch every surrogate block, and the JSON path of a refusal named after strings that end
in (or hold) an escape and after an empty object."""

from __future__ import annotations

import pytest

from acx.core.canonical import CanonicalError, loads


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
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.path == path


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
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.path == path


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
